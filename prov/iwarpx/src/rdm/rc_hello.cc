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

size_t EncodeRcHello(uint16_t udp_port, const std::optional<FpRingDesc>& ring,
                     std::array<uint8_t, kRcHelloMaxSize>& out) {
  const auto head = EncodeRcHello(udp_port);
  std::copy(head.begin(), head.end(), out.begin());
  if (!ring) return kRcHelloSize;
  out[5] = kRcHelloFlagRing;
  uint8_t* r = out.data() + kRcHelloSize;
  StoreBe32(r, ring->stag);
  StoreBe32(r + 4, ring->slots);
  StoreBe32(r + 8, ring->slot_bytes);
  StoreBe64(r + 12, ring->base);
  return kRcHelloMaxSize;
}

std::optional<RcHello> DecodeRcHelloFull(ByteSpan data) {
  if (data.size() != kRcHelloSize && data.size() != kRcHelloMaxSize) return std::nullopt;
  if (!std::equal(kMagic.begin(), kMagic.end(), data.begin())) return std::nullopt;
  const bool has_ring = data[5] == kRcHelloFlagRing;
  if (data[4] != kRcHelloVersion || (data[5] != 0 && !has_ring)) return std::nullopt;
  if (has_ring != (data.size() == kRcHelloMaxSize)) return std::nullopt;
  RcHello h;
  h.udp_port = LoadBe16(data.data() + 6);
  if (h.udp_port == 0) return std::nullopt;
  if (has_ring) {
    const uint8_t* r = data.data() + kRcHelloSize;
    FpRingDesc d;
    d.stag = LoadBe32(r);
    d.slots = LoadBe32(r + 4);
    d.slot_bytes = LoadBe32(r + 8);
    d.base = LoadBe64(r + 12);
    if (!d.valid()) return std::nullopt;
    h.ring = d;
  }
  return h;
}

std::optional<uint16_t> DecodeRcHello(ByteSpan data) {
  const std::optional<RcHello> h = DecodeRcHelloFull(data);
  if (!h) return std::nullopt;
  return h->udp_port;
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
