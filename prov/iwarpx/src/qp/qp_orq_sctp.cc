// The requester's outbound read queue (ORQ) on SCTP (queue_pair.h, "Read
// Responses on SCTP"; docs/design.md "Streams for Read Responses").
//
// Over TCP every response continues the ORQ head, so qp_rx.cc checks it
// against the head and pops it. On SCTP the responder puts Read Responses on
// the stream of their sink STag, so responses to Reads with different sink
// STags overtake each other. The responses for one sink STag are on one
// ordered stream and the responder answers Reads in request order, so they
// still arrive in ORQ order among themselves: a Read Response belongs to the
// oldest Read with its STag that is not done, and must continue it exactly.
// Atomic Responses stay on stream 0, in order among themselves, and carry the
// request id. An answered entry is marked done in place; the ORQ head pops
// done entries and completes them in ORQ (post) order, so what the
// application sees is the TCP order.
//
// Unordered Read Responses (negotiated in session setup, docs/wire.md §2.2;
// docs/design.md "Unordered Read Responses"): the responder sends them with
// SCTP unordered delivery, so even the responses for one sink STag arrive in
// any order and the segments of one Read too. A response carries only STag
// and TO, so the requester makes that enough: a Read whose sink range
// (STag, [TO, TO + length)) overlaps the range of a Read still outstanding
// waits in the SQ until that one is answered (ReadWaitsSctp; like ORD
// reached, later WRs wait behind it). Every byte of a response then belongs
// to at most one outstanding Read. A segment must lie wholly inside that
// Read and overlap none of its bytes already placed (PlacedRanges), and its
// last flag must sit exactly on the Read's last byte; the Read is done when
// all its bytes were placed, whichever segment came last. Anything else is
// refused before a byte is placed: no Read has the STag (DDP tagged, invalid
// STag; unexpected opcode when no Read is outstanding), the segment is
// outside every Read with the STag, straddles one's end, or overlaps placed
// bytes (DDP tagged, base/bounds). Completion order stays the ORQ's.
//
// Never places a byte outside the matched Read's range, never completes a
// Read short: the checks run before the payload is placed.
#include <memory>
#include <variant>

#include "qp/queue_pair.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp {

void QueuePair::PushOrq(uint64_t seq) {
  if (orq_.empty()) {  // the first Read or Atomic: ORD slots (queue_pair.h, "Memory")
    orq_.resize(ord_);
    if (framing_) orq_state_.assign(ord_, OrqSlot::kPending);
  }
  const size_t slot = (orq_head_ + orq_count_) % orq_.size();
  orq_[slot] = seq;
  if (framing_) orq_state_[slot] = OrqSlot::kPending;
  ++orq_count_;
  if (!mpa_.sctp_unordered_read_resp) return;
  if (!orq_placed_) orq_placed_ = std::make_unique<PlacedRanges>();
  orq_placed_->Clear(slot);
}

bool QueuePair::ReadWaitsSctp(const SqEntry& e) const {
  if (!mpa_.sctp_unordered_read_resp || e.op != SqOp::kRead || e.length == 0) return false;
  for (size_t k = 0; k < orq_count_; ++k) {
    const size_t slot = (orq_head_ + k) % orq_.size();
    if (orq_state_[slot] != OrqSlot::kPending) continue;
    const SqEntry& o = Sq(orq_[slot]);
    if (o.op != SqOp::kRead || o.local_stag != e.local_stag) continue;
    if (e.local_to < o.local_to + o.length && o.local_to < e.local_to + e.length) return true;
  }
  return false;
}

const QueuePair::SqEntry* QueuePair::PendingReadSctp(size_t k, size_t* slot) const {
  *slot = (orq_head_ + k) % orq_.size();
  if (orq_state_[*slot] != OrqSlot::kPending) return nullptr;
  const SqEntry& e = Sq(orq_[*slot]);
  return e.op == SqOp::kRead ? &e : nullptr;
}

QueuePair::Dispatch QueuePair::DispatchReadResponseUnordered() {
  const wire::DdpHeader& h = rxf_->seg.ddp;
  const uint64_t len = rx_payload_len_;
  bool any_read = false;
  bool any_stag = false;
  for (size_t k = 0; k < orq_count_; ++k) {
    size_t slot = 0;
    const SqEntry* read = PendingReadSctp(k, &slot);
    if (read == nullptr) continue;
    const SqEntry& e = *read;
    any_read = true;
    if (e.local_stag != h.stag) continue;
    any_stag = true;
    // The Read containing the segment's first byte (a zero-length segment:
    // a zero-length Read at its TO; no two outstanding Reads overlap).
    const bool starts_inside = len == 0 ? e.length == 0 && h.to == e.local_to
                                        : h.to >= e.local_to && h.to - e.local_to < e.length;
    if (!starts_inside) continue;
    const uint64_t off = h.to - e.local_to;
    const bool fits =
        len <= e.length - off && (len == 0 || orq_placed_->Free(slot, off, off + len));
    if (!fits || h.last != (off + len == e.length) ||
        orq_placed_->size() >= PlacedRanges::kMaxRanges) {
      RxFail(wire::term::kDdpTaggedBaseBounds);
      return Dispatch::kFailed;
    }
    rx_orq_slot_ = slot;
    return Dispatch::kProceed;
  }
  RxFail(!any_read   ? wire::term::kRdmapUnexpectedOpcode
         : !any_stag ? wire::term::kDdpTaggedInvalidStag
                     : wire::term::kDdpTaggedBaseBounds);
  return Dispatch::kFailed;
}

