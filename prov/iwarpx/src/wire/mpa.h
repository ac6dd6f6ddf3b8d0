// MPA Request/Reply frames: the connection-setup exchange that precedes FPDU
// mode on a TCP stream (RFC 5044 §7.1, frame format §7.1.1; enhanced "rev 2"
// frames of RFC 6581). See shared/WIRE.md §1 and §1.2.
//
//   off  size  field
//     0   16   key: "MPA ID Req Frame" or "MPA ID Rep Frame" (ASCII, no NUL)
//    16    1   flags: M 0x80 | C 0x40 | R 0x20 | enhanced 0x10 (rev 2 only) |
//                     0x0E reserved | 0x01 reserved by RFC 5044, used by the
//                     iwarpx extension "Send with Immediate Data" (rev 2 only,
//                     docs/wire.md)
//    17    1   Rev: 1 (RFC 5044) or 2 (RFC 6581)
//    18    2   PD_Length (big-endian): bytes of private data that follow
//    20    n   private data; in an enhanced rev-2 frame the first 4 bytes are
//              the IRD/ORD block (counted in PD_Length):
//                word0 (BE16): P2P 0x8000 | Send-RTR 0x4000 | IRD (14 bits)
//                word1 (BE16): Write-RTR 0x8000 | Read-RTR 0x4000 | ORD (14 bits)
//
// Contract:
// * Pure codec: no I/O, no allocation, no logging, no exceptions. A decoded
//   frame's private_data is a view into the caller's input buffer and is valid
//   only while that buffer is; an encoded frame is written into a caller-owned
//   span. All functions are reentrant (no shared state).
// * Decoders take a bounded view and never read past it. A complete frame is
//   decoded by DecodeMpaFrame(), which reports how many bytes it consumed;
//   anything after the frame (which, on the responder, the initiator must not
//   have sent yet: kMpaTrailingBytes is the caller's verdict) is left alone.
// * For incremental reads, DecodeMpaHeader() validates the 20-byte header and
//   returns the total frame length, so a receiver can refuse an oversized
//   PD_Length before the private data arrives.
// * Acceptance rules (each failure has one WireError):
//     fewer bytes than the header / the whole frame   kTruncated
//     key other than the expected kind's key          kMpaBadKey (also a Reply key
//                                                     where a Request is expected)
//     Rev not 1 or 2                                  kMpaBadRevision
//     R set in a Request                              kMpaRejectInRequest
//     reserved flag bits (0x1F in rev 1, 0x0E in rev 2) kMpaReservedBits
//     PD_Length > min(limits.max_private_data, 512)   kMpaPrivateDataTooLong
//     enhanced flag with PD_Length < 4                kMpaBadIrdOrd
//   Rev 0 (the pre-IETF RDMAC draft, e.g. old Ammasso) is refused: its frame
//   semantics differ from RFC 5044, no current peer sends it, and Linux siw,
//   which accepts it on receive, never sends it. A rev-2 frame without the
//   enhanced flag is accepted and carries no IRD/ORD block. The IRD/ORD block
//   itself has no reserved bits (every bit is defined by RFC 6581), so the
//   decoder accepts any value; the meaning of its fields (RTR bits without P2P,
//   several RTR bits in a Reply, 0x3FFF) is judged by mpa_negotiate.h.
//   Flag 0x01 in a rev-2 frame (kMpaFlagSendImm, an iwarpx extension; RFC 5044
//   says reserved bits are sent as zero and not checked on receive, so a
//   standard peer ignores it) is decoded into MpaFrame::send_imm; whether it is
//   used is judged by mpa_negotiate.h. In a rev-1 frame it stays refused.
// * Every frame the decoder accepts re-encodes to the identical bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::wire {

inline constexpr size_t kMpaKeySize = 16;
inline constexpr size_t kMpaHeaderSize = 20;
// RFC 5044 §7.1.1: PD_Length never exceeds 512.
inline constexpr uint16_t kMpaMaxPrivateData = 512;
// Linux (RDMA_MAX_PRIVATE_DATA) caps private data at 256 and drops larger frames.
inline constexpr uint16_t kMpaLinuxPrivateDataLimit = 256;
inline constexpr size_t kMpaMaxFrameSize = kMpaHeaderSize + kMpaMaxPrivateData;
inline constexpr size_t kMpaIrdOrdSize = 4;

inline constexpr uint8_t kMpaFlagMarkers = 0x80;
inline constexpr uint8_t kMpaFlagCrc = 0x40;
inline constexpr uint8_t kMpaFlagReject = 0x20;
inline constexpr uint8_t kMpaFlagEnhanced = 0x10;  // RFC 6581, rev 2 only
inline constexpr uint8_t kMpaReservedFlagsRev1 = 0x1F;
inline constexpr uint8_t kMpaReservedFlagsRev2 = 0x0E;
// iwarpx extension (rev 2 only; docs/wire.md "iwarpx extension: Send with
// Immediate Data"): the sender offers / accepts Send with Immediate Data.
inline constexpr uint8_t kMpaFlagSendImm = 0x01;

inline constexpr uint8_t kMpaRevision1 = 1;  // RFC 5044
inline constexpr uint8_t kMpaRevision2 = 2;  // RFC 6581

