// libFuzzer target for MPA negotiation (wire/mpa_negotiate.h).
//
// Input layout:
//   [0..5]   initiator policy, [6..11] responder policy, 6 bytes each:
//              b0  bit0 rev 2 (else 1) | bit1 want_crc | bit2 accept_peer_crc |
//                  bit3 want_markers | bit4 insert_markers | bit5 p2p |
//                  bits6-7 private-data limit {512, 256, 32, 4}
//              b1  rtr_types (low 4 bits; bit 3 is invalid on purpose) |
//                  bit4 offer_send_imm
//              b2  ird, b3 max_ird - ird, b4 ord, b5 min_ord
//   [12]     mode % 3: 0 full exchange (payload split in half = the two ULPs'
//            private data), 1 payload is a Request for the responder,
//            2 payload is a Reply for the initiator
//   [13..]   payload
// Invariants checked (any violation traps):
// * an accepted outcome has revision <= both sides' and <= the peer frame's;
//   CRC on iff either frame has C, and on whenever a side wants it;
//   markers_tx iff the peer set M (and then we agreed to insert); markers_rx
//   iff we set M; in P2P exactly one RTR type, offered by the initiator and
//   accepted by the responder, Read only with read slots; no RTR otherwise;
//   ORD within [min_ord, ord] and <= the peer's IRD; IRD within [ird, max_ird];
//   send_imm only when offered by our policy, carried by both frames, rev 2;
// * the responder's Reply (accept or reject) encodes and decodes back to the
//   same fields; a refusal names an MPA reason;
// * in a full exchange both ends agree on revision, CRC, markers per direction
//   and RTR, and each ORD fits the other's IRD.
// Seeds: corpus/mpa_negotiate/.
#include <array>
#include <cstddef>
#include <cstdint>

#include "wire/mpa.h"
#include "wire/mpa_negotiate.h"

