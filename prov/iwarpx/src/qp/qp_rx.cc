// Receive side of the QueuePair, driven by wire::FpduReceiver (pull style),
// with read-ahead into the staging buffer (queue_pair.h, "Receive
// read-ahead"). Bytes already staged are always consumed first: the length,
// header, trailer and markers from staging (the header is copied into
// rxf_->hdr and parsed there), staged payload bytes are copied to the destination. Only
// with staging empty is the socket read, with the scatter list
// [rest of the payload -> destination, staging]. Every byte goes through
// Advance() exactly once, from the staging copy or from the destination, so
// the CRC covers it. Completions and queue effects happen only when Advance()
// reports the FPDU complete, i.e. after the CRC was verified.
// Every failed check ends in RxFail(cause): Terminate, flush, close.
#include <algorithm>
#include <cstring>
#include <variant>

#include "qp/queue_pair.h"
#include "wire/markers.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp {

namespace {

// Staging bytes read while a bulk stream is in progress and no payload
// destination is known yet: a trailer, the next length and header, and a
// marker, with room to spare.
constexpr size_t kBulkHeaderRead = 48;

}  // namespace

void QueuePair::ProcessRx() {
  if (rx_running_) return;  // a callback posted a receive: the running loop continues
  if (!rxf_) rxf_ = std::make_unique<RxFpdu>(RxConfig());  // first receive, or after ReleaseIdle
  rx_running_ = true;
  rx_budget_hit_ = false;
  rx_pass_drained_ = false;
  rx_pass_fpdus_ = 0;
  rx_pass_bytes_ = 0;
  if (state_ == QpState::kClosing) {
    DrainClosing();
  } else {
    while (state_ == QpState::kRts && !rx_closed_) {
      if (rx_pass_fpdus_ >= config_.rx_budget_fpdus) {
        rx_budget_hit_ = true;
        break;
      }
      if (!RxStep()) break;
    }
  }
  rx_running_ = false;
}

// Waiting for the peer's close: discard what is staged and what still arrives.
void QueuePair::DrainClosing() {
  rx_stage_head_ = rx_stage_tail_ = 0;
  EnsureStaging();
  while (!rx_closed_) {
    if (rx_pass_bytes_ >= config_.rx_budget_bytes) {
      rx_budget_hit_ = true;
      return;
    }
    const iovec v{rx_stage_.get(), rx_stage_size_};
    const transport::IoResult r = conn_.RecvV(std::span<const iovec>(&v, 1));
    ++rx_stats_.recv_calls;
    if (r.status == transport::IoStatus::kOk && r.bytes > 0) {
      rx_pass_bytes_ += r.bytes;
      if (rx_short_read_drains_ && r.bytes < rx_stage_size_) return;  // empty for now
      continue;
    }
    if (r.status == transport::IoStatus::kWouldBlock || r.status == transport::IoStatus::kOk) {
      return;
    }
    rx_closed_ = true;
    Fire(Event::kLinkDown, wire::term::kLlpStreamLost, {}, 0);
  }
}

bool QueuePair::RxStep() {
  if (rx_hdr_done_ && !rx_dispatched_) {
    const Dispatch d = DispatchHeader();
    if (d != Dispatch::kProceed) return false;
    rx_dispatched_ = true;
    rx_bulk_ = rx_payload_len_ >= kRxBulkThreshold;
  }
  if (rxf_->rx.stage() == wire::FpduReceiver::Stage::kFailed) return false;
  if (rx_stage_head_ < rx_stage_tail_) return RxFromStaging();
  return RxRead();
}

bool QueuePair::HandleIo(const transport::IoResult& r) {
  switch (r.status) {
    case transport::IoStatus::kOk: return r.bytes > 0;
    case transport::IoStatus::kWouldBlock: return false;
    case transport::IoStatus::kError:
      if (framing_ && framing_->refusal()) {
        // The framing refused a message; the association is still up, so
        // the peer gets our Terminate (sctp_framing.h).
        RxFail(*framing_->refusal());
        return false;
      }
      [[fallthrough]];
    case transport::IoStatus::kClosed:
      rx_closed_ = true;
      Fire(Event::kLinkDown, wire::term::kLlpStreamLost, {}, 0);
      return false;
  }
  return false;
}