// IRD/ORD block fields (RFC 6581).
inline constexpr uint16_t kMpaIrdOrdMask = 0x3FFF;   // 14-bit IRD / ORD
inline constexpr uint16_t kMpaNoIrdOrd = 0x3FFF;     // "no value given"
inline constexpr uint16_t kMpaP2pBit = 0x8000;       // word0
inline constexpr uint16_t kMpaSendRtrBit = 0x4000;   // word0
inline constexpr uint16_t kMpaWriteRtrBit = 0x8000;  // word1
inline constexpr uint16_t kMpaReadRtrBit = 0x4000;   // word1

enum class MpaFrameKind : uint8_t { kRequest, kReply };

// One ready-to-receive (RTR) message type of RFC 6581: the zero-length message
// the initiator sends first in peer-to-peer mode. The values are bits, so a set
// of types is an MpaRtrMask.
enum class MpaRtr : uint8_t {
  kNone = 0,
  kSend = 0x1,   // zero-length Send (consumes a posted receive at the peer)
  kWrite = 0x2,  // zero-length RDMA Write
  kRead = 0x4,   // zero-length RDMA Read Request (needs ORD >= 1 / IRD >= 1)
};
using MpaRtrMask = uint8_t;
inline constexpr MpaRtrMask kMpaRtrAll = 0x7;
constexpr MpaRtrMask RtrBit(MpaRtr r) {
  return static_cast<MpaRtrMask>(r);
}

// The RFC 6581 IRD/ORD block.
struct MpaIrdOrd {
  bool p2p = false;    // peer-to-peer mode (RTR handshake) offered/accepted
  uint16_t ird = 0;    // 14 bits; kMpaNoIrdOrd = no value
  uint16_t ord = 0;    // 14 bits; kMpaNoIrdOrd = no value
  MpaRtrMask rtr = 0;  // Request: the types the initiator can send;
                       // Reply: the type the responder chose
  friend bool operator==(const MpaIrdOrd&, const MpaIrdOrd&) = default;
};

// One MPA Request or Reply frame.
struct MpaFrame {
  MpaFrameKind kind = MpaFrameKind::kRequest;
  bool markers = false;  // M: the sender asks to *receive* markers
  bool crc = false;      // C: the sender asks for CRC (used both ways if either asks)
  bool reject = false;   // R: Reply only; the responder refuses the connection
  uint8_t revision = kMpaRevision1;
  // kMpaFlagSendImm: iwarpx "Send with Immediate Data" offered (rev 2 only).
  bool send_imm = false;
  // Present iff the frame is enhanced (flag 0x10; revision 2 only).
  std::optional<MpaIrdOrd> ird_ord;
  // The ULP's private data, not including the IRD/ORD block. Not owned.
  ByteSpan private_data;
};

struct MpaLimits {
  // Policy limit on PD_Length (IRD/ORD block included). Values above the RFC
  // maximum of 512 act as 512. Set kMpaLinuxPrivateDataLimit for Linux peers.
  uint16_t max_private_data = kMpaMaxPrivateData;
};

// What the 20-byte header says.
struct MpaHeaderInfo {
  uint8_t flags = 0;
  uint8_t revision = 0;
  uint16_t pd_length = 0;   // PD_Length, IRD/ORD block included
  size_t frame_length = 0;  // kMpaHeaderSize + pd_length
};

// A decoded frame and the number of input bytes it occupied.
struct MpaDecoded {
  MpaFrame frame;
  size_t consumed = 0;
};

// The 16-byte key of a frame kind.
ByteSpan MpaKey(MpaFrameKind kind);

// The effective PD_Length limit: min(limits.max_private_data, 512).
uint16_t MpaPrivateDataLimit(const MpaLimits& limits);

// Validates the header in the first 20 bytes of `bytes` (more may follow; it
// is not looked at). Returns kTruncated if fewer than 20 bytes are present, or
// any header error listed above, including kMpaPrivateDataTooLong and
// kMpaBadIrdOrd, which need only the header.
Result<MpaHeaderInfo, WireError> DecodeMpaHeader(ByteSpan bytes, MpaFrameKind expected,
                                                 const MpaLimits& limits = {});

// Decodes one complete frame at the start of `bytes`. Bytes after the frame
// are not examined (consumed tells where they start). The returned
// private_data views `bytes`.
Result<MpaDecoded, WireError> DecodeMpaFrame(ByteSpan bytes, MpaFrameKind expected,
                                             const MpaLimits& limits = {});

// Total encoded size of `frame` (header + IRD/ORD block + private data).
size_t MpaFrameSize(const MpaFrame& frame);

// Encodes `frame` at the start of `out` and returns the bytes written.
// Errors (nothing useful is left in `out`):
//   kInvalidArgument        revision not 1/2; IRD/ORD block in a rev-1 frame;
//                           R in a Request; IRD/ORD above 0x3FFF; RTR bits
//                           outside kMpaRtrAll; send_imm in a rev-1 frame
//   kMpaPrivateDataTooLong  PD_Length would exceed 512
//   kNoSpace                `out` is smaller than MpaFrameSize(frame)
Result<size_t, WireError> EncodeMpaFrame(const MpaFrame& frame, MutableByteSpan out);

}  // namespace iwarpx::wire
