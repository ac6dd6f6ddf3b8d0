// MPA connection-setup negotiation: from a local policy and the peer's
// decoded frame to the Reply to send and the parameters both ends will use
// (RFC 5044 §7.1 startup rules, RFC 6581 enhanced establishment; summary in
// shared/WIRE.md §1, §1.2).
//
// Contract:
// * Pure functions of their arguments: no I/O, no clock, no allocation, no
//   shared state; callable from any thread. Frames returned here view the
//   private-data spans the caller passed in (or the peer frame's views), so
//   they are valid only while those buffers are.
// * The exchange, with mpa.h doing the bytes:
//     initiator: MakeMpaRequest() -> encode, send; decode the Reply with
//                MpaLimitsFor(policy) -> ProcessMpaReply() -> MpaOutcome.
//     responder: decode the Request with MpaLimitsFor(policy) ->
//                RespondToMpaRequest() -> send the Reply it built; if
//                accepted, use its MpaOutcome, else close the stream.
//                MakeMpaRejectReply() is for a ULP that refuses on its own.
// * Errors. A Result error from MakeMpaRequest/RespondToMpaRequest/
//   MakeMpaRejectReply is always a local fault (kInvalidArgument: policy
//   invalid or frame of the wrong kind; kMpaPrivateDataTooLong: the ULP's
//   private data does not fit the policy limit). A peer-caused refusal by the
//   responder is not a Result error: it is MpaResponse::accepted == false with
//   the reason and an R=1 Reply to send. ProcessMpaReply errors are
//   peer-caused except kInvalidArgument:
//     kMpaRejected          the Reply has R=1; the caller still holds the decoded
//                           Reply, whose private_data is the peer's reason
//     kMpaBadRevision       Reply revision above the one we sent
//     kMpaBadIrdOrd         we sent rev 2 + IRD/ORD; a rev-2 Reply lacks it
//     kMpaMarkersRefused    peer set M and policy.insert_markers is false
//     kMpaCrcRefused        peer set C and policy refuses CRC (never by default)
//     kMpaInsufficientIrd   see "IRD/ORD" below (LLP Terminate code 0x06)
//     kMpaNoMatchingRtr     see "RTR" below (LLP Terminate code 0x07)
//   After an accepted Reply the stream is in FPDU mode, so an initiator that
//   fails here sends the Terminate that TerminateCauseFor() names (0x04 for
//   the generic cases) and closes; after kMpaRejected it just closes.
//
// Rules (RFC 5044 §7.1.1/§7.1.2, RFC 6581):
// * Revision: the Request carries policy.max_revision; the responder answers
//   min(request, own max). A rev-2 initiator accepts a rev-1 Reply and falls
//   back to RFC 5044 rules. A rev-2 Request we send is always enhanced; a
//   Reply carries the IRD/ORD block iff the Request did and we answer rev 2.
// * CRC: on in both directions if either frame has C=1 (C_req | C_rep). Asking
//   (want_crc) is therefore the same as requiring, so there is no separate
//   "CRC may not be off" knob. accept_peer_crc=false (Linux siw's crc_strict)
//   refuses a peer that asks; it contradicts want_crc and is invalid with it.
// * Markers are per direction: M=1 in a frame means "insert markers toward
//   me". markers_tx = peer's M (refused with kMpaMarkersRefused unless
//   insert_markers); markers_rx = our own M.
// * IRD/ORD (rev 2 only). Each side's ORD must not exceed the peer's IRD, and
//   only the owner of a value adjusts it:
//   - a side lowers its own ORD to the peer's IRD; if that falls below
//     policy.min_ord it is "insufficient IRD": the responder rejects (R=1,
//     reason kMpaInsufficientIrd), the initiator fails with it (Terminate 0x06);
//   - a side raises its own IRD to the peer's ORD, up to policy.max_ird. The
//     responder never rejects for this: it advertises what it can and the
//     initiator lowers its ORD. A Reply whose ORD exceeds what the initiator
//     can raise its IRD to breaks the responder's duty (ORD <= our IRD) and is
//     kMpaInsufficientIrd at the initiator.
//   0x3FFF (kMpaNoIrdOrd) from the peer means "no value": an absent IRD does
//   not limit our ORD, an absent ORD needs no IRD (the peer must fit ours).
//   With rev 1 nothing is exchanged: ird/ord are the policy's own values and
//   the ULP must agree on them itself (e.g. [MS-SMBD]'s 8-byte private data).
// * RTR (rev 2 peer-to-peer; both frames P2P). The initiator offers
//   policy.rtr_types (Read only if its ORD >= 1); the responder picks exactly
//   one from offered & its own rtr_types, preferring Write > Read > Send, with
//   Read only if min(initiator ORD, responder IRD) >= 1 (the zero-length Read
//   needs a slot on both ends). No common type: the responder rejects with
//   kMpaNoMatchingRtr. A responder whose policy has p2p off answers P2P=0 and
//   both fall back to the client/server rule. The initiator takes the most
//   preferred type of Reply RTR bits & offered: Intel nes/i40iw/irdma always set
//   the Send bit in word0 next to the type they chose, and Send ranks last.
//   A Reply with P2P=1 that we did not ask for, or with no usable type, is
//   kMpaNoMatchingRtr. RTR bits in a frame without P2P are ignored.
// * Send with Immediate Data (iwarpx extension, docs/wire.md; rev 2 only):
//   with policy.offer_send_imm a rev-2 Request carries kMpaFlagSendImm; the
//   responder answers it in an accepting rev-2 Reply iff the Request carried
//   it and its own policy offers it (never in a reject). MpaOutcome::send_imm
//   is true only when both frames carried it: a standard peer ignores the
//   reserved bit and answers without it, so the extension is off. A Reply
//   with the bit to a Request without it is not an error (the bit is ignored,
//   as RFC 5044 wants for reserved bits).
// * Who sends first: without RTR (rev 1 or no P2P) the initiator's ULP must
//   send the first FPDU and the responder may transmit nothing until it has
//   received one. With RTR the initiator's provider sends the zero-length RTR
//   as its first FPDU; the responder transmits nothing and reports the
//   connection established only once the RTR has arrived.
#pragma once

