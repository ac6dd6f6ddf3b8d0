// RdmCore's copy-based rendezvous (seed 004 §3.2; docs/design.md "Copy
// fallback", docs/wire.md §3.10; the contract is in rdm_core.h): RTS (C) ->
// the matched receiver's CTS (C) naming the bytes it takes and its largest
// fragment -> the sender's DATA Sends, each copied into the receive buffer
// at its offset. It needs no registration, so it also carries what a
// zero-copy rendezvous cannot: a receiver that cannot register its buffer
// answers a read or write RTS with CTS (C), and a sender that cannot
// register its buffer sends RTS (C) in the first place.
//
// Completion: the receive completes when its last byte arrived; the send
// when the Send of its last DATA completed (every earlier one did before, in
// QP order), as an EAGER send does: the data has then left the caller's
// buffer for the reliable stream, and a FIN would cost the receiver a Send
// and the sender a round trip for nothing the stream does not already
// guarantee. A QP that fails before fails the send (its error completions).
//
// Bytes from the network are untrusted: a DATA must name a copy rendezvous
// of its peer and QP that waits for data, start where the previous one
// ended and end inside the bytes the receiver took (at most its buffer);
// anything else is a protocol error and nothing is written.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

// --- Receiver ------------------------------------------------------------

void RdmCore::StartCopyRendezvous(Peer& p, uint32_t index, const iovec* iov, size_t count) {
  RndvOp& op = rndv_[index];
  op.copy = true;
  for (size_t i = 0; i < count && op.dst_iov_count < kMaxIov; ++i) {
    if (iov[i].iov_len > 0) op.dst_iov[op.dst_iov_count++] = iov[i];
  }
  wire::RdmHeader cts;
  cts.op = wire::RdmOp::kCts;
  cts.copy = true;
  cts.msg_id = op.msg_id;
  cts.size = op.result.len;  // at most the buffer (StartRendezvous)
  cts.offset = eager_limit();
  auto n = wire::EncodeRdmHeader(cts, op.fin);
  if (!n.ok()) {  // cannot happen: no segments, a fragment size > 0
    const uint64_t context = op.context;
    FreeRndv(index);
    sink_.RecvFailed(context, EIO);
    return;
  }
  op.fin_len = static_cast<uint8_t>(*n);
  op.write_waiting = true;  // until the last byte (the CTS's completion may come first)
  ++counters_.cts_sent;
  const uint64_t context = op.context;
  const RecvResult result = op.result;
  auto& wait = p.fin_wait[static_cast<size_t>(op.via)];
  const qp::QpStatus st = wait.empty() ? PostFin(p, op.via, index) : qp::QpStatus::kQueueFull;
  if (st == qp::QpStatus::kQueueFull) {
    wait.push_back(index);
  } else if (st != qp::QpStatus::kOk) {
    FreeRndv(index);
    sink_.RecvFailed(context, ECONNRESET);
    return;
  }
  if (result.len > 0) return;
  // Nothing to take (an empty buffer or message): done now; the op goes
  // with the CTS's completion (write_waiting kept it until now, also when
  // that completion came from inside PostFin).
  op.write_waiting = false;
  if (op.cts_done) FreeRndv(index);
  sink_.RecvDone(context, result);
}

void RdmCore::OnCopyData(Peer& p, Via via, const wire::RdmMessage& m) {
  const wire::RdmHeader& h = m.header;
  uint32_t index = UINT32_MAX;
  for (uint32_t i = 0; i < rndv_.size(); ++i) {
    const RndvOp& op = rndv_[i];
    if (op.used && op.copy && op.write_waiting && op.peer == p.id && op.via == via &&
        op.msg_id == h.msg_id) {
      index = i;
      break;
    }
  }
  if (index == UINT32_MAX) {
    ProtocolError(p, "DATA for no copy rendezvous of this peer");
    return;
  }
  RndvOp& op = rndv_[index];
  // In order, not empty, and inside what the receiver took (<= its buffer).
  if (h.size == 0 || h.offset != op.received || h.size > op.result.len - op.received) {
    ProtocolError(p, "DATA out of order or beyond the receive buffer");
    return;
  }
  uint64_t skip = h.offset;
  size_t at = 0;
  for (uint8_t k = 0; k < op.dst_iov_count && at < m.payload.size(); ++k) {
    const iovec& v = op.dst_iov[k];
    if (skip >= v.iov_len) {
      skip -= v.iov_len;
      continue;
    }
    const size_t n = std::min<uint64_t>(v.iov_len - skip, m.payload.size() - at);
    std::memcpy(static_cast<uint8_t*>(v.iov_base) + skip, m.payload.data() + at, n);
    at += n;
    skip = 0;
  }
  op.received += h.size;
  if (op.received < op.result.len) return;
  op.write_waiting = false;
  const uint64_t context = op.context;
  const RecvResult result = op.result;
  if (op.cts_done) FreeRndv(index);
  sink_.RecvDone(context, result);
}

// --- Sender --------------------------------------------------------------

