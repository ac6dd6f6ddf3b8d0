// Session setup negotiation for iWARP over SCTP (RFC 5043 session
// establishment, RFC 6581 IRD/ORD; sections unverified, docs/wire.md §2.0): from a local policy and
// the peer's decoded PPID-17 message to the message to send and the parameters both ends use. The
// IRD/ORD rules are exactly MPA's (wire/mpa_negotiate.h, the one source of truth): this adapter
// maps session messages onto MPA frames with CRC, markers and peer-to-peer off, runs that
// negotiation and maps back.
//
// Contract:
// * Pure functions, like mpa_negotiate.h; returned messages view the private
//   data the caller passed in (or the peer message's views).
// * Exchange:
//     initiator: MakeSctpInitiate() -> encode, SendMsg(PPID 17); decode the
//                answer -> ProcessSctpAnswer() -> MpaOutcome.
//     responder: decode the Initiate -> RespondToSctpInitiate() -> send its
//                Accept or Reject; if accepted use its outcome.
// * An enhanced policy sends Enhanced Initiate/Accept (IRD/ORD block); a peer
//   that answers a plain Accept is accepted with the policy's own IRD/ORD (the
//   RFC 6581 fallback, as a rev-1 MPA Reply).
// * Send with Immediate Data (iwarpx extension): exactly MPA's rule on the
//   session messages' kSctpSessionFlagSendImm bit. An enhanced Initiate
//   carries it iff policy.offer_send_imm; an accepting Enhanced Accept
//   carries it iff the Initiate did and the responder's policy offers it
//   (never a Reject, never a plain message); MpaOutcome::send_imm iff both
//   did. A peer that does not ask sends and gets the unchanged messages.
// * Unordered Read Responses (iwarpx extension, docs/wire.md §2.2): the same
//   rule on kSctpSessionFlagUnorderedReadResp. An enhanced Initiate carries it
//   iff policy.offer_unordered_read_resp; an accepting Enhanced Accept iff the
//   Initiate did and the responder's policy offers it; the outcome's
//   sctp_unordered_read_resp iff both (on each side: the initiator only
//   believes an Accept when it offered). Never in a Reject or a plain
//   message, so a standard peer (which leaves the bit zero) gets none.
// * The outcome has crc, markers_tx/rx, p2p, send_rtr,
//   initiator_ulp_sends_first and hold_tx_until_first_fpdu all false: SCTP
//   checksums every packet and frames every message, so MPA's CRC, markers and
//   first-sender rule have nothing to do.
// * Errors. From MakeSctpInitiate/RespondToSctpInitiate: kInvalidArgument
//   (invalid policy, or a message that is not an Initiate),
//   kSctpSessionPrivateDataTooLong (private data over the limit).
//   ProcessSctpAnswer: kInvalidArgument when `answer` is neither Accept nor
//   Reject (the caller's state machine should have refused it: it is a
//   protocol error of the peer), kMpaRejected for a Reject (its private data
//   is the reason), kMpaInsufficientIrd as in mpa_negotiate.h.
#pragma once

#include <cstdint>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"
#include "wire/mpa_negotiate.h"
#include "wire/sctp_session.h"

namespace iwarpx::wire {

struct SctpSessionPolicy {
  bool enhanced = true;  // send the RFC 6581 IRD/ORD block
  uint16_t ird = 16;
  uint16_t max_ird = 16;
  uint16_t ord = 16;
  uint16_t min_ord = 0;
  uint16_t max_private_data = kSctpSessionMaxPrivateData;
  // Offer iwarpx Send with Immediate Data (kSctpSessionFlagSendImm; enhanced
  // only, as MPA's offer is rev 2 only).
  bool offer_send_imm = false;
  // Offer to receive (and agree to send) Read Responses unordered
  // (kSctpSessionFlagUnorderedReadResp; enhanced only). Not part of
  // MpaPolicy: FromMpaPolicy leaves it false, the caller sets it.
  bool offer_unordered_read_resp = false;
};

struct SctpSessionResponse {
  bool accepted = false;
  WireError reason = WireError::kInvalidArgument;  // why, when !accepted
  SctpSessionMessage answer;                       // Accept or Reject to send
  MpaOutcome outcome;                              // valid when accepted
};

// The MPA policy the SCTP negotiation runs (CRC, markers, P2P off).
MpaPolicy ToMpaPolicy(const SctpSessionPolicy& policy);
// The session policy an endpoint configured with an MPA policy uses over
// SCTP: its IRD/ORD limits, enhanced (IRD/ORD block) iff it allows MPA
// revision 2, its private-data limit capped at the session's, its Send with
// Immediate Data offer; CRC, markers and RTR have no SCTP counterpart and are
// dropped.
SctpSessionPolicy FromMpaPolicy(const MpaPolicy& policy);

Result<SctpSessionMessage, WireError> MakeSctpInitiate(const SctpSessionPolicy& policy,
                                                       ByteSpan ulp_private_data);

Result<SctpSessionResponse, WireError> RespondToSctpInitiate(const SctpSessionPolicy& policy,
                                                             const SctpSessionMessage& initiate,
                                                             ByteSpan accept_private_data);

Result<MpaOutcome, WireError> ProcessSctpAnswer(const SctpSessionPolicy& policy,
                                                const SctpSessionMessage& answer);

}  // namespace iwarpx::wire
