// RDMAP over DDP (RFC 5040, extended by RFC 7306): the RDMAP control byte
// (§4.1), the opcode table (§4.2 and RFC 7306's additions), the RDMA Read Request
// header (§4.3), one parser for a whole DDP segment carrying RDMAP, and the
// matching header encoders for every opcode. See shared/WIRE.md §3-§4.
//
//   RDMAP control byte (DDP byte 1): RV bits 7..6 = 01 | Rsv bits 5..4 = 0 |
//                                    Opcode bits 3..0
//
// The opcode table below is the single source of truth that TX (the
// Encode*() functions) and RX (ParseSegment()) both read, in the manner of
// siw's iwarp_pktinfo[]:
//
//  op   name                       T  QN  hdr+body  payload  1-seg  IRD/ORD  RsvdULP[1..4]
//  0x0  RDMA Write                 1  -   14+0      yes      no     no       -
//  0x1  RDMA Read Request          0  1   18+28     no       yes    yes      0
//  0x2  RDMA Read Response         1  -   14+0      yes      no     no       -
//  0x3  Send                       0  0   18+0      yes      no     no       0
//  0x4  Send with Invalidate       0  0   18+0      yes      no     no       STag
//  0x5  Send with SE               0  0   18+0      yes      no     no       0
//  0x6  Send with SE + Invalidate  0  0   18+0      yes      no     no       STag
//  0x7  Terminate                  0  2   18+4..52  no       yes    no       0
//  0x8  Immediate Data (7306)      0  0   18+8      no       yes    no       0
//  0x9  Immediate Data + SE        0  0   18+8      no       yes    no       0
//  0xA  Atomic Request (7306)      0  1   18+52     no       yes    yes      0
//  0xB  Atomic Response (7306)     0  3   18+12     no       yes    no       0
//  0xC-0xF reserved: kRdmapBadOpcode (Terminate RDMAP / remote op / 0x06)
// (RFC 7306 queue numbers and AtomicOp numbering: see rdmap_atomic.h.)
//
// Contract:
// * Pure codec: no I/O, no allocation, no logging, no exceptions; reentrant.
//   A parsed Segment's payload and Terminate body are views into the caller's
//   ULPDU and are valid only while it is. Header encoders write the DDP header
//   and the opcode's fixed body into a caller span and return the bytes
//   written; they never copy the payload (the engine gathers it behind the
//   header).
// * ParseSegment(ulpdu) takes exactly one DDP segment (an MPA ULPDU, one SCTP
//   message, or a datagram's segment) and checks, in this order, each failure
//   with its own error:
//     fewer than 2 bytes / than the DDP header       kTruncated
//     DV != 1                                        kDdpTaggedBadVersion /
//                                                    kDdpUntaggedBadVersion
//     DDP reserved control bits                      kDdpReservedBits
//     RV != 1                                        kRdmapBadVersion
//     RDMAP reserved control bits                    kRdmapReservedBits
//     reserved opcode 0xC-0xF                        kRdmapBadOpcode
//     T flag not what the opcode requires            kRdmapBadHeaderForOpcode
//     QN not the opcode's queue                      kDdpBadQueueNumber
//     single-segment opcode with MO != 0             kDdpBadMessageOffset
//     single-segment opcode with L = 0               kRdmapBadHeaderForOpcode
//     RsvdULP[1..4] != 0 except Send w/ Invalidate   kRdmapBadHeaderForOpcode
//       (and except kSendImmFollows on the last
//       segment of a Send / Send with SE when
//       ParseOptions::accept_send_imm is set)
//     body shorter/longer than the opcode's          kRdmapBadLength
//       (Terminate: fewer than 4 or more than 52)
//     Atomic Request reserved bits / AtomicOp        kRdmapReservedBits / kAtomicBadOp
//     tagged TO + payload length wraps 2^64          kDdpToWrap
//   It does not judge MSN windows, STags, TO bounds, posted buffers or whether
//   RFC 7306 was agreed with the peer: those need connection state (engine).
//   A Terminate's body is only located here; DecodeTerminate() (terminate.h)
//   validates it.
//   Reserved bits (DDP Rsvd, RDMAP Rsv, RsvdULP[1..4], the Atomic Request
//   reserved word) are rejected, not ignored, for the reason given in ddp.h.
//   A wrong QN for a known opcode gets kDdpBadQueueNumber (DDP / untagged /
//   invalid QN), as siw answers it.
// * iwarpx extension "Send with Immediate Data" (docs/wire.md), used only on
//   a connection whose MPA exchange negotiated it (mpa_negotiate.h send_imm):
//   a Send or Send with SE whose last segment (L=1) carries RsvdULP[1..4] ==
//   kSendImmFollows announces that the next untagged message on QN 0 is an
//   Immediate Data message belonging to this Send. ParseSegment() accepts that
//   exact value only with ParseOptions::accept_send_imm, only on L=1 of those
//   two opcodes; any other non-zero value, or the value on L=0, stays refused.
//   The encoders write it (SendParams::imm_follows) without knowing whether it
//   was negotiated: that is the engine's check.
// * Every segment ParseSegment() accepts re-encodes, through
//   EncodeSegmentHeader() followed by its payload, to the identical bytes.
// * Encoders return kNoSpace for a short output span and kInvalidArgument for
//   a combination the table forbids (e.g. an invalidate STag on a plain Send).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <variant>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/ddp.h"
#include "wire/error.h"
#include "wire/rdmap_atomic.h"

