// MPA framing of DDP segments on a TCP stream: FPDUs (RFC 5044 §4,
// WIRE.md §2).
//
//   | ULPDU_Length (16, BE) | ULPDU (a DDP segment) | PAD (0..3) | CRC (32) |
//
// ULPDU_Length counts the ULPDU only. PAD makes (2 + ULPDU_Length + PAD) a
// multiple of 4. The CRC field is always present: with CRC negotiated it is
// CRC32c over ULPDU_Length, ULPDU, PAD and any markers inside the FPDU, as
// the little-endian image of the CRC value (WIRE.md §2.3, base/crc32c.h);
// without CRC the sender writes zero and the receiver ignores the field.
// Markers (markers.h) are optional 4-byte insertions every 512 stream octets.
//
// This file has three parts, all without I/O and without heap allocation on
// the per-FPDU path:
//
//  * Transmit, no markers (the hot path): FrameFpdu() computes only the
//    framing around a ULPDU given as a list of byte spans (DDP header,
//    payload pieces): a 2-byte prefix and a trailer of PAD + CRC (<= 7 bytes).
//    The engine then gathers `prefix, parts..., trailer` into one sendmsg with
//    no copy. EncodeFpdu() writes a whole FPDU into a caller buffer (tests,
//    tools, control messages). With markers, see markers.h.
//
//  * Receive, pull style: FpduReceiver is a state machine that says what it
//    needs next (stage() and Needed() bytes) and consumes bytes with Advance(),
//    at most up to the end of the current stage. It keeps the running CRC,
//    checks ULPDU_Length against [min_ulpdu, max_ulpdu], strips and checks
//    markers (when configured) and verifies the CRC (when configured). It
//    never copies or keeps ULPDU bytes, so the engine can do direct data
//    placement: read the length and the DDP header, choose the destination
//    (e.g. registered memory for a tagged segment), recv() exactly the next
//    Needed() bytes into it and pass that destination span to Advance() so
//    the bytes enter the CRC. Placement done before the FPDU completes is
//    tentative: nothing may be reported (no completion, no delivery of an
//    untagged message) until Advance() says the FPDU completed with a good
//    CRC, and an error means the connection is terminated.
//
//  * Receive, push style: FpduStreamParser takes arbitrary chunks of the
//    stream (any split: byte by byte, FPDUs split across chunks, many FPDUs
//    in one chunk) and calls a visitor once per complete, verified FPDU. It is
//    a thin layer over FpduReceiver and buffers at most one ULPDU, in a buffer
//    of max_ulpdu bytes allocated once at construction; when a ULPDU and its
//    trailer arrive in one chunk the view handed to the visitor points into
//    that chunk (no copy).
//
// Receive rules and error meanings (all errors are final: the receiver stays
// failed and reports the same error; the engine sends a Terminate, see
// TerminateCauseFor(), and closes):
//   kFpduTooLong   ULPDU_Length > max_ulpdu (the negotiated/allowed maximum).
//   kFpduTooShort  ULPDU_Length < min_ulpdu (14 by default, the smallest DDP
//                  segment: a tagged header without payload).
//   kBadCrc        CRC negotiated and the received field differs.
//   kBadMarker     markers negotiated and a marker's FPDUPTR does not point at
//                  the start of the current FPDU, or (strict_marker_reserved)
//                  its Reserved field is not zero. See markers.h.
//   PAD: the sender writes zeros (RFC 5044 §4); the receiver IGNORES the PAD
//   bytes' values (they still enter the CRC), i.e. it is liberal in what it
//   accepts. With CRC on, a PAD byte changed in transit is caught as kBadCrc.
//   A stream that ends inside an FPDU is not an error here: the parser simply
//   waits for more bytes (the engine decides what an EOF there means).
//
// Thread-safety: none; one FpduReceiver / FpduStreamParser per direction of
// one connection, used by one thread at a time. The free functions are pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::wire {

inline constexpr size_t kFpduLengthSize = 2;  // ULPDU_Length field
inline constexpr size_t kFpduCrcSize = 4;
inline constexpr size_t kFpduMaxPad = 3;
inline constexpr size_t kFpduMaxTrailerSize = kFpduMaxPad + kFpduCrcSize;  // 7
inline constexpr size_t kMaxUlpduLength = 0xFFFF;                          // 16-bit ULPDU_Length
// Smallest DDP segment: the 14-byte tagged header (RFC 5041 §4.2).
inline constexpr size_t kMinDdpSegmentLength = 14;

