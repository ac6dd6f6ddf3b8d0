#include "wire/sctp_session_negotiate.h"

#include <algorithm>

namespace iwarpx::wire {
namespace {

// An Initiate/Accept as the MPA frame with the same meaning: enhanced =
// revision 2 with the IRD/ORD block, plain = revision 1.
MpaFrame ToMpaFrame(const SctpSessionMessage& m, MpaFrameKind kind) {
  MpaFrame f;
  f.kind = kind;
  f.revision = m.ird_ord ? kMpaRevision2 : kMpaRevision1;
  if (m.ird_ord) {
    f.ird_ord = MpaIrdOrd{.p2p = false, .ird = m.ird_ord->ird, .ord = m.ird_ord->ord, .rtr = 0};
    f.send_imm = m.send_imm;  // the bit exists only in the block (rev 2)
  }
  f.private_data = m.private_data;
  return f;
}

SctpSessionMessage FromMpaFrame(const MpaFrame& f) {
  SctpSessionMessage m;
  if (f.kind == MpaFrameKind::kRequest) {
    m.function = SctpSessionFunction::kInitiate;
  } else {
    m.function = f.reject ? SctpSessionFunction::kReject : SctpSessionFunction::kAccept;
  }
  // A Reject carries no IRD/ORD block on SCTP.
  if (f.ird_ord && !f.reject) {
    m.ird_ord = SctpIrdOrd{.ird = f.ird_ord->ird, .ord = f.ird_ord->ord};
    m.send_imm = f.send_imm;
  }
  m.private_data = f.private_data;
  return m;
}

// MPA's first-sender and RTR rules do not apply on SCTP (see the header).
MpaOutcome ForSctp(MpaOutcome o) {
  o.crc = false;
  o.markers_tx = false;
  o.markers_rx = false;
  o.p2p = false;
  o.rtr = MpaRtr::kNone;
  o.send_rtr = false;
  o.initiator_ulp_sends_first = false;
  o.hold_tx_until_first_fpdu = false;
  o.established_after_rtr = false;
  return o;
}

WireError AsSctpError(WireError e) {
  return e == WireError::kMpaPrivateDataTooLong ? WireError::kSctpSessionPrivateDataTooLong : e;
}

}  // namespace

MpaPolicy ToMpaPolicy(const SctpSessionPolicy& policy) {
  MpaPolicy p;
  p.max_revision = policy.enhanced ? kMpaRevision2 : kMpaRevision1;
  p.want_crc = false;
  p.accept_peer_crc = true;
  p.want_markers = false;
  p.insert_markers = false;
  p.ird = policy.ird;
  p.max_ird = policy.max_ird;
  p.ord = policy.ord;
  p.min_ord = policy.min_ord;
  p.p2p = false;
  p.rtr_types = 0;
  p.max_private_data = policy.max_private_data;
  p.offer_send_imm = policy.offer_send_imm;
  return p;
}

SctpSessionPolicy FromMpaPolicy(const MpaPolicy& policy) {
  SctpSessionPolicy p;
  p.enhanced = policy.max_revision >= kMpaRevision2;
  p.ird = policy.ird;
  p.max_ird = policy.max_ird;
  p.ord = policy.ord;
  p.min_ord = policy.min_ord;
  p.max_private_data = std::min<uint16_t>(policy.max_private_data, kSctpSessionMaxPrivateData);
  p.offer_send_imm = policy.offer_send_imm;
  return p;
}

Result<SctpSessionMessage, WireError> MakeSctpInitiate(const SctpSessionPolicy& policy,
                                                       ByteSpan ulp_private_data) {
  auto request = MakeMpaRequest(ToMpaPolicy(policy), ulp_private_data);
  if (!request.ok()) return Err{AsSctpError(request.error())};
  SctpSessionMessage m = FromMpaFrame(*request);
  m.unordered_read_resp = policy.offer_unordered_read_resp && m.ird_ord.has_value();
  return m;
}

Result<SctpSessionResponse, WireError> RespondToSctpInitiate(const SctpSessionPolicy& policy,
                                                             const SctpSessionMessage& initiate,
                                                             ByteSpan accept_private_data) {
  if (initiate.function != SctpSessionFunction::kInitiate) return Err{WireError::kInvalidArgument};
  auto response = RespondToMpaRequest(
      ToMpaPolicy(policy), ToMpaFrame(initiate, MpaFrameKind::kRequest), accept_private_data);
  if (!response.ok()) return Err{AsSctpError(response.error())};
  SctpSessionResponse out;
  out.accepted = response->accepted;
  out.reason = response->reason;
  out.answer = FromMpaFrame(response->reply);
  if (out.accepted) {
    out.outcome = ForSctp(response->outcome);
    out.answer.unordered_read_resp = policy.offer_unordered_read_resp &&
                                     initiate.unordered_read_resp && out.answer.ird_ord.has_value();
    out.outcome.sctp_unordered_read_resp = out.answer.unordered_read_resp;
  }
  return out;
}

Result<MpaOutcome, WireError> ProcessSctpAnswer(const SctpSessionPolicy& policy,
                                                const SctpSessionMessage& answer) {
  if (answer.function == SctpSessionFunction::kReject) return Err{WireError::kMpaRejected};
  if (answer.function != SctpSessionFunction::kAccept) return Err{WireError::kInvalidArgument};
  auto outcome = ProcessMpaReply(ToMpaPolicy(policy), ToMpaFrame(answer, MpaFrameKind::kReply));
  if (!outcome.ok()) return Err{outcome.error()};
  MpaOutcome o = ForSctp(*outcome);
  // We set the bit in the Initiate iff we offer it and it was enhanced.
  o.sctp_unordered_read_resp = policy.offer_unordered_read_resp && policy.enhanced &&
                               answer.unordered_read_resp && answer.ird_ord.has_value();
  return o;
}

}  // namespace iwarpx::wire
