// The wire layer's error vocabulary and its mapping to iWARP Terminate causes.
//
// Contract: every decoder in wire/ returns a WireError for bytes it will not
// accept; no decoder logs, throws or aborts on peer input. TerminateCauseFor()
// gives the Terminate {layer, etype, code} (RFC 5040 §7, table in
// ../shared/WIRE.md §4.5) that the engine sends when that error comes from a
// connected peer. Errors that only encoders or local callers can produce map to
// RDMAP / remote operation / unspecified (0xFF) and are never sent for them.
#pragma once

#include <cstdint>

namespace iwarpx::wire {

enum class WireError : uint8_t {
  // Generic.
  kTruncated = 1,    // fewer bytes than the structure needs
  kNoSpace,          // encoder: output buffer too small
  kInvalidArgument,  // encoder: a field value the format cannot carry

  // MPA connection setup (RFC 5044 §7.1, RFC 6581).
  kMpaBadKey,
  kMpaBadRevision,
  kMpaReservedBits,
  kMpaPrivateDataTooLong,
  kMpaRejectInRequest,  // R flag set in a Request
  kMpaBadIrdOrd,        // v2 enhanced frame without its 4-byte IRD/ORD block
  kMpaRejected,         // peer Reply carried R=1
  kMpaMarkersRefused,   // peer wants markers and local policy refuses
  kMpaCrcRefused,       // peer wants CRC and local policy refuses (never by default)
  kMpaInsufficientIrd,  // RFC 6581: our ORD exceeds the peer's IRD
  kMpaNoMatchingRtr,    // RFC 6581: no common RTR type
  kMpaTrailingBytes,    // bytes after a Request before our Reply was sent

  // MPA framing (RFC 5044 §4).
  kFpduTooLong,   // ULPDU_Length above the negotiated/allowed maximum
  kFpduTooShort,  // ULPDU_Length below the smallest DDP header
  kBadCrc,
  kBadMarker,  // marker FPDUPTR does not point at the FPDU start, or reserved bits set

  // DDP (RFC 5041).
  kDdpTaggedBadVersion,
  kDdpUntaggedBadVersion,
  kDdpReservedBits,
  kDdpBadQueueNumber,
  kDdpBadMessageOffset,
  kDdpToWrap,  // TO + length wraps 2^64

  // RDMAP (RFC 5040, RFC 7306).
  kRdmapBadVersion,
  kRdmapReservedBits,
  kRdmapBadOpcode,
  kRdmapBadHeaderForOpcode,  // T flag / QN / L / RsvdULP not what the opcode requires
  kRdmapBadLength,           // body or payload length wrong for the opcode
  kTerminateMissingFlags,    // Terminate whose M/D/R flags do not match its content
  kTerminateBadCause,        // unknown layer or error type
  kAtomicBadOp,

  // Datagram iWARP framing (docs/wire.md).
  kDgramBadMagic,
  kDgramBadVersion,
  kDgramReservedBits,
  kDgramBadLength,
  kDgramBadSegment,
  kDgramBadBundle,  // B set: a record's length, pad or count is wrong (docs/wire.md §3.6.1)

  // RDM message protocol inside RDMAP Sends (docs/wire.md §3.10).
  kRdmBadVersion,
  kRdmBadOp,
  kRdmReservedBits,  // reserved flag bits or bytes, or a field the op does not use
  kRdmBadLength,     // message size inconsistent with the bytes or the descriptors