// PAD octets after a ULPDU of `ulpdu_length` bytes.
constexpr size_t PadFor(size_t ulpdu_length) {
  return (4 - ((kFpduLengthSize + ulpdu_length) & 3u)) & 3u;
}

// Bytes an FPDU carrying `ulpdu_length` ULPDU bytes occupies without markers.
constexpr size_t FpduWireLength(size_t ulpdu_length) {
  return kFpduLengthSize + ulpdu_length + PadFor(ulpdu_length) + kFpduCrcSize;
}

// MULPDU, the largest ULPDU whose FPDU fits into one TCP segment of `emss`
// octets (RFC 5044 §4 "FPDU Size Considerations"):
//   with markers:    MULPDU = EMSS - (6 + 4 * Ceiling(EMSS / 512) + EMSS mod 4)
//   without markers: MULPDU = EMSS - (6 + EMSS mod 4)
// (6 = ULPDU_Length + CRC; the mod-4 term keeps the FPDU 4-aligned; the
// ceiling counts the worst-case number of markers in EMSS octets). The RFC
// gives the formula with markers; the one without is the same with the marker
// term dropped (every result is a 4-aligned FPDU of at most EMSS octets, see
// the tests). Capped at kMaxUlpduLength; 0 if emss is too small.
size_t MaxUlpduLength(size_t emss, bool markers);

// ---------------------------------------------------------------------------
// Transmit

// The framing around one ULPDU. Holds its bytes by value; prefix()/trailer()
// are views into this object, so keep it alive (and in place) until the
// gathered send that uses them has completed.
struct FpduFraming {
  std::array<uint8_t, kFpduLengthSize> prefix_bytes{};
  std::array<uint8_t, kFpduMaxTrailerSize> trailer_bytes{};
  uint8_t trailer_size = 0;  // PAD + 4
  uint32_t crc = 0;          // CRC value (0 when CRC is off)

  ByteSpan prefix() const { return ByteSpan(prefix_bytes.data(), prefix_bytes.size()); }
  ByteSpan trailer() const { return ByteSpan(trailer_bytes.data(), trailer_size); }
};

// Computes the prefix (ULPDU_Length) and trailer (zero PAD + CRC field) for
// the ULPDU formed by concatenating `parts`. With `crc_enabled` the CRC runs
// over prefix, parts and PAD; otherwise the CRC field is zero.
// Errors: kFpduTooLong if the total exceeds kMaxUlpduLength or `max_ulpdu`.
Result<FpduFraming, WireError> FrameFpdu(std::span<const ByteSpan> parts, bool crc_enabled,
                                         size_t max_ulpdu = kMaxUlpduLength);

// Writes a whole FPDU (no markers) for `ulpdu` into `out`; returns the number
// of bytes written (FpduWireLength(ulpdu.size())).
// Errors: kFpduTooLong (ulpdu > 65535 bytes), kNoSpace (out too small; out
// is left untouched).
Result<size_t, WireError> EncodeFpdu(ByteSpan ulpdu, bool crc_enabled, MutableByteSpan out);

// ---------------------------------------------------------------------------
// Receive

struct FpduRxConfig {
  bool crc = false;      // CRC negotiated: verify the CRC field
  bool markers = false;  // markers negotiated toward us: strip and verify them
  // Position of the first byte fed, counted from the first octet after the
  // MPA Request/Reply (the marker grid origin). Must be the start of an FPDU
  // and a multiple of 4. Only matters with markers.
  uint64_t stream_offset = 0;
  size_t max_ulpdu = kMaxUlpduLength;  // values above 65535 act as 65535
  size_t min_ulpdu = kMinDdpSegmentLength;
  // Reject markers whose Reserved field is non-zero (kBadMarker). Off by
  // default: RFC 5044 says Reserved is ignored on receive (see markers.h).
  bool strict_marker_reserved = false;
};

// Pull-style receive core. See the file comment.
class FpduReceiver {
 public:
  enum class Stage : uint8_t {
    kLength,   // ULPDU_Length of the next FPDU
    kUlpdu,    // ULPDU bytes (ulpdu_offset() of ulpdu_length() done)
    kTrailer,  // PAD + CRC field
    kMarker,   // a 4-byte marker (may interrupt any of the above)
    kFailed,   // error() says why; nothing more is accepted
  };
  struct Step {
    size_t consumed = 0;         // bytes taken from the front of the input
    bool fpdu_complete = false;  // the last byte taken ended an FPDU (CRC verified)
  };

