// The RDMAP Terminate message body (RFC 5040 §4.8 "Terminate Header", error
// values §7 / WIRE.md §4.4-4.5). It follows the 18-byte untagged DDP header of
// a Terminate segment (QN 2, MSN 1, MO 0, L 1; see rdmap.h), which
// ParseSegment() locates as a TerminateBodyView.
//
//   0  Layer(4) | EType(4) | Error Code(8) | M D R (3) | Reserved(13) = 0
//   4  if D: DDP Segment Length (16)
//   6  if D: terminated DDP header: 14 bytes if its T bit is set, else 18
//            (incl. the RDMAP control byte and RsvdULP)
//   .. if R: terminated RDMAP header: 28 bytes (the Read Request body)
//   M = "DDP Segment Length valid", D = "DDP header included",
//   R = "RDMAP header included".
//
// Contract:
// * Pure codec: no I/O, no allocation, no logging, no exceptions; reentrant.
//   A decoded TerminateHeader's ddp_header / rdmap_header are views into the
//   caller's bytes. EncodeTerminate() copies them into the caller's span.
// * DecodeTerminate(body) takes exactly the body (MPA framing delimits it) and
//   checks, each failure with its own error:
//     fewer than 4 bytes                            kTruncated
//     reserved 13 bits non-zero                     kRdmapReservedBits
//     {layer, etype, code} unknown                  kTerminateBadCause
//     M set without D                               kTerminateMissingFlags
//     D set but the length field or the 14/18-byte
//       header (sized by its own T bit) missing     kTerminateMissingFlags
//     R set but 1..27 bytes follow / 28 missing     kTerminateMissingFlags
//     bytes beyond what D and R announce            kTerminateMissingFlags
// * Leniency (documented decisions, for interop with Linux siw):
//   - The DDP Segment Length value is not checked: RFC 5040 means the whole
//     offending segment's length, siw writes its *payload* length. Any value,
//     and D without M (header present, length not valid), are accepted.
//   - The terminated DDP header is not validated (it is the offending header;
//     a bad DV or opcode may be why the peer terminated). Only its T bit is
//     read, to size it.
//   - R set with *no* RDMAP header after an untagged terminated DDP header is
//     accepted: siw sets M|D|R for a remote protection error on a Send (e.g.
//     "STag cannot be invalidated") but attaches only the 18-byte header
//     (siw_send_terminate()). rdmap_header is then empty.
//   - A local catastrophic RDMAP error (layer 0, etype 0) is accepted with any
//     error code: the IANA RDDP registry lists it as 0x0/0x0/ALL, and siw sends
//     {0, 0, 0xFF} when a QP is moved to TERMINATE. IsKnownTermCause() encodes
//     that rule with the rest of the table.
//   - M without D is refused: the length field exists only with D, and no
//     known implementation sends it.
// * Every body DecodeTerminate() accepts re-encodes to the identical bytes.
// * EncodeTerminate() refuses (kInvalidArgument) what DecodeTerminate() would
//   refuse, and returns kNoSpace for a short span.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"
#include "wire/rdmap.h"  // kTerminateMaxBodySize, EncodeTerminateHeader

namespace iwarpx::wire {

inline constexpr size_t kTerminateControlSize = 4;
inline constexpr size_t kTerminateSegmentLengthSize = 2;
inline constexpr size_t kTerminatedRdmapHeaderSize = 28;
// Byte 2 of the control word.
inline constexpr uint8_t kTerminateFlagM = 0x80;
inline constexpr uint8_t kTerminateFlagD = 0x40;
inline constexpr uint8_t kTerminateFlagR = 0x20;
inline constexpr uint8_t kTerminateReservedMask2 = 0x1F;  // byte 2; byte 3 is all reserved

struct TerminateHeader {
  TermCause cause{};
  bool m = false;                   // DDP Segment Length valid
  bool d = false;                   // terminated DDP header included
  bool r = false;                   // terminated RDMAP header included
  uint16_t ddp_segment_length = 0;  // present iff d; meaningful iff m
  ByteSpan ddp_header;              // iff d: 14 (T=1) or 18 (T=0) bytes
  ByteSpan rdmap_header;            // iff r: 28 bytes (empty only in the siw case above)

  // Body bytes this header encodes to.
  size_t size() const;
};

Result<TerminateHeader, WireError> DecodeTerminate(ByteSpan body);
Result<size_t, WireError> EncodeTerminate(const TerminateHeader& header, MutableByteSpan out);

// Builds the Terminate to send for `cause` raised by the segment `offending`
// (its bytes from the DDP header on; the payload may be omitted) whose full
// DDP segment length is `segment_length` (clamped to 65535). Rules:
// * LLP-layer causes, local catastrophic errors (etype 0) and DDP/RDMAP
//   version errors carry no headers (the segment's layout is unknown).
// * Otherwise, if `offending` holds its whole DDP header, M and D are set
//   (as siw does) with that header and `segment_length`.
// * R is added for an RDMAP-layer cause when `offending` is an untagged Read
//   Request whose 28-byte body is present.
// The result views `offending`; keep it alive until encoded.
TerminateHeader MakeTerminate(TermCause cause, ByteSpan offending, size_t segment_length);
inline TerminateHeader MakeTerminate(TermCause cause, ByteSpan offending) {
  return MakeTerminate(cause, offending, offending.size());
}
inline TerminateHeader MakeTerminate(TermCause cause) {
  return MakeTerminate(cause, ByteSpan{}, 0);
}

// A whole Terminate segment: 18-byte DDP header (QN 2, MSN `msn`, MO 0, L 1)
// followed by the body. siw always sends MSN 1 (one Terminate per stream).
Result<size_t, WireError> EncodeTerminateSegment(uint32_t msn, const TerminateHeader& header,
                                                 MutableByteSpan out);

}  // namespace iwarpx::wire
