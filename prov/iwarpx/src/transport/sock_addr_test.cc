#include "transport/sock_addr.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "transport/fd.h"

namespace iwarpx::transport {
namespace {

TEST(SockAddrTest, ParsesAndFormatsIpv4) {
  auto a = SockAddr::Parse("1.2.3.4", "5678");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->family(), AF_INET);
  EXPECT_EQ(a->port(), 5678);
  EXPECT_EQ(a->length(), sizeof(sockaddr_in));
  EXPECT_EQ(a->ToString(), "1.2.3.4:5678");
  auto back = SockAddr::ParseHostPort(a->ToString());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *a);
}

TEST(SockAddrTest, ParsesAndFormatsIpv6) {
  auto a = SockAddr::Parse("::1", "5678");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->is_ipv6());
  EXPECT_EQ(a->length(), sizeof(sockaddr_in6));
  EXPECT_EQ(a->ToString(), "[::1]:5678");
  EXPECT_EQ(*a, SockAddr::Loopback6(5678));
  auto b = SockAddr::ParseHostPort("[2001:db8::a:b]:65535");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port(), 65535);
  EXPECT_EQ(b->ToString(), "[2001:db8::a:b]:65535");
}

TEST(SockAddrTest, PassiveEmptyNodeIsWildcardAndActiveIsLoopback) {
  auto any = SockAddr::Parse("", "0", /*passive=*/true, AF_INET);
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(*any, SockAddr::Any4());
  auto any6 = SockAddr::Parse("", "7", true, AF_INET6);
  ASSERT_TRUE(any6.ok());
  EXPECT_EQ(*any6, SockAddr::Any6(7));
  auto lo = SockAddr::Parse("", "9", false, AF_INET);
  ASSERT_TRUE(lo.ok());
  EXPECT_EQ(*lo, SockAddr::Loopback4(9));
}

TEST(SockAddrTest, ResolvesLocalhostByName) {
  auto a = SockAddr::Resolve("localhost", "80", false, AF_INET);
  ASSERT_TRUE(a.ok()) << AddrErrorName(a.error());
  EXPECT_EQ(*a, SockAddr::Loopback4(80));
}

TEST(SockAddrTest, ParseRejectsNamesAndBadPorts) {
  EXPECT_EQ(SockAddr::Parse("localhost", "80").error(), AddrError::kBadHost);
  EXPECT_EQ(SockAddr::Parse("1.2.3.256", "80").error(), AddrError::kBadHost);
  EXPECT_EQ(SockAddr::Parse("1.2.3.4", "65536").error(), AddrError::kBadPort);
  EXPECT_EQ(SockAddr::Parse("1.2.3.4", "").error(), AddrError::kBadPort);
  EXPECT_EQ(SockAddr::Parse("1.2.3.4", "http").error(), AddrError::kBadPort);
  EXPECT_EQ(SockAddr::Parse("1.2.3.4", "-1").error(), AddrError::kBadPort);
  EXPECT_EQ(SockAddr::Parse("1.2.3.4", "80", false, AF_INET6).error(), AddrError::kFamilyMismatch);
}

TEST(SockAddrTest, HostPortErrors) {
  EXPECT_EQ(SockAddr::ParseHostPort("1.2.3.4").error(), AddrError::kBadFormat);
  EXPECT_EQ(SockAddr::ParseHostPort(":80").error(), AddrError::kBadFormat);
  EXPECT_EQ(SockAddr::ParseHostPort("::1:80").error(), AddrError::kBadFormat);
  EXPECT_EQ(SockAddr::ParseHostPort("[::1]").error(), AddrError::kBadFormat);
  EXPECT_EQ(SockAddr::ParseHostPort("[::1]80").error(), AddrError::kBadFormat);
  EXPECT_EQ(SockAddr::ParseHostPort("[1.2.3.4]:80").error(), AddrError::kBadFormat);
  EXPECT_EQ(SockAddr::ParseHostPort("1.2.3.4:x").error(), AddrError::kBadPort);
  EXPECT_EQ(SockAddr::ParseHostPort("[::g]:1").error(), AddrError::kBadHost);
  EXPECT_EQ(SockAddr::ParseHostPort("").error(), AddrError::kBadFormat);
}

