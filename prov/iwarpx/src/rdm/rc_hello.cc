#include "rdm/rc_hello.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

namespace iwarpx::rdm {

namespace {

constexpr std::array<uint8_t, 4> kMagic = {'I', 'W', 'X', 'R'};

// The address bytes of `a` (4 or 16), for ordering.
ByteSpan IpBytes(const transport::SockAddr& a) {
  if (a.is_ipv6()) {
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(a.sa());
    return {reinterpret_cast<const uint8_t*>(&s6->sin6_addr), 16};
  }
  const auto* s4 = reinterpret_cast<const sockaddr_in*>(a.sa());
  return {reinterpret_cast<const uint8_t*>(&s4->sin_addr), 4};
}

}  // namespace

std::array<uint8_t, kRcHelloSize> EncodeRcHello(uint16_t udp_port) {
  return {kMagic[0],
          kMagic[1],
          kMagic[2],
          kMagic[3],
          kRcHelloVersion,
          0,
          static_cast<uint8_t>(udp_port >> 8),
          static_cast<uint8_t>(udp_port & 0xFF)};
}

std::optional<uint16_t> DecodeRcHello(ByteSpan data) {
  if (data.size() != kRcHelloSize) return std::nullopt;
  if (!std::equal(kMagic.begin(), kMagic.end(), data.begin())) return std::nullopt;
  if (data[4] != kRcHelloVersion || data[5] != 0) return std::nullopt;
  const auto port = static_cast<uint16_t>((data[6] << 8) | data[7]);
  if (port == 0) return std::nullopt;
  return port;
}

std::optional<transport::SockAddr> RcCaller(const transport::SockAddr& tcp_peer, ByteSpan hello) {
  const std::optional<uint16_t> port = DecodeRcHello(hello);
  if (!port || !tcp_peer.valid()) return std::nullopt;
  transport::SockAddr a = tcp_peer;
  a.set_port(*port);
  return a.HostLocal();
}

bool RcLower(const transport::SockAddr& a, const transport::SockAddr& b) {
  if (a.port() != b.port()) return a.port() < b.port();
  if (a.family() != b.family()) return a.family() < b.family();
  const ByteSpan x = IpBytes(a);
  const ByteSpan y = IpBytes(b);
  return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
}

}  // namespace iwarpx::rdm