namespace iwarpx::wire {

inline constexpr uint8_t kRdmapVersion = 1;
inline constexpr uint8_t kRdmapVersionShift = 6;
inline constexpr uint8_t kRdmapVersionMask = 0xC0;
inline constexpr uint8_t kRdmapReservedMask = 0x30;
inline constexpr uint8_t kRdmapOpcodeMask = 0x0F;

enum class RdmapOpcode : uint8_t {
  kRdmaWrite = 0x0,
  kRdmaReadRequest = 0x1,
  kRdmaReadResponse = 0x2,
  kSend = 0x3,
  kSendWithInvalidate = 0x4,
  kSendWithSe = 0x5,
  kSendWithSeAndInvalidate = 0x6,
  kTerminate = 0x7,
  kImmediateData = 0x8,        // RFC 7306
  kImmediateDataWithSe = 0x9,  // RFC 7306
  kAtomicRequest = 0xA,        // RFC 7306
  kAtomicResponse = 0xB,       // RFC 7306
};
inline constexpr size_t kRdmapOpcodeCount = 12;

// Untagged queue numbers (RFC 5040 §5.1 / WIRE.md §4.3; QN 3 from RFC 7306).
inline constexpr uint32_t kQnSend = 0;            // Send family, Immediate Data
inline constexpr uint32_t kQnReadRequest = 1;     // Read Request, Atomic Request
inline constexpr uint32_t kQnTerminate = 2;       // Terminate
inline constexpr uint32_t kQnAtomicResponse = 3;  // Atomic Response
inline constexpr uint32_t kQnNone = 0xFFFFFFFF;   // table value for tagged opcodes

inline constexpr size_t kReadRequestBodySize = 28;
inline constexpr size_t kTerminateMinBodySize = 4;   // control word only
inline constexpr size_t kTerminateMaxBodySize = 52;  // + length + 18 + 28

// One row of the opcode table.
struct OpcodeInfo {
  RdmapOpcode opcode;
  const char* name;
  bool tagged;              // DDP T flag the opcode requires
  uint32_t qn;              // untagged queue number (kQnNone if tagged)
  size_t header_size;       // DDP header: 14 (tagged) or 18 (untagged)
  size_t body_size;         // fixed RDMAP body after the DDP header
                            // (Terminate: the minimum, 4)
  bool variable_body;       // Terminate: body is everything after the header
  bool payload_allowed;     // ULP payload may follow the body
  bool single_segment;      // must be one segment: L = 1 and MO = 0
  bool counts_against_ird;  // consumes an IRD slot at the responder (ORD at
                            // the requester)
  bool carries_invalidate;  // RsvdULP[1..4] is an Invalidate STag
  bool solicited_event;     // SE variant
};

// The table, indexed by opcode value 0x0-0xB.
std::span<const OpcodeInfo, kRdmapOpcodeCount> OpcodeTable();
const OpcodeInfo& GetOpcodeInfo(RdmapOpcode opcode);
// nullptr for the reserved values 0xC-0xF and anything above.
const OpcodeInfo* FindOpcodeInfo(uint8_t raw_opcode);
const char* ToString(RdmapOpcode opcode);

uint8_t EncodeRdmapControl(RdmapOpcode opcode);
// Checks RV (kRdmapBadVersion), Rsv (kRdmapReservedBits) and the opcode
// (kRdmapBadOpcode), in that order.
Result<RdmapOpcode, WireError> DecodeRdmapControl(uint8_t byte);

// RDMA Read Request header (RFC 5040 §4.3), the 28 bytes after the DDP header.
struct ReadRequestBody {
  uint32_t sink_stag = 0;    // Data Sink STag
  uint64_t sink_to = 0;      // Data Sink Tagged Offset
  uint32_t read_size = 0;    // RDMA Read Message Size
  uint32_t source_stag = 0;  // Data Source STag
  uint64_t source_to = 0;    // Data Source Tagged Offset
  friend bool operator==(const ReadRequestBody&, const ReadRequestBody&) = default;
};
// Takes exactly 28 bytes (kRdmapBadLength otherwise).
Result<ReadRequestBody, WireError> DecodeReadRequestBody(ByteSpan body);
std::array<uint8_t, kReadRequestBodySize> EncodeReadRequestBody(const ReadRequestBody& b);

// A Terminate body, located but not validated (see terminate.h).
struct TerminateBodyView {
  ByteSpan bytes;
};

using SegmentBody = std::variant<std::monostate,  // Write, Read Response, Send family
                                 ReadRequestBody, TerminateBodyView, ImmediateDataBody,
                                 AtomicRequestBody, AtomicResponseBody>;

// One decoded DDP segment carrying RDMAP.
struct Segment {
  DdpHeader ddp;  // ddp.rsvd_ulp0 is the RDMAP control byte
  RdmapOpcode opcode = RdmapOpcode::kSend;
  SegmentBody body;  // the alternative that belongs to `opcode`
  ByteSpan payload;  // ULP payload (empty for opcodes without one)