#include <cstdint>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"
#include "wire/mpa.h"

namespace iwarpx::wire {

enum class MpaRole : uint8_t { kInitiator, kResponder };

// Largest IRD/ORD a policy may use: 0x3FFF on the wire means "no value".
inline constexpr uint16_t kMpaMaxIrdOrdValue = kMpaNoIrdOrd - 1;

struct MpaPolicy {
  uint8_t max_revision = kMpaRevision2;  // 1 or 2
  bool want_crc = true;                  // set C
  bool accept_peer_crc = true;           // false: refuse a peer that sets C
  bool want_markers = false;             // set M (ask the peer to insert markers)
  bool insert_markers = false;           // agree to insert markers for a peer's M
  uint16_t ird = 16;                     // inbound Read depth we offer
  uint16_t max_ird = 16;                 // how far we can raise ird for the peer's ORD
  uint16_t ord = 16;                     // outbound Read depth we want
  uint16_t min_ord = 0;                  // smallest ORD the ULP can live with
  bool p2p = true;                       // offer (initiator) / accept (responder) RTR
  // Initiator: the RTR types we can send; responder: the types we accept.
  MpaRtrMask rtr_types = RtrBit(MpaRtr::kWrite) | RtrBit(MpaRtr::kRead);
  // Limit on PD_Length (IRD/ORD block included) of frames we send and accept.
  uint16_t max_private_data = kMpaMaxPrivateData;
  // Offer (initiator) / accept (responder) the iwarpx Send with Immediate
  // Data extension (kMpaFlagSendImm; rev 2 only).
  bool offer_send_imm = false;
};

// What the connection uses after a successful exchange, seen from one side.
struct MpaOutcome {
  MpaRole role = MpaRole::kInitiator;
  uint8_t revision = kMpaRevision1;
  bool enhanced = false;             // both frames carried IRD/ORD blocks
  bool crc = false;                  // CRC32c generated and checked in both directions
  bool markers_tx = false;           // we insert markers toward the peer
  bool markers_rx = false;           // the peer inserts markers toward us
  uint16_t ird = 0;                  // inbound Read Requests we must be able to hold
  uint16_t ord = 0;                  // outbound Read Requests we may have outstanding
  uint16_t peer_ird = kMpaNoIrdOrd;  // as the peer advertised (kMpaNoIrdOrd: none)
  uint16_t peer_ord = kMpaNoIrdOrd;
  bool p2p = false;                        // RTR handshake in use
  MpaRtr rtr = MpaRtr::kNone;              // exactly one type iff p2p
  bool send_rtr = false;                   // initiator: the first FPDU is the zero-length `rtr`
  bool initiator_ulp_sends_first = false;  // no RTR: client/server start rule
  bool hold_tx_until_first_fpdu = false;   // responder: send nothing before the
                                           // initiator's first FPDU arrives
  bool established_after_rtr = false;      // responder: report established on RTR
  bool send_imm = false;                   // both frames carried kMpaFlagSendImm
  // SCTP only (wire/sctp_session_negotiate.h): both session messages carried
  // kSctpSessionFlagUnorderedReadResp, so Read Responses may go unordered.
  bool sctp_unordered_read_resp = false;
  ByteSpan peer_private_data;  // the peer's ULP private data (a view)
};

// The responder's answer to a Request.
struct MpaResponse {
  bool accepted = false;
  WireError reason = WireError::kInvalidArgument;  // why, when !accepted
  MpaFrame reply;      // to encode and send: accept (R=0) or reject (R=1)
  MpaOutcome outcome;  // valid when accepted
};

// True if `policy` is usable: revision 1 or 2; ird <= max_ird and
// min_ord <= ord, all <= kMpaMaxIrdOrdValue; rtr_types within kMpaRtrAll and
// non-empty when p2p; not (want_crc && !accept_peer_crc); a rev-2 policy's
// private-data limit leaves room for the 4-byte IRD/ORD block.
bool IsValidMpaPolicy(const MpaPolicy& policy);

// Decoder limits matching the policy.
MpaLimits MpaLimitsFor(const MpaPolicy& policy);

// The RTR types an initiator with `policy` offers (Read only if ord >= 1).
MpaRtrMask MpaOfferedRtr(const MpaPolicy& policy);

// The most preferred type in `candidates` (Write > Read > Send), or kNone.
MpaRtr MpaPreferredRtr(MpaRtrMask candidates);

// Initiator: the Request for `policy` carrying the ULP's private data.
// kInvalidArgument for an invalid policy or a P2P policy with no type to
// offer; kMpaPrivateDataTooLong if the data does not fit the policy limit.
Result<MpaFrame, WireError> MakeMpaRequest(const MpaPolicy& policy, ByteSpan ulp_private_data);

// Responder: negotiates `request` (a decoded Request) against `policy`.
// `reply_private_data` goes into an accepting Reply; a protocol reject carries
// no private data.
Result<MpaResponse, WireError> RespondToMpaRequest(const MpaPolicy& policy, const MpaFrame& request,
                                                   ByteSpan reply_private_data);

// Responder: a reject Reply (R=1) to `request` carrying the ULP's reason.
Result<MpaFrame, WireError> MakeMpaRejectReply(const MpaPolicy& policy, const MpaFrame& request,
                                               ByteSpan ulp_private_data);

// Initiator: the outcome of the Reply to the Request MakeMpaRequest(policy, ...)
// built. Errors as listed in the header comment.
Result<MpaOutcome, WireError> ProcessMpaReply(const MpaPolicy& policy, const MpaFrame& reply);

}  // namespace iwarpx::wire