bool QueuePair::AdvanceRx(ByteSpan bytes) {
  auto step = rxf_->rx.Advance(bytes);
  if (!step.ok()) {
    if (step.error() == wire::WireError::kBadCrc) ++rx_stats_.bad_crc;
    RxFail(wire::TerminateCauseFor(step.error()));
    return false;
  }
  if (step->fpdu_complete) {
    ++rx_pass_fpdus_;
    ++rx_stats_.fpdus;
    RxFpduComplete();
  }
  return state_ == QpState::kRts;
}

bool QueuePair::RxFromStaging() {
  const ByteSpan staged(rx_stage_.get() + rx_stage_head_, rx_stage_tail_ - rx_stage_head_);
  if (rxf_->rx.stage() == wire::FpduReceiver::Stage::kUlpdu) {
    return rx_hdr_done_ ? RxPayloadFromStaging(staged) : RxHeaderBytes(staged);
  }
  // Length, trailer or marker: the receiver keeps what it needs of these.
  const size_t n = std::min(staged.size(), rxf_->rx.Needed());
  rx_stage_head_ += n;
  return AdvanceRx(staged.first(n));
}

bool QueuePair::RxHeaderBytes(ByteSpan staged) {
  const size_t off = rxf_->rx.ulpdu_offset();
  if (rx_hdr_target_ == 0) rx_hdr_target_ = 2;  // DDP and RDMAP control bytes first
  const size_t n = std::min({staged.size(), rxf_->rx.Needed(), rx_hdr_target_ - off});
  std::memcpy(rxf_->hdr.data() + off, staged.data(), n);
  rx_stage_head_ += n;
  if (!AdvanceRx(ByteSpan(rxf_->hdr.data() + off, n))) return false;
  const size_t got = off + n;
  const size_t ulpdu = rxf_->rx.ulpdu_length();
  if (got == 2 && rx_hdr_target_ == 2) {
    // The control bytes say how much header to read before the payload.
    const size_t target = RxHeaderTarget(rxf_->hdr[0], rxf_->hdr[1], ulpdu);
    if (target == 0) {
      RxFail(wire::TerminateCauseFor(wire::WireError::kRdmapBadLength));
      return false;
    }
    rx_hdr_target_ = target;
  }
  if (got < rx_hdr_target_) return true;
  rx_hdr_done_ = true;
  auto seg = wire::ParseSegment(ByteSpan(rxf_->hdr.data(), rx_hdr_target_),
                                wire::ParseOptions{.accept_send_imm = mpa_.send_imm});
  if (!seg.ok()) {
    RxFail(wire::TerminateCauseFor(seg.error()));
    return false;
  }
  rxf_->seg = *seg;
  rx_payload_len_ = ulpdu - rx_hdr_target_;
  rx_payload_done_ = 0;
  return true;
}

size_t QueuePair::RxHeaderTarget(uint8_t ddp_ctrl, uint8_t rdmap_ctrl, size_t ulpdu_len) {
  const bool tagged = (ddp_ctrl & wire::kDdpFlagTagged) != 0;
  const wire::OpcodeInfo* info = wire::FindOpcodeInfo(rdmap_ctrl & wire::kRdmapOpcodeMask);
  size_t target = wire::DdpHeaderSize(tagged);
  if (info != nullptr && !info->payload_allowed) {
    if (ulpdu_len > sizeof(RxFpdu::hdr)) return 0;
    target = ulpdu_len;
  }
  return std::min(target, ulpdu_len);
}

// The destination of payload bytes [offset, offset + len) of the current
// segment as iovecs; returns how many were written (0: no destination).
size_t QueuePair::PayloadIov(size_t offset, size_t len, std::span<iovec> out) const {
  size_t count = 0;
  if (rx_dest_ == RxDest::kTagged) {
    out[count++] = iovec{rx_tagged_ + offset, len};
  } else if (rx_dest_ == RxDest::kRecv) {
    offset += rx_sgl_offset_;
    for (uint8_t i = 0; i < rx_sgl_->count && len > 0 && count < out.size(); ++i) {
      const Sge& s = rx_sgl_->sge[i];
      if (offset >= s.len) {
        offset -= s.len;
        continue;
      }
      const size_t n = std::min(s.len - offset, len);
      out[count++] = iovec{static_cast<uint8_t*>(s.addr) + offset, n};
      len -= n;
      offset = 0;
    }
  }
  return count;
}