  const OpcodeInfo& info() const { return GetOpcodeInfo(opcode); }
  // A Send / Send with SE last segment announcing Immediate Data (see above).
  bool send_imm_follows() const;
  // DDP header + fixed body: the bytes before `payload`.
  size_t header_size() const;
};

// RsvdULP[1..4] of a Send's last segment followed by its Immediate Data
// (iwarpx extension; see the contract).
inline constexpr uint32_t kSendImmFollows = 1;

struct ParseOptions {
  // The connection negotiated iwarpx Send with Immediate Data.
  bool accept_send_imm = false;
};

Result<Segment, WireError> ParseSegment(ByteSpan ulpdu, const ParseOptions& options = {});

// The header of a plain Send segment — Send or Send with SE, no Invalidate,
// no Immediate Data announced — read straight from the ULPDU for receive
// paths that take such Sends on their own (qp_rx_whole.cc). Whatever this
// accepts, ParseSegment accepts with the same fields (rdmap_test checks it
// and segment_fuzzer compares the two); anything else is nullopt (another
// opcode, or a header ParseSegment would refuse), for ParseSegment to judge.
struct PlainSend {
  uint32_t msn = 0;
  uint32_t mo = 0;
  bool last = false;
  bool solicited_event = false;
};
std::optional<PlainSend> ParsePlainSend(ByteSpan ulpdu);

// Re-encodes a Segment's DDP header and body (not its payload) into `out`.
// The RDMAP control byte is derived from `opcode` (ddp.rsvd_ulp0 is ignored).
// Returns kInvalidArgument if the Segment breaks a rule ParseSegment checks.
Result<size_t, WireError> EncodeSegmentHeader(const Segment& segment, MutableByteSpan out);

// --- Per-opcode header encoders (TX). Each writes DDP header + fixed body. ---

// RDMA Write / Read Response segment header (14 bytes). `to` is this
// segment's TO (base TO + bytes already sent).
Result<size_t, WireError> EncodeWriteHeader(uint32_t stag, uint64_t to, bool last,
                                            MutableByteSpan out);
Result<size_t, WireError> EncodeReadResponseHeader(uint32_t stag, uint64_t to, bool last,
                                                   MutableByteSpan out);

// RDMA Read Request (18 + 28 bytes; QN 1, MO 0, L 1).
Result<size_t, WireError> EncodeReadRequest(uint32_t msn, const ReadRequestBody& body,
                                            MutableByteSpan out);

// One Send-family segment header (18 bytes, QN 0).
struct SendParams {
  bool solicited_event = false;  // Send with SE (0x5 / 0x6)
  bool invalidate = false;       // Send with Invalidate (0x4 / 0x6)
  uint32_t invalidate_stag = 0;  // only with `invalidate`
  uint32_t msn = 1;
  uint32_t mo = 0;
  bool last = true;
  // iwarpx extension: RsvdULP[1..4] = kSendImmFollows (only with `last` and
  // without `invalidate`).
  bool imm_follows = false;
};
Result<size_t, WireError> EncodeSendHeader(const SendParams& params, MutableByteSpan out);

// Immediate Data with or without SE (18 + 8 bytes; QN 0, MO 0, L 1).
Result<size_t, WireError> EncodeImmediateData(bool solicited_event, uint32_t msn, uint64_t data,
                                              MutableByteSpan out);

// Atomic Request (18 + 52 bytes; QN 1) and Atomic Response (18 + 12; QN 3).
Result<size_t, WireError> EncodeAtomicRequest(uint32_t msn, const AtomicRequestBody& body,
                                              MutableByteSpan out);
Result<size_t, WireError> EncodeAtomicResponse(uint32_t msn, const AtomicResponseBody& body,
                                               MutableByteSpan out);

// Terminate DDP header only (18 bytes; QN 2, MO 0, L 1); the body comes from
// EncodeTerminate() in terminate.h (EncodeTerminateSegment() does both).
Result<size_t, WireError> EncodeTerminateHeader(uint32_t msn, MutableByteSpan out);

}  // namespace iwarpx::wire
