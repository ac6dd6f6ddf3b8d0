#include "wire/rdmap.h"

#include <optional>

namespace iwarpx::wire {

namespace {

using Op = RdmapOpcode;

// clang-format off
constexpr std::array<OpcodeInfo, kRdmapOpcodeCount> kOpcodeTable = {{
  // opcode                     name                           T      QN                 hdr                     body                     var    payld  1-seg  IRD    inval  SE
  {Op::kRdmaWrite,              "RDMA Write",                  true,  kQnNone,           kDdpTaggedHeaderSize,   0,                       false, true,  false, false, false, false},
  {Op::kRdmaReadRequest,        "RDMA Read Request",           false, kQnReadRequest,    kDdpUntaggedHeaderSize, kReadRequestBodySize,    false, false, true,  true,  false, false},
  {Op::kRdmaReadResponse,       "RDMA Read Response",          true,  kQnNone,           kDdpTaggedHeaderSize,   0,                       false, true,  false, false, false, false},
  {Op::kSend,                   "Send",                        false, kQnSend,           kDdpUntaggedHeaderSize, 0,                       false, true,  false, false, false, false},
  {Op::kSendWithInvalidate,     "Send with Invalidate",        false, kQnSend,           kDdpUntaggedHeaderSize, 0,                       false, true,  false, false, true,  false},
  {Op::kSendWithSe,             "Send with SE",                false, kQnSend,           kDdpUntaggedHeaderSize, 0,                       false, true,  false, false, false, true},
  {Op::kSendWithSeAndInvalidate,"Send with SE and Invalidate", false, kQnSend,           kDdpUntaggedHeaderSize, 0,                       false, true,  false, false, true,  true},
  {Op::kTerminate,              "Terminate",                   false, kQnTerminate,      kDdpUntaggedHeaderSize, kTerminateMinBodySize,   true,  false, true,  false, false, false},
  {Op::kImmediateData,          "Immediate Data",              false, kQnSend,           kDdpUntaggedHeaderSize, kImmediateDataBodySize,  false, false, true,  false, false, false},
  {Op::kImmediateDataWithSe,    "Immediate Data with SE",      false, kQnSend,           kDdpUntaggedHeaderSize, kImmediateDataBodySize,  false, false, true,  false, false, true},
  {Op::kAtomicRequest,          "Atomic Request",              false, kQnReadRequest,    kDdpUntaggedHeaderSize, kAtomicRequestBodySize,  false, false, true,  true,  false, false},
  {Op::kAtomicResponse,         "Atomic Response",             false, kQnAtomicResponse, kDdpUntaggedHeaderSize, kAtomicResponseBodySize, false, false, true,  false, false, false},
}};
// clang-format on

constexpr bool TableIsIndexedByOpcode() {
  for (size_t i = 0; i < kOpcodeTable.size(); ++i) {
    if (static_cast<size_t>(kOpcodeTable[i].opcode) != i) return false;
    if (kOpcodeTable[i].header_size != DdpHeaderSize(kOpcodeTable[i].tagged)) return false;
    if (kOpcodeTable[i].tagged && kOpcodeTable[i].qn != kQnNone) return false;
  }
  return true;
}
static_assert(TableIsIndexedByOpcode());

// The last segment of a Send / Send with SE announcing Immediate Data.
bool IsSendImmFollows(const DdpHeader& h, const OpcodeInfo& info) {
  return (info.opcode == Op::kSend || info.opcode == Op::kSendWithSe) && h.last &&
         h.rsvd_ulp1_4 == kSendImmFollows;
}

// The header rules that depend on the opcode (T is checked by the caller,
// because a wrong T changes which header layout can even be read).
std::optional<WireError> CheckHeaderForOpcode(const DdpHeader& h, const OpcodeInfo& info,
                                              bool accept_send_imm) {
  if (info.tagged) return std::nullopt;
  if (h.qn != info.qn) return WireError::kDdpBadQueueNumber;
  if (info.single_segment) {
    if (h.mo != 0) return WireError::kDdpBadMessageOffset;
    if (!h.last) return WireError::kRdmapBadHeaderForOpcode;
  }
  if (!info.carries_invalidate && h.rsvd_ulp1_4 != 0 &&
      !(accept_send_imm && IsSendImmFollows(h, info))) {
    return WireError::kRdmapBadHeaderForOpcode;
  }
  return std::nullopt;
}

// Decodes the fixed body of a non-Terminate opcode into `seg.body`.
std::optional<WireError> DecodeBody(RdmapOpcode opcode, ByteSpan body, Segment& seg) {
  switch (opcode) {
    case Op::kRdmaReadRequest: {
      auto b = DecodeReadRequestBody(body);
      if (!b.ok()) return b.error();
      seg.body = b.value();
      return std::nullopt;
    }
    case Op::kImmediateData:
    case Op::kImmediateDataWithSe: {
      auto b = DecodeImmediateDataBody(body);
      if (!b.ok()) return b.error();
      seg.body = b.value();
      return std::nullopt;
    }
    case Op::kAtomicRequest: {
      auto b = DecodeAtomicRequestBody(body);
      if (!b.ok()) return b.error();
      seg.body = b.value();
      return std::nullopt;
    }
    case Op::kAtomicResponse: {
      auto b = DecodeAtomicResponseBody(body);
      if (!b.ok()) return b.error();
      seg.body = b.value();
      return std::nullopt;
    }
    case Op::kRdmaWrite:
    case Op::kRdmaReadResponse:
    case Op::kSend:
    case Op::kSendWithInvalidate:
    case Op::kSendWithSe:
    case Op::kSendWithSeAndInvalidate:
    case Op::kTerminate: seg.body = std::monostate{}; return std::nullopt;
  }
  return WireError::kRdmapBadOpcode;
}

// Copies an encoded body into `out`; kNoSpace if it does not fit.
Result<size_t, WireError> CopyBody(ByteSpan bytes, MutableByteSpan out) {
  if (!ByteWriter(out).WriteBytes(bytes)) return Err{WireError::kNoSpace};
  return bytes.size();
}

// Writes the body of `seg` (which must be the alternative its opcode needs)
// into `out`. Returns kInvalidArgument otherwise, kNoSpace if `out` is short.
Result<size_t, WireError> EncodeBody(const Segment& seg, MutableByteSpan out) {
  switch (seg.opcode) {
    case Op::kRdmaReadRequest:
      if (const auto* b = std::get_if<ReadRequestBody>(&seg.body))
        return CopyBody(EncodeReadRequestBody(*b), out);
      break;
    case Op::kImmediateData:
    case Op::kImmediateDataWithSe:
      if (const auto* b = std::get_if<ImmediateDataBody>(&seg.body))
        return CopyBody(EncodeImmediateDataBody(*b), out);
      break;
    case Op::kAtomicRequest:
      if (const auto* b = std::get_if<AtomicRequestBody>(&seg.body)) {
        return EncodeAtomicRequestBody(*b, out);
      }
      break;
    case Op::kAtomicResponse:
      if (const auto* b = std::get_if<AtomicResponseBody>(&seg.body))
        return CopyBody(EncodeAtomicResponseBody(*b), out);
      break;
    case Op::kTerminate:
      if (const auto* b = std::get_if<TerminateBodyView>(&seg.body)) return CopyBody(b->bytes, out);
      break;
    case Op::kRdmaWrite:
    case Op::kRdmaReadResponse:
    case Op::kSend:
    case Op::kSendWithInvalidate:
    case Op::kSendWithSe:
    case Op::kSendWithSeAndInvalidate:
      if (std::holds_alternative<std::monostate>(seg.body)) return size_t{0};
      break;
  }
  return Err{WireError::kInvalidArgument};
}

size_t BodySize(const Segment& seg, const OpcodeInfo& info) {
  if (!info.variable_body) return info.body_size;
  const auto* term = std::get_if<TerminateBodyView>(&seg.body);
  return term != nullptr ? term->bytes.size() : 0;
}

DdpHeader UntaggedHeader(RdmapOpcode opcode, uint32_t msn, uint32_t mo, bool last,
                         uint32_t rsvd_ulp1_4) {
  DdpHeader h;
  h.tagged = false;
  h.last = last;
  h.rsvd_ulp0 = EncodeRdmapControl(opcode);
  h.rsvd_ulp1_4 = rsvd_ulp1_4;
  h.qn = GetOpcodeInfo(opcode).qn;
  h.msn = msn;
  h.mo = mo;
  return h;
}

Result<size_t, WireError> EncodeSingle(RdmapOpcode opcode, uint32_t msn, SegmentBody body,
                                       MutableByteSpan out) {
  Segment seg;
  seg.ddp = UntaggedHeader(opcode, msn, 0, true, 0);
  seg.opcode = opcode;
  seg.body = body;
  return EncodeSegmentHeader(seg, out);
}

Result<size_t, WireError> EncodeTagged(RdmapOpcode opcode, uint32_t stag, uint64_t to, bool last,
                                       MutableByteSpan out) {
  Segment seg;
  seg.ddp.tagged = true;
  seg.ddp.last = last;
  seg.ddp.stag = stag;
  seg.ddp.to = to;
  seg.opcode = opcode;
  return EncodeSegmentHeader(seg, out);
}

}  // namespace

std::span<const OpcodeInfo, kRdmapOpcodeCount> OpcodeTable() {
  return kOpcodeTable;
}

const OpcodeInfo& GetOpcodeInfo(RdmapOpcode opcode) {
  return kOpcodeTable[static_cast<size_t>(opcode) % kRdmapOpcodeCount];
}

const OpcodeInfo* FindOpcodeInfo(uint8_t raw_opcode) {
  return raw_opcode < kRdmapOpcodeCount ? &kOpcodeTable[raw_opcode] : nullptr;
}

const char* ToString(RdmapOpcode opcode) {
  const OpcodeInfo* info = FindOpcodeInfo(static_cast<uint8_t>(opcode));
  return info != nullptr ? info->name : "reserved opcode";
}

uint8_t EncodeRdmapControl(RdmapOpcode opcode) {
  return static_cast<uint8_t>((kRdmapVersion << kRdmapVersionShift) |
                              (static_cast<uint8_t>(opcode) & kRdmapOpcodeMask));
}

Result<RdmapOpcode, WireError> DecodeRdmapControl(uint8_t byte) {
  if ((byte & kRdmapVersionMask) >> kRdmapVersionShift != kRdmapVersion) {
    return Err{WireError::kRdmapBadVersion};
  }
  if ((byte & kRdmapReservedMask) != 0) return Err{WireError::kRdmapReservedBits};
  const OpcodeInfo* info = FindOpcodeInfo(byte & kRdmapOpcodeMask);
  if (info == nullptr) return Err{WireError::kRdmapBadOpcode};
  return info->opcode;
}

Result<ReadRequestBody, WireError> DecodeReadRequestBody(ByteSpan body) {
  if (body.size() != kReadRequestBodySize) return Err{WireError::kRdmapBadLength};
  ByteReader r(body);
  ReadRequestBody b;
  r.ReadBe32(b.sink_stag);
  r.ReadBe64(b.sink_to);
  r.ReadBe32(b.read_size);
  r.ReadBe32(b.source_stag);
  r.ReadBe64(b.source_to);
  if (!r.ok()) return Err{WireError::kRdmapBadLength};  // unreachable: size checked
  return b;
}

std::array<uint8_t, kReadRequestBodySize> EncodeReadRequestBody(const ReadRequestBody& b) {
  std::array<uint8_t, kReadRequestBodySize> out{};
  ByteWriter w(out);
  w.WriteBe32(b.sink_stag);
  w.WriteBe64(b.sink_to);
  w.WriteBe32(b.read_size);
  w.WriteBe32(b.source_stag);
  w.WriteBe64(b.source_to);
  return out;
}

bool Segment::send_imm_follows() const {
  return !ddp.tagged && IsSendImmFollows(ddp, info());
}

size_t Segment::header_size() const {
  const OpcodeInfo& i = info();
  return i.header_size + BodySize(*this, i);
}

Result<Segment, WireError> ParseSegment(ByteSpan ulpdu, const ParseOptions& options) {
  if (ulpdu.size() < 2) return Err{WireError::kTruncated};
  auto control = DecodeDdpControl(ulpdu[0]);
  if (!control.ok()) return Err{control.error()};
  auto opcode = DecodeRdmapControl(ulpdu[1]);
  if (!opcode.ok()) return Err{opcode.error()};
  const OpcodeInfo& info = GetOpcodeInfo(opcode.value());
  if (info.tagged != control->tagged) return Err{WireError::kRdmapBadHeaderForOpcode};

  auto ddp = DecodeDdpHeader(ulpdu);
  if (!ddp.ok()) return Err{ddp.error()};
  if (auto e = CheckHeaderForOpcode(ddp.value(), info, options.accept_send_imm)) return Err{*e};

  Segment seg;
  seg.ddp = ddp.value();
  seg.opcode = opcode.value();
  const ByteSpan rest = ulpdu.subspan(info.header_size);
  if (rest.size() < info.body_size) return Err{WireError::kRdmapBadLength};
  if (info.variable_body) {
    if (rest.size() > kTerminateMaxBodySize) return Err{WireError::kRdmapBadLength};
    seg.body = TerminateBodyView{rest};
    return seg;
  }
  const ByteSpan payload = rest.subspan(info.body_size);
  if (!info.payload_allowed && !payload.empty()) return Err{WireError::kRdmapBadLength};
  if (auto e = DecodeBody(seg.opcode, rest.first(info.body_size), seg)) return Err{*e};
  if (info.tagged && TaggedRangeWraps(seg.ddp.to, payload.size())) {
    return Err{WireError::kDdpToWrap};
  }
  seg.payload = payload;
  return seg;
}

std::optional<PlainSend> ParsePlainSend(ByteSpan ulpdu) {
  if (ulpdu.size() < kDdpUntaggedHeaderSize) return std::nullopt;
  // Untagged, the DDP version, no reserved bit: exactly these two bytes.
  const uint8_t ddp = ulpdu[0];
  if (ddp != kDdpVersion && ddp != (kDdpVersion | kDdpFlagLast)) return std::nullopt;
  const uint8_t rdmap = ulpdu[1];
  const bool se = rdmap == EncodeRdmapControl(Op::kSendWithSe);
  if (!se && rdmap != EncodeRdmapControl(Op::kSend)) return std::nullopt;
  ByteReader r(ulpdu.subspan(2, kDdpUntaggedHeaderSize - 2));
  uint32_t rsvd = 0;
  uint32_t qn = 0;
  PlainSend s;
  r.ReadBe32(rsvd);
  r.ReadBe32(qn);
  r.ReadBe32(s.msn);
  r.ReadBe32(s.mo);
  if (rsvd != 0 || qn != kQnSend) return std::nullopt;
  s.last = (ddp & kDdpFlagLast) != 0;
  s.solicited_event = se;
  return s;
}

Result<size_t, WireError> EncodeSegmentHeader(const Segment& segment, MutableByteSpan out) {
  const OpcodeInfo* info = FindOpcodeInfo(static_cast<uint8_t>(segment.opcode));
  if (info == nullptr) return Err{WireError::kInvalidArgument};
  if (segment.ddp.tagged != info->tagged) return Err{WireError::kInvalidArgument};
  // The encoder writes the Send-with-Immediate-Data flag when asked; whether
  // the peer negotiated it is the engine's check.
  if (CheckHeaderForOpcode(segment.ddp, *info, true)) return Err{WireError::kInvalidArgument};
  if (!info->payload_allowed && !segment.payload.empty()) {
    return Err{WireError::kInvalidArgument};
  }
  if (info->tagged && TaggedRangeWraps(segment.ddp.to, segment.payload.size())) {
    return Err{WireError::kInvalidArgument};
  }
  const size_t body_size = BodySize(segment, *info);
  if (info->variable_body &&
      (body_size < kTerminateMinBodySize || body_size > kTerminateMaxBodySize)) {
    return Err{WireError::kInvalidArgument};
  }
  const size_t total = info->header_size + body_size;
  if (out.size() < total) return Err{WireError::kNoSpace};

  DdpHeader h = segment.ddp;
  h.rsvd_ulp0 = EncodeRdmapControl(segment.opcode);
  auto header = EncodeDdpHeader(h, out);
  if (!header.ok()) return Err{header.error()};
  auto body = EncodeBody(segment, out.subspan(header.value()));
  if (!body.ok()) return Err{body.error()};
  return header.value() + body.value();
}

Result<size_t, WireError> EncodeWriteHeader(uint32_t stag, uint64_t to, bool last,
                                            MutableByteSpan out) {
  return EncodeTagged(Op::kRdmaWrite, stag, to, last, out);
}

Result<size_t, WireError> EncodeReadResponseHeader(uint32_t stag, uint64_t to, bool last,
                                                   MutableByteSpan out) {
  return EncodeTagged(Op::kRdmaReadResponse, stag, to, last, out);
}

Result<size_t, WireError> EncodeReadRequest(uint32_t msn, const ReadRequestBody& body,
                                            MutableByteSpan out) {
  return EncodeSingle(Op::kRdmaReadRequest, msn, body, out);
}

Result<size_t, WireError> EncodeSendHeader(const SendParams& params, MutableByteSpan out) {
  if (!params.invalidate && params.invalidate_stag != 0) return Err{WireError::kInvalidArgument};
  if (params.imm_follows && (params.invalidate || !params.last)) {
    return Err{WireError::kInvalidArgument};
  }
  Op opcode = Op::kSend;
  if (params.invalidate) {
    opcode = params.solicited_event ? Op::kSendWithSeAndInvalidate : Op::kSendWithInvalidate;
  } else if (params.solicited_event) {
    opcode = Op::kSendWithSe;
  }
  // A Send segment's header is the untagged DDP header alone (no body), and
  // the checks above are all EncodeSegmentHeader would make of it: written
  // directly, once per message sent (rdmap_test compares the two).
  if (out.size() < kDdpUntaggedHeaderSize) return Err{WireError::kNoSpace};
  ByteWriter w(out);
  w.WriteU8(EncodeDdpControl(DdpControl{false, params.last}));
  w.WriteU8(EncodeRdmapControl(opcode));
  w.WriteBe32(params.imm_follows ? kSendImmFollows : params.invalidate_stag);
  w.WriteBe32(kQnSend);
  w.WriteBe32(params.msn);
  w.WriteBe32(params.mo);
  return w.written();
}

Result<size_t, WireError> EncodeImmediateData(bool solicited_event, uint32_t msn, uint64_t data,
                                              MutableByteSpan out) {
  return EncodeSingle(solicited_event ? Op::kImmediateDataWithSe : Op::kImmediateData, msn,
                      ImmediateDataBody{data}, out);
}

Result<size_t, WireError> EncodeAtomicRequest(uint32_t msn, const AtomicRequestBody& body,
                                              MutableByteSpan out) {
  return EncodeSingle(Op::kAtomicRequest, msn, body, out);
}

Result<size_t, WireError> EncodeAtomicResponse(uint32_t msn, const AtomicResponseBody& body,
                                               MutableByteSpan out) {
  return EncodeSingle(Op::kAtomicResponse, msn, body, out);
}

Result<size_t, WireError> EncodeTerminateHeader(uint32_t msn, MutableByteSpan out) {
  const DdpHeader h = UntaggedHeader(Op::kTerminate, msn, 0, true, 0);
  return EncodeDdpHeader(h, out);
}

}  // namespace iwarpx::wire