bool QueuePair::RxPayloadFromStaging(ByteSpan staged) {
  const size_t n = std::min({staged.size(), rxf_->rx.Needed(), rx_payload_len_ - rx_payload_done_});
  std::array<iovec, kMaxSge> v{};
  const size_t count = PayloadIov(rx_payload_done_, n, v);
  if (count == 0) {
    RxFail(wire::term::kRdmapLocalCatastrophic);  // payload without a destination: a bug
    return false;
  }
  size_t copied = 0;
  for (size_t i = 0; i < count; ++i) {
    std::memcpy(v[i].iov_base, staged.data() + copied, v[i].iov_len);
    copied += v[i].iov_len;
  }
  rx_stage_head_ += n;
  rx_payload_done_ += n;
  rx_stats_.staged_copies += n;
  // The CRC runs over the staged bytes: what came off the wire, even if the
  // destination memory is changed concurrently.
  return AdvanceRx(staged.first(n));
}

// Staging is empty: one RecvV of [rest of the payload -> destination,
// staging]. The staging part is the whole buffer, or, in a bulk stream, just
// enough for the trailer and the next header.
bool QueuePair::RxRead() {
  if (rx_pass_drained_) return false;  // the last RecvV came back short: nothing more now
  if (rx_pass_bytes_ >= config_.rx_budget_bytes) {
    rx_budget_hit_ = true;
    return false;
  }
  rx_stage_head_ = rx_stage_tail_ = 0;
  if (rx_stage_grow_) {
    // Staging is empty here: the larger buffer replaces it with nothing to keep.
    // Without a buffer (ReleaseIdle gave it back) it starts again small.
    rx_stage_grow_ = false;
    rx_stage_size_ = rx_stage_ ? rx_stage_size_ * 2 : config_.rx_staging_initial;
    rx_stage_ = std::make_unique_for_overwrite<uint8_t[]>(rx_stage_size_);
  }
  std::array<iovec, kMaxSge + 1> v{};
  size_t count = 0;
  size_t direct = 0;
  size_t stage_len = rx_stage_size_;
  const bool in_payload = rxf_->rx.stage() == wire::FpduReceiver::Stage::kUlpdu && rx_hdr_done_;
  if (in_payload && rx_payload_done_ < rx_payload_len_) {
    direct = std::min(rxf_->rx.Needed(), rx_payload_len_ - rx_payload_done_);
    count = PayloadIov(rx_payload_done_, direct, std::span<iovec>(v.data(), kMaxSge));
    if (count == 0) {
      RxFail(wire::term::kRdmapLocalCatastrophic);  // payload without a destination: a bug
      return false;
    }
    if (rx_bulk_) {
      // The trailer and the next FPDU's length and header, guessing that it
      // has the same header as this one (the next segment of a message).
      stage_len = wire::PadFor(rxf_->rx.ulpdu_length()) + wire::kFpduCrcSize +
                  wire::kFpduLengthSize + rx_hdr_target_;
      if (rxf_->rx.config().markers) stage_len += wire::kMarkerSize;
    }
  } else if (rx_bulk_) {
    stage_len = kBulkHeaderRead;
  }
  stage_len = std::min(stage_len, rx_stage_size_);
  v[count++] = iovec{rx_stage_.get(), stage_len};
  const transport::IoResult r = conn_.RecvV(std::span<const iovec>(v.data(), count));
  ++rx_stats_.recv_calls;
  if (!HandleIo(r)) return false;
  rx_pass_bytes_ += r.bytes;
  if (rx_short_read_drains_ && r.bytes < direct + stage_len) rx_pass_drained_ = true;
  const size_t got_direct = std::min(r.bytes, direct);
  rx_stage_tail_ = r.bytes - got_direct;
  // A full staging buffer: more was waiting; read more at a time from now on.
  if (rx_stage_tail_ == rx_stage_size_ && rx_stage_size_ < kRxStagingSize) rx_stage_grow_ = true;
  rx_payload_done_ += got_direct;
  rx_stats_.direct_bytes += got_direct;
  size_t left = got_direct;
  for (size_t i = 0; i + 1 < count && left > 0; ++i) {
    const size_t n = std::min(left, v[i].iov_len);
    left -= n;
    if (!AdvanceRx(ByteSpan(static_cast<const uint8_t*>(v[i].iov_base), n))) return false;
  }
  return true;
}

