#include "wire/rdmap_atomic.h"

namespace iwarpx::wire {

namespace {

bool IsKnownAtomicOp(uint32_t op) {
  return op == static_cast<uint32_t>(AtomicOp::kFetchAdd) ||
         op == static_cast<uint32_t>(AtomicOp::kSwap) ||
         op == static_cast<uint32_t>(AtomicOp::kCmpSwap);
}

}  // namespace

const char* ToString(AtomicOp op) {
  switch (op) {
    case AtomicOp::kFetchAdd: return "FetchAdd";
    case AtomicOp::kSwap: return "Swap";
    case AtomicOp::kCmpSwap: return "CmpSwap";
  }
  return "unknown AtomicOp";
}

Result<ImmediateDataBody, WireError> DecodeImmediateDataBody(ByteSpan body) {
  if (body.size() != kImmediateDataBodySize) return Err{WireError::kRdmapBadLength};
  return ImmediateDataBody{LoadBe64(body.data())};
}

Result<AtomicRequestBody, WireError> DecodeAtomicRequestBody(ByteSpan body) {
  if (body.size() != kAtomicRequestBodySize) return Err{WireError::kRdmapBadLength};
  ByteReader r(body);
  uint32_t word0 = 0;
  AtomicRequestBody b;
  r.ReadBe32(word0);
  r.ReadBe32(b.request_id);
  r.ReadBe32(b.remote_stag);
  r.ReadBe64(b.remote_to);
  r.ReadBe64(b.add_or_swap_data);
  r.ReadBe64(b.add_or_swap_mask);
  r.ReadBe64(b.compare_data);
  r.ReadBe64(b.compare_mask);
  if (!r.ok()) return Err{WireError::kRdmapBadLength};  // unreachable: size checked
  if ((word0 & kAtomicReservedMask) != 0) return Err{WireError::kRdmapReservedBits};
  const uint32_t op = word0 & kAtomicOpMask;
  if (!IsKnownAtomicOp(op)) return Err{WireError::kAtomicBadOp};
  b.op = static_cast<AtomicOp>(op);
  return b;
}

Result<AtomicResponseBody, WireError> DecodeAtomicResponseBody(ByteSpan body) {
  if (body.size() != kAtomicResponseBodySize) return Err{WireError::kRdmapBadLength};
  return AtomicResponseBody{LoadBe32(body.data()), LoadBe64(body.data() + 4)};
}

std::array<uint8_t, kImmediateDataBodySize> EncodeImmediateDataBody(const ImmediateDataBody& b) {
  std::array<uint8_t, kImmediateDataBodySize> out{};
  StoreBe64(out.data(), b.data);
  return out;
}

std::array<uint8_t, kAtomicResponseBodySize> EncodeAtomicResponseBody(const AtomicResponseBody& b) {
  std::array<uint8_t, kAtomicResponseBodySize> out{};
  StoreBe32(out.data(), b.original_request_id);
  StoreBe64(out.data() + 4, b.original_remote_data);
  return out;
}

Result<size_t, WireError> EncodeAtomicRequestBody(const AtomicRequestBody& b, MutableByteSpan out) {
  const auto op = static_cast<uint32_t>(b.op);
  if (!IsKnownAtomicOp(op)) return Err{WireError::kInvalidArgument};
  if (out.size() < kAtomicRequestBodySize) return Err{WireError::kNoSpace};
  ByteWriter w(out);
  w.WriteBe32(op);
  w.WriteBe32(b.request_id);
  w.WriteBe32(b.remote_stag);
  w.WriteBe64(b.remote_to);
  w.WriteBe64(b.add_or_swap_data);
  w.WriteBe64(b.add_or_swap_mask);
  w.WriteBe64(b.compare_data);
  w.WriteBe64(b.compare_mask);
  return w.written();
}

}  // namespace iwarpx::wire
