// RdmCore's rendezvous Reads and FINs on a full send queue: they wait per
// peer and QP and are posted from the engine's pending pass after that QP's
// next completion (docs/design.md "Connected channels in the RDM endpoint",
// "Send-queue room"; the contract is in rdm_core.h).
#include <algorithm>
#include <cerrno>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

namespace {

constexpr uint64_t kMaxReadChunk = uint64_t{1} << 30;  // ReadWr lengths are 32-bit

}  // namespace

qp::QpStatus RdmCore::PostFin(Peer& p, Via via, uint32_t index) {
  qp::QueuePair* q = QpOf(p, via);
  if (q == nullptr) return qp::QpStatus::kBadState;
  if (const qp::QpStatus s = SwitchFirst(p, via); s != qp::QpStatus::kOk) return s;
  qp::SendWr wr;
  wr.sgl.Add(rndv_[index].fin.data(), rndv_[index].fin_len);  // a FIN, or a CTS
  wr.context = Ctx(Kind::kFin, index);
  const qp::QpStatus st = q->PostSend(wr);
  if (st == qp::QpStatus::kOk) Kick(p, via);
  // A FIN (not a CTS) on the connection is numbered: kept until taken.
  if (st == qp::QpStatus::kOk && via == Via::kRc &&
      rndv_[index].fin[1] == static_cast<uint8_t>(wire::RdmOp::kFin)) {
    FbKeep(p, ByteSpan(rndv_[index].fin.data(), rndv_[index].fin_len), nullptr, 0);
  }
  return st;
}

void RdmCore::FlushFins(Peer& p, Via via) {
  auto& wait = p.fin_wait[static_cast<size_t>(via)];
  while (!wait.empty()) {
    // Off the queue before the post: a post may complete work at once and
    // bring us back here.
    const uint32_t index = wait.front();
    wait.pop_front();
    const qp::QpStatus st = PostFin(p, via, index);
    if (st == qp::QpStatus::kQueueFull) {
      wait.push_front(index);
      return;
    }
    if (st != qp::QpStatus::kOk) {
      rndv_[index].used = false;
      rndv_free_.push_back(index);
    }
  }
}

void RdmCore::ScheduleFlush(Peer& p, Via via) {
  const auto v = static_cast<size_t>(via);
  // On the connection also: a credit update to write, or a close to finish.
  const bool credit = via == Via::kRc && p.link != nullptr &&
                      ((p.link->fp != nullptr && p.link->fp->credit_wanted) || p.link->back_got);
  // Link work that waited for room for our SWITCH on RD (SwitchFirst).
  if (via == Via::kRd && p.link != nullptr && !p.tx_on_rc) ScheduleFlush(p, Via::kRc);
  if ((p.read_wait[v].empty() && p.fin_wait[v].empty() && p.write_wait[v].empty() && !credit &&
       !FbWantsRun(p, via)) ||
      !deferred_added_) {
    return;
  }
  flush_.emplace_back(p.id, via);
  engine_.Update(deferred_);
}

void RdmCore::RunDeferred() {
  graveyard_.clear();
  std::vector<std::pair<PeerId, Via>> todo;
  todo.swap(flush_);
  for (const auto& [id, via] : todo) {
    if (Peer* p = PeerById(id); p != nullptr) {
      FlushReads(*p, via);
      FlushFins(*p, via);
      FlushWrites(*p, via);
      FbRun(*p, via);
      if (via == Via::kRc) {
        FlushFpCredit(*p);
        MaybeCloseIdle(*p);
      }
    }
  }
  channel_->AfterPost();
}

void RdmCore::DropFins(Peer& p, Via via) {
  for (const uint32_t index : p.fin_wait[static_cast<size_t>(via)]) {
    if (rndv_[index].used) FreeRndv(index);  // a CTS's receive was failed first
  }
  p.fin_wait[static_cast<size_t>(via)].clear();
}

bool RdmCore::ContinueReads(Peer& p, uint32_t index) {
  RndvOp& op = rndv_[index];
  qp::QueuePair* q = QpOf(p, op.via);
  // A post may find the connection broken: the fall-back has then started
  // this rendezvous again on RD (rdm_core_fallback.cc); this pass is over.
  const Via via0 = op.via;
  if (op.todo > 0 && q != nullptr) {
    const qp::QpStatus sw = SwitchFirst(p, op.via);
    if (!op.used || op.via != via0) return true;       // the post found the link broken
    if (sw == qp::QpStatus::kQueueFull) return false;  // after the RD QP's next completion
    if (sw != qp::QpStatus::kOk) q = nullptr;          // fails below
  }
  // One Read per overlap of a source segment and a sink piece.
  while (op.todo > 0 && op.si < op.src_count && op.di < op.sink_count) {
    const wire::RdmSegment& seg = op.src[op.si];
    const RndvOp::Piece& sink = op.sinks[op.di];
    const uint64_t n = std::min({seg.len - op.s_off, sink.len - op.d_off, op.todo, kMaxReadChunk});
    if (n > 0) {
      qp::ReadWr rd;
      rd.context = Ctx(Kind::kRead, index);
      rd.local_stag = sink.stag;
      rd.local_to = sink.to + op.d_off;
      rd.length = static_cast<uint32_t>(n);
      rd.remote_stag = seg.stag;
      rd.remote_to = seg.to + op.s_off;
      const qp::QpStatus st = q != nullptr ? q->PostRead(rd) : qp::QpStatus::kBadState;
      if (!op.used || op.via != via0) return true;
      if (st == qp::QpStatus::kQueueFull) {
        Kick(p, op.via);
        return false;  // the rest when the send queue has room
      }
      if (st != qp::QpStatus::kOk) {
        op.failed = true;
        op.err = st == qp::QpStatus::kBadState ? ECONNRESET : EIO;
        op.todo = 0;
        break;
      }
      ++op.reads_left;
      op.todo -= n;
      op.s_off += n;
      op.d_off += n;
    }
    if (op.s_off == seg.len) {
      ++op.si;
      op.s_off = 0;
    }
    if (op.d_off == sink.len) {
      ++op.di;
      op.d_off = 0;
    }
  }
  op.todo = 0;
  Kick(p, op.via);
  if (op.reads_left == 0) FinishRendezvous(index);
  return true;
}

void RdmCore::FlushReads(Peer& p, Via via) {
  auto& wait = p.read_wait[static_cast<size_t>(via)];
  while (!wait.empty()) {
    const uint32_t index = wait.front();
    wait.pop_front();
    if (!rndv_[index].used || rndv_[index].todo == 0) continue;  // finished meanwhile
    if (!ContinueReads(p, index)) {
      wait.push_front(index);
      return;
    }
  }
}

void RdmCore::DropReads(Peer& p, Via via) {
  LazyDeque<uint32_t> wait;
  wait.swap(p.read_wait[static_cast<size_t>(via)]);
  for (const uint32_t index : wait) {
    RndvOp& op = rndv_[index];
    if (!op.used || op.todo == 0) continue;
    op.todo = 0;
    op.failed = true;
    op.err = ECONNRESET;
    if (op.reads_left == 0) FinishRendezvous(index);
  }
}

}  // namespace iwarpx::rdm