// HoldRequests: everything the peer asks of us stops; responses to our own
// requests, Terminates and the RTR the QP awaits (a zero-length Write) pass.
bool QueuePair::HeldByRequestHold() const {
  if (!hold_requests_) return false;
  switch (rxf_->seg.opcode) {
    case wire::RdmapOpcode::kRdmaReadResponse:
    case wire::RdmapOpcode::kAtomicResponse:
    case wire::RdmapOpcode::kTerminate: return false;
    case wire::RdmapOpcode::kRdmaWrite: return !(awaiting_rtr_ && rx_payload_len_ == 0);
    default: return true;
  }
}

QueuePair::Dispatch QueuePair::DispatchHeader() {
  if (HeldByRequestHold()) {
    rx_held_ = true;
    return Dispatch::kBlock;  // HoldRequests(false) resumes here
  }
  switch (rxf_->seg.opcode) {
    case wire::RdmapOpcode::kRdmaWrite: return DispatchTagged(false);
    case wire::RdmapOpcode::kRdmaReadResponse: return DispatchTagged(true);
    case wire::RdmapOpcode::kSend:
    case wire::RdmapOpcode::kSendWithInvalidate:
    case wire::RdmapOpcode::kSendWithSe:
    case wire::RdmapOpcode::kSendWithSeAndInvalidate: return DispatchSend();
    case wire::RdmapOpcode::kRdmaReadRequest: return DispatchReadRequest();
    case wire::RdmapOpcode::kTerminate: return Dispatch::kProceed;
    case wire::RdmapOpcode::kImmediateData:
    case wire::RdmapOpcode::kImmediateDataWithSe: return DispatchImmediate();
    case wire::RdmapOpcode::kAtomicRequest: return DispatchAtomicRequest();
    case wire::RdmapOpcode::kAtomicResponse: return DispatchAtomicResponse();
  }
  RxFail(wire::term::kRdmapUnexpectedOpcode);
  return Dispatch::kFailed;
}

QueuePair::Dispatch QueuePair::DispatchTagged(bool read_response) {
  const wire::DdpHeader& h = rxf_->seg.ddp;
  const size_t len = rx_payload_len_;
  rx_dest_ = RxDest::kNone;
  if (read_response && framing_) {
    if (DispatchReadResponseSctp() != Dispatch::kProceed) return Dispatch::kFailed;
  } else if (read_response) {
    if (orq_count_ == 0) {
      RxFail(wire::term::kRdmapUnexpectedOpcode);
      return Dispatch::kFailed;
    }
    const SqEntry& e = Sq(orq_[orq_head_]);
    if (e.op != SqOp::kRead) {
      RxFail(wire::term::kRdmapUnexpectedOpcode);  // an Atomic Response is due
      return Dispatch::kFailed;
    }
    if (h.stag != e.local_stag) {
      RxFail(wire::term::kDdpTaggedInvalidStag);
      return Dispatch::kFailed;
    }
    if (h.to != e.local_to + e.rx_done || len > e.length - e.rx_done) {
      RxFail(wire::term::kDdpTaggedBaseBounds);
      return Dispatch::kFailed;
    }
    if (!h.last) rx_read_segment_ = static_cast<uint32_t>(len);
  }
  // A zero-length Write (the RFC 6581 RTR among them) or Read Response places
  // nothing and is not validated.
  if (len == 0) return Dispatch::kProceed;
  auto where =
      stags_.Resolve(h.stag, h.to, len, read_response ? mem::kLocalWrite : mem::kRemoteWrite, pd_);
  if (!where.ok()) {
    RxFail(mem::TaggedSinkCause(where.error()));
    return Dispatch::kFailed;
  }
  rx_tagged_ = *where;
  rx_dest_ = RxDest::kTagged;
  return Dispatch::kProceed;
}

bool QueuePair::RqEmpty() {
  if (rq_head_ != rq_tail_) return false;
  return recv_source_ == nullptr || !recv_source_->Supply(*this) || rq_head_ == rq_tail_;
}