  explicit FpduReceiver(const FpduRxConfig& config);

  Stage stage() const;
  // Bytes the current stage still wants; > 0 in every stage but kFailed.
  // Advance() never takes more than this.
  size_t Needed() const;
  // Takes min(bytes.size(), Needed()) bytes from the front of `bytes`.
  // On error the receiver enters kFailed and every later call returns the
  // same error. An empty span is a no-op.
  Result<Step, WireError> Advance(ByteSpan bytes);

  // ULPDU_Length of the FPDU in progress; meaningful once the length stage
  // is done (stages kUlpdu and kTrailer, or a marker inside those).
  size_t ulpdu_length() const { return ulpdu_length_; }
  bool length_known() const { return phase_ != Phase::kLength; }
  // ULPDU bytes of the current FPDU consumed so far.
  size_t ulpdu_offset() const { return ulpdu_got_; }
  // Stream position (same origin as FpduRxConfig::stream_offset) of the next
  // byte to be consumed.
  uint64_t stream_position() const { return position_; }
  // True when no byte of the next FPDU has been consumed yet (a stream that
  // ends here ends cleanly).
  bool at_fpdu_boundary() const { return !failed_ && position_ == fpdu_start_; }
  bool failed() const { return failed_; }
  WireError error() const { return error_; }
  const FpduRxConfig& config() const { return config_; }

 private:
  enum class Phase : uint8_t { kLength, kUlpdu, kTrailer };

  bool InMarker() const { return config_.markers && to_marker_ == 0; }
  size_t PhaseRemaining() const;
  void Fail(WireError e);
  void StartFpdu();
  bool TakeMarker(ByteSpan s);   // false on error
  bool TakeLength(ByteSpan s);   // false on error
  bool TakeTrailer(ByteSpan s);  // false on error
  void Crc(ByteSpan s);

  FpduRxConfig config_;
  size_t max_ulpdu_;
  Phase phase_ = Phase::kLength;
  bool failed_ = false;
  WireError error_{};
  uint32_t crc_state_ = 0;
  uint64_t position_ = 0;
  uint64_t fpdu_start_ = 0;  // stream position of the current FPDU's first byte
  size_t to_marker_ = 0;     // FPDU bytes until the next marker (markers only)
  size_t marker_got_ = 0;
  std::array<uint8_t, 4> marker_{};
  size_t length_got_ = 0;
  std::array<uint8_t, kFpduLengthSize> length_{};
  size_t ulpdu_length_ = 0;
  size_t ulpdu_got_ = 0;
  size_t pad_ = 0;
  size_t trailer_got_ = 0;
  std::array<uint8_t, kFpduCrcSize> crc_field_{};
};

// Receives the results of FpduStreamParser::Feed.
class FpduVisitor {
 public:
  virtual ~FpduVisitor() = default;
  // One complete, verified FPDU. `ulpdu` (markers stripped) is valid only
  // during the call. Must not call Feed on the same parser.
  virtual void OnFpdu(ByteSpan ulpdu) = 0;
  // Called once, on the first error; the parser ignores all later input.
  virtual void OnError(WireError error) = 0;
};

// Push-style parser over FpduReceiver. See the file comment.
class FpduStreamParser {
 public:
  // Allocates the ULPDU buffer (min(max_ulpdu, 65535) bytes) once.
  explicit FpduStreamParser(const FpduRxConfig& config);

  FpduStreamParser(const FpduStreamParser&) = delete;
  FpduStreamParser& operator=(const FpduStreamParser&) = delete;

  // Consumes all of `chunk` (nothing, once failed). Calls visitor.OnFpdu for
  // every FPDU completed by these bytes, in order, and visitor.OnError at
  // most once over the parser's life.
  void Feed(ByteSpan chunk, FpduVisitor& visitor);

  bool failed() const { return receiver_.failed(); }
  WireError error() const { return receiver_.error(); }
  // True when the bytes fed so far end inside an FPDU.
  bool mid_fpdu() const { return !receiver_.failed() && !receiver_.at_fpdu_boundary(); }
  const FpduReceiver& receiver() const { return receiver_; }

 private:
  FpduReceiver receiver_;
  size_t capacity_;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t fill_ = 0;
  // Zero-copy view of a whole ULPDU inside the chunk being fed.
  const uint8_t* direct_ = nullptr;
  size_t direct_size_ = 0;
  bool error_reported_ = false;
};

}  // namespace iwarpx::wire