namespace iwarpx::wire {
namespace {

constexpr size_t kPolicyBytes = 6;
constexpr size_t kPrefixBytes = 2 * kPolicyBytes + 1;

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

MpaPolicy PolicyFrom(const uint8_t* b) {
  static constexpr uint16_t kLimits[] = {512, 256, 32, 4};
  MpaPolicy p;
  p.max_revision = (b[0] & 0x01) != 0 ? kMpaRevision2 : kMpaRevision1;
  p.want_crc = (b[0] & 0x02) != 0;
  p.accept_peer_crc = (b[0] & 0x04) != 0;
  p.want_markers = (b[0] & 0x08) != 0;
  p.insert_markers = (b[0] & 0x10) != 0;
  p.p2p = (b[0] & 0x20) != 0;
  p.max_private_data = kLimits[b[0] >> 6];
  p.rtr_types = static_cast<MpaRtrMask>(b[1] & 0x0F);
  p.offer_send_imm = (b[1] & 0x10) != 0;
  p.ird = b[2];
  p.max_ird = static_cast<uint16_t>(b[2] + b[3]);
  p.ord = b[4];
  p.min_ord = b[5];
  return p;
}

bool HasValue(uint16_t v) {
  return v != kMpaNoIrdOrd;
}

bool SingleRtr(MpaRtr r) {
  return r == MpaRtr::kSend || r == MpaRtr::kWrite || r == MpaRtr::kRead;
}

// Invariants of one side's outcome. `own` is the frame this side sent,
// `peer` the one it received.
void CheckOutcome(const MpaOutcome& o, const MpaPolicy& policy, const MpaFrame& own,
                  const MpaFrame& peer) {
  const bool initiator = o.role == MpaRole::kInitiator;
  Check(o.revision == kMpaRevision1 || o.revision == kMpaRevision2);
  Check(o.revision <= policy.max_revision && o.revision <= peer.revision);
  Check(own.crc == policy.want_crc);
  Check(o.crc == (own.crc || peer.crc));
  Check(!policy.want_crc || o.crc);
  Check(o.markers_tx == peer.markers);
  Check(!o.markers_tx || policy.insert_markers);
  Check(o.markers_rx == policy.want_markers && own.markers == policy.want_markers);
  Check(o.peer_private_data.data() == peer.private_data.data() &&
        o.peer_private_data.size() == peer.private_data.size());

  Check(o.ird >= policy.ird && o.ird <= policy.max_ird);
  Check(o.ord <= policy.ord);
  if (o.enhanced) {
    Check(o.revision == kMpaRevision2 && peer.ird_ord && own.ird_ord);
    Check(o.peer_ird == peer.ird_ord->ird && o.peer_ord == peer.ird_ord->ord);
    Check(o.ord >= policy.min_ord);
    Check(!HasValue(o.peer_ird) || o.ord <= o.peer_ird);
    if (initiator) Check(!HasValue(o.peer_ord) || o.peer_ord <= o.ird);
  } else {
    Check(o.peer_ird == kMpaNoIrdOrd && o.peer_ord == kMpaNoIrdOrd);
    Check(o.ird == policy.ird && o.ord == policy.ord);
  }

  if (o.p2p) {
    Check(o.enhanced && policy.p2p && peer.ird_ord->p2p && own.ird_ord->p2p);
    Check(SingleRtr(o.rtr));
    Check((RtrBit(o.rtr) & policy.rtr_types) != 0);
    Check((RtrBit(o.rtr) & peer.ird_ord->rtr) != 0);
    Check((RtrBit(o.rtr) & own.ird_ord->rtr) != 0);
    if (initiator) Check((RtrBit(o.rtr) & MpaOfferedRtr(policy)) != 0);
    if (!initiator) Check(own.ird_ord->rtr == RtrBit(o.rtr));  // exactly one on the wire
    if (o.rtr == MpaRtr::kRead) Check(initiator ? o.ord >= 1 : o.ird >= 1);
  } else {
    Check(o.rtr == MpaRtr::kNone);
  }
  if (o.send_imm) {
    Check(policy.offer_send_imm && own.send_imm && peer.send_imm);
    Check(o.revision == kMpaRevision2);
  }
  Check(o.send_rtr == (initiator && o.p2p));
  Check(o.initiator_ulp_sends_first == !o.p2p);
  Check(o.hold_tx_until_first_fpdu == !initiator);
  Check(o.established_after_rtr == (!initiator && o.p2p));
}

// Encodes `frame` and decodes it back; returns the decoded frame viewing `buf`.
MpaFrame RoundTrip(const MpaFrame& frame, std::array<uint8_t, kMpaMaxFrameSize>& buf) {
  auto n = EncodeMpaFrame(frame, buf);
  Check(n.ok());
  auto d = DecodeMpaFrame(ByteSpan(buf.data(), n.value()), frame.kind);
  Check(d.ok() && d->consumed == n.value());
  const MpaFrame& g = d->frame;
  Check(g.markers == frame.markers && g.crc == frame.crc && g.reject == frame.reject &&
        g.revision == frame.revision && g.send_imm == frame.send_imm &&
        g.ird_ord == frame.ird_ord && g.private_data.size() == frame.private_data.size());
  return g;
}

bool IsMpaRefusal(WireError e) {
  return e == WireError::kMpaMarkersRefused || e == WireError::kMpaCrcRefused ||
         e == WireError::kMpaInsufficientIrd || e == WireError::kMpaNoMatchingRtr;
}

// Runs the responder on a decoded Request; returns the accepted outcome's
// reply via `reply_out` (a round-tripped copy viewing `buf`).
bool Respond(const MpaPolicy& policy, const MpaFrame& request, ByteSpan reply_pd,
             std::array<uint8_t, kMpaMaxFrameSize>& buf, MpaFrame& reply_out,
             MpaOutcome& outcome_out) {
  auto r = RespondToMpaRequest(policy, request, reply_pd);
  if (!r.ok()) {
    Check(r.error() == WireError::kInvalidArgument ||
          r.error() == WireError::kMpaPrivateDataTooLong);
    Check(r.error() != WireError::kInvalidArgument || !IsValidMpaPolicy(policy));
    return false;
  }
  const MpaResponse& resp = r.value();
  Check(resp.reply.kind == MpaFrameKind::kReply);
  Check(resp.reply.revision <= request.revision && resp.reply.revision <= policy.max_revision);
  Check(MpaFrameSize(resp.reply) - kMpaHeaderSize <= MpaPrivateDataLimit(MpaLimitsFor(policy)));
  reply_out = RoundTrip(resp.reply, buf);
  if (!resp.accepted) {
    Check(resp.reply.reject && IsMpaRefusal(resp.reason));
    Check(resp.reply.private_data.empty());
    return false;
  }
  Check(!resp.reply.reject);
  Check(resp.outcome.role == MpaRole::kResponder);
  Check(resp.reply.ird_ord.has_value() == resp.outcome.enhanced);
  if (resp.outcome.enhanced) {
    Check(resp.reply.ird_ord->ird == resp.outcome.ird);
    Check(resp.reply.ird_ord->ord == resp.outcome.ord);
  }
  CheckOutcome(resp.outcome, policy, resp.reply, request);
  outcome_out = resp.outcome;
  return true;
}

void FullExchange(const MpaPolicy& init, const MpaPolicy& resp, ByteSpan payload) {
  const ByteSpan init_pd = payload.first(payload.size() / 2);
  const ByteSpan resp_pd = payload.subspan(payload.size() / 2);
  auto req = MakeMpaRequest(init, init_pd);
  if (!req.ok()) {
    Check(req.error() == WireError::kInvalidArgument ||
          req.error() == WireError::kMpaPrivateDataTooLong);
    return;
  }
  std::array<uint8_t, kMpaMaxFrameSize> req_buf{};
  const MpaFrame request_sent = RoundTrip(req.value(), req_buf);
  auto decoded = DecodeMpaFrame(ByteSpan(req_buf.data(), MpaFrameSize(request_sent)),
                                MpaFrameKind::kRequest, MpaLimitsFor(resp));
  if (!decoded.ok()) {
    Check(decoded.error() == WireError::kMpaPrivateDataTooLong);
    return;
  }
  std::array<uint8_t, kMpaMaxFrameSize> rep_buf{};
  MpaFrame reply;
  MpaOutcome r;
  const bool accepted = Respond(resp, decoded->frame, resp_pd, rep_buf, reply, r);
  if (MpaFrameSize(reply) - kMpaHeaderSize > MpaPrivateDataLimit(MpaLimitsFor(init))) return;
  auto i = ProcessMpaReply(init, reply);
  if (!accepted) {
    // Either the responder refused (the initiator sees R=1) or the call
    // failed locally and no Reply exists.
    Check(!i.ok());
    return;
  }
  if (!i.ok()) {
    // Only refusals the responder cannot foresee: the initiator's own marker
    // or CRC stance, or an ORD floor the responder's IRD cannot meet.
    Check(i.error() == WireError::kMpaMarkersRefused || i.error() == WireError::kMpaCrcRefused ||
          i.error() == WireError::kMpaInsufficientIrd);
    return;
  }
  const MpaOutcome& o = i.value();
  CheckOutcome(o, init, request_sent, reply);
  Check(o.revision == r.revision && o.enhanced == r.enhanced && o.crc == r.crc);
  Check(o.markers_tx == r.markers_rx && o.markers_rx == r.markers_tx);
  Check(o.p2p == r.p2p && o.rtr == r.rtr);
  if (o.enhanced) {
    Check(o.ord <= r.ird && r.ord <= o.ird);
    Check(o.peer_ird == r.ird && o.peer_ord == r.ord);
  }
}

void FuzzOne(const uint8_t* data, size_t size) {
  if (size < kPrefixBytes) return;
  const MpaPolicy init = PolicyFrom(data);
  const MpaPolicy resp = PolicyFrom(data + kPolicyBytes);
  const uint8_t mode = static_cast<uint8_t>(data[2 * kPolicyBytes] % 3);
  const ByteSpan payload(data + kPrefixBytes, size - kPrefixBytes);

  if (mode == 0) {
    FullExchange(init, resp, payload);
  } else if (mode == 1) {
    auto d = DecodeMpaFrame(payload, MpaFrameKind::kRequest, MpaLimitsFor(resp));
    if (!d.ok()) return;
    std::array<uint8_t, kMpaMaxFrameSize> buf{};
    MpaFrame reply;
    MpaOutcome outcome;
    Respond(resp, d->frame, {}, buf, reply, outcome);
  } else {
    auto d = DecodeMpaFrame(payload, MpaFrameKind::kReply, MpaLimitsFor(init));
    if (!d.ok()) return;
    auto o = ProcessMpaReply(init, d->frame);
    if (!o.ok()) return;
    // The Request this initiator sent (none if its P2P policy has nothing to
    // offer; then the Reply is answering a Request it never sent).
    auto req = MakeMpaRequest(init, {});
    if (!req.ok()) return;
    CheckOutcome(o.value(), init, req.value(), d->frame);
  }
}

}  // namespace
}  // namespace iwarpx::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iwarpx::wire::FuzzOne(data, size);
  return 0;
}