QueuePair::Dispatch QueuePair::DispatchSend() {
  if (framing_) return DispatchSendSctp();
  const wire::DdpHeader& h = rxf_->seg.ddp;
  if (rx_imm_due_) {
    RxFail(wire::term::kRdmapUnexpectedOpcode);  // the announced Immediate Data is due
    return Dispatch::kFailed;
  }
  if (h.msn != rx_msn_send_) {
    RxFail(wire::term::kDdpUntaggedMsnRange);
    return Dispatch::kFailed;
  }
  if (h.mo != rx_send_mo_) {
    RxFail(wire::term::kDdpUntaggedInvalidMo);
    return Dispatch::kFailed;
  }
  if (RqEmpty()) return Dispatch::kBlock;  // stop reading until PostRecv
  const RqEntry& r = rq_[rq_head_ % rq_.size()];
  if (rx_payload_len_ > r.length || h.mo > r.length - rx_payload_len_) {
    RxFail(wire::term::kDdpUntaggedTooLong);
    return Dispatch::kFailed;
  }
  rx_dest_ = RxDest::kRecv;
  rx_sgl_ = &r.sgl;
  rx_sgl_offset_ = h.mo;
  return Dispatch::kProceed;
}

QueuePair::RxMsg* QueuePair::FindRxMsg(uint32_t msn) {
  for (RxMsg& m : *rx_msgs_) {
    if (m.active && m.msn == msn) return &m;
  }
  return nullptr;
}

// SCTP (queue_pair.h, "Streams on SCTP"): the first segment of a message
// claims the next posted receive, a later one continues its message.
QueuePair::Dispatch QueuePair::DispatchSendSctp() {
  const wire::DdpHeader& h = rxf_->seg.ddp;
  RxMsg* m = FindRxMsg(h.msn);
  if (m == nullptr) {
    if (h.mo != 0) {
      RxFail(wire::term::kDdpUntaggedInvalidMo);
      return Dispatch::kFailed;
    }
    if (rq_next_ == rq_tail_) {
      rx_wait_recv_ = true;
      return Dispatch::kBlock;  // stop reading until PostRecv
    }
    for (RxMsg& slot : *rx_msgs_) {
      if (!slot.active) {
        m = &slot;
        break;
      }
    }
    if (m == nullptr) {  // more messages in progress than streams: cannot happen
      RxFail(wire::term::kDdpUntaggedMsnRange);
      return Dispatch::kFailed;
    }
    *m = RxMsg{true, h.msn, rq_next_++, 0};
  } else if (h.mo != m->mo) {  // a reused MSN, or a gap the framing missed
    RxFail(wire::term::kDdpUntaggedInvalidMo);
    return Dispatch::kFailed;
  }
  rx_wait_recv_ = false;
  const RqEntry& r = rq_[m->rq_seq % rq_.size()];
  if (rx_payload_len_ > r.length || h.mo > r.length - rx_payload_len_) {
    RxFail(wire::term::kDdpUntaggedTooLong);
    return Dispatch::kFailed;
  }
  rx_msg_ = m;
  rx_dest_ = RxDest::kRecv;
  rx_sgl_ = &r.sgl;
  rx_sgl_offset_ = h.mo;
  return Dispatch::kProceed;
}

// SCTP: Immediate Data (stream 0 only, one segment) claims a receive too,
// unless it completes a Send with Immediate Data (that Send claimed one).
QueuePair::Dispatch QueuePair::DispatchImmediateSctp() {
  if (FindRxMsg(rxf_->seg.ddp.msn) != nullptr) {
    RxFail(wire::term::kDdpUntaggedMsnRange);
    return Dispatch::kFailed;
  }
  if (rx_imm_due_) return Dispatch::kProceed;
  if (rq_next_ == rq_tail_) {
    rx_wait_recv_ = true;
    return Dispatch::kBlock;
  }
  rx_wait_recv_ = false;
  return Dispatch::kProceed;
}

void QueuePair::CompleteRecvSctp(uint64_t seq, size_t bytes, const RecvInfo& info) {
  RqEntry& r = rq_[seq % rq_.size()];
  r.done = true;
  const uint64_t context = r.context;
  while (rq_head_ < rq_next_ && rq_[rq_head_ % rq_.size()].done) {
    rq_[rq_head_ % rq_.size()].done = false;
    ++rq_head_;
  }
  sink_.OnRecvComplete(context, bytes, info);
}

QueuePair::Dispatch QueuePair::DispatchImmediate() {
  if (framing_) return DispatchImmediateSctp();
  // RFC 7306: QN 0 and the Send MSN sequence; consumes a posted receive.
  const wire::DdpHeader& h = rxf_->seg.ddp;
  if (h.msn != rx_msn_send_ || rx_send_mo_ != 0) {
    RxFail(wire::term::kDdpUntaggedMsnRange);
    return Dispatch::kFailed;
  }
  // After a Send that announced it, the Send's receive (still at the RQ head)
  // takes it: no receive of its own is needed.
  if (rx_imm_due_) return Dispatch::kProceed;
  if (RqEmpty()) return Dispatch::kBlock;
  return Dispatch::kProceed;
}

