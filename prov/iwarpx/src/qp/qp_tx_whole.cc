// Transmit side, whole Sends, Writes and Read Requests (queue_pair.h
// SendWhole, WriteWhole, ReadWhole): on a connection that carries each FPDU as
// a message of its own (an RD stream), a Send or an RDMA Write that fits one
// segment, or an RDMA Read, posted while the QP owes nothing else, is encoded
// and handed over as one ULPDU: no FPDU image (length prefix, pad, CRC field)
// for the stream to take apart again, no batch. It is the FPDU BuildSqFpdu
// would have built next (same MSN or STag/TO, header and payload). A Send or
// Write completes as that one would, at once (the connection keeps a copy
// until the peer acknowledges it), without a send-queue entry; a Read gets
// the send-queue and ORQ entries BuildSqFpdu would have left, already
// transmitted, and completes at its response as before. Anything else, and a
// connection that has no room now, takes the send queue as before.
#include <array>

#include "qp/queue_pair.h"
#include "wire/ddp.h"
#include "wire/rdmap.h"

namespace iwarpx::qp {

bool QueuePair::WholeAllowed(size_t header_size, size_t payload) const {
  if (state_ != QpState::kRts || framing_ || mpa_.crc || mpa_.markers_tx) return false;
  // Nothing queued, built, owed or outstanding: this ULPDU is next on the
  // wire and its completion is next in order.
  if (sq_head_ != sq_tail_ || tx_count_ != 0 || irq_count_ != 0 || orq_count_ != 0 ||
      terminate_queued_ || rtr_pending_ || tx_held_ || write_shut_ || shutdown_after_tx_ ||
      xor_busy_) {
    return false;
  }
  return payload <= config_.max_fpdu_payload - header_size;
}

bool QueuePair::HandWhole(std::span<const uint8_t> header, const Sgl& sgl) {
  std::array<iovec, kMaxSge + 1> v;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  size_t count = 0;
  v[count++] = iovec{const_cast<uint8_t*>(header.data()), header.size()};  // NOLINT
  for (uint8_t i = 0; i < sgl.count; ++i) {
    if (sgl.sge[i].len != 0) v[count++] = iovec{sgl.sge[i].addr, sgl.sge[i].len};
  }
  const transport::IoResult r = conn_.SendWhole(std::span<const iovec>(v.data(), count));
  if (r.status != transport::IoStatus::kOk) return false;  // PostSq's path retries or fails it
  ++tx_stats_.fpdus;
  tx_stats_.payload_bytes += sgl.Length();
  return true;
}

bool QueuePair::SendWhole(const SendWr& wr) {
  if (wr.with_imm || wr.stream != 0) return false;
  if (!WholeAllowed(wire::kDdpUntaggedHeaderSize, wr.sgl.Length())) return false;
  std::array<uint8_t, wire::kDdpUntaggedHeaderSize> header{};
  wire::SendParams p;
  p.msn = tx_msn_send_;
  p.mo = 0;
  p.last = true;
  if (!wire::EncodeSendHeader(p, header).ok() || !HandWhole(header, wr.sgl)) return false;
  ++tx_msn_send_;
  if ((wr.flags & kWrSignaled) != 0) sink_.OnSendComplete(wr.context);
  return true;
}

bool QueuePair::WriteWhole(const WriteWr& wr) {
  if (wr.with_imm) return false;
  if (!WholeAllowed(wire::kDdpTaggedHeaderSize, wr.sgl.Length())) return false;
  std::array<uint8_t, wire::kDdpTaggedHeaderSize> header{};
  if (!wire::EncodeWriteHeader(wr.remote_stag, wr.remote_to, true, header).ok() ||
      !HandWhole(header, wr.sgl)) {
    return false;
  }
  if ((wr.flags & kWrSignaled) != 0) sink_.OnRdmaComplete(wr.context, WcOp::kWrite);
  return true;
}

bool QueuePair::ReadWhole(const SqEntry& e) {
  std::array<uint8_t, wire::kDdpUntaggedHeaderSize + wire::kReadRequestBodySize> header{};
  if (sq_capacity_ == 0 || !WholeAllowed(header.size(), 0)) return false;
  wire::ReadRequestBody body;
  body.sink_stag = e.local_stag;
  body.sink_to = e.local_to;
  body.read_size = static_cast<uint32_t>(e.length);
  body.source_stag = e.remote_stag;
  body.source_to = e.remote_to;
  const Result<size_t, wire::WireError> n = wire::EncodeReadRequest(tx_msn_read_, body, header);
  if (!n.ok()) return false;
  // The entries the response completes, as BuildSqFpdu leaves them (the send
  // queue is empty: WholeAllowed), in place before the hand-over and taken
  // back if the connection refuses it.
  if (sq_.empty()) GrowSq();
  const uint64_t seq = sq_tail_;
  Sq(seq) = e;
  ++sq_tail_;
  sq_tx_ = sq_tail_;
  PushOrq(seq);
  if (!HandWhole(std::span<const uint8_t>(header.data(), *n), Sgl{})) {
    --orq_count_;
    sq_tail_ = seq;
    sq_tx_ = seq;
    return false;
  }
  ++tx_msn_read_;
  return true;
}

}  // namespace iwarpx::qp
