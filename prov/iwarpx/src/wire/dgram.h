// Datagram iWARP over UDP: the project's own framing of one DDP segment per
// UDP datagram, for the UD (unreliable datagram) and RD (reliable datagram)
// services. The format is specified field by field in docs/wire.md, section
// "Datagram iWARP over UDP"; this header is its codec.
//
// Wire image (all big-endian except the CRC, which is the little-endian image
// of the CRC32c value exactly like the MPA FPDU CRC, WIRE.md §2.3):
//
//   0 magic(16)=0x6977 | 2 version(8)=1 | 3 type(8) | 4 flags(16) | 6 ulpdu_length(16)
//   8 credits(16) | 10 ctrl_op(8) | 11 reserved(8)=0 | 12 dst_qpn(32) | 16 src_qpn(32)
//  20 session(32) | 24 echo_session(32) | 28 seq(32) | 32 ack(32) | 36 sack(32)
//  40 ULPDU (ulpdu_length bytes, a complete RFC 5041 DDP segment, opaque here)
//     PAD (0..3 zero bytes to a multiple of 4) | CRC32c (4 bytes)
//
// The CRC covers everything before it (header, ULPDU, pad). With the C flag
// clear (FI_IWARPX_DGRAM_CRC=0) the sender writes zero and receivers ignore it.
//
// Contract:
//   * Encoders validate the header against the per-type rules of docs/wire.md
//     and return kInvalidArgument for anything the format forbids, kNoSpace if
//     the output is too small. They write nothing past `out` and never touch
//     the ULPDU bytes except to read them (CRC, UD whole-message check).
//   * DecodeDgram reads only inside `bytes`, never allocates, and returns the
//     first rule the datagram breaks (order documented at DecodeDgram). A
//     successful decode re-encodes to the identical bytes, except that the CRC
//     field of a datagram with C clear is re-encoded as zero.
//   * The ULPDU is carried opaquely; its DDP/RDMAP headers are decoded by the
//     ddp/rdmap codecs. Only for UD data does the framing look at the DDP
//     control byte (T, L) and the untagged MO, to enforce "one whole DDP
//     message per UD datagram".
//   * Pure functions on caller-owned memory: thread-safe, no exceptions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::wire {

inline constexpr uint16_t kDgramMagic = 0x6977;  // "iw"
inline constexpr uint8_t kDgramVersion = 1;
inline constexpr size_t kDgramHeaderSize = 40;
inline constexpr size_t kDgramCrcSize = 4;
inline constexpr size_t kDgramMaxPad = 3;
inline constexpr size_t kDgramMaxTrailerSize = kDgramMaxPad + kDgramCrcSize;
// Smallest datagram: header + CRC (an ack or control datagram).
inline constexpr size_t kDgramMinSize = kDgramHeaderSize + kDgramCrcSize;
// Largest UDP payload over IPv4 (65535 - 20 IP - 8 UDP); also used on IPv6.
inline constexpr size_t kDgramMaxSize = 65507;
// Smallest ULPDU of a data datagram: the tagged DDP header (RFC 5041 §4.2).
inline constexpr size_t kDgramMinDdpSegment = 14;
// First sequence number of every RD session.
inline constexpr uint32_t kDgramInitialSeq = 0;
// Datagrams an RD sender may have outstanding before its first ack arrives.
inline constexpr uint16_t kDgramInitialCredits = 16;
inline constexpr unsigned kDgramSackBits = 32;

// Flag bits of the 16-bit flags field (offset 4).
inline constexpr uint16_t kDgramFlagCrc = 0x8000;         // C: CRC field valid
inline constexpr uint16_t kDgramFlagAck = 0x4000;         // A: ack/echo/credits valid
inline constexpr uint16_t kDgramFlagSack = 0x2000;        // S: sack bitmap valid
inline constexpr uint16_t kDgramFlagSyn = 0x1000;         // Y: session opening
inline constexpr uint16_t kDgramFlagAckRequest = 0x0800;  // R: ack me now
inline constexpr uint16_t kDgramFlagBundle = 0x0400;      // B: records (wire/dgram_bundle.h)
inline constexpr uint16_t kDgramFlagsReserved = 0x03FF;   // must be zero

enum class DgramType : uint8_t {
  kUdData = 1,     // UD: one whole DDP message, no reliability fields
  kRdData = 2,     // RD: one DDP segment with seq, optional piggybacked ack
  kRdAck = 3,      // RD: ack only, no ULPDU
  kRdControl = 4,  // RD: control operation (ctrl_op), no ULPDU
};

