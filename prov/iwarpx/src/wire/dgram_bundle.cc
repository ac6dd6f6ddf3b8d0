#include "wire/dgram_bundle.h"

#include <cstring>

namespace iwarpx::wire {

Result<size_t, WireError> CountBundleRecords(ByteSpan records) {
  size_t count = 0;
  size_t at = 0;
  while (at < records.size()) {
    const size_t left = records.size() - at;
    if (left < kBundleLengthSize) return Err{WireError::kDgramBadBundle};
    const size_t len = LoadBe16(records.data() + at);
    if (len < kDgramMinDdpSegment) return Err{WireError::kDgramBadBundle};
    const size_t size = BundleRecordSize(len);
    if (size > left) return Err{WireError::kDgramBadBundle};
    for (size_t i = at + kBundleLengthSize + len; i < at + size; ++i) {
      if (records[i] != 0) return Err{WireError::kDgramBadBundle};
    }
    at += size;
    ++count;
  }
  if (count < kBundleMinRecords) return Err{WireError::kDgramBadBundle};
  return count;
}

bool BundleReader::Next(ByteSpan* segment) {
  if (rest_.size() < kBundleLengthSize) return false;
  const size_t len = LoadBe16(rest_.data());
  const size_t size = BundleRecordSize(len);
  if (size > rest_.size()) return false;
  *segment = rest_.subspan(kBundleLengthSize, len);
  rest_ = rest_.subspan(size);
  return true;
}

Result<size_t, WireError> EncodeDgramBundle(const DgramHeader& header,
                                            std::span<const ByteSpan> segments, bool crc_on,
                                            MutableByteSpan out) {
  if (segments.size() < kBundleMinRecords) return Err{WireError::kInvalidArgument};
  size_t total = 0;
  for (const ByteSpan s : segments) {
    if (s.size() < kDgramMinDdpSegment || s.size() > kDgramMaxUlpdu) {
      return Err{WireError::kInvalidArgument};
    }
    total += BundleRecordSize(s.size());
    if (total > kDgramMaxUlpdu) return Err{WireError::kInvalidArgument};
  }
  if (out.size() < DgramSize(total)) return Err{WireError::kNoSpace};
  uint8_t* p = out.data() + kDgramHeaderSize;
  for (const ByteSpan s : segments) {
    const size_t size = BundleRecordSize(s.size());
    StoreBe16(p, static_cast<uint16_t>(s.size()));
    std::memcpy(p + kBundleLengthSize, s.data(), s.size());
    std::memset(p + kBundleLengthSize + s.size(), 0, size - kBundleLengthSize - s.size());
    p += size;
  }
  DgramHeader h = header;
  h.bundle = true;
  const ByteSpan records(out.data() + kDgramHeaderSize, total);
  return EncodeDgram(h, std::span<const ByteSpan>(&records, 1), crc_on, out);
}

}  // namespace iwarpx::wire