  // DDP Stream Session Control over SCTP (RFC 5043 §5.3, RFC 6581; wire/sctp_session.h).
  kSctpSessionBadFunction,         // Function Code not one of the six defined
  kSctpSessionBadLength,           // PD Length does not match the message size
  kSctpSessionPrivateDataTooLong,  // PD Length above the limit (512)
  kSctpSessionBadIrdOrd,           // enhanced message without its IRD/ORD block
  kSctpSessionReservedBits,        // reserved bits of the IRD/ORD block set
  // The association's peer sent no Adaptation Layer Indication with the DDP
  // code point (RFC 5043 §5.1, RFC 5061; cm/sctp_cep.h).
  kSctpNoDdpAdaptation,
};

// A Terminate cause: RFC 5040 Terminate control word fields.
struct TermCause {
  uint8_t layer;  // 0 RDMAP, 1 DDP, 2 LLP
  uint8_t etype;  // error type within the layer
  uint8_t code;   // error code within the type
  friend bool operator==(const TermCause&, const TermCause&) = default;
};

namespace term {
inline constexpr uint8_t kLayerRdmap = 0;
inline constexpr uint8_t kLayerDdp = 1;
inline constexpr uint8_t kLayerLlp = 2;

// RDMAP
inline constexpr TermCause kRdmapLocalCatastrophic{0, 0, 0x00};
inline constexpr TermCause kRdmapInvalidStag{0, 1, 0x00};
inline constexpr TermCause kRdmapBaseBounds{0, 1, 0x01};
inline constexpr TermCause kRdmapAccessRights{0, 1, 0x02};
inline constexpr TermCause kRdmapStagNotAssociated{0, 1, 0x03};
inline constexpr TermCause kRdmapToWrap{0, 1, 0x04};
inline constexpr TermCause kRdmapCannotInvalidateProt{0, 1, 0x09};
inline constexpr TermCause kRdmapProtUnspecified{0, 1, 0xFF};
inline constexpr TermCause kRdmapBadVersion{0, 2, 0x05};
inline constexpr TermCause kRdmapUnexpectedOpcode{0, 2, 0x06};
inline constexpr TermCause kRdmapCatastrophicStream{0, 2, 0x07};
inline constexpr TermCause kRdmapCatastrophicGlobal{0, 2, 0x08};
inline constexpr TermCause kRdmapCannotInvalidateOp{0, 2, 0x09};
inline constexpr TermCause kRdmapOpUnspecified{0, 2, 0xFF};
// DDP
inline constexpr TermCause kDdpLocalCatastrophic{1, 0, 0x00};
inline constexpr TermCause kDdpTaggedInvalidStag{1, 1, 0x00};
inline constexpr TermCause kDdpTaggedBaseBounds{1, 1, 0x01};
inline constexpr TermCause kDdpTaggedStagNotAssociated{1, 1, 0x02};
inline constexpr TermCause kDdpTaggedToWrap{1, 1, 0x03};
inline constexpr TermCause kDdpTaggedBadVersion{1, 1, 0x04};
inline constexpr TermCause kDdpUntaggedInvalidQn{1, 2, 0x01};
inline constexpr TermCause kDdpUntaggedNoBuffer{1, 2, 0x02};
inline constexpr TermCause kDdpUntaggedMsnRange{1, 2, 0x03};
inline constexpr TermCause kDdpUntaggedInvalidMo{1, 2, 0x04};
inline constexpr TermCause kDdpUntaggedTooLong{1, 2, 0x05};
inline constexpr TermCause kDdpUntaggedBadVersion{1, 2, 0x06};
// LLP (MPA)
inline constexpr TermCause kLlpStreamLost{2, 0, 0x01};
inline constexpr TermCause kLlpCrcError{2, 0, 0x02};
inline constexpr TermCause kLlpMarkerMismatch{2, 0, 0x03};
inline constexpr TermCause kLlpInvalidReqRep{2, 0, 0x04};
inline constexpr TermCause kLlpLocalCatastrophic{2, 0, 0x05};
inline constexpr TermCause kLlpInsufficientIrd{2, 0, 0x06};
inline constexpr TermCause kLlpNoMatchingRtr{2, 0, 0x07};
}  // namespace term

// The Terminate cause the engine sends when a connected peer's bytes fail to
// decode with `e`.
TermCause TerminateCauseFor(WireError e);

// A stable, human-readable name for logs and test failure messages.
const char* ToString(WireError e);

// A human-readable description of a Terminate cause ("DDP tagged buffer:
// base or bounds violation"); causes outside the RFCs' tables are named by
// layer with "unknown cause".
const char* ToString(TermCause c);

// True if `c` is a cause listed in RFC 5040/5041/5044/6581 (used to validate
// received Terminate messages).
bool IsKnownTermCause(TermCause c);

}  // namespace iwarpx::wire
