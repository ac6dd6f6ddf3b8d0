// The connected channels of the RDM endpoint (docs/design.md "Connected
// channels in the RDM endpoint"): what names the caller of a connection and
// which of two simultaneous connections survives.
//
// * Hello: the MPA Request's private data, 8 or 28 bytes
//   "IWXR" | version(8)=1 | flags(8) | UDP port(16, big-endian)
//   [ | ring: stag(32) | slots(32) | slot bytes(32) | base(64) ]
//   Flag 0x01 (R): the 20-byte RC-FP ring description follows (rc_fastpath.h:
//   the sender's receive ring, which the other side may write into); other
//   flag bits are reserved (0). The Reply's private data is a hello of the
//   same form (its port: the responder's UDP port), with a ring when the
//   responder takes the fast path too. DecodeRcHello refuses every other
//   image (length, magic, version, reserved bits, port 0, a ring whose
//   numbers are out of range). The caller is the connection's source IP
//   with that UDP port (RcCaller): a caller can name only ports of its own
//   host.
// * Tie-break (seed 003 §III-B): of two connections between a pair, the one
//   initiated by the lower address wins; addresses compare by UDP port, then
//   by family and IP bytes (RcLower). Both sides compute the same answer.
// Pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/bytes.h"
#include "rdm/rc_fastpath.h"
#include "transport/sock_addr.h"

namespace iwarpx::rdm {

inline constexpr size_t kRcHelloSize = 8;
inline constexpr size_t kRcHelloRingSize = 20;
inline constexpr size_t kRcHelloMaxSize = kRcHelloSize + kRcHelloRingSize;
inline constexpr uint8_t kRcHelloVersion = 1;
inline constexpr uint8_t kRcHelloFlagRing = 0x01;

struct RcHello {
  uint16_t udp_port = 0;
  std::optional<FpRingDesc> ring;
};

std::array<uint8_t, kRcHelloSize> EncodeRcHello(uint16_t udp_port);
// The hello with a ring when `ring` is set; returns the bytes used.
size_t EncodeRcHello(uint16_t udp_port, const std::optional<FpRingDesc>& ring,
                     std::array<uint8_t, kRcHelloMaxSize>& out);
// The hello, or nullopt when `data` is not one.
std::optional<RcHello> DecodeRcHelloFull(ByteSpan data);
// The UDP port, or nullopt when `data` is not a hello.
std::optional<uint16_t> DecodeRcHello(ByteSpan data);
// The RDM peer (UDP address, HostLocal form) a connection from `tcp_peer`
// with this hello belongs to; nullopt when the hello does not decode.
std::optional<transport::SockAddr> RcCaller(const transport::SockAddr& tcp_peer, ByteSpan hello);
// True when `a` is the lower address: a's connection to b wins over b's to a.
bool RcLower(const transport::SockAddr& a, const transport::SockAddr& b);

}  // namespace iwarpx::rdm
