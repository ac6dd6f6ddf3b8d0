#include "wire/mpa_negotiate.h"

#include <algorithm>

namespace iwarpx::wire {
namespace {

constexpr MpaRtrMask kReadBit = RtrBit(MpaRtr::kRead);

bool HasValue(uint16_t v) {
  return v != kMpaNoIrdOrd;
}

// Our ORD lowered to the peer's IRD (an absent IRD does not limit it).
uint16_t LowerOrd(uint16_t own_ord, uint16_t peer_ird) {
  return HasValue(peer_ird) ? std::min(own_ord, peer_ird) : own_ord;
}

// Our IRD raised toward the peer's ORD as far as max_ird allows.
uint16_t RaiseIrd(const MpaPolicy& policy, uint16_t peer_ord) {
  if (!HasValue(peer_ord) || peer_ord <= policy.ird) return policy.ird;
  return std::min(peer_ord, policy.max_ird);
}

size_t BlockSize(bool enhanced) {
  return enhanced ? kMpaIrdOrdSize : 0;
}

bool FitsLimit(const MpaPolicy& policy, bool enhanced, ByteSpan ulp_private_data) {
  return BlockSize(enhanced) + ulp_private_data.size() <= MpaPrivateDataLimit(MpaLimitsFor(policy));
}

uint8_t ReplyRevision(const MpaPolicy& policy, const MpaFrame& request) {
  return std::min(request.revision, policy.max_revision);
}

// The reject Reply; policy and sizes already validated.
MpaFrame BuildReject(const MpaPolicy& policy, const MpaFrame& request, ByteSpan ulp_private_data) {
  MpaFrame reply;
  reply.kind = MpaFrameKind::kReply;
  reply.reject = true;
  reply.crc = policy.want_crc;
  reply.revision = ReplyRevision(policy, request);
  if (reply.revision == kMpaRevision2 && request.ird_ord) {
    reply.ird_ord = MpaIrdOrd{.p2p = false, .ird = policy.ird, .ord = policy.ord, .rtr = 0};
  }
  reply.private_data = ulp_private_data;
  return reply;
}

void SetStartRules(MpaOutcome& o) {
  const bool initiator = o.role == MpaRole::kInitiator;
  o.send_rtr = initiator && o.p2p;
  o.initiator_ulp_sends_first = !o.p2p;
  o.hold_tx_until_first_fpdu = !initiator;
  o.established_after_rtr = !initiator && o.p2p;
}

}  // namespace

bool IsValidMpaPolicy(const MpaPolicy& policy) {
  if (policy.max_revision != kMpaRevision1 && policy.max_revision != kMpaRevision2) return false;
  if (policy.ird > policy.max_ird || policy.max_ird > kMpaMaxIrdOrdValue) return false;
  if (policy.min_ord > policy.ord || policy.ord > kMpaMaxIrdOrdValue) return false;
  if ((policy.rtr_types & ~kMpaRtrAll) != 0) return false;
  if (policy.p2p && policy.rtr_types == 0) return false;
  if (policy.want_crc && !policy.accept_peer_crc) return false;
  if (policy.max_revision == kMpaRevision2 &&
      MpaPrivateDataLimit(MpaLimitsFor(policy)) < kMpaIrdOrdSize) {
    return false;
  }
  return true;
}

MpaLimits MpaLimitsFor(const MpaPolicy& policy) {
  return MpaLimits{.max_private_data = policy.max_private_data};
}

MpaRtrMask MpaOfferedRtr(const MpaPolicy& policy) {
  MpaRtrMask offered = policy.rtr_types & kMpaRtrAll;
  if (policy.ord == 0) offered &= static_cast<MpaRtrMask>(~kReadBit);
  return offered;
}

MpaRtr MpaPreferredRtr(MpaRtrMask candidates) {
  for (MpaRtr r : {MpaRtr::kWrite, MpaRtr::kRead, MpaRtr::kSend}) {
    if ((candidates & RtrBit(r)) != 0) return r;
  }
  return MpaRtr::kNone;
}

Result<MpaFrame, WireError> MakeMpaRequest(const MpaPolicy& policy, ByteSpan ulp_private_data) {
  if (!IsValidMpaPolicy(policy)) return Err{WireError::kInvalidArgument};
  const bool enhanced = policy.max_revision == kMpaRevision2;
  if (!FitsLimit(policy, enhanced, ulp_private_data)) {
    return Err{WireError::kMpaPrivateDataTooLong};
  }
  MpaFrame request;
  request.kind = MpaFrameKind::kRequest;
  request.markers = policy.want_markers;
  request.crc = policy.want_crc;
  request.revision = policy.max_revision;
  request.send_imm = policy.offer_send_imm && policy.max_revision == kMpaRevision2;
  if (enhanced) {
    MpaIrdOrd block{.p2p = policy.p2p, .ird = policy.ird, .ord = policy.ord, .rtr = 0};
    if (policy.p2p) {
      block.rtr = MpaOfferedRtr(policy);
      if (block.rtr == 0) return Err{WireError::kInvalidArgument};
    }
    request.ird_ord = block;
  }
  request.private_data = ulp_private_data;
  return request;
}

Result<MpaFrame, WireError> MakeMpaRejectReply(const MpaPolicy& policy, const MpaFrame& request,
                                               ByteSpan ulp_private_data) {
  if (!IsValidMpaPolicy(policy) || request.kind != MpaFrameKind::kRequest) {
    return Err{WireError::kInvalidArgument};
  }
  MpaFrame reply = BuildReject(policy, request, ulp_private_data);
  if (!FitsLimit(policy, reply.ird_ord.has_value(), ulp_private_data)) {
    return Err{WireError::kMpaPrivateDataTooLong};
  }
  return reply;
}

Result<MpaResponse, WireError> RespondToMpaRequest(const MpaPolicy& policy, const MpaFrame& request,
                                                   ByteSpan reply_private_data) {
  if (!IsValidMpaPolicy(policy) || request.kind != MpaFrameKind::kRequest || request.reject ||
      request.revision < kMpaRevision1) {
    return Err{WireError::kInvalidArgument};
  }
  const uint8_t revision = ReplyRevision(policy, request);
  const bool enhanced = revision == kMpaRevision2 && request.ird_ord.has_value();
  if (!FitsLimit(policy, enhanced, reply_private_data)) {
    return Err{WireError::kMpaPrivateDataTooLong};
  }

  MpaResponse response;
  auto refuse = [&](WireError reason) {
    response.accepted = false;
    response.reason = reason;
    response.reply = BuildReject(policy, request, {});
    return response;
  };

  if (request.markers && !policy.insert_markers) return refuse(WireError::kMpaMarkersRefused);
  if (request.crc && !policy.accept_peer_crc) return refuse(WireError::kMpaCrcRefused);

  MpaOutcome& o = response.outcome;
  o.role = MpaRole::kResponder;
  o.revision = revision;
  o.enhanced = enhanced;
  o.crc = request.crc || policy.want_crc;
  o.markers_tx = request.markers;
  o.markers_rx = policy.want_markers;
  o.ird = policy.ird;
  o.ord = policy.ord;
  o.peer_private_data = request.private_data;

  MpaFrame& reply = response.reply;
  reply.kind = MpaFrameKind::kReply;
  reply.markers = policy.want_markers;
  reply.crc = policy.want_crc;
  reply.revision = revision;
  reply.private_data = reply_private_data;

  if (enhanced) {
    const MpaIrdOrd& req = *request.ird_ord;
    o.peer_ird = req.ird;
    o.peer_ord = req.ord;
    o.ord = LowerOrd(policy.ord, req.ird);
    if (o.ord < policy.min_ord) return refuse(WireError::kMpaInsufficientIrd);
    o.ird = RaiseIrd(policy, req.ord);

    MpaIrdOrd block{.p2p = false, .ird = o.ird, .ord = o.ord, .rtr = 0};
    if (req.p2p && policy.p2p) {
      MpaRtrMask candidates = req.rtr & policy.rtr_types;
      // The zero-length Read takes an ORD slot at the initiator (which will
      // lower its ORD to our IRD) and an IRD slot here.
      if (LowerOrd(req.ord, o.ird) == 0) candidates &= static_cast<MpaRtrMask>(~kReadBit);
      const MpaRtr chosen = MpaPreferredRtr(candidates);
      if (chosen == MpaRtr::kNone) return refuse(WireError::kMpaNoMatchingRtr);
      block.p2p = true;
      block.rtr = RtrBit(chosen);
      o.p2p = true;
      o.rtr = chosen;
    }
    reply.ird_ord = block;
  }
  // Only an accepting Reply answers the offer (a reject is built without it).
  reply.send_imm = policy.offer_send_imm && request.send_imm && revision == kMpaRevision2;
  o.send_imm = reply.send_imm;
  SetStartRules(o);
  response.accepted = true;
  return response;
}

Result<MpaOutcome, WireError> ProcessMpaReply(const MpaPolicy& policy, const MpaFrame& reply) {
  if (!IsValidMpaPolicy(policy) || reply.kind != MpaFrameKind::kReply) {
    return Err{WireError::kInvalidArgument};
  }
  if (reply.reject) return Err{WireError::kMpaRejected};
  if (reply.revision > policy.max_revision || reply.revision < kMpaRevision1) {
    return Err{WireError::kMpaBadRevision};
  }
  const bool enhanced = reply.revision == kMpaRevision2;
  if (enhanced && !reply.ird_ord) return Err{WireError::kMpaBadIrdOrd};
  if (reply.markers && !policy.insert_markers) return Err{WireError::kMpaMarkersRefused};
  if (reply.crc && !policy.accept_peer_crc) return Err{WireError::kMpaCrcRefused};

  MpaOutcome o;
  o.role = MpaRole::kInitiator;
  o.revision = reply.revision;
  o.enhanced = enhanced;
  o.crc = reply.crc || policy.want_crc;
  o.markers_tx = reply.markers;
  o.markers_rx = policy.want_markers;
  o.ird = policy.ird;
  o.ord = policy.ord;
  o.peer_private_data = reply.private_data;
  // We set the bit in the Request iff offer_send_imm and rev 2.
  o.send_imm = policy.offer_send_imm && policy.max_revision == kMpaRevision2 && reply.send_imm &&
               reply.revision == kMpaRevision2;

  if (enhanced) {
    const MpaIrdOrd& rep = *reply.ird_ord;
    o.peer_ird = rep.ird;
    o.peer_ord = rep.ord;
    o.ord = LowerOrd(policy.ord, rep.ird);
    if (o.ord < policy.min_ord) return Err{WireError::kMpaInsufficientIrd};
    o.ird = RaiseIrd(policy, rep.ord);
    if (HasValue(rep.ord) && rep.ord > o.ird) return Err{WireError::kMpaInsufficientIrd};

    if (rep.p2p) {
      if (!policy.p2p) return Err{WireError::kMpaNoMatchingRtr};
      MpaRtrMask candidates = rep.rtr & MpaOfferedRtr(policy);
      if (o.ord == 0) candidates &= static_cast<MpaRtrMask>(~kReadBit);
      const MpaRtr chosen = MpaPreferredRtr(candidates);
      if (chosen == MpaRtr::kNone) return Err{WireError::kMpaNoMatchingRtr};
      o.p2p = true;
      o.rtr = chosen;
    }
  }
  SetStartRules(o);
  return o;
}

}  // namespace iwarpx::wire