enum class DgramControlOp : uint8_t {
  kNone = 0,   // every type except kRdControl
  kReset = 1,  // "I hold no state for echo_session": peer must open a new session
  kProbe = 2,  // "answer with an ack now": liveness, zero window, tail loss
};

// The decoded header. ulpdu_length is not here: it is the ULPDU's size. The C
// flag is not here either: the encoder sets it from `crc_on`, the decoder
// reports it in DecodedDgram::crc_present.
struct DgramHeader {
  DgramType type = DgramType::kUdData;
  DgramControlOp ctrl_op = DgramControlOp::kNone;
  bool has_ack = false;      // A
  bool has_sack = false;     // S (requires A)
  bool syn = false;          // Y: all RD types except RESET
  bool ack_request = false;  // R (RD data only)
  // B (RD data only): the ULPDU is n >= 2 records `u16 length | DDP segment |
  // pad to 4`, seq the first one's (docs/wire.md §3.6.1, wire/dgram_bundle.h).
  bool bundle = false;
  uint16_t credits = 0;  // with A: peer may send seq in [ack, ack + credits)
  uint32_t dst_qpn = 0;
  uint32_t src_qpn = 0;
  uint32_t session = 0;       // RD: sender's session, never 0
  uint32_t echo_session = 0;  // with A: session being acked; RESET: session refused
  uint32_t seq = 0;           // RD data: this datagram; RD ack/PROBE: next unsent
  uint32_t ack = 0;           // with A: next sequence number expected
  uint32_t sack = 0;          // with S: bit i set = seq ack + 1 + i received

  friend bool operator==(const DgramHeader&, const DgramHeader&) = default;
};

struct DecodedDgram {
  DgramHeader header;
  ByteSpan ulpdu;  // view into the decoded bytes; empty for ack/control
  // The rest of the ULPDU when it was received in place (DecodeDgramSplit):
  // the ULPDU is ulpdu ‖ ulpdu_placed. Empty from DecodeDgram.
  ByteSpan ulpdu_placed;
  bool crc_present = false;  // the C flag
  bool crc_checked = false;  // C set, verify_crc requested, and the CRC matched
  // Set by rd::DgramPort on a bundle's record that has more records after it
  // in the same datagram (docs/wire.md §3.6.1): a receiver may leave an ack
  // it owes for the last one (never set by the decoders).
  bool more_records = false;
  // Set by rd::DgramPort on every record of a bundle after the first (never
  // set by the decoders): such a record draws no RESET, so one datagram
  // draws at most one whatever its record count (no amplification toward an
  // unchecked source address).
  bool later_record = false;
};

// Header and trailer for a gather send (sendmsg iovec: header, ULPDU parts,
// trailer). The ULPDU itself is not copied.
struct DgramFraming {
  std::array<uint8_t, kDgramHeaderSize> header{};
  std::array<uint8_t, kDgramMaxTrailerSize> trailer{};  // pad then CRC
  size_t trailer_size = 0;
  size_t datagram_size = 0;

  [[nodiscard]] ByteSpan HeaderBytes() const { return ByteSpan(header.data(), header.size()); }
  [[nodiscard]] ByteSpan TrailerBytes() const { return ByteSpan(trailer.data(), trailer_size); }
};

// Zero bytes after a ULPDU of `ulpdu_length` bytes (0..3).
constexpr size_t DgramPadLength(size_t ulpdu_length) {
  return (4 - (ulpdu_length & 3)) & 3;
}

// Datagram size for a ULPDU of `ulpdu_length` bytes.
constexpr size_t DgramSize(size_t ulpdu_length) {
  return kDgramHeaderSize + ulpdu_length + DgramPadLength(ulpdu_length) + kDgramCrcSize;
}

// Largest ULPDU whose datagram fits in `max_datagram` bytes (e.g. a path
// MTU minus IP/UDP headers), capped at the format maximum; 0 if not even an
// empty datagram fits.
constexpr size_t DgramMaxUlpduLength(size_t max_datagram = kDgramMaxSize) {
  if (max_datagram > kDgramMaxSize) max_datagram = kDgramMaxSize;
  if (max_datagram < kDgramMinSize) return 0;
  return (max_datagram - kDgramMinSize) & ~size_t{3};
}

inline constexpr size_t kDgramMaxUlpdu = DgramMaxUlpduLength();  // 65460

