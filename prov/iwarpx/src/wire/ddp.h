// DDP segment headers (RFC 5041 §4): the control byte (§4.1), the tagged
// buffer model header (§4.2) and the untagged buffer model header (§4.3), plus
// the wrap-safe range arithmetic that data-sink checks need (§7). See
// shared/WIRE.md §3.
//
//   control byte:  T 0x80 | L 0x40 | Rsvd 0x3C (must be 0) | DV 0x03 (= 1)
//
//   tagged (T=1), 14 bytes            untagged (T=0), 18 bytes
//     0     ctrl                        0      ctrl
//     1     RsvdULP (RDMAP ctrl)        1      RsvdULP[0] (RDMAP ctrl)
//     2..5  STag                        2..5   RsvdULP[1..4] (Invalidate STag or 0)
//     6..13 TO (64-bit)                 6..9   QN
//                                       10..13 MSN
//                                       14..17 MO
//
// Contract:
// * Pure codec: no I/O, no allocation, no logging, no exceptions; reentrant.
//   Decoders take a bounded view and never read past it; encoders write into a
//   caller-owned span (or return a fixed array) and never past its end.
// * DDP itself does not interpret RsvdULP: it is carried verbatim for the ULP
//   (RDMAP, rdmap.h), which validates it. DDP does not judge QN, MSN or MO
//   either; which queues exist and which offsets are legal is the ULP's and
//   the engine's business.
// * Errors, each mapping to a Terminate cause through TerminateCauseFor():
//     DV != 1 (checked first: with a bad version the layout is unknown)
//                                     kDdpTaggedBadVersion / kDdpUntaggedBadVersion
//                                     (chosen by the T bit)
//     reserved control bits set       kDdpReservedBits
//     fewer bytes than the header     kTruncated
//     encoder output span too small   kNoSpace
//   Strictness note: RFC 5041 has senders zero Rsvd and (as recalled, not
//   re-read here) receivers not check it. iwarpx rejects it on purpose, as the
//   project brief asks: every accepted header then re-encodes to the same
//   bytes (the fuzzers rely on it), and no known peer (siw, irdma, cxgb4)
//   sets it. Relax DecodeDdpControl() if a future DDP revision uses the bits.
// * Range helpers never compute addr + len, so they cannot overflow.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::wire {

inline constexpr uint8_t kDdpFlagTagged = 0x80;
inline constexpr uint8_t kDdpFlagLast = 0x40;
inline constexpr uint8_t kDdpReservedMask = 0x3C;
inline constexpr uint8_t kDdpVersionMask = 0x03;
inline constexpr uint8_t kDdpVersion = 1;

inline constexpr size_t kDdpTaggedHeaderSize = 14;
inline constexpr size_t kDdpUntaggedHeaderSize = 18;
inline constexpr size_t kDdpMaxHeaderSize = kDdpUntaggedHeaderSize;

constexpr size_t DdpHeaderSize(bool tagged) {
  return tagged ? kDdpTaggedHeaderSize : kDdpUntaggedHeaderSize;
}

// The two flags of the DDP control byte that carry information (DV is
// always 1 and Rsvd always 0 once decoded).
struct DdpControl {
  bool tagged = false;  // T
  bool last = false;    // L
  friend bool operator==(const DdpControl&, const DdpControl&) = default;
};

// One DDP header of either buffer model. Fields of the other model are unused
// and must stay 0 for the encoder (it ignores them) and the comparisons.
struct DdpHeader {
  bool tagged = false;    // T
  bool last = false;      // L
  uint8_t rsvd_ulp0 = 0;  // RsvdULP[0]; RDMAP uses it as its control byte
  // Tagged buffer model (T=1).
  uint32_t stag = 0;  // STag
  uint64_t to = 0;    // TO: tagged offset of this segment's first payload byte
  // Untagged buffer model (T=0).
  uint32_t rsvd_ulp1_4 = 0;  // RsvdULP[1..4]; RDMAP: Invalidate STag or 0
  uint32_t qn = 0;           // QN: queue number
  uint32_t msn = 0;          // MSN: message sequence number (1 for the first)
  uint32_t mo = 0;           // MO: offset of this segment in the message

  size_t size() const { return DdpHeaderSize(tagged); }
  DdpControl control() const { return DdpControl{tagged, last}; }
  friend bool operator==(const DdpHeader&, const DdpHeader&) = default;
};

// A DDP header encoded into a fixed array: bytes[0, size) are valid.
struct DdpHeaderBytes {
  std::array<uint8_t, kDdpMaxHeaderSize> bytes{};
  size_t size = 0;
  ByteSpan view() const { return ByteSpan(bytes.data(), size); }
};

uint8_t EncodeDdpControl(DdpControl control);
Result<DdpControl, WireError> DecodeDdpControl(uint8_t byte);

// Decodes the DDP header at the start of `segment` (the whole DDP segment or
// at least its header). The payload is segment.subspan(header.size()).
Result<DdpHeader, WireError> DecodeDdpHeader(ByteSpan segment);

// Writes the 14- or 18-byte header into `out`; returns the bytes written.
Result<size_t, WireError> EncodeDdpHeader(const DdpHeader& header, MutableByteSpan out);
DdpHeaderBytes EncodeDdpHeader(const DdpHeader& header);

// True if the tagged range [to, to + len) does not fit below 2^64, i.e. the
// segment's last byte would lie past address 2^64 - 1 (RFC 5041 §7.2 "TO
// wrap"). A zero-length range never wraps; [2^64 - len, 2^64) does not wrap.
constexpr bool TaggedRangeWraps(uint64_t to, uint64_t len) {
  return len != 0 && len - 1 > std::numeric_limits<uint64_t>::max() - to;
}

// True if [addr, addr + len) lies inside the registered region
// [base, base + reg_len). Computed as WIRE.md §3 requires, without addr + len:
// addr >= base, len <= reg_len and addr - base <= reg_len - len. A zero-length
// range is within the region if addr lies in [base, base + reg_len].
constexpr bool RangeWithin(uint64_t base, uint64_t reg_len, uint64_t addr, uint64_t len) {
  return addr >= base && len <= reg_len && addr - base <= reg_len - len;
}

}  // namespace iwarpx::wire
