#include "wire/sctp_session.h"

#include <algorithm>

namespace iwarpx::wire {
namespace {

constexpr uint16_t kIrdOrdReserved = static_cast<uint16_t>(~kSctpSessionIrdOrdMask);

struct FunctionInfo {
  SctpSessionFunction function;
  bool enhanced;
};

std::optional<FunctionInfo> FromCode(uint16_t code) {
  switch (code) {
    case kSctpFnInitiate: return FunctionInfo{SctpSessionFunction::kInitiate, false};
    case kSctpFnAccept: return FunctionInfo{SctpSessionFunction::kAccept, false};
    case kSctpFnReject: return FunctionInfo{SctpSessionFunction::kReject, false};
    case kSctpFnTerminate: return FunctionInfo{SctpSessionFunction::kTerminate, false};
    case kSctpFnEnhancedInitiate: return FunctionInfo{SctpSessionFunction::kInitiate, true};
    case kSctpFnEnhancedAccept: return FunctionInfo{SctpSessionFunction::kAccept, true};
    default: return std::nullopt;
  }
}

uint16_t ToCode(SctpSessionFunction f, bool enhanced) {
  switch (f) {
    case SctpSessionFunction::kInitiate:
      return enhanced ? kSctpFnEnhancedInitiate : kSctpFnInitiate;
    case SctpSessionFunction::kAccept: return enhanced ? kSctpFnEnhancedAccept : kSctpFnAccept;
    case SctpSessionFunction::kReject: return kSctpFnReject;
    case SctpSessionFunction::kTerminate: return kSctpFnTerminate;
  }
  return 0;
}

}  // namespace

Result<SctpSessionMessage, WireError> DecodeSctpSessionMessage(ByteSpan message,
                                                               const SctpSessionLimits& limits) {
  ByteReader r(message);
  uint16_t code = 0;
  uint16_t pd_length = 0;
  if (!r.ReadBe16(code) || !r.ReadBe16(pd_length)) return Err{WireError::kTruncated};
  const auto info = FromCode(code);
  if (!info) return Err{WireError::kSctpSessionBadFunction};
  const uint16_t limit = std::min(limits.max_private_data, kSctpSessionMaxPrivateData);
  if (pd_length > limit) return Err{WireError::kSctpSessionPrivateDataTooLong};
  if (info->enhanced && pd_length < kSctpSessionIrdOrdSize) {
    return Err{WireError::kSctpSessionBadIrdOrd};
  }
  if (r.remaining() < pd_length) return Err{WireError::kTruncated};
  if (r.remaining() > pd_length) return Err{WireError::kSctpSessionBadLength};

  SctpSessionMessage out;
  out.function = info->function;
  if (info->enhanced) {
    uint16_t word0 = 0;
    uint16_t word1 = 0;
    // pd_length >= 4 was checked, so these reads cannot fail.
    if (!r.ReadBe16(word0) || !r.ReadBe16(word1)) return Err{WireError::kTruncated};
    const auto word0_reserved = static_cast<uint16_t>(kIrdOrdReserved & ~kSctpSessionFlagSendImm);
    const auto word1_reserved =
        static_cast<uint16_t>(kIrdOrdReserved & ~kSctpSessionFlagUnorderedReadResp);
    if ((word0 & word0_reserved) != 0 || (word1 & word1_reserved) != 0) {
      return Err{WireError::kSctpSessionReservedBits};
    }
    out.send_imm = (word0 & kSctpSessionFlagSendImm) != 0;
    out.unordered_read_resp = (word1 & kSctpSessionFlagUnorderedReadResp) != 0;
    out.ird_ord = SctpIrdOrd{.ird = static_cast<uint16_t>(word0 & kSctpSessionIrdOrdMask),
                             .ord = static_cast<uint16_t>(word1 & kSctpSessionIrdOrdMask)};
  }
  out.private_data = r.rest();
  return out;
}

size_t SctpSessionMessageSize(const SctpSessionMessage& msg) {
  return kSctpSessionHeaderSize + (msg.ird_ord ? kSctpSessionIrdOrdSize : 0) +
         msg.private_data.size();
}

Result<size_t, WireError> EncodeSctpSessionMessage(const SctpSessionMessage& msg,
                                                   MutableByteSpan out) {
  if ((msg.send_imm || msg.unordered_read_resp) && !msg.ird_ord) {
    return Err{WireError::kInvalidArgument};
  }
  if (msg.ird_ord) {
    if (msg.function != SctpSessionFunction::kInitiate &&
        msg.function != SctpSessionFunction::kAccept) {
      return Err{WireError::kInvalidArgument};
    }
    if (msg.ird_ord->ird > kSctpSessionIrdOrdMask || msg.ird_ord->ord > kSctpSessionIrdOrdMask) {
      return Err{WireError::kInvalidArgument};
    }
  }
  const size_t pd_length = SctpSessionMessageSize(msg) - kSctpSessionHeaderSize;
  if (pd_length > kSctpSessionMaxPrivateData) {
    return Err{WireError::kSctpSessionPrivateDataTooLong};
  }
  ByteWriter w(out);
  w.WriteBe16(ToCode(msg.function, msg.ird_ord.has_value()));
  w.WriteBe16(static_cast<uint16_t>(pd_length));
  if (msg.ird_ord) {
    w.WriteBe16(
        static_cast<uint16_t>(msg.ird_ord->ird | (msg.send_imm ? kSctpSessionFlagSendImm : 0)));
    w.WriteBe16(static_cast<uint16_t>(
        msg.ird_ord->ord | (msg.unordered_read_resp ? kSctpSessionFlagUnorderedReadResp : 0)));
  }
  w.WriteBytes(msg.private_data);
  if (!w.ok()) return Err{WireError::kNoSpace};
  return w.written();
}

const char* ToString(SctpSessionFunction f) {
  switch (f) {
    case SctpSessionFunction::kInitiate: return "Initiate";
    case SctpSessionFunction::kAccept: return "Accept";
    case SctpSessionFunction::kReject: return "Reject";
    case SctpSessionFunction::kTerminate: return "Terminate";
  }
  return "unknown";
}

}  // namespace iwarpx::wire
