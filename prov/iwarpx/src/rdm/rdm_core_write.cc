// RdmCore's rendezvous by the RDMA-write handshake (FI_IWARPX_RNDV=write;
// docs/design.md "RDM endpoint", docs/wire.md §3.10; the contract is in
// rdm_core.h): RTS (W) -> CTS naming the receiver's registered buffer ->
// the sender's RDMA Writes and its FIN (W) on the same QP.
//
// Why the FIN (W) may complete the receive: RDMAP places the Writes of a QP
// before it delivers a later Send (RFC 5040 §5.5), on TCP and on the RD
// stream alike, so when the FIN arrives every byte is in place.
#include <algorithm>
#include <cerrno>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

namespace {

constexpr uint64_t kMaxWriteChunk = uint64_t{1} << 30;

}  // namespace

void RdmCore::FreeRndv(uint32_t index) {
  rndv_[index].used = false;
  rndv_free_.push_back(index);
}

// --- Receiver ------------------------------------------------------------

void RdmCore::StartWriteRendezvous(Peer& p, uint32_t index, const iovec* iov, size_t count) {
  RndvOp& op = rndv_[index];
  wire::RdmHeader cts;
  cts.op = wire::RdmOp::kCts;
  cts.msg_id = op.msg_id;
  // The sink pieces, registered for the sender's Writes (and local access).
  RegisterSinks(op, iov, count, mem::kLocalWrite | mem::kRemoteWrite);
  if (op.failed) {
    // Nothing to write into: the sender copies the data over instead
    // (rdm_core_copy.cc).
    FallBackToCopy(p, index, iov, count);
    return;
  }
  for (uint8_t k = 0; k < op.sink_count; ++k) {
    cts.segments[cts.segment_count++] = {op.sinks[k].stag, op.sinks[k].to, op.sinks[k].len};
  }
  for (uint8_t k = 0; k < cts.segment_count; ++k) cts.size += cts.segments[k].len;
  auto n = wire::EncodeRdmHeader(cts, op.fin);
  if (!n.ok()) {  // cannot happen: at most kMaxIov <= 4 segments adding up
    const uint64_t context = op.context;
    FreeRndv(index);
    sink_.RecvFailed(context, EIO);
    return;
  }
  op.fin_len = static_cast<uint8_t>(*n);
  op.write_waiting = true;
  ++counters_.cts_sent;
  auto& wait = p.fin_wait[static_cast<size_t>(op.via)];
  const qp::QpStatus st = wait.empty() ? PostFin(p, op.via, index) : qp::QpStatus::kQueueFull;
  if (st == qp::QpStatus::kQueueFull) {
    wait.push_back(index);
  } else if (st != qp::QpStatus::kOk) {
    const uint64_t context = op.context;
    for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
    FreeRndv(index);
    sink_.RecvFailed(context, ECONNRESET);
  }
}

void RdmCore::OnWritten(Peer& p, Via via, const wire::RdmHeader& h) {
  uint32_t index = UINT32_MAX;
  for (uint32_t i = 0; i < rndv_.size(); ++i) {
    const RndvOp& op = rndv_[i];
    if (op.used && op.write_waiting && !op.copy && op.peer == p.id && op.via == via &&
        op.msg_id == h.msg_id) {
      index = i;
      break;
    }
  }
  const uint64_t asked = index != UINT32_MAX ? rndv_[index].result.len : 0;
  if (index == UINT32_MAX || h.size != (rndv_[index].failed ? 0 : asked)) {
    ProtocolError(p, "FIN (W) for no write rendezvous of this peer, or of another size");
    return;
  }
  RndvOp& op = rndv_[index];
  for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
  op.stag_count = 0;
  op.write_waiting = false;
  const uint64_t context = op.context;
  const RecvResult result = op.result;
  const bool failed = op.failed;
  const int err = op.err;
  if (op.cts_done) FreeRndv(index);
  if (failed) {
    sink_.RecvFailed(context, err);
  } else {
    sink_.RecvDone(context, result);
  }
}

// --- Sender --------------------------------------------------------------