// Read and Atomic Requests share QN 1 and the inbound queue: the MSN must be
// the next one on that queue and the queue must have room (IRD exceeded is a
// Terminate RDMAP/operation/0x07, as siw answers it).
bool QueuePair::AdmitInboundRequest(uint32_t msn) {
  if (msn != rx_msn_read_) {
    RxFail(wire::term::kDdpUntaggedMsnRange);
    return false;
  }
  if (irq_.empty() && mpa_.ird > 0) irq_.resize(mpa_.ird);  // first one: made on demand
  if (irq_count_ >= irq_.size()) {
    RxFail(wire::term::kRdmapCatastrophicStream);
    return false;
  }
  return true;
}

QueuePair::Dispatch QueuePair::DispatchAtomicRequest() {
  const wire::DdpHeader& h = rxf_->seg.ddp;
  const auto* body = std::get_if<wire::AtomicRequestBody>(&rxf_->seg.body);
  if (body == nullptr) {
    RxFail(wire::term::kRdmapOpUnspecified);
    return Dispatch::kFailed;
  }
  if (!AdmitInboundRequest(h.msn)) return Dispatch::kFailed;
  auto where =
      stags_.Resolve(body->remote_stag, body->remote_to, sizeof(uint64_t), mem::kRemoteAtomic, pd_);
  if (!where.ok()) {
    RxFail(mem::RdmapSourceCause(where.error()));
    return Dispatch::kFailed;
  }
  if ((reinterpret_cast<uintptr_t>(*where) & 7u) != 0) {  // NOLINT
    RxFail(wire::term::kRdmapBaseBounds);                 // std::atomic_ref needs 8-byte alignment
    return Dispatch::kFailed;
  }
  return Dispatch::kProceed;
}

QueuePair::Dispatch QueuePair::DispatchAtomicResponse() {
  if (framing_) return DispatchAtomicResponseSctp();
  const wire::DdpHeader& h = rxf_->seg.ddp;
  const auto* body = std::get_if<wire::AtomicResponseBody>(&rxf_->seg.body);
  if (body == nullptr || orq_count_ == 0 || Sq(orq_[orq_head_]).op != SqOp::kAtomic ||
      body->original_request_id != static_cast<uint32_t>(orq_[orq_head_])) {
    RxFail(wire::term::kRdmapUnexpectedOpcode);
    return Dispatch::kFailed;
  }
  if (h.msn != rx_msn_atomic_resp_) {
    RxFail(wire::term::kDdpUntaggedMsnRange);
    return Dispatch::kFailed;
  }
  return Dispatch::kProceed;
}

QueuePair::Dispatch QueuePair::DispatchReadRequest() {
  const wire::DdpHeader& h = rxf_->seg.ddp;
  const auto* body = std::get_if<wire::ReadRequestBody>(&rxf_->seg.body);
  if (body == nullptr) {
    RxFail(wire::term::kRdmapOpUnspecified);
    return Dispatch::kFailed;
  }
  if (!AdmitInboundRequest(h.msn)) return Dispatch::kFailed;
  if (body->read_size == 0) return Dispatch::kProceed;
  // Checked now so a bad request is refused at once; checked again per Read
  // Response FPDU at send time (the region may go away in between).
  auto where =
      stags_.Resolve(body->source_stag, body->source_to, body->read_size, mem::kRemoteRead, pd_);
  if (!where.ok()) {
    RxFail(mem::RdmapSourceCause(where.error()));
    return Dispatch::kFailed;
  }
  return Dispatch::kProceed;
}

