// DDP Stream Session Control messages: the session setup and teardown that
// replaces the MPA Request/Reply when DDP runs directly on SCTP (RFC 5043,
// section unverified; the enhanced Initiate/Accept with IRD/ORD are RFC 6581). Each message
// is exactly one SCTP user message with Payload Protocol Identifier 17; DDP
// segments travel as SCTP messages with PPID 16. See docs/wire.md §2.
//
//   off  size  field
//     0    2   Function Code (big-endian):
//                1 DDP Stream Session Initiate     (RFC 5043)
//                2 DDP Stream Session Accept       (RFC 5043)
//                3 DDP Stream Session Reject       (RFC 5043)
//                4 DDP Stream Session Terminate    (RFC 5043)
//                5 Enhanced DDP Stream Session Initiate (RFC 6581)
//                6 Enhanced DDP Stream Session Accept   (RFC 6581)
//     2    2   PD Length (big-endian): bytes of private data that follow
//     4    n   private data; in an enhanced message the first 4 bytes are the
//              IRD/ORD block (counted in PD Length):
//                word0 (BE16): 2 reserved bits (0) | IRD (14 bits)
//                word1 (BE16): 2 reserved bits (0) | ORD (14 bits)
//              The IRD/ORD widths are those of MPA v2 (wire/mpa.h); the bits
//              MPA uses for peer-to-peer/RTR are reserved here because SCTP
//              has no initiator-must-send-first rule to work around, except
//              word0 bit 15 (kSctpSessionFlagSendImm, an iwarpx extension):
//              "I offer Send with Immediate Data" (docs/wire.md §1.1 and
//              §2.1), the SCTP counterpart of MPA's kMpaFlagSendImm;
//              and word1 bit 15 (kSctpSessionFlagUnorderedReadResp, an
//              iwarpx extension): "I accept Read Responses sent unordered"
//              (docs/wire.md §2.1, §2.2). A message without them is
//              byte-for-byte what it was before.
//
// NOTE: PPIDs 16/17 are checked against the IANA registry (as Wireshark
// carries it); the layout, the codes and the limits are the project's reading
// of RFC 5043 / RFC 6581, unverified: their body text could not be read from
// this machine (docs/wire.md §2 "What this section was checked against" and
// the conformance table §2.0). Every width and code is a named constant
// below, so a correction stays local.
//
// Contract:
// * Pure codec: no I/O, no allocation, no logging, no exceptions. A decoded
//   message's private_data views the caller's input buffer; an encoded message
//   is written into a caller-owned span. Reentrant.
// * The input of DecodeSctpSessionMessage() is one whole SCTP message (SCTP
//   preserves boundaries), so PD Length must match the message size exactly.
// * Acceptance rules (each failure has one WireError):
//     fewer than 4 bytes, or fewer than 4 + PD Length  kTruncated
//     more than 4 + PD Length bytes                    kSctpSessionBadLength
//     Function Code not 1..6                           kSctpSessionBadFunction
//     PD Length > min(limits.max_private_data, 512)    kSctpSessionPrivateDataTooLong
//     enhanced code with PD Length < 4                 kSctpSessionBadIrdOrd
//     a reserved bit of the IRD/ORD block set          kSctpSessionReservedBits
//     (kSctpSessionFlagSendImm and kSctpSessionFlagUnorderedReadResp are
//     not reserved; they only exist inside the block, so only Enhanced
//     Initiate/Accept carry them)
//   Which function is acceptable in which state (an Accept before any
//   Initiate, ...) is the session state machine's judgement, not the codec's.
// * Every message the decoder accepts re-encodes to the identical bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::wire {

// SCTP Payload Protocol Identifiers (IANA) and the Adaptation Code Point.
inline constexpr uint32_t kSctpPpidDdpSegment = 16;
inline constexpr uint32_t kSctpPpidDdpSessionControl = 17;
inline constexpr uint32_t kSctpAdaptationCodeDdp = 1;  // RFC 5061 Adaptation Layer Indication

