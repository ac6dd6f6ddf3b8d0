// The RDM message header: what the RDM endpoint puts at the start of every
// RDMAP Send it exchanges over an RD queue pair (docs/wire.md §3.10). One
// libfabric message (fi_send/fi_tsend and their variants) is one Send: an
// EAGER carries the data after the header; an RTS (rendezvous) carries up to
// kRdmMaxSegments descriptors of registered source memory that the receiver
// pulls with RDMA Reads once a receive matches, then answers with a FIN.
//
// Wire image (big-endian):
//   0 version(8)=1 | 1 op(8) | 2 flags(16) | 4 msg_id(32)
//   8 tag(64)      (flag T; else 0)
//  16 data(64)     (flag D, remote CQ data; else 0)
//  24 size(64)     message length in bytes
//  EAGER: exactly `size` payload bytes follow (the Send is 32 + size bytes).
//  RTS:   32 count(8) 1..4 | 33 reserved(24)=0 |
//         count x { stag(32) | reserved(32)=0 | to(64) | len(64) };
//         the lengths add up to `size`; msg_id names the transfer.
//         With flag W (write handshake) count is 0: the sender will RDMA
//         Write the data once the receiver answers with a CTS.
//  FIN:   header only: msg_id of the RTS answered, size = bytes read,
//         flags/tag/data 0. FIN with W: the RTS sender's "written": its
//         RDMA Writes into the CTS's segments precede it on the same QP,
//         size = bytes written.
//  CTS:   the receiver's answer to an RTS with W: msg_id of the RTS, size =
//         bytes it takes (at most the RTS's; 0 when it cannot take any),
//         then the RTS layout with count 0..4 segments of its registered
//         sink memory (remote write) adding up to `size`; T, D, W clear.
//  SWITCH: header only, every field 0: the sender's later messages to this
//         peer come on their connected QP (docs/design.md "Connected channels
//         in the RDM endpoint").
//  Copy-based rendezvous (flag C; docs/design.md "Copy fallback"):
//  RTS with C: count 0, no segments: the sender will send the data in DATA
//         fragments once the receiver answers with a CTS with C. C and W
//         are exclusive.
//  CTS with C: the receiver's "clear to send by copy", the answer to any RTS
//         (C, W, or one with segments whose zero-copy the receiver cannot
//         do): msg_id of the RTS, size = bytes it takes (at most the RTS's),
//         bytes 8..15 ("offset") = the largest DATA payload it accepts (>= 1
//         when size > 0), count 0; T, D, W clear.
//  DATA:  op 6, flags 0, msg_id of the RTS, bytes 8..15 = offset of the
//         fragment in the message, data 0, size = payload bytes; exactly
//         `size` payload bytes follow (the Send is 32 + size bytes), and
//         offset + size does not overflow.
//
// Contract: pure functions on caller-owned memory; DecodeRdmMessage reads
// only inside its input, never allocates, and refuses anything the format
// does not allow (first failed check: kTruncated, kRdmBadVersion,
// kRdmBadOp, kRdmReservedBits, kRdmBadLength). An accepted message encodes
// back to the same bytes (EAGER, DATA: header + the payload view).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::wire {

inline constexpr uint8_t kRdmVersion = 1;
inline constexpr size_t kRdmHeaderSize = 32;
inline constexpr size_t kRdmMaxSegments = 4;
inline constexpr size_t kRdmSegmentSize = 24;
inline constexpr size_t kRdmRtsMaxSize = kRdmHeaderSize + 4 + kRdmMaxSegments * kRdmSegmentSize;

inline constexpr uint16_t kRdmFlagTagged = 0x8000;  // T
inline constexpr uint16_t kRdmFlagData = 0x4000;    // D
inline constexpr uint16_t kRdmFlagWrite = 0x2000;   // W: RTS and FIN of the write handshake
inline constexpr uint16_t kRdmFlagCopy = 0x1000;    // C: RTS and CTS of the copy rendezvous
inline constexpr uint16_t kRdmFlagsReserved = 0x0FFF;

enum class RdmOp : uint8_t { kEager = 1, kRts = 2, kFin = 3, kSwitch = 4, kCts = 5, kData = 6 };

struct RdmSegment {
  uint32_t stag = 0;
  uint64_t to = 0;
  uint64_t len = 0;
  friend bool operator==(const RdmSegment&, const RdmSegment&) = default;
};

struct RdmHeader {
  RdmOp op = RdmOp::kEager;
  bool tagged = false;
  bool has_data = false;
  bool write = false;  // W (RTS, FIN)
  bool copy = false;   // C (RTS, CTS)
  uint32_t msg_id = 0;
  uint64_t tag = 0;
  // DATA: the fragment's offset in the message; CTS with C: the largest
  // DATA payload the receiver takes. Both travel where the tag does.
  uint64_t offset = 0;
  uint64_t data = 0;
  uint64_t size = 0;
  // RTS and CTS only.
  uint8_t segment_count = 0;
  std::array<RdmSegment, kRdmMaxSegments> segments{};
};

struct RdmMessage {
  RdmHeader header;
  ByteSpan payload;  // EAGER, DATA: the `size` bytes after the header (a view)
};

// Bytes the header of `h` takes (32, or 36 + 24 per segment for RTS, CTS).
size_t RdmHeaderLength(const RdmHeader& h);

// Writes the header of `h` (not the EAGER payload) to `out`; returns its
// length. kInvalidArgument for what the format cannot carry (RTS without
// 1..4 segments — 0 with W — or whose lengths do not add up to size, CTS
// with T/D/W, more than 4 segments or lengths not adding up, FIN with T/D,
// W on EAGER/SWITCH/CTS, C on anything but RTS/CTS, C with W or segments,
// DATA with flags, data, segments or an offset + size that overflows, an
// offset on anything but DATA and CTS with C, tag without T, data without
// D), kNoSpace if `out` is too small.
Result<size_t, WireError> EncodeRdmHeader(const RdmHeader& h, MutableByteSpan out);

// Decodes one whole received Send.
Result<RdmMessage, WireError> DecodeRdmMessage(ByteSpan bytes);

}  // namespace iwarpx::wire