void QueuePair::RxFpduComplete() {
  const wire::DdpHeader& h = rxf_->seg.ddp;
  switch (rxf_->seg.opcode) {
    case wire::RdmapOpcode::kSend:
    case wire::RdmapOpcode::kSendWithInvalidate:
    case wire::RdmapOpcode::kSendWithSe:
    case wire::RdmapOpcode::kSendWithSeAndInvalidate: {
      if (framing_) {
        RxMsg& m = *rx_msg_;
        m.mo += rx_payload_len_;
        if (!h.last) break;
        if (rxf_->seg.info().carries_invalidate && !stags_.Invalidate(h.rsvd_ulp1_4, pd_)) {
          RxFail(wire::term::kRdmapCannotInvalidateOp);
          return;
        }
        m.active = false;
        if (rxf_->seg.send_imm_follows()) {
          // Send with Immediate Data: its receive completes with the Immediate
          // Data that follows on stream 0 (the sender keeps both there).
          if (rx_imm_due_) {
            RxFail(wire::term::kDdpUntaggedMsnRange);
            return;
          }
          rx_imm_due_ = true;
          rx_imm_rq_seq_ = m.rq_seq;
          rx_imm_bytes_ = m.mo;
          rx_imm_solicited_ = rxf_->seg.info().solicited_event;
          break;
        }
        RecvInfo info;
        info.solicited = rxf_->seg.info().solicited_event;
        info.invalidated = rxf_->seg.info().carries_invalidate;
        info.invalidated_stag = info.invalidated ? h.rsvd_ulp1_4 : 0;
        CompleteRecvSctp(m.rq_seq, m.mo, info);
        break;
      }
      rx_send_mo_ += rx_payload_len_;
      if (!h.last) break;
      if (rxf_->seg.info().carries_invalidate && !stags_.Invalidate(h.rsvd_ulp1_4, pd_)) {
        RxFail(wire::term::kRdmapCannotInvalidateOp);
        return;
      }
      if (rxf_->seg.send_imm_follows()) {
        // The Send's MSN is used; its receive completes with the Immediate Data.
        rx_imm_due_ = true;
        rx_imm_bytes_ = rx_send_mo_;
        rx_imm_solicited_ = rxf_->seg.info().solicited_event;
        rx_send_mo_ = 0;
        ++rx_msn_send_;
        break;
      }
      const RqEntry r = rq_[rq_head_ % rq_.size()];
      ++rq_head_;
      ++rx_msn_send_;
      const size_t bytes = rx_send_mo_;
      rx_send_mo_ = 0;
      RecvInfo info;
      info.solicited = rxf_->seg.info().solicited_event;
      info.invalidated = rxf_->seg.info().carries_invalidate;
      info.invalidated_stag = info.invalidated ? h.rsvd_ulp1_4 : 0;
      sink_.OnRecvComplete(r.context, bytes, info);
      break;
    }
    case wire::RdmapOpcode::kImmediateData:
    case wire::RdmapOpcode::kImmediateDataWithSe: {
      if (framing_) {
        RecvInfo info;
        info.has_imm = true;
        info.imm = std::get<wire::ImmediateDataBody>(rxf_->seg.body).data;
        info.solicited = rxf_->seg.info().solicited_event;
        if (rx_imm_due_) {  // the Send before it claimed the receive
          info.send_imm = true;
          info.solicited = info.solicited || rx_imm_solicited_;
          const size_t bytes = rx_imm_bytes_;
          rx_imm_due_ = false;
          rx_imm_bytes_ = 0;
          rx_imm_solicited_ = false;
          CompleteRecvSctp(rx_imm_rq_seq_, bytes, info);
          break;
        }
        CompleteRecvSctp(rq_next_++, 0, info);
        break;
      }
      const RqEntry r = rq_[rq_head_ % rq_.size()];
      ++rq_head_;
      ++rx_msn_send_;
      RecvInfo info;
      info.has_imm = true;
      info.imm = std::get<wire::ImmediateDataBody>(rxf_->seg.body).data;
      info.solicited = rxf_->seg.info().solicited_event;
      size_t bytes = 0;
      if (rx_imm_due_) {
        info.send_imm = true;
        info.solicited = info.solicited || rx_imm_solicited_;
        bytes = rx_imm_bytes_;
        rx_imm_due_ = false;
        rx_imm_bytes_ = 0;
        rx_imm_solicited_ = false;
      }
      sink_.OnRecvComplete(r.context, bytes, info);
      break;
    }
    case wire::RdmapOpcode::kRdmaWrite:
      if (h.last && rx_dest_ == RxDest::kTagged) sink_.OnRemoteWrite(h.stag);
      break;
    case wire::RdmapOpcode::kRdmaReadResponse: {
      if (framing_) {
        if (!FinishReadResponseSctp()) return;
        break;
      }
      const uint64_t seq = orq_[orq_head_];
      SqEntry& e = Sq(seq);
      e.rx_done += rx_payload_len_;
      if (!h.last) break;
      if (e.rx_done != e.length) {
        RxFail(wire::term::kDdpTaggedBaseBounds);
        return;
      }
      orq_head_ = (orq_head_ + 1) % orq_.size();
      --orq_count_;
      CompleteSq(seq);
      break;
    }
    case wire::RdmapOpcode::kRdmaReadRequest: {
      const auto& body = std::get<wire::ReadRequestBody>(rxf_->seg.body);
      IrqEntry& q = irq_[(irq_head_ + irq_count_) % irq_.size()];
      q = IrqEntry{};
      q.sink_stag = body.sink_stag;
      q.sink_to = body.sink_to;
      q.source_stag = body.source_stag;
      q.source_to = body.source_to;
      q.length = body.read_size;
      q.done = 0;
      ++irq_count_;
      ++rx_msn_read_;
      break;
    }
    case wire::RdmapOpcode::kAtomicRequest: {
      IrqEntry& q = irq_[(irq_head_ + irq_count_) % irq_.size()];
      q = IrqEntry{};
      q.atomic = true;
      q.request = std::get<wire::AtomicRequestBody>(rxf_->seg.body);
      ++irq_count_;
      ++rx_msn_read_;
      break;
    }
    case wire::RdmapOpcode::kAtomicResponse: {
      // SCTP: the matched slot, done in place (qp_orq_sctp.cc); TCP: the head.
      const size_t slot = framing_ ? rx_orq_slot_ : orq_head_;
      const uint64_t seq = orq_[slot];
      SqEntry& e = Sq(seq);
      const uint64_t word = std::get<wire::AtomicResponseBody>(rxf_->seg.body).original_remote_data;
      ++rx_msn_atomic_resp_;
      if (!framing_) {
        orq_head_ = (orq_head_ + 1) % orq_.size();
        --orq_count_;
      }
      if (e.xor_loop && (word & e.compare_mask) != e.compare) {
        // Missed: the lane held another value; guess that one next.
        e.compare = word & e.compare_mask;
        e.operand = (e.compare ^ e.xor_operand) & e.compare_mask;
        xor_retry_ = true;
        if (framing_) {
          orq_state_[slot] = OrqSlot::kRetired;
          RetireOrqSctp();
        }
        break;
      }
      if (e.xor_loop) xor_busy_ = false;
      if (e.result != nullptr) {
        if (e.result_size == 4) {
          const auto lane = static_cast<uint32_t>(word >> e.result_shift);
          std::memcpy(e.result, &lane, sizeof(lane));
        } else {
          std::memcpy(e.result, &word, sizeof(word));
        }
      }
      if (framing_) {
        orq_state_[slot] = OrqSlot::kDone;
        RetireOrqSctp();
        break;
      }
      CompleteSq(seq);
      break;
    }
    case wire::RdmapOpcode::kTerminate: {
      const auto& view = std::get<wire::TerminateBodyView>(rxf_->seg.body);
      auto th = wire::DecodeTerminate(view.bytes);
      const wire::TermCause cause = th.ok() ? th->cause : wire::term::kRdmapOpUnspecified;
      ResetRxFpdu();
      Fire(Event::kTermReceived, cause, {}, 0);
      return;
    }
    default: break;
  }
  ResetRxFpdu();
  if (awaiting_rtr_ || tx_held_) {
    awaiting_rtr_ = false;
    tx_held_ = false;
    MarkEstablished();
  }
  ProcessTx();
}

void QueuePair::RxFail(wire::TermCause cause) {
  const size_t have =
      rx_hdr_done_ ? rx_hdr_target_ : std::min(rxf_->rx.ulpdu_offset(), rx_hdr_target_);
  const size_t seg_len = rxf_->whole_len != 0      ? rxf_->whole_len
                         : rxf_->rx.length_known() ? rxf_->rx.ulpdu_length()
                                                   : 0;
  Fire(Event::kLocalError, cause, ByteSpan(rxf_->hdr.data(), have), seg_len);
}

void QueuePair::ResetRxFpdu() {
  rx_hdr_target_ = 0;
  rx_hdr_done_ = false;
  rx_dispatched_ = false;
  rx_payload_len_ = 0;
  rx_payload_done_ = 0;
  rx_dest_ = RxDest::kNone;
  rx_tagged_ = nullptr;
  rx_sgl_ = nullptr;
  rx_msg_ = nullptr;
  rx_wait_recv_ = false;
}

}  // namespace iwarpx::qp
