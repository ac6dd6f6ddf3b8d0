// Bundles: several DDP segments in one RD data datagram (flag B,
// docs/wire.md §3.6.1). The datagram's ULPDU field holds n >= 2 records
//
//   length(16, big-endian) | DDP segment (length >= 14 bytes) | pad to 4
//
// and record i stands for the RD data datagram seq + i. This file is the
// records' codec; the datagram header is wire/dgram.h's (DgramHeader::bundle).
//
// Contract:
//   * CountBundleRecords reads only inside `records` and accepts exactly the
//     record lists of the format: every length >= kDgramMinDdpSegment, every
//     record inside the bytes, zero pad, at least kBundleMinRecords records
//     and no byte after the last. Anything else is kDgramBadBundle.
//   * BundleReader walks a list CountBundleRecords accepted; on any other
//     bytes it stops early (never reads outside them).
//   * EncodeDgramBundle writes the whole datagram (header with B, records,
//     CRC) or nothing usable: kInvalidArgument for a header EncodeDgram
//     refuses, fewer than 2 segments or a segment shorter than 14 bytes;
//     kNoSpace if `out` is too small.
//   * Pure functions on caller-owned memory: thread-safe, no exceptions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/dgram.h"
#include "wire/error.h"

namespace iwarpx::wire {

inline constexpr size_t kBundleLengthSize = 2;
inline constexpr size_t kBundleMinRecords = 2;

// Bytes of the record carrying a `segment`-byte DDP segment (a multiple of 4).
constexpr size_t BundleRecordSize(size_t segment) {
  return (kBundleLengthSize + segment + 3) & ~size_t{3};
}

// The smallest bundle: two records of the smallest segment (32 bytes).
inline constexpr size_t kBundleMinSize = kBundleMinRecords * BundleRecordSize(kDgramMinDdpSegment);

// Checks a bundle's records (the ULPDU field of a datagram with B); returns
// how many there are.
Result<size_t, WireError> CountBundleRecords(ByteSpan records);

// The segments of a checked record list, in order.
class BundleReader {
 public:
  explicit BundleReader(ByteSpan records) : rest_(records) {}
  // The next record's DDP segment; false after the last.
  bool Next(ByteSpan* segment);

 private:
  ByteSpan rest_;
};

// Writes the datagram `header` (bundle forced on) carrying `segments` as
// records to `out`; returns its size.
Result<size_t, WireError> EncodeDgramBundle(const DgramHeader& header,
                                            std::span<const ByteSpan> segments, bool crc_on,
                                            MutableByteSpan out);

}  // namespace iwarpx::wire