void RdmCore::OnCopyCts(Peer& p, Via via, const wire::RdmHeader& h) {
  const uint32_t i = h.msg_id & 0xFFFF;
  if (i >= tx_.size() || !tx_[i].used || tx_[i].kind != Kind::kRts || tx_[i].msg_id != h.msg_id ||
      tx_[i].peer != p.id || tx_[i].via != via || tx_[i].cts_seen || tx_[i].fin_seen ||
      h.size > tx_[i].size) {
    ProtocolError(p, "CTS (C) for no rendezvous of this peer, or larger than the message");
    return;
  }
  TxOp& op = tx_[i];
  if (!op.copy) {
    // The receiver could not register its buffer: our read or write
    // rendezvous goes by copy; the regions for its Reads are not needed.
    for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
    op.stag_count = 0;
    op.write = false;
    op.copy = true;
    ++counters_.copy_msgs;
  }
  op.cts_seen = true;
  op.todo = h.size;
  op.frag_max = std::min<uint64_t>(h.offset, eager_limit());
  if (op.todo == 0) {
    MaybeFinishCopySend(i);
    return;
  }
  // The DATA go out from the pending pass, never from inside this
  // completion ("Send-queue room").
  p.write_wait[static_cast<size_t>(via)].push_back(i);
  ScheduleFlush(p, via);
}

bool RdmCore::ContinueCopy(Peer& p, uint32_t index) {
  TxOp& op = tx_[index];
  qp::QueuePair* q = QpOf(p, op.via);
  auto fail = [&](int err) {
    FailTx(index, err);
    return true;
  };
  if (q == nullptr) return fail(ECONNRESET);
  // (A completion inside PostSend may finish or fail the op: `used`.)
  while (op.used && op.todo > 0 && op.frags_out < kCopyWindow) {
    const uint64_t n = std::min(op.todo, op.frag_max);
    std::array<uint8_t, wire::kRdmHeaderSize>& header = op.frags[op.frag_seq % kCopyWindow];
    wire::RdmHeader d;
    d.op = wire::RdmOp::kData;
    d.msg_id = op.msg_id;
    d.offset = op.c_off;
    d.size = n;
    if (!wire::EncodeRdmHeader(d, header).ok()) return fail(EIO);  // cannot happen
    qp::SendWr wr;
    wr.context = Ctx(Kind::kCopyData, op.msg_id);
    wr.sgl.Add(header.data(), wire::kRdmHeaderSize);
    // The source bytes [c_off, c_off + n): todo <= the pieces' total.
    uint8_t si = op.si;
    uint64_t s_off = op.s_off;
    for (uint64_t left = n; left > 0 && si < op.iov_count;) {
      const iovec& v = op.iov[si];
      const uint64_t take = std::min<uint64_t>(v.iov_len - s_off, left);
      wr.sgl.Add(static_cast<uint8_t*>(v.iov_base) + s_off, take);
      left -= take;
      s_off += take;
      if (s_off == v.iov_len) {
        ++si;
        s_off = 0;
      }
    }
    // Counted before the post: its completion may come from inside it.
    const uint8_t old_si = op.si;
    const uint64_t old_s_off = op.s_off;
    ++op.frags_out;
    ++op.frag_seq;
    op.c_off += n;
    op.todo -= n;
    op.si = si;
    op.s_off = s_off;
    const qp::QpStatus st = q->PostSend(wr);
    if (st != qp::QpStatus::kOk) {
      --op.frags_out;
      --op.frag_seq;
      op.c_off -= n;
      op.todo += n;
      op.si = old_si;
      op.s_off = old_s_off;
    }
    if (st == qp::QpStatus::kQueueFull) {
      Kick(p, op.via);
      return false;  // the rest when the send queue has room
    }
    if (st != qp::QpStatus::kOk) return fail(st == qp::QpStatus::kBadState ? ECONNRESET : EIO);
  }
  Kick(p, op.via);
  return !op.used || op.todo == 0;  // else the window is full: more after a DATA completes
}

RdmCore::TxOp* RdmCore::CopyOpOf(uint64_t ctx) {
  const uint64_t msg_id = IndexOf(ctx);
  const uint64_t i = msg_id & 0xFFFF;
  if (i >= tx_.size() || !tx_[i].used || !tx_[i].copy || tx_[i].msg_id != msg_id) return nullptr;
  return &tx_[i];
}

void RdmCore::OnCopySent(uint64_t ctx) {
  TxOp* op = CopyOpOf(ctx);
  if (op == nullptr || op->frags_out == 0) return;
  --op->frags_out;
  MaybeFinishCopySend(op->msg_id & 0xFFFF);
}

void RdmCore::OnCopyFailed(uint64_t ctx, int err) {
  TxOp* op = CopyOpOf(ctx);
  if (op == nullptr) return;  // failed at its first error already
  FailTx(op->msg_id & 0xFFFF, err);
}

void RdmCore::FallBackToCopy(Peer& p, uint32_t index, const iovec* iov, size_t count) {
  RndvOp& op = rndv_[index];
  for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
  op.stag_count = 0;
  op.sink_count = 0;
  op.failed = false;
  op.err = 0;
  ++counters_.copy_fallbacks;
  StartCopyRendezvous(p, index, iov, count);
}

void RdmCore::FailTx(uint32_t index, int err) {
  TxOp& op = tx_[index];
  const uint64_t context = op.context;
  op.used = false;
  tx_free_.push_back(index);
  sink_.SendFailed(context, err);
}

void RdmCore::MaybeFinishCopySend(uint32_t index) {
  TxOp& op = tx_[index];
  if (!op.used || !op.copy || !op.sent || !op.cts_seen || op.todo != 0 || op.frags_out != 0) {
    return;
  }
  const uint64_t context = op.context;
  op.used = false;
  tx_free_.push_back(index);
  sink_.SendDone(context);
}

}  // namespace iwarpx::rdm