inline constexpr size_t kSctpSessionHeaderSize = 4;
// Same bound as MPA's PD_Length (RFC 5044 §7.1.1).
inline constexpr uint16_t kSctpSessionMaxPrivateData = 512;
inline constexpr size_t kSctpSessionMaxMessageSize =
    kSctpSessionHeaderSize + kSctpSessionMaxPrivateData;
inline constexpr size_t kSctpSessionIrdOrdSize = 4;
inline constexpr uint16_t kSctpSessionIrdOrdMask = 0x3FFF;  // 14-bit IRD / ORD
inline constexpr uint16_t kSctpSessionNoIrdOrd = 0x3FFF;    // "no value given"
// Word0 (IRD) bit 15: Send with Immediate Data offered (iwarpx extension).
inline constexpr uint16_t kSctpSessionFlagSendImm = 0x8000;
// Word1 (ORD) bit 15: Read Responses sent unordered accepted (iwarpx
// extension, docs/wire.md §2.2).
inline constexpr uint16_t kSctpSessionFlagUnorderedReadResp = 0x8000;

// Function Code values on the wire.
inline constexpr uint16_t kSctpFnInitiate = 1;
inline constexpr uint16_t kSctpFnAccept = 2;
inline constexpr uint16_t kSctpFnReject = 3;
inline constexpr uint16_t kSctpFnTerminate = 4;
inline constexpr uint16_t kSctpFnEnhancedInitiate = 5;
inline constexpr uint16_t kSctpFnEnhancedAccept = 6;

// The four session functions; whether Initiate/Accept are "enhanced" is
// carried by the presence of the IRD/ORD block.
enum class SctpSessionFunction : uint8_t { kInitiate, kAccept, kReject, kTerminate };

struct SctpIrdOrd {
  uint16_t ird = 0;  // 14 bits; kSctpSessionNoIrdOrd = no value
  uint16_t ord = 0;  // 14 bits; kSctpSessionNoIrdOrd = no value
  friend bool operator==(const SctpIrdOrd&, const SctpIrdOrd&) = default;
};

struct SctpSessionMessage {
  SctpSessionFunction function = SctpSessionFunction::kInitiate;
  // Present iff the message is enhanced (Function Code 5 or 6); only
  // Initiate and Accept can carry it.
  std::optional<SctpIrdOrd> ird_ord;
  // kSctpSessionFlagSendImm: iwarpx "Send with Immediate Data" offered. Only
  // with ird_ord (the bit lives in its block).
  bool send_imm = false;
  // kSctpSessionFlagUnorderedReadResp: iwarpx "Read Responses may reach me
  // unordered". Only with ird_ord (the bit lives in its block).
  bool unordered_read_resp = false;
  // The ULP's private data, not including the IRD/ORD block. Not owned.
  ByteSpan private_data;
};

struct SctpSessionLimits {
  // Policy limit on PD Length (IRD/ORD block included); values above 512 act
  // as 512.
  uint16_t max_private_data = kSctpSessionMaxPrivateData;
};

// Decodes one whole PPID-17 message. private_data views `message`.
Result<SctpSessionMessage, WireError> DecodeSctpSessionMessage(
    ByteSpan message, const SctpSessionLimits& limits = {});

// Encoded size of `msg` (header + IRD/ORD block + private data).
size_t SctpSessionMessageSize(const SctpSessionMessage& msg);

// Encodes `msg` at the start of `out`; returns the bytes written.
// Errors (nothing useful is left in `out`):
//   kInvalidArgument                IRD/ORD block on Reject/Terminate; IRD or
//                                   ORD above 0x3FFF; send_imm or
//                                   unordered_read_resp without the IRD/ORD
//                                   block
//   kSctpSessionPrivateDataTooLong  PD Length would exceed 512
//   kNoSpace                        `out` is smaller than the message
Result<size_t, WireError> EncodeSctpSessionMessage(const SctpSessionMessage& msg,
                                                   MutableByteSpan out);

// A stable name for logs ("Initiate", ...).
const char* ToString(SctpSessionFunction f);

}  // namespace iwarpx::wire
