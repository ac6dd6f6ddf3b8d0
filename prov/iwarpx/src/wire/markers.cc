#include "wire/markers.h"

#include <algorithm>
#include <cstring>

#include "base/crc32c.h"
#include "wire/fpdu.h"

namespace iwarpx::wire {

size_t MarkerCount(uint64_t pos, size_t unmarked_length) {
  // Marker k sits at output offset first + 512*k with 4*k marker octets and
  // (first + 508*k) FPDU octets before it; it is inside the FPDU while FPDU
  // octets remain to be written there.
  constexpr size_t kStride = kMarkerInterval - kMarkerSize;
  const size_t first = BytesToNextMarker(pos);
  if (first >= unmarked_length) return 0;
  return (unmarked_length - first - 1) / kStride + 1;
}

bool MarkerValid(const uint8_t* p, uint64_t offset_in_fpdu, bool strict_reserved) {
  if (strict_reserved && LoadBe16(p) != 0) return false;
  const uint16_t ptr = static_cast<uint16_t>(LoadBe16(p + 2) & kMarkerPtrMask);
  return offset_in_fpdu == ptr;
}

Result<size_t, WireError> InsertMarkers(uint64_t pos, ByteSpan fpdu_body, bool crc_enabled,
                                        MutableByteSpan out) {
  if (pos % 4 != 0 || fpdu_body.size() < kFpduLengthSize) return Err{WireError::kInvalidArgument};
  const size_t ulpdu_length = LoadBe16(fpdu_body.data());
  if (fpdu_body.size() != kFpduLengthSize + ulpdu_length + PadFor(ulpdu_length)) {
    return Err{WireError::kInvalidArgument};
  }
  const size_t unmarked = fpdu_body.size() + kFpduCrcSize;
  const size_t markers = MarkerCount(pos, unmarked);
  const size_t total = unmarked + kMarkerSize * markers;
  if (markers != 0) {
    const size_t last_marker_offset = BytesToNextMarker(pos) + kMarkerInterval * (markers - 1);
    if (last_marker_offset > 0xFFFF) return Err{WireError::kInvalidArgument};
  }
  if (out.size() < total) return Err{WireError::kNoSpace};

  uint8_t* const dst = out.data();
  uint32_t state = kCrc32cInit;
  size_t written = 0;
  size_t to_marker = BytesToNextMarker(pos);
  auto put_marker = [&] {
    StoreMarker(dst + written, static_cast<uint16_t>(written));
    if (crc_enabled) state = Crc32cExtend(state, ByteSpan(dst + written, kMarkerSize));
    written += kMarkerSize;
    to_marker = kMarkerInterval - kMarkerSize;
  };

  size_t taken = 0;
  while (taken < fpdu_body.size()) {
    if (to_marker == 0) put_marker();
    const size_t n = std::min(fpdu_body.size() - taken, to_marker);
    std::memcpy(dst + written, fpdu_body.data() + taken, n);
    if (crc_enabled) state = Crc32cExtend(state, ByteSpan(dst + written, n));
    written += n;
    taken += n;
    to_marker -= n;
  }
  // A marker due right after PAD goes before the CRC field and is covered by it.
  if (to_marker == 0) put_marker();
  StoreCrcWire(dst + written, crc_enabled ? Crc32cFinalize(state) : 0);
  written += kFpduCrcSize;
  return written;
}

Result<size_t, WireError> MarkerInserter::Insert(ByteSpan fpdu_body, bool crc_enabled,
                                                 MutableByteSpan out) {
  auto r = InsertMarkers(position_, fpdu_body, crc_enabled, out);
  if (r.ok()) position_ += r.value();
  return r;
}

}  // namespace iwarpx::wire
