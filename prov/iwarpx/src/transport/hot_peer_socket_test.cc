#include "transport/hot_peer_socket.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "transport/test_util.h"

namespace iwarpx::transport {
namespace {

class HotPeerSocketTest : public ::testing::TestWithParam<bool> {
 protected:
  SockAddr Where() const { return GetParam() ? SockAddr::Loopback6() : SockAddr::Loopback4(); }
  std::unique_ptr<UdpSocket> Plain() {
    auto s = UdpSocket::Bind(Where());
    EXPECT_TRUE(s.ok());
    return s.ok() ? std::move(s).value() : nullptr;
  }
  std::unique_ptr<HotPeerSocket> Hot() {
    auto s = HotPeerSocket::Create(Plain());
    EXPECT_TRUE(s.ok());
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // hot_ connected to peer_, and other_ beside them.
  void ConnectedTrio() {
    hot_ = Hot();
    peer_ = Plain();
    other_ = Plain();
    ASSERT_TRUE(hot_ && peer_ && other_);
    ASSERT_TRUE(hot_->Connect(peer_->local_address()).ok());
  }

  std::unique_ptr<HotPeerSocket> hot_;
  std::unique_ptr<UdpSocket> peer_;
  std::unique_ptr<UdpSocket> other_;
};

IoResult Send(DatagramSocket& s, const SockAddr& to, const std::string& text) {
  const iovec v{const_cast<char*>(text.data()), text.size()};
  return s.SendTo(to, std::span(&v, 1));
}

// Waits (bounded) for one datagram on `fd`, read through `s`; "" if none.
std::string RecvOne(DatagramSocket& s, int fd, SockAddr* from = nullptr) {
  std::array<char, 64> buf{};
  iovec v{buf.data(), buf.size()};
  DgramMessage m;
  m.iov = std::span<const iovec>(&v, 1);
  for (int i = 0; i < 100; ++i) {
    if (!WaitFor(fd, Poller::kReadable)) return "";
    const BatchResult r = s.RecvBatch(std::span(&m, 1));
    if (r.count == 1) {
      if (from != nullptr) *from = m.addr;
      return std::string(buf.data(), m.bytes);
    }
  }
  return "";
}

TEST_P(HotPeerSocketTest, ThePeersDatagramsTakeTheHotSocketAndOthersTheMainOne) {
  auto hot = Hot();
  auto peer = Plain();
  auto other = Plain();
  ASSERT_TRUE(hot && peer && other);
  EXPECT_EQ(hot->hot_fd(), -1);
  ASSERT_TRUE(hot->Connect(peer->local_address()).ok());
  ASSERT_TRUE(hot->connected());
  EXPECT_NE(hot->hot_fd(), -1);
  EXPECT_NE(hot->hot_fd(), hot->fd());
  EXPECT_EQ(hot->Connect(other->local_address()).err, EALREADY);

  // Out: both leave from the one address, whichever socket sends.
  ASSERT_TRUE(Send(*hot, peer->local_address(), "to-peer").ok());
  ASSERT_TRUE(Send(*hot, other->local_address(), "to-other").ok());
  SockAddr from;
  EXPECT_EQ(RecvOne(*peer, peer->fd(), &from), "to-peer");
  EXPECT_EQ(from, hot->local_address());
  EXPECT_EQ(RecvOne(*other, other->fd(), &from), "to-other");
  EXPECT_EQ(from, hot->local_address());

  // In: the kernel hands the peer's datagram to the hot socket, the other's to
  // the main one; RecvBatch reads both.
  ASSERT_TRUE(Send(*peer, hot->local_address(), "from-peer").ok());
  ASSERT_TRUE(WaitFor(hot->hot_fd(), Poller::kReadable));
  ASSERT_TRUE(Send(*other, hot->local_address(), "from-other").ok());
  ASSERT_TRUE(WaitFor(hot->fd(), Poller::kReadable));
  EXPECT_EQ(RecvOne(*hot, hot->hot_fd(), &from), "from-peer");
  EXPECT_EQ(from, peer->local_address());
  EXPECT_EQ(RecvOne(*hot, hot->fd(), &from), "from-other");
  EXPECT_EQ(from, other->local_address());
}

TEST_P(HotPeerSocketTest, HotOnlyLeavesTheMainSocketAlone) {
  ASSERT_NO_FATAL_FAILURE(ConnectedTrio());
  auto& hot = hot_;
  auto& other = other_;
  ASSERT_TRUE(Send(*other, hot->local_address(), "x").ok());
  ASSERT_TRUE(WaitFor(hot->fd(), Poller::kReadable));
  std::array<char, 8> buf{};
  iovec v{buf.data(), buf.size()};
  DgramMessage m;
  m.iov = std::span<const iovec>(&v, 1);
  hot->set_hot_only(true);
  EXPECT_EQ(hot->RecvBatch(std::span(&m, 1)).status, IoStatus::kWouldBlock);
  hot->set_hot_only(false);
  EXPECT_EQ(hot->RecvBatch(std::span(&m, 1)).count, 1U);
}

TEST_P(HotPeerSocketTest, ABatchStopsWhereTheSocketChanges) {
  ASSERT_NO_FATAL_FAILURE(ConnectedTrio());
  auto& hot = hot_;
  auto& peer = peer_;
  auto& other = other_;
  const std::array<std::string, 3> text{"a", "b", "c"};
  std::array<iovec, 3> v{};
  std::array<DgramMessage, 3> out{};
  for (size_t i = 0; i < 3; ++i) {
    v[i] = iovec{const_cast<char*>(text[i].data()), 1};
    out[i].iov = std::span<const iovec>(&v[i], 1);
    out[i].addr = i < 2 ? peer->local_address() : other->local_address();
  }
  const BatchResult first = hot->SendBatch(out);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.count, 2U);
  const BatchResult second = hot->SendBatch(std::span(out).subspan(2));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.count, 1U);
  EXPECT_EQ(RecvOne(*peer, peer->fd()), "a");
  EXPECT_EQ(RecvOne(*peer, peer->fd()), "b");
  EXPECT_EQ(RecvOne(*other, other->fd()), "c");
}

TEST_P(HotPeerSocketTest, APeerThatIsGoneIsLossNotAnError) {
  auto hot = Hot();
  auto peer = Plain();
  ASSERT_TRUE(hot && peer);
  const SockAddr gone = peer->local_address();
  ASSERT_TRUE(hot->Connect(gone).ok());
  peer.reset();  // its port now answers with ICMP port unreachable
  // The premise: a connected socket reports that ICMP error on a later call.
  auto raw = UdpSocket::BindConnected(Where(), gone);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(Send(*raw.value(), gone, "x").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const IoResult refused = Send(*raw.value(), gone, "x");
  ASSERT_EQ(refused.status, IoStatus::kError);
  ASSERT_EQ(refused.err, ECONNREFUSED);
  // Through HotPeerSocket the same is loss: every send counts as sent (the
  // error reaching a send: two sends in a row), every read finds nothing (the
  // error reaching a read: a send, then a read).
  std::array<char, 8> buf{};
  iovec v{buf.data(), buf.size()};
  DgramMessage m;
  m.iov = std::span<const iovec>(&v, 1);
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 2; ++k) {
      const IoResult s = Send(*hot, gone, "lost");
      EXPECT_TRUE(s.ok()) << s.err;
      EXPECT_EQ(s.bytes, 4U);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(Send(*hot, gone, "lost").ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const BatchResult r = hot->RecvBatch(std::span(&m, 1));
    EXPECT_EQ(r.status, IoStatus::kWouldBlock) << r.err;
  }
}

TEST_P(HotPeerSocketTest, DisconnectGoesBackToTheMainSocketAndBuffersReachBoth) {
  auto hot = Hot();
  auto peer = Plain();
  ASSERT_TRUE(hot && peer);
  ASSERT_TRUE(hot->SetRecvBufferSize(256 * 1024).ok());
  ASSERT_TRUE(hot->SetSendBufferSize(256 * 1024).ok());
  ASSERT_TRUE(hot->Connect(peer->local_address()).ok());
  int got = 0;
  socklen_t len = sizeof(got);
  ASSERT_EQ(getsockopt(hot->hot_fd(), SOL_SOCKET, SO_RCVBUF, &got, &len), 0);
  EXPECT_GE(got, 256 * 1024);  // Linux reports twice the request, capped by rmem_max
  hot->Disconnect();
  EXPECT_FALSE(hot->connected());
  EXPECT_EQ(hot->hot_fd(), -1);
  ASSERT_TRUE(Send(*peer, hot->local_address(), "back").ok());
  EXPECT_EQ(RecvOne(*hot, hot->fd()), "back");
}

TEST_P(HotPeerSocketTest, AStrangerCannotTakeTheAddressWithoutSharing) {
  auto hot = Hot();
  ASSERT_TRUE(hot);
  // A plain bind to the address (no SO_REUSEPORT) is refused as before.
  auto again = UdpSocket::Bind(hot->local_address());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().err, EADDRINUSE);
}

INSTANTIATE_TEST_SUITE_P(Families, HotPeerSocketTest, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "Ipv6" : "Ipv4"; });

}  // namespace
}  // namespace iwarpx::transport
