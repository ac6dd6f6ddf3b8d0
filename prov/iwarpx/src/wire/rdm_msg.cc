#include "wire/rdm_msg.h"

namespace iwarpx::wire {

namespace {

// The segments of an RTS or CTS add up to `size` (no overflow).
bool SegmentsAddUp(const RdmHeader& h) {
  if (h.segment_count > kRdmMaxSegments) return false;
  uint64_t sum = 0;
  for (uint8_t i = 0; i < h.segment_count; ++i) {
    if (h.segments[i].len > UINT64_MAX - sum) return false;
    sum += h.segments[i].len;
  }
  return sum == h.size;
}

bool HasSegments(RdmOp op) {
  return op == RdmOp::kRts || op == RdmOp::kCts;
}

// Bytes 8..15 carry the offset (DATA, CTS with C) instead of the tag.
bool CarriesOffset(const RdmHeader& h) {
  return h.op == RdmOp::kData || (h.op == RdmOp::kCts && h.copy);
}

bool Valid(const RdmHeader& h) {
  if (!h.tagged && h.tag != 0) return false;
  if (!h.has_data && h.data != 0) return false;
  if (!CarriesOffset(h) && h.offset != 0) return false;
  if (h.copy && h.op != RdmOp::kRts && h.op != RdmOp::kCts) return false;
  switch (h.op) {
    case RdmOp::kEager: return h.segment_count == 0 && h.msg_id == 0 && !h.write;
    case RdmOp::kRts:
      if (h.write && h.copy) return false;
      if (h.write || h.copy) return h.segment_count == 0;
      return h.segment_count != 0 && SegmentsAddUp(h);
    case RdmOp::kCts:
      if (h.tagged || h.has_data || h.write) return false;
      if (h.copy) return h.segment_count == 0 && (h.size == 0 || h.offset > 0);
      return SegmentsAddUp(h);
    case RdmOp::kFin: return !h.tagged && !h.has_data && h.segment_count == 0;
    case RdmOp::kSwitch:
      return !h.tagged && !h.has_data && !h.write && h.segment_count == 0 && h.msg_id == 0 &&
             h.size == 0;
    case RdmOp::kData:
      return !h.tagged && !h.has_data && !h.write && h.segment_count == 0 &&
             h.offset <= UINT64_MAX - h.size;
    case RdmOp::kTaken:
      return !h.tagged && !h.has_data && !h.write && h.segment_count == 0 && h.msg_id <= 2 &&
             (h.msg_id != 2 || h.size == 0);
  }
  return false;
}

}  // namespace

size_t RdmHeaderLength(const RdmHeader& h) {
  if (!HasSegments(h.op)) return kRdmHeaderSize;
  return kRdmHeaderSize + 4 + size_t{h.segment_count} * kRdmSegmentSize;
}

Result<size_t, WireError> EncodeRdmHeader(const RdmHeader& h, MutableByteSpan out) {
  if (!Valid(h)) return Err{WireError::kInvalidArgument};
  const size_t n = RdmHeaderLength(h);
  if (out.size() < n) return Err{WireError::kNoSpace};
  ByteWriter w(out);
  uint16_t flags = 0;
  if (h.tagged) flags |= kRdmFlagTagged;
  if (h.has_data) flags |= kRdmFlagData;
  if (h.write) flags |= kRdmFlagWrite;
  if (h.copy) flags |= kRdmFlagCopy;
  w.WriteU8(kRdmVersion);
  w.WriteU8(static_cast<uint8_t>(h.op));
  w.WriteBe16(flags);
  w.WriteBe32(h.msg_id);
  w.WriteBe64(CarriesOffset(h) ? h.offset : h.tag);
  w.WriteBe64(h.data);
  w.WriteBe64(h.size);
  if (HasSegments(h.op)) {
    w.WriteU8(h.segment_count);
    w.WriteZeros(3);
    for (uint8_t i = 0; i < h.segment_count; ++i) {
      w.WriteBe32(h.segments[i].stag);
      w.WriteBe32(0);
      w.WriteBe64(h.segments[i].to);
      w.WriteBe64(h.segments[i].len);
    }
  }
  return n;
}

namespace {

// An EAGER (the one op every small message is), once DecodeRdmMessage has
// checked its version, op and header length: the flag, tag, data and length
// checks that apply to it, without the reader; rdm_msg_test's known answers
// and the fuzzer's round trip cover it.
Result<RdmMessage, WireError> DecodeEager(ByteSpan bytes) {
  const uint8_t* p = bytes.data();
  const uint16_t flags = LoadBe16(p + 2);
  RdmMessage m;
  RdmHeader& h = m.header;
  h.op = RdmOp::kEager;
  h.msg_id = LoadBe32(p + 4);
  h.tag = LoadBe64(p + 8);
  h.data = LoadBe64(p + 16);
  h.size = LoadBe64(p + 24);
  h.tagged = (flags & kRdmFlagTagged) != 0;
  h.has_data = (flags & kRdmFlagData) != 0;
  if ((flags & (kRdmFlagsReserved | kRdmFlagWrite | kRdmFlagCopy)) != 0 || h.msg_id != 0 ||
      (!h.tagged && h.tag != 0) || (!h.has_data && h.data != 0)) {
    return Err{WireError::kRdmReservedBits};
  }
  if (bytes.size() - kRdmHeaderSize != h.size) return Err{WireError::kRdmBadLength};
  m.payload = bytes.subspan(kRdmHeaderSize);
  return m;
}

}  // namespace

Result<RdmMessage, WireError> DecodeRdmMessage(ByteSpan bytes) {
  ByteReader r(bytes);
  uint8_t version = 0;
  uint8_t op = 0;
  uint16_t flags = 0;
  RdmMessage m;
  RdmHeader& h = m.header;
  if (bytes.size() < 2) return Err{WireError::kTruncated};
  version = bytes[0];
  op = bytes[1];
  if (version != kRdmVersion) return Err{WireError::kRdmBadVersion};
  if (op < static_cast<uint8_t>(RdmOp::kEager) || op > static_cast<uint8_t>(RdmOp::kTaken)) {
    return Err{WireError::kRdmBadOp};
  }
  if (bytes.size() < kRdmHeaderSize) return Err{WireError::kTruncated};
  if (op == static_cast<uint8_t>(RdmOp::kEager)) return DecodeEager(bytes);
  r.Skip(2);
  r.ReadBe16(flags);
  r.ReadBe32(h.msg_id);
  r.ReadBe64(h.tag);
  r.ReadBe64(h.data);
  r.ReadBe64(h.size);
  h.op = static_cast<RdmOp>(op);
  h.tagged = (flags & kRdmFlagTagged) != 0;
  h.has_data = (flags & kRdmFlagData) != 0;
  h.write = (flags & kRdmFlagWrite) != 0;
  h.copy = (flags & kRdmFlagCopy) != 0;
  if ((flags & kRdmFlagsReserved) != 0) return Err{WireError::kRdmReservedBits};
  if (h.write && h.op != RdmOp::kRts && h.op != RdmOp::kFin)
    return Err{WireError::kRdmReservedBits};
  if (h.copy && h.op != RdmOp::kRts && h.op != RdmOp::kCts) {
    return Err{WireError::kRdmReservedBits};
  }
  if (CarriesOffset(h)) {
    h.offset = h.tag;
    h.tag = 0;
  }
  if (HasSegments(h.op)) {
    uint8_t count = 0;
    uint8_t reserved[3] = {};
    if (!r.ReadBytes(MutableByteSpan(&count, 1)) || !r.ReadBytes(MutableByteSpan(reserved, 3))) {
      return Err{WireError::kTruncated};
    }
    if (reserved[0] != 0 || reserved[1] != 0 || reserved[2] != 0) {
      return Err{WireError::kRdmReservedBits};
    }
    if (count > kRdmMaxSegments) return Err{WireError::kRdmBadLength};
    h.segment_count = count;
    for (uint8_t i = 0; i < count; ++i) {
      uint32_t pad = 0;
      if (!r.ReadBe32(h.segments[i].stag) || !r.ReadBe32(pad) || !r.ReadBe64(h.segments[i].to) ||
          !r.ReadBe64(h.segments[i].len)) {
        return Err{WireError::kTruncated};
      }
      if (pad != 0) return Err{WireError::kRdmReservedBits};
    }
  }
  if (!h.tagged && h.tag != 0) return Err{WireError::kRdmReservedBits};
  if (!h.has_data && h.data != 0) return Err{WireError::kRdmReservedBits};
  switch (h.op) {
    case RdmOp::kEager:  // decoded by DecodeEager above; cannot reach here
      return Err{WireError::kRdmBadOp};
    case RdmOp::kData:
      if (h.tagged || h.has_data || h.write) return Err{WireError::kRdmReservedBits};
      if (bytes.size() - kRdmHeaderSize != h.size || !Valid(h)) {
        return Err{WireError::kRdmBadLength};
      }
      m.payload = bytes.subspan(kRdmHeaderSize);
      return m;
    case RdmOp::kRts:
      if (!Valid(h)) return Err{WireError::kRdmBadLength};
      break;
    case RdmOp::kCts:
      if (h.tagged || h.has_data || h.write) return Err{WireError::kRdmReservedBits};
      if (!Valid(h)) return Err{WireError::kRdmBadLength};
      break;
    case RdmOp::kFin:
      if (h.tagged || h.has_data) return Err{WireError::kRdmReservedBits};
      break;
    case RdmOp::kSwitch:
    case RdmOp::kTaken:
      if (!Valid(h)) return Err{WireError::kRdmReservedBits};
      break;
  }
  if (bytes.size() != RdmHeaderLength(h)) return Err{WireError::kRdmBadLength};
  return m;
}

}  // namespace iwarpx::wire
