// Receive side, whole FPDUs (queue_pair.h TakeWholeFpdu): an RD stream hands
// the QP each in-order datagram's ULPDU in one piece, so the common case (a
// small Send, a Write, a Read Request or Response between FPDUs) needs none
// of the byte-stream machinery: no RecvV copying the FPDU image into
// staging, no FpduReceiver steps for the length, header, payload and
// trailer. The header is parsed and dispatched by the same functions as in
// qp_rx.cc (DispatchHeader and its checks, RxFpduComplete), the payload
// copied to the destination PayloadIov names, so a whole FPDU is checked,
// placed and completed exactly as if it had been read byte by byte. Anything
// out of the ordinary is declined before any state changes and goes through
// the byte-stream path, which reports errors as before.
#include <array>
#include <cstring>
#include <optional>

#include "qp/queue_pair.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp {

bool QueuePair::TakeWholeFpdu(ByteSpan ulpdu) {
  if (rx_running_ || state_ != QpState::kRts || rx_closed_ || framing_ || hold_requests_) {
    return false;
  }
  if (rx_stage_head_ != rx_stage_tail_ || rx_hdr_target_ != 0 || ulpdu.size() < 2) return false;
  if (!rxf_) rxf_ = std::make_unique<RxFpdu>(RxConfig());  // first receive, or after ReleaseIdle
  const wire::FpduRxConfig& rc = rxf_->rx.config();
  if (rc.crc || rc.markers || !rxf_->rx.at_fpdu_boundary()) return false;
  if (recv_source_ != nullptr) {
    const std::optional<wire::PlainSend> send = wire::ParsePlainSend(ulpdu);
    if (send && OfferSend(*send, ulpdu.subspan(wire::kDdpUntaggedHeaderSize))) return true;
  }
  const size_t target = RxHeaderTarget(ulpdu[0], ulpdu[1], ulpdu.size());
  if (target == 0) return false;
  std::memcpy(rxf_->hdr.data(), ulpdu.data(), target);
  auto seg = wire::ParseSegment(ByteSpan(rxf_->hdr.data(), target),
                                wire::ParseOptions{.accept_send_imm = mpa_.send_imm});
  if (!seg.ok()) return false;
  rxf_->seg = *seg;
  rx_hdr_target_ = target;
  rx_hdr_done_ = true;
  rx_payload_len_ = ulpdu.size() - target;
  rx_payload_done_ = 0;
  rxf_->whole_len = ulpdu.size();
  rx_running_ = true;  // a PostRecv from a completion must not read the connection
  const Dispatch d = DispatchHeader();
  if (d == Dispatch::kBlock) {
    // No receive for a Send (requests are never held here): nothing was
    // taken. The byte-stream path reads this FPDU again and stops on it.
    rxf_->whole_len = 0;
    rx_running_ = false;
    ResetRxFpdu();
    return false;
  }
  if (d == Dispatch::kProceed) {
    rx_dispatched_ = true;
    const size_t len = rx_payload_len_;
    rx_bulk_ = len >= kRxBulkThreshold;  // as RxStep: sizes a later byte-stream read
    bool placed = true;
    if (len > 0) {
      std::array<iovec, kMaxSge> v{};
      const size_t count = PayloadIov(0, len, v);
      if (count == 0) {
        RxFail(wire::term::kRdmapLocalCatastrophic);  // payload without a destination: a bug
        placed = false;
      }
      const uint8_t* from = ulpdu.data() + target;
      for (size_t i = 0; i < count; ++i) {
        std::memcpy(v[i].iov_base, from, v[i].iov_len);
        from += v[i].iov_len;
      }
      rx_stats_.staged_copies += len;
    }
    if (placed) {
      rx_payload_done_ = len;
      ++rx_stats_.fpdus;
      rxf_->whole_len = 0;
      RxFpduComplete();
    }
  }
  // kFailed (or a failed placement): RxFail sent the QP to Terminate; the
  // FPDU is consumed, as the byte-stream path would have consumed its header.
  rxf_->whole_len = 0;
  rx_running_ = false;
  return true;
}

bool QueuePair::OfferSend(const wire::PlainSend& s, ByteSpan payload) {
  if (!s.last || s.mo != 0 || s.msn != rx_msn_send_) return false;
  if (rq_head_ != rq_tail_ || rx_imm_due_ || rx_send_mo_ != 0 || awaiting_rtr_ || tx_held_) {
    return false;  // a posted receive takes it in order; or not a plain Send now
  }
  rx_running_ = true;  // as for a completion: a PostRecv from the source must not read
  const bool taken = recv_source_->TakeSend(*this, payload);
  if (taken) {
    ++rx_msn_send_;
    ++rx_stats_.fpdus;
    ++rx_stats_.sends_taken;
    ProcessTx();  // as RxFpduComplete ends
  }
  rx_running_ = false;
  return taken;
}

}  // namespace iwarpx::qp
