// Transmit side, whole Sends (queue_pair.h SendWhole): on a connection that
// carries each FPDU as a message of its own (an RD stream), a Send that fits
// one segment, posted while the QP owes nothing else, is encoded and handed
// over as one ULPDU: no send-queue entry, no FPDU image (length prefix, pad,
// CRC field) for the stream to take apart again, no batch. It is the FPDU
// BuildSqFpdu would have built next (same MSN, header and payload), and it
// completes as that one would, at once: the connection keeps a copy until the
// peer acknowledges it. Anything else, and a connection that has no room now,
// takes the send queue as before.
#include <array>

#include "qp/queue_pair.h"
#include "wire/ddp.h"
#include "wire/rdmap.h"

namespace iwarpx::qp {

bool QueuePair::SendWhole(const SendWr& wr) {
  if (state_ != QpState::kRts || wr.with_imm || wr.stream != 0 || framing_ || mpa_.crc ||
      mpa_.markers_tx) {
    return false;
  }
  // Nothing queued, built, owed or outstanding: this Send is next on the
  // wire and its completion is next in order.
  if (sq_head_ != sq_tail_ || tx_count_ != 0 || irq_count_ != 0 || orq_count_ != 0 ||
      terminate_queued_ || rtr_pending_ || tx_held_ || write_shut_ || shutdown_after_tx_ ||
      xor_busy_) {
    return false;
  }
  const size_t len = wr.sgl.Length();
  if (len > config_.max_fpdu_payload - wire::kDdpUntaggedHeaderSize) return false;
  std::array<uint8_t, wire::kDdpUntaggedHeaderSize> header{};
  wire::SendParams p;
  p.msn = tx_msn_send_;
  p.mo = 0;
  p.last = true;
  if (!wire::EncodeSendHeader(p, header).ok()) return false;
  std::array<iovec, kMaxSge + 1> v;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  size_t count = 0;
  v[count++] = iovec{header.data(), header.size()};
  for (uint8_t i = 0; i < wr.sgl.count; ++i) {
    if (wr.sgl.sge[i].len != 0) v[count++] = iovec{wr.sgl.sge[i].addr, wr.sgl.sge[i].len};
  }
  const transport::IoResult r = conn_.SendWhole(std::span<const iovec>(v.data(), count));
  if (r.status != transport::IoStatus::kOk) return false;  // PostSq's path retries or fails it
  ++tx_msn_send_;
  ++tx_stats_.fpdus;
  tx_stats_.payload_bytes += len;
  if ((wr.flags & kWrSignaled) != 0) sink_.OnSendComplete(wr.context);
  return true;
}

}  // namespace iwarpx::qp
