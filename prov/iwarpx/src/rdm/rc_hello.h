// The connected channels of the RDM endpoint (docs/design.md "Connected
// channels in the RDM endpoint"): what names the caller of a connection and
// which of two simultaneous connections survives.
//
// * Hello: the MPA Request's private data, 8 bytes
//   "IWXR" | version(8)=1 | reserved(8)=0 | UDP port(16, big-endian).
//   DecodeRcHello refuses every other image (length, magic, version,
//   reserved, port 0). The caller is the connection's source IP with that
//   UDP port (RcCaller): a caller can name only ports of its own host.
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
#include "transport/sock_addr.h"

namespace iwarpx::rdm {

inline constexpr size_t kRcHelloSize = 8;
inline constexpr uint8_t kRcHelloVersion = 1;

std::array<uint8_t, kRcHelloSize> EncodeRcHello(uint16_t udp_port);
// The UDP port, or nullopt when `data` is not a hello.
std::optional<uint16_t> DecodeRcHello(ByteSpan data);
// The RDM peer (UDP address, HostLocal form) a connection from `tcp_peer`
// with this hello belongs to; nullopt when the hello does not decode.
std::optional<transport::SockAddr> RcCaller(const transport::SockAddr& tcp_peer, ByteSpan hello);
// True when `a` is the lower address: a's connection to b wins over b's to a.
bool RcLower(const transport::SockAddr& a, const transport::SockAddr& b);

}  // namespace iwarpx::rdm