TEST(SockAddrTest, EqualityAndPort) {
  SockAddr a = SockAddr::Loopback4(1);
  SockAddr b = SockAddr::Loopback4(2);
  EXPECT_FALSE(a == b);
  b.set_port(1);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(SockAddr::Loopback4(1) == SockAddr::Loopback6(1));
  EXPECT_EQ(SockAddr(), SockAddr());
  SockAddr empty;
  EXPECT_FALSE(empty.valid());
  empty.set_port(5);
  EXPECT_EQ(empty.port(), 0);
  EXPECT_EQ(empty.ToString(), "");
}

// Equal addresses hash alike; the addresses a busy endpoint meets (one host,
// many ports; many hosts, one port; v4 and v6) do not collide.
TEST(SockAddrTest, HashIsConsistentWithEqualityAndSpreads) {
  const SockAddrHash hash;
  SockAddr a = SockAddr::Loopback4(9000);
  SockAddr b = SockAddr::Loopback4(1);
  b.set_port(9000);
  ASSERT_EQ(a, b);
  EXPECT_EQ(hash(a), hash(b));
  std::set<size_t> seen;
  for (uint16_t port = 1; port < 2000; ++port) {
    EXPECT_TRUE(seen.insert(hash(SockAddr::Loopback4(port))).second) << port;
    EXPECT_TRUE(seen.insert(hash(SockAddr::Loopback6(port))).second) << port;
  }
  for (int host = 1; host < 250; ++host) {
    auto h = SockAddr::ParseHostPort("10.0.0." + std::to_string(host) + ":7000");
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(seen.insert(hash(*h)).second) << host;
  }
}

TEST(SockAddrTest, FromRawChecksFamilyAndLength) {
  SockAddr v4 = SockAddr::Loopback4(3);
  auto copy = SockAddr::FromRaw(v4.sa(), v4.length());
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(*copy, v4);
  EXPECT_FALSE(SockAddr::FromRaw(v4.sa(), v4.length() - 1).has_value());
  sockaddr unix_sa{};
  unix_sa.sa_family = AF_UNIX;
  EXPECT_FALSE(SockAddr::FromRaw(&unix_sa, sizeof(unix_sa)).has_value());
  EXPECT_FALSE(SockAddr::FromRaw(nullptr, 0).has_value());
}

TEST(SockAddrTest, HoldsAnIpv6AddressInThirtyTwoBytes) {
  // Kept per peer by the RDM endpoint (several copies): no sockaddr_storage.
  EXPECT_LE(sizeof(SockAddr), 32u);
  auto v6 = SockAddr::Parse("fe80::1%lo", "4791");
  ASSERT_TRUE(v6.ok());
  // A caller's sockaddr_storage-sized buffer is still accepted, and longer
  // lengths refused as before.
  sockaddr_storage ss{};
  std::memcpy(&ss, v6->sa(), v6->length());
  auto copy = SockAddr::FromRaw(reinterpret_cast<const sockaddr*>(&ss), sizeof(ss));
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(*copy, *v6);
  EXPECT_EQ(copy->length(), sizeof(sockaddr_in6));
  EXPECT_EQ(copy->ToString(), v6->ToString());
  EXPECT_FALSE(
      SockAddr::FromRaw(reinterpret_cast<const sockaddr*>(&ss), sizeof(ss) + 1).has_value());
}

TEST(UniqueFdTest, ClosesMovesAndReleases) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  {
    UniqueFd a(p[0]);
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from state is defined
    EXPECT_EQ(b.get(), p[0]);
  }
  EXPECT_EQ(::fcntl(p[0], F_GETFD), -1);  // closed by b
  UniqueFd w(p[1]);
  const int raw = w.Release();
  EXPECT_FALSE(w.valid());
  EXPECT_NE(::fcntl(raw, F_GETFD), -1);
  w.Reset(raw);
  w.Reset();
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);
}

}  // namespace
}  // namespace iwarpx::transport