void RdmCore::OnCts(Peer& p, Via via, const wire::RdmHeader& h) {
  const uint32_t i = h.msg_id & 0xFFFF;
  if (i >= tx_.size() || !tx_[i].used || tx_[i].kind != Kind::kRts || !tx_[i].write ||
      tx_[i].msg_id != h.msg_id || tx_[i].peer != p.id || tx_[i].via != via || tx_[i].cts_seen ||
      h.size > tx_[i].size) {
    ProtocolError(p, "CTS for no write rendezvous of this peer, or larger than the message");
    return;
  }
  TxOp& op = tx_[i];
  op.cts_seen = true;
  op.dst = h.segments;
  op.dst_count = h.segment_count;
  op.todo = h.size;
  wire::RdmHeader fin;
  fin.op = wire::RdmOp::kFin;
  fin.write = true;
  fin.msg_id = op.msg_id;
  fin.size = h.size;
  (void)wire::EncodeRdmHeader(fin, op.fin);
  if (!ContinueWrites(p, i)) p.write_wait[static_cast<size_t>(via)].push_back(i);
}

bool RdmCore::ContinueWrites(Peer& p, uint32_t index) {
  TxOp& op = tx_[index];
  qp::QueuePair* q = QpOf(p, op.via);
  auto fail = [&](int err) {
    FailTx(index, err);
    return true;
  };
  if (q == nullptr) return fail(ECONNRESET);
  // A post may find the connection broken: the fall-back (rdm_core_fallback.cc)
  // has then failed this op already, and nothing more goes on that QP.
  const Via via0 = op.via;
  auto gone = [&] { return !op.used || op.via != via0; };
  // One Write per overlap of a source piece and a sink segment.
  while (op.todo > 0 && op.si < op.iov_count && op.di < op.dst_count) {
    const iovec& src = op.iov[op.si];
    const wire::RdmSegment& dst = op.dst[op.di];
    const uint64_t n =
        std::min({src.iov_len - op.s_off, dst.len - op.d_off, op.todo, kMaxWriteChunk});
    if (n > 0) {
      qp::WriteWr wr;
      wr.context = Ctx(Kind::kWrite, index);
      wr.sgl.Add(static_cast<uint8_t*>(src.iov_base) + op.s_off, n);
      wr.remote_stag = dst.stag;
      wr.remote_to = dst.to + op.d_off;
      const qp::QpStatus st = q->PostWrite(wr);
      if (gone()) return true;
      if (st == qp::QpStatus::kQueueFull) {
        Kick(p, op.via);
        return false;  // the rest when the send queue has room
      }
      if (st != qp::QpStatus::kOk) return fail(st == qp::QpStatus::kBadState ? ECONNRESET : EIO);
      op.todo -= n;
      op.s_off += n;
      op.d_off += n;
    }
    if (op.s_off == src.iov_len) {
      ++op.si;
      op.s_off = 0;
    }
    if (op.d_off == dst.len) {
      ++op.di;
      op.d_off = 0;
    }
  }
  if (op.todo != 0) return fail(EPROTO);  // the CTS named more than our pieces hold: checked above
  if (!op.fin_posted) {
    qp::SendWr wr;
    wr.sgl.Add(op.fin.data(), wire::kRdmHeaderSize);
    wr.context = Ctx(Kind::kFinW, index);
    const qp::QpStatus st = q->PostSend(wr);
    if (gone()) return true;
    if (st == qp::QpStatus::kQueueFull) {
      Kick(p, op.via);
      return false;
    }
    if (st != qp::QpStatus::kOk) return fail(st == qp::QpStatus::kBadState ? ECONNRESET : EIO);
    op.fin_posted = true;
  }
  Kick(p, op.via);
  return true;
}

void RdmCore::FlushWrites(Peer& p, Via via) {
  auto& wait = p.write_wait[static_cast<size_t>(via)];
  while (!wait.empty()) {
    const uint32_t index = wait.front();
    wait.pop_front();
    const TxOp& op = tx_[index];
    if (op.used && op.copy) {  // the copy rendezvous's DATA wait here too
      if (!op.cts_seen || op.todo == 0) continue;
      if (!ContinueCopy(p, index)) {
        wait.push_front(index);
        return;
      }
      continue;
    }
    if (!op.used || !op.write || op.fin_posted) continue;
    if (!ContinueWrites(p, index)) {
      wait.push_front(index);
      return;
    }
  }
}

void RdmCore::DropWriteRendezvous(Peer& p, Via via, int err) {
  p.write_wait[static_cast<size_t>(via)].clear();  // their sends fail with the peer's
  for (uint32_t i = 0; i < rndv_.size(); ++i) {
    RndvOp& op = rndv_[i];
    if (!op.used || !op.write_waiting || op.peer != p.id || op.via != via) continue;
    for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
    op.stag_count = 0;
    op.write_waiting = false;
    const uint64_t context = op.context;
    // A dead link reports nothing more, an RD QP flushed its CTS already.
    if (op.cts_done || via == Via::kRc) FreeRndv(i);
    sink_.RecvFailed(context, err);
  }
}

}  // namespace iwarpx::rdm
