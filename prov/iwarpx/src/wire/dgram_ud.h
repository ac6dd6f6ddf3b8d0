// The common UD datagram in one step: a datagram of type UD data (wire/dgram.h,
// docs/wire.md §3.2, §3.5) whose ULPDU is one whole untagged RDMAP Send or
// Send with SE (RFC 5040 §4, RFC 5041 §4.3) followed by its payload — what
// rd::UdQp sends for every message, 58 bytes of headers:
//
//   0 datagram header (40): magic 0x6977, version 1, type 1 (UD data),
//     flags C or 0, ulpdu_length = 18 + payload, dst_qpn, src_qpn; all else 0
//  40 DDP untagged header (18): ctrl 0x41 (T=0, L=1, DV=1), RDMAP ctrl 0x43
//     (Send) or 0x45 (Send with SE), Invalidate STag 0, QN 0, MSN, MO 0
//  58 payload | pad to 4 | CRC32c (zero with C clear)
//
// The generic codecs (DecodeDgram + ParseSegment, EncodeDgram +
// EncodeSendHeader) handle this layout too; these two functions do it with
// one bounds check and a few loads and stores, for the per-message path.
//
// Contract:
// * EncodeUdSend writes exactly the bytes EncodeDgram writes for the UD
//   header {dst_qpn, src_qpn} and the ULPDU EncodeSendHeader({msn,
//   solicited}) ‖ payload parts, with the same crc_on; kInvalidArgument if the
//   payload exceeds kUdSendMaxPayload, kNoSpace if `out` is too small. It
//   writes nothing past `out` and only reads the parts.
// * DecodeUdSend(bytes, verify_crc) accepts exactly the datagrams that
//   DecodeDgram(bytes, verify_crc) accepts as UD data and whose ULPDU
//   ParseSegment (default options) accepts as a Send or Send with SE, and then
//   reports the same dst_qpn, src_qpn, MSN, SE, crc_present, crc_checked and
//   payload view. Everything else (any other type or opcode, a reserved bit,
//   a wrong length, a bad CRC...) is std::nullopt without saying why: the
//   caller runs the generic decoders, which give the reason and count it.
//   Reads only inside `bytes`; no allocation.
// * Pure functions on caller-owned memory: thread-safe, no exceptions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "base/bytes.h"
#include "base/result.h"
#include "wire/ddp.h"
#include "wire/dgram.h"
#include "wire/error.h"

namespace iwarpx::wire {

// Datagram header + untagged DDP header.
inline constexpr size_t kUdSendHeaderSize = kDgramHeaderSize + kDdpUntaggedHeaderSize;
inline constexpr size_t kUdSendMaxPayload = kDgramMaxUlpdu - kDdpUntaggedHeaderSize;

struct UdSendFields {
  uint32_t dst_qpn = 0;
  uint32_t src_qpn = 0;
  uint32_t msn = 0;
  bool solicited = false;  // Send with SE
  friend bool operator==(const UdSendFields&, const UdSendFields&) = default;
};

struct UdSendView {
  UdSendFields fields;
  ByteSpan payload;          // view into the decoded bytes
  bool crc_present = false;  // the C flag
  bool crc_checked = false;  // C set, verify_crc requested, and the CRC matched
};

// Datagram size for a payload of `payload_length` bytes.
constexpr size_t UdSendSize(size_t payload_length) {
  return DgramSize(kDdpUntaggedHeaderSize + payload_length);
}

Result<size_t, WireError> EncodeUdSend(const UdSendFields& fields,
                                       std::span<const ByteSpan> payload_parts, bool crc_on,
                                       MutableByteSpan out);

std::optional<UdSendView> DecodeUdSend(ByteSpan bytes, bool verify_crc);

// The same answer through the generic decoders (DecodeDgram, then
// ParseSegment on the ULPDU): the reference DecodeUdSend is tested and
// fuzzed against. Not for the data path.
std::optional<UdSendView> DecodeUdSendGeneric(ByteSpan bytes, bool verify_crc);

}  // namespace iwarpx::wire
