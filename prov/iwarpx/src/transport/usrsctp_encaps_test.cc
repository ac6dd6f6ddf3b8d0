#include "transport/usrsctp_encaps.h"

#include <sys/socket.h>

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "transport/sock_addr.h"
#include "transport/socket_util.h"
#include "transport/usrsctp_stack.h"

namespace iwarpx::transport {
namespace {

int RcvBuf(int fd) {
  int v = 0;
  socklen_t len = sizeof(v);
  EXPECT_EQ(::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
  return v;
}

// A UDP socket bound to a port the kernel picks, and its port.
struct Bound {
  UniqueFd fd;
  uint16_t port = 0;
};
Bound BindUdp() {
  Bound b;
  auto s = OpenSocket(AF_INET, SOCK_DGRAM);
  EXPECT_TRUE(s.ok());
  if (!s.ok()) return b;
  const SockAddr any = SockAddr::Loopback4();
  EXPECT_EQ(::bind(s->get(), any.sa(), any.length()), 0);
  b.port = LocalAddressOf(s->get()).port();
  b.fd = std::move(s).value();
  return b;
}

TEST(UsrsctpEncapsTest, GrowsOnlyNewUdpSocketsOnThePort) {
  Bound old = BindUdp();  // open before: must stay as it is
  const std::vector<int> before = usrsctp_encaps::SocketFds();
  Bound fresh = BindUdp();
  Bound other = BindUdp();  // new, but another port
  ASSERT_TRUE(old.fd.valid() && fresh.fd.valid() && other.fd.valid());
  const int old_size = RcvBuf(old.fd.get());
  const int other_size = RcvBuf(other.fd.get());
  constexpr int kAsk = 96 * 1024;  // below any sane rmem_max, above nothing
  const int got = usrsctp_encaps::GrowReceiveBuffers(before, fresh.port, kAsk);
  EXPECT_EQ(got, 2 * kAsk);  // the kernel doubles what it grants
  EXPECT_EQ(RcvBuf(fresh.fd.get()), 2 * kAsk);
  EXPECT_EQ(RcvBuf(other.fd.get()), other_size);
  EXPECT_EQ(usrsctp_encaps::ReceiveBuffer(before, fresh.port), 2 * kAsk);
  // `old` is bound to another port and was open before: untouched either way.
  EXPECT_EQ(RcvBuf(old.fd.get()), old_size);
  EXPECT_EQ(usrsctp_encaps::GrowReceiveBuffers(before, old.port, kAsk), 0);
  EXPECT_EQ(RcvBuf(old.fd.get()), old_size);
}

TEST(UsrsctpEncapsTest, NothingFoundOnAnUnusedPort) {
  const std::vector<int> none;
  EXPECT_EQ(usrsctp_encaps::GrowReceiveBuffers(none, 0, 1 << 20), 0);
}

TEST(UsrsctpEncapsTest, SocketFdsListsOpenSockets) {
  Bound b = BindUdp();
  ASSERT_TRUE(b.fd.valid());
  const std::vector<int> fds = usrsctp_encaps::SocketFds();
  EXPECT_NE(std::find(fds.begin(), fds.end(), b.fd.get()), fds.end());
}

// The window rule of usrsctp_stack.h "Receive buffers".
TEST(UsrsctpEncapsTest, AssociationBufferIsAQuarterOfTheUdpBufferCapped) {
  EXPECT_EQ(UsrsctpStack::AssociationBufferFor(0), 0);
  EXPECT_EQ(UsrsctpStack::AssociationBufferFor(2 * 212992), 0);  // Debian's rmem_max: keep 128 KiB
  EXPECT_EQ(UsrsctpStack::AssociationBufferFor(2 << 20), 512 << 10);
  EXPECT_EQ(UsrsctpStack::AssociationBufferFor(8 << 20), UsrsctpStack::kAssociationReceiveBuffer);
  EXPECT_EQ(UsrsctpStack::AssociationBufferFor(64 << 20), UsrsctpStack::kAssociationReceiveBuffer);
}

}  // namespace
}  // namespace iwarpx::transport