// Writes the whole datagram (header, ULPDU parts in order, pad, CRC) to `out`.
// Returns the datagram size. crc_on sets C and computes the CRC; otherwise the
// CRC field is zero. The parts may already lie in place at out[40..] (a
// sender that built the DDP segment in the output buffer); other overlap with
// `out` is not allowed. With header.bundle the records must be one
// contiguous part (empty parts aside) that CountBundleRecords accepts
// (kInvalidArgument otherwise); EncodeDgramBundle builds them from segments.
Result<size_t, WireError> EncodeDgram(const DgramHeader& header,
                                      std::span<const ByteSpan> ulpdu_parts, bool crc_on,
                                      MutableByteSpan out);

// Same validation and bytes as EncodeDgram, but only the header and the
// trailer (pad + CRC) are produced; the ULPDU parts are read for the CRC.
Result<DgramFraming, WireError> FrameDgram(const DgramHeader& header,
                                           std::span<const ByteSpan> ulpdu_parts, bool crc_on);

// Decodes one received UDP payload. The first failed check, in this order:
//   kTruncated        fewer than 2 bytes (magic) or 3 bytes (version)
//   kDgramBadMagic    bytes 0..1 are not 0x6977 (stray traffic stops here)
//   kDgramBadVersion  byte 2 is not 1 (checked before the header length)
//   kTruncated        fewer than 44 bytes (header + CRC)
//   kDgramBadLength   more than 65507 bytes, or size != 40 + ulpdu_length +
//                     pad + 4
//   kBadCrc           C set, verify_crc, and the CRC does not match
//   kDgramReservedBits reserved flag bits or byte 11 set; unknown type or
//                     ctrl_op; a field or flag the type does not use is not
//                     zero; session 0 on RD; A/S rules; non-zero pad
//   kDgramBadLength   ulpdu_length not allowed for the type (ack/control with
//                     a ULPDU, data with less than a 14-byte DDP header)
//   kDgramBadSegment  UD data that is not one whole DDP message (L clear, or
//                     untagged with MO != 0 or shorter than 18 bytes)
//   kDgramBadBundle   B set and the ULPDU is not n >= 2 well-formed records
//                     (wire/dgram_bundle.h CountBundleRecords)
// A datagram with C clear is accepted without a CRC check (its CRC field is
// ignored); a receiver whose policy requires CRC checks crc_present itself.
Result<DecodedDgram, WireError> DecodeDgram(ByteSpan bytes, bool verify_crc);

// The same decode of a datagram received in three pieces, head ‖ placed ‖
// tail (rd::DgramPort's in-place receive): the ULPDU must be exactly
// head[40..] ‖ placed (`placed` not empty) and `tail` exactly its pad and
// CRC, else kDgramBadLength; the other checks, in the order above, are those
// of DecodeDgram on the concatenated bytes, except that UD data is refused
// (kDgramBadSegment: UD datagrams are never received in place) and so is a
// bundle (kDgramBadBundle). The CRC is
// computed over the pieces where they lie. Result: `ulpdu` views head[40..],
// `ulpdu_placed` views `placed`.
Result<DecodedDgram, WireError> DecodeDgramSplit(ByteSpan head, ByteSpan placed, ByteSpan tail,
                                                 bool verify_crc);

// RD sequence numbers: RFC 1982 serial-number arithmetic with SERIAL_BITS = 32.
// a and b exactly 2^31 apart are unordered (both SeqLt(a, b) and SeqLt(b, a)
// are false), as RFC 1982 §3.2 leaves that case undefined.
constexpr bool SeqLt(uint32_t a, uint32_t b) {
  const uint32_t d = b - a;
  return d != 0 && d < 0x80000000u;
}
constexpr bool SeqGt(uint32_t a, uint32_t b) {
  return SeqLt(b, a);
}
constexpr bool SeqLe(uint32_t a, uint32_t b) {
  return a == b || SeqLt(a, b);
}
constexpr bool SeqGe(uint32_t a, uint32_t b) {
  return a == b || SeqLt(b, a);
}
// Signed distance b - a for sequence numbers less than 2^31 apart.
constexpr int32_t SeqDiff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(b - a);
}
// True if seq lies in the window [base, base + size) modulo 2^32.
constexpr bool SeqInWindow(uint32_t seq, uint32_t base, uint32_t size) {
  return seq - base < size;
}

// True if (ack, sack) reports `seq` as received: seq before ack, or its SACK
// bit is set (has_sack false means the bitmap is not valid).
constexpr bool DgramAcks(uint32_t ack, bool has_sack, uint32_t sack, uint32_t seq) {
  if (SeqLt(seq, ack)) return true;
  if (!has_sack) return false;
  const uint32_t bit = seq - ack - 1;  // seq == ack wraps to 0xFFFFFFFF: not in the map
  return bit < kDgramSackBits && ((sack >> bit) & 1u) != 0;
}

}  // namespace iwarpx::wire