QueuePair::Dispatch QueuePair::DispatchReadResponseSctp() {
  if (mpa_.sctp_unordered_read_resp) return DispatchReadResponseUnordered();
  const wire::DdpHeader& h = rxf_->seg.ddp;
  const size_t len = rx_payload_len_;
  bool any_read = false;
  for (size_t k = 0; k < orq_count_; ++k) {
    size_t slot = 0;
    const SqEntry* read = PendingReadSctp(k, &slot);
    if (read == nullptr) continue;
    const SqEntry& e = *read;
    any_read = true;
    if (e.local_stag != h.stag) continue;
    // The oldest Read for this STag: the segment must continue it, and its
    // last flag must sit exactly on the Read's last byte.
    const bool continues = h.to == e.local_to + e.rx_done && len <= e.length - e.rx_done;
    if (!continues || h.last != (e.rx_done + len == e.length)) {
      RxFail(wire::term::kDdpTaggedBaseBounds);
      return Dispatch::kFailed;
    }
    rx_orq_slot_ = slot;
    return Dispatch::kProceed;
  }
  // No outstanding Read has this STag, or no Read is outstanding at all (a
  // response nobody asked for).
  RxFail(any_read ? wire::term::kDdpTaggedInvalidStag : wire::term::kRdmapUnexpectedOpcode);
  return Dispatch::kFailed;
}

QueuePair::Dispatch QueuePair::DispatchAtomicResponseSctp() {
  const wire::DdpHeader& h = rxf_->seg.ddp;
  const auto* body = std::get_if<wire::AtomicResponseBody>(&rxf_->seg.body);
  for (size_t k = 0; body != nullptr && k < orq_count_; ++k) {
    const size_t slot = (orq_head_ + k) % orq_.size();
    if (orq_state_[slot] != OrqSlot::kPending || Sq(orq_[slot]).op != SqOp::kAtomic) continue;
    if (body->original_request_id != static_cast<uint32_t>(orq_[slot])) break;
    if (h.msn != rx_msn_atomic_resp_) {
      RxFail(wire::term::kDdpUntaggedMsnRange);
      return Dispatch::kFailed;
    }
    rx_orq_slot_ = slot;
    return Dispatch::kProceed;
  }
  RxFail(wire::term::kRdmapUnexpectedOpcode);
  return Dispatch::kFailed;
}

bool QueuePair::FinishReadResponseSctp() {
  const size_t slot = rx_orq_slot_;
  SqEntry& e = Sq(orq_[slot]);
  if (mpa_.sctp_unordered_read_resp) {
    // Byte counting: done when every byte is placed (Dispatch checked that
    // the segment lies inside the Read, on no placed byte).
    const uint64_t off = rxf_->seg.ddp.to - e.local_to;
    if (rx_payload_len_ > 0 && !orq_placed_->Add(slot, off, off + rx_payload_len_)) {
      RxFail(wire::term::kDdpLocalCatastrophic);  // cannot happen: room checked
      return false;
    }
    e.rx_done += rx_payload_len_;
    if (e.rx_done < e.length) return true;
    orq_placed_->Clear(slot);
    orq_state_[slot] = OrqSlot::kDone;
    RetireOrqSctp();
    return true;
  }
  e.rx_done += rx_payload_len_;
  if (!rxf_->seg.ddp.last) return true;
  if (e.rx_done != e.length) {  // cannot happen: checked before placement
    RxFail(wire::term::kDdpTaggedBaseBounds);
    return false;
  }
  orq_state_[slot] = OrqSlot::kDone;
  RetireOrqSctp();
  return true;
}

void QueuePair::RetireOrqSctp() {
  // Each entry leaves the ORQ before its completion is reported: a callback
  // that posts (and pushes a new ORQ entry) sees a consistent queue.
  while (orq_count_ > 0 && orq_state_[orq_head_] != OrqSlot::kPending) {
    const bool report = orq_state_[orq_head_] == OrqSlot::kDone;
    const uint64_t seq = orq_[orq_head_];
    orq_state_[orq_head_] = OrqSlot::kPending;
    orq_head_ = (orq_head_ + 1) % orq_.size();
    --orq_count_;
    if (report) CompleteSq(seq);
  }
}

}  // namespace iwarpx::qp
