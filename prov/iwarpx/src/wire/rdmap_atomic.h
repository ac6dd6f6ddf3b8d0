// RFC 7306 message bodies: Immediate Data (8 bytes), Atomic Request (52 bytes)
// and Atomic Response (12 bytes). Each body follows an 18-byte untagged DDP
// header; the headers, opcodes and queue numbers are in rdmap.h's opcode
// table, and ParseSegment() decodes these bodies through this file.
//
// RFC 7306 facts used here (WIRE.md §4.6 marked them "(verify)"). The RFC
// text was NOT reachable from this workplace's stored corpora (only its title
// page and the start of the IANA RDDP registry were), so each fact says where
// it comes from; section numbers are omitted because they could not be
// re-read:
//   [ws]   confirmed by Wireshark's iwarp_ddp_rdmap dissector source (decodes
//          opcodes 0xA/0xB, names AtomicOp 0 "FetchAdd" and 2 "CmpSwap", reads
//          the bodies with exactly the layouts below), and by tshark 4.0 on
//          this project's own bytes;
//   [rfc?] the RFC / IANA registries as recalled, not re-read: treat as
//          "verify against the RFC text before interop testing".
// * Opcodes: 0xA Atomic Request, 0xB Atomic Response [ws]; 0x8 Immediate
//   Data, 0x9 Immediate Data with SE [rfc?]. All four are untagged and
//   single-segment (L=1, MO=0) [rfc?].
// * Queue numbers [rfc?] (IANA "RDMAP DDP Untagged Queue Numbers"): Immediate
//   Data (with or without SE) uses QN 0, like Send, and consumes a posted
//   receive. Atomic Request uses QN 1, shared with RDMA Read Request (the
//   registry's Queue 1 entry amended to include Atomic Requests), and counts
//   against IRD/ORD like a Read. Atomic Response uses the new QN 3 ("Atomic
//   Response operations"). Change the table in rdmap.cc if the RFC differs.
// * AtomicOp (IANA "RDMAP Message Atomic Operation Subcodes"): 0 FetchAdd and
//   2 CmpSwap [ws], 1 Swap [rfc?]; 3..15 reserved -> kAtomicBadOp.
//   (urdma's UDP variant numbers them differently; that is not RFC 7306.)
// * Atomic Request body ("Atomic Operation Request" header) [ws]:
//     0  Reserved (28 bits, must be 0) | AtomicOp (4 bits)
//     4  Request Identifier
//     8  Remote STag
//    12  Remote Tagged Offset (64)
//    20  Add or Swap Data (64)
//    28  Add or Swap Mask (64)
//    36  Compare Data (64)
//    44  Compare Mask (64)                                      = 52 bytes
// * Atomic Response body [ws]: Original Request Identifier (32) | Original
//   Remote Data Value (64) = 12 bytes.
// * Immediate Data body [rfc?]: 8 opaque bytes, exposed here as one big-endian
//   uint64_t (what libfabric's FI_REMOTE_CQ_DATA carries).
// Semantic checks that need state (Remote TO 8-byte alignment, STag access,
// matching a Request Identifier) belong to the engine, not here.
//
// Contract: pure codec as in ddp.h (no allocation, no logging, no exceptions,
// bounded reads and writes, reentrant). Decode errors:
//     fewer/more bytes than the body  kRdmapBadLength
//     Atomic Request reserved bits    kRdmapReservedBits
//     AtomicOp not 0, 1 or 2          kAtomicBadOp
// Encoders return kNoSpace for a short output span and kInvalidArgument for an
// AtomicOp value outside the enum.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::wire {

inline constexpr size_t kImmediateDataBodySize = 8;
inline constexpr size_t kAtomicRequestBodySize = 52;
inline constexpr size_t kAtomicResponseBodySize = 12;
inline constexpr uint32_t kAtomicOpMask = 0x0000000F;
inline constexpr uint32_t kAtomicReservedMask = 0xFFFFFFF0;

enum class AtomicOp : uint8_t {
  kFetchAdd = 0,
  kSwap = 1,
  kCmpSwap = 2,
};

const char* ToString(AtomicOp op);

struct ImmediateDataBody {
  uint64_t data = 0;
  friend bool operator==(const ImmediateDataBody&, const ImmediateDataBody&) = default;
};

struct AtomicRequestBody {
  AtomicOp op = AtomicOp::kFetchAdd;  // AtomicOp
  uint32_t request_id = 0;            // Request Identifier
  uint32_t remote_stag = 0;           // Remote STag
  uint64_t remote_to = 0;             // Remote Tagged Offset
  uint64_t add_or_swap_data = 0;      // Add or Swap Data
  uint64_t add_or_swap_mask = 0;      // Add or Swap Mask
  uint64_t compare_data = 0;          // Compare Data
  uint64_t compare_mask = 0;          // Compare Mask
  friend bool operator==(const AtomicRequestBody&, const AtomicRequestBody&) = default;
};

struct AtomicResponseBody {
  uint32_t original_request_id = 0;   // Original Request Identifier
  uint64_t original_remote_data = 0;  // Original Remote Data Value
  friend bool operator==(const AtomicResponseBody&, const AtomicResponseBody&) = default;
};

// Decoders take exactly the body bytes (no DDP header, no trailing bytes).
Result<ImmediateDataBody, WireError> DecodeImmediateDataBody(ByteSpan body);
Result<AtomicRequestBody, WireError> DecodeAtomicRequestBody(ByteSpan body);
Result<AtomicResponseBody, WireError> DecodeAtomicResponseBody(ByteSpan body);

std::array<uint8_t, kImmediateDataBodySize> EncodeImmediateDataBody(const ImmediateDataBody& b);
std::array<uint8_t, kAtomicResponseBodySize> EncodeAtomicResponseBody(const AtomicResponseBody& b);
// Writes the 52-byte body into `out`; returns the bytes written.
Result<size_t, WireError> EncodeAtomicRequestBody(const AtomicRequestBody& b, MutableByteSpan out);

}  // namespace iwarpx::wire
