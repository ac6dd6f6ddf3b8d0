// MPA markers (RFC 5044 §4, "Marker Format" and "MPA Markers"; WIRE.md §2.4).
//
// A marker is 4 octets, `Reserved (16) = 0 | FPDUPTR (16)`, both big-endian.
// When the receiver of a direction asked for markers (M=1 in its MPA frame),
// the sender of that direction inserts one at every 512th octet of the TCP
// stream, counting from the first octet after the MPA Request/Reply: stream
// position 0 (the start of the first FPDU) carries a marker, then 512, 1024,
// ... Markers are not counted in ULPDU_Length. FPDUPTR is the distance in
// octets from the start of the FPDU containing the marker back to the
// marker's first octet.
//
// Two corner cases the RFC settles (conclusions used by this code):
//
// (a) A marker that falls exactly where an FPDU starts is placed BEFORE that
//     FPDU's ULPDU_Length field, belongs to that FPDU and has FPDUPTR = 0.
//     RFC 5044, "MPA Markers": "MPA Markers MUST be inserted immediately
//     preceding the first FPDU of full operation phase, and at every 512th
//     octet of the TCP octet stream thereafter. As a result, the first MPA
//     Marker has an FPDUPTR value of 0x0000."  The same holds for any later
//     marker that coincides with an FPDU start: its FPDU begins at the marker.
// (b) Such a marker is covered by the CRC of the FPDU that follows it (the FPDU
//     it points to), not by the CRC of the preceding FPDU: the CRC covers
//     "ULPDU_Length + ULPDU + PAD + any markers inside the FPDU" (RFC 5044,
//     "CRC Calculation"; WIRE.md §2.3), and by (a) the marker is the first
//     octets of the following FPDU. A marker that falls after PAD and before
//     the CRC field belongs to the FPDU whose CRC follows it and is covered by
//     that CRC. A marker can never split the ULPDU_Length or CRC fields:
//     FPDUs and markers are 4-octet aligned in the stream.
// Caveat for the reader: the RFC sentences above are quoted from memory; the
// RFC body could not be re-read while this was written. (a) and (b) agree
// with WIRE.md §2.4 and with Wireshark's iwarp_mpa dissector, which skips a
// marker at offset 0 of an FPDU and runs that FPDU's CRC from offset 0
// (marker included). Re-check against the RFC text before citing it elsewhere.
//
// Receive-side rules (applied by FpduReceiver in fpdu.h, kBadMarker on failure):
//   * FPDUPTR must equal the distance from the current FPDU's start. The RFC
//     says the two low bits are zero on transmit and treated as zero on
//     receive, so they are masked before the comparison.
//   * Reserved is written as zero and, by default, ignored on receive (it still
//     enters the CRC): RFC 5044 says it is "set to zero on transmit and ignored
//     on receive (except for CRC calculation)", and interoperability wins.
//     FpduRxConfig::strict_marker_reserved makes a non-zero value kBadMarker.
//   * A marker whose FPDUPTR would exceed 16 bits cannot be expressed; FPDUs
//     that large must not be sent with markers (the transmit side refuses
//     them with kInvalidArgument; MULPDU keeps real FPDUs far below that).
//
// Transmit side: InsertMarkers()/MarkerInserter turn an FPDU image without
// CRC (`ULPDU_Length | ULPDU | PAD`, e.g. the first bytes of EncodeFpdu's
// output) into its on-wire image with markers inserted and the CRC computed
// over the marked image (the CRC field stays zero when CRC is off). This
// copies the FPDU; markers are negotiated off by every mainstream peer, so the
// zero-copy hot path (FrameFpdu in fpdu.h) does not support them.
//
// No allocation, no exceptions. Free functions are pure; MarkerInserter is a
// value type for one direction of one connection (not thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::wire {

inline constexpr size_t kMarkerInterval = 512;
inline constexpr size_t kMarkerSize = 4;
// FPDUPTR's two low bits are ignored on receive.
inline constexpr uint16_t kMarkerPtrMask = 0xFFFC;

// Octets from stream position `pos` to the next marker position (0 if a
// marker belongs at `pos`).
constexpr size_t BytesToNextMarker(uint64_t pos) {
  return static_cast<size_t>((kMarkerInterval - pos % kMarkerInterval) % kMarkerInterval);
}

// Number of markers inside an FPDU that starts at stream position `pos` and
// has `unmarked_length` octets without markers (ULPDU_Length through CRC).
// A marker at the position right after the CRC belongs to the next FPDU and
// is not counted.
size_t MarkerCount(uint64_t pos, size_t unmarked_length);

// On-wire length of that FPDU with its markers.
inline size_t MarkedFpduLength(uint64_t pos, size_t unmarked_length) {
  return unmarked_length + kMarkerSize * MarkerCount(pos, unmarked_length);
}

// Writes a marker (Reserved = 0) at p[0..3].
inline void StoreMarker(uint8_t* p, uint16_t fpduptr) {
  StoreBe16(p, 0);
  StoreBe16(p + 2, fpduptr);
}

// Checks the marker at p[0..3] found `offset_in_fpdu` octets after the start
// of the FPDU that contains it. False means the caller reports kBadMarker.
bool MarkerValid(const uint8_t* p, uint64_t offset_in_fpdu, bool strict_reserved);

// Marks one FPDU. `fpdu_body` is `ULPDU_Length | ULPDU | PAD` (no CRC field),
// the FPDU starts at stream position `pos`. Writes the marked FPDU including
// its CRC field into `out` and returns the number of bytes written
// (MarkedFpduLength(pos, fpdu_body.size() + 4)).
// Errors: kInvalidArgument (pos not 4-aligned, body shorter than 2 bytes or
// not the size its ULPDU_Length implies, or an FPDUPTR would not fit 16
// bits); kNoSpace (out too small; nothing written).
Result<size_t, WireError> InsertMarkers(uint64_t pos, ByteSpan fpdu_body, bool crc_enabled,
                                        MutableByteSpan out);

// Transmit-side marker state for one direction: remembers where the next
// FPDU starts.
class MarkerInserter {
 public:
  // `stream_pos`: position of the next FPDU from the first octet after the
  // MPA Request/Reply (0 for a fresh connection).
  explicit MarkerInserter(uint64_t stream_pos = 0) : position_(stream_pos) {}

  uint64_t position() const { return position_; }
  // On-wire size of the next FPDU whose body (no CRC) has `body_size` bytes.
  size_t MarkedSize(size_t body_size) const { return MarkedFpduLength(position_, body_size + 4); }
  // InsertMarkers at position(); on success advances position() past it.
  Result<size_t, WireError> Insert(ByteSpan fpdu_body, bool crc_enabled, MutableByteSpan out);

 private:
  uint64_t position_;
};

}  // namespace iwarpx::wire
