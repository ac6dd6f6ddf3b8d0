#include "transport/tcp.h"

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "transport/test_util.h"

namespace iwarpx::transport {
namespace {

iovec Iov(void* p, size_t n) {
  return iovec{p, n};
}
iovec Iov(const void* p, size_t n) {
  return iovec{const_cast<void*>(p), n};
}

struct Pair {
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server;
};

// Listens on `where` (port 0), connects, completes the connect and accepts,
// all within kTestTimeoutMs.
Pair Connect(const SockAddr& where) {
  Pair p;
  auto l = TcpListener::Listen(where, 4);
  EXPECT_TRUE(l.ok()) << (l.ok() ? 0 : l.error().err);
  if (!l.ok()) return p;
  p.listener = std::move(l).value();
  EXPECT_NE(p.listener->local_address().port(), 0);
  auto c = TcpConnection::Connect(p.listener->local_address());
  EXPECT_TRUE(c.ok());
  if (!c.ok()) return p;
  p.client = std::move(c).value();
  EXPECT_TRUE(WaitFor(p.client->fd(), Poller::kWritable));
  EXPECT_TRUE(p.client->FinishConnect().ok());
  EXPECT_TRUE(p.client->connected());
  EXPECT_TRUE(WaitFor(p.listener->fd(), Poller::kReadable));
  auto s = p.listener->Accept();
  EXPECT_TRUE(s.ok());
  if (s.ok()) p.server = std::move(s).value();
  return p;
}

// Receives exactly `n` bytes into `out` (bounded).
bool RecvAll(Connection& c, uint8_t* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    const iovec v = Iov(out + got, n - got);
    const IoResult r = c.RecvV({&v, 1});
    if (r.status == IoStatus::kWouldBlock) {
      if (!WaitFor(c.fd(), Poller::kReadable)) return false;
      continue;
    }
    if (!r.ok()) return false;
    got += r.bytes;
  }
  return true;
}

class TcpTest : public ::testing::TestWithParam<bool> {
 protected:
  SockAddr Where() const { return GetParam() ? SockAddr::Loopback6() : SockAddr::Loopback4(); }
};

TEST_P(TcpTest, ConnectAcceptAddresses) {
  Pair p = Connect(Where());
  ASSERT_TRUE(p.server);
  EXPECT_EQ(p.client->peer_address(), p.listener->local_address());
  EXPECT_EQ(p.server->local_address(), p.listener->local_address());
  EXPECT_EQ(p.server->peer_address(), p.client->local_address());
  EXPECT_TRUE(p.server->connected());
  EXPECT_FALSE(p.server->preserves_message_boundaries());
  // No second pending connection.
  auto none = p.listener->Accept();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().status, IoStatus::kWouldBlock);
}

TEST_P(TcpTest, GatherSendArrivesByteExactAndScatterReceiveSplits) {
  Pair p = Connect(Where());
  ASSERT_TRUE(p.server);
  const uint8_t header[6] = {0, 1, 2, 3, 4, 5};
  std::vector<uint8_t> payload(1000);
  std::iota(payload.begin(), payload.end(), uint8_t{7});
  const uint8_t trailer[4] = {0xde, 0xad, 0xbe, 0xef};
  const iovec out[] = {Iov(header, sizeof(header)), Iov(payload.data(), payload.size()),
                       Iov(trailer, sizeof(trailer))};
  const IoResult s = p.client->SendV(out);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s.bytes, 1010u);

  // Scatter: the "payload" lands in one buffer, the rest in a staging one.
  std::vector<uint8_t> placed(6 + 1000);
  uint8_t staging[64] = {};
  size_t got = 0;
  while (got < 1010) {
    ASSERT_TRUE(WaitFor(p.server->fd(), Poller::kReadable));
    iovec in[2];
    size_t k = 0;
    if (got < placed.size()) in[k++] = Iov(placed.data() + got, placed.size() - got);
    const size_t staged = got > placed.size() ? got - placed.size() : 0;
    in[k++] = Iov(staging + staged, sizeof(staging) - staged);
    const IoResult r = p.server->RecvV({in, k});
    if (r.status == IoStatus::kWouldBlock) continue;
    ASSERT_TRUE(r.ok());
    got += r.bytes;
  }
  EXPECT_EQ(0, std::memcmp(placed.data(), header, 6));
  EXPECT_EQ(0, std::memcmp(placed.data() + 6, payload.data(), payload.size()));
  EXPECT_EQ(0, std::memcmp(staging, trailer, 4));
}

TEST_P(TcpTest, LargeTransferWithPartialWrites) {
  Pair p = Connect(Where());
  ASSERT_TRUE(p.server);
  constexpr size_t kSize = 8u << 20;
  std::vector<uint8_t> data(kSize);
  for (size_t i = 0; i < kSize; ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 13));
  std::vector<uint8_t> got(kSize);
  // Small socket buffers, so a 1 MiB SendV is always taken only in part.
  auto* client = dynamic_cast<TcpConnection*>(p.client.get());
  auto* server = dynamic_cast<TcpConnection*>(p.server.get());
  ASSERT_TRUE(client && server);
  ASSERT_TRUE(client->SetSendBufferSize(32 * 1024).ok());
  ASSERT_TRUE(server->SetRecvBufferSize(32 * 1024).ok());
  size_t sent = 0;
  size_t received = 0;
  size_t partial_writes = 0;
  auto poller = Poller::Create();
  ASSERT_TRUE(poller.ok());
  Poller& pl = **poller;
  ASSERT_TRUE(pl.Add(p.client->fd(), Poller::kWritable, uint64_t{1}).ok());
  ASSERT_TRUE(pl.Add(p.server->fd(), Poller::kReadable, uint64_t{2}).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (received < kSize) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    PollEvent ev[4];
    auto w = pl.Wait(100, ev);
    ASSERT_TRUE(w.ok());
    if (sent < kSize) {
      // Header + a 1 MiB slice + trailer-sized remainder per call, as the
      // engine would gather.
      const size_t chunk = std::min<size_t>(kSize - sent, 1u << 20);
      const iovec v[] = {
          Iov(data.data() + sent, 16 < chunk ? 16 : chunk),
          Iov(data.data() + sent + (16 < chunk ? 16 : chunk), chunk - (16 < chunk ? 16 : chunk))};
      const IoResult r = p.client->SendV(v);
      if (r.ok()) {
        if (r.bytes < chunk) ++partial_writes;
        sent += r.bytes;
        if (sent == kSize) {
          ASSERT_TRUE(pl.Remove(p.client->fd()).ok());
        }
      } else {
        ASSERT_EQ(r.status, IoStatus::kWouldBlock);
      }
    }
    const iovec in = Iov(got.data() + received, kSize - received);
    const IoResult r = p.server->RecvV({&in, 1});
    if (r.ok()) {
      received += r.bytes;
    } else {
      ASSERT_EQ(r.status, IoStatus::kWouldBlock);
    }
  }
  EXPECT_EQ(got, data);
  EXPECT_GT(partial_writes, 0u);
}

// What an RDM endpoint's close waits for on a connection: bytes SendV took
// but the peer's TCP has not acknowledged. A peer that reads nothing fills
// its receive buffer, so the rest stays in ours: counted until it reads.
TEST_P(TcpTest, UnacknowledgedBytesCountWhatThePeersTcpHasNotTaken) {
  Pair p = Connect(Where());
  ASSERT_TRUE(p.server);
  auto* client = dynamic_cast<TcpConnection*>(p.client.get());
  auto* server = dynamic_cast<TcpConnection*>(p.server.get());
  ASSERT_TRUE(client && server);
  ASSERT_TRUE(server->SetRecvBufferSize(16 * 1024).ok());
  EXPECT_EQ(p.client->unacknowledged_bytes(), 0u);
  std::vector<uint8_t> chunk(64 * 1024, 0x5a);
  size_t sent = 0;
  for (int i = 0; i < 1000; ++i) {  // until the socket refuses: both buffers full
    const iovec v = Iov(chunk.data(), chunk.size());
    const IoResult r = p.client->SendV({&v, 1});
    if (r.status == IoStatus::kWouldBlock) break;
    ASSERT_TRUE(r.ok());
    sent += r.bytes;
  }
  ASSERT_GT(sent, 0u);
  EXPECT_GT(p.client->unacknowledged_bytes(), 0u) << "the peer reads nothing: bytes must wait";
  EXPECT_LE(p.client->unacknowledged_bytes(), sent);
  // The peer reads everything: the count drains to 0 (bounded wait).
  std::vector<uint8_t> got(sent);
  ASSERT_TRUE(RecvAll(*p.server, got.data(), sent));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (p.client->unacknowledged_bytes() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(p.client->unacknowledged_bytes(), 0u);
}

TEST_P(TcpTest, PeerCloseIsClosedAfterData) {
  Pair p = Connect(Where());
  ASSERT_TRUE(p.server);
  const char msg[] = "bye";
  const iovec v = Iov(msg, 3);
  ASSERT_EQ(p.client->SendV({&v, 1}).bytes, 3u);
  ASSERT_TRUE(p.client->ShutdownWrite().ok());
  uint8_t buf[3];
  ASSERT_TRUE(RecvAll(*p.server, buf, 3));
  ASSERT_TRUE(WaitFor(p.server->fd(), Poller::kReadable));
  uint8_t more[8];
  const iovec in = Iov(more, sizeof(more));
  const IoResult r = p.server->RecvV({&in, 1});
  EXPECT_EQ(r.status, IoStatus::kClosed);
  // The other direction still works after a half-close.
  const iovec back = Iov(msg, 3);
  EXPECT_EQ(p.server->SendV({&back, 1}).bytes, 3u);
  ASSERT_TRUE(RecvAll(*p.client, buf, 3));
}

TEST_P(TcpTest, ResetIsErrorWithErrno) {
  Pair p = Connect(Where());
  ASSERT_TRUE(p.server);
  // Close with unread data pending makes the kernel send a RST.
  const char msg[] = "unread";
  const iovec v = Iov(msg, 6);
  ASSERT_EQ(p.client->SendV({&v, 1}).bytes, 6u);
  ASSERT_TRUE(WaitFor(p.server->fd(), Poller::kReadable));
  p.server.reset();
  ASSERT_TRUE(WaitFor(p.client->fd(), Poller::kReadable));
  uint8_t buf[8];
  const iovec in = Iov(buf, sizeof(buf));
  const IoResult r = p.client->RecvV({&in, 1});
  EXPECT_EQ(r.status, IoStatus::kError);
  EXPECT_EQ(r.err, ECONNRESET);
  // Sending to a reset connection fails without SIGPIPE.
  const IoResult s = p.client->SendV({&v, 1});
  EXPECT_EQ(s.status, IoStatus::kError);
}

TEST_P(TcpTest, EmptyIovecsAreNoOps) {
  Pair p = Connect(Where());
  ASSERT_TRUE(p.server);
  EXPECT_TRUE(p.client->SendV({}).ok());
  const IoResult r = p.server->RecvV({});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.bytes, 0u);
}

TEST_P(TcpTest, ConnectToClosedPortFails) {
  // Learn a free port, then close the listener so nothing listens there.
  SockAddr target;
  {
    auto l = TcpListener::Listen(Where());
    ASSERT_TRUE(l.ok());
    target = (*l)->local_address();
  }
  auto c = TcpConnection::Connect(target);
  if (!c.ok()) {
    EXPECT_EQ(c.error().err, ECONNREFUSED);
    return;
  }
  ASSERT_TRUE(WaitFor((*c)->fd(), Poller::kWritable));
  const IoResult r = (*c)->FinishConnect();
  EXPECT_EQ(r.status, IoStatus::kError);
  EXPECT_EQ(r.err, ECONNREFUSED);
  EXPECT_FALSE((*c)->connected());
}

TEST_P(TcpTest, ListenOnBusyPortFails) {
  auto a = TcpListener::Listen(Where());
  ASSERT_TRUE(a.ok());
  auto b = TcpListener::Listen((*a)->local_address());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().err, EADDRINUSE);
}

TEST_P(TcpTest, BoundSocketResolvesPortZeroAndListens) {
  auto b = TcpBoundSocket::Bind(Where());
  ASSERT_TRUE(b.ok()) << b.error().err;
  const SockAddr reserved = b->local_address();
  ASSERT_TRUE(reserved.valid());
  EXPECT_NE(reserved.port(), 0);
  EXPECT_EQ(reserved.family(), Where().family());
  auto l = TcpListener::ListenOn(std::move(b).value(), 4);
  ASSERT_TRUE(l.ok()) << l.error().err;
  EXPECT_EQ((*l)->local_address(), reserved);
  auto c = TcpConnection::Connect(reserved);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(WaitFor((*l)->fd(), Poller::kReadable));
  auto s = (*l)->Accept();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->local_address(), reserved);
}

TEST_P(TcpTest, ConnectFromBoundSocketUsesItsAddress) {
  auto l = TcpListener::Listen(Where(), 4);
  ASSERT_TRUE(l.ok());
  auto b = TcpBoundSocket::Bind(Where());
  ASSERT_TRUE(b.ok());
  const SockAddr source = b->local_address();
  auto c = TcpConnection::ConnectFrom(std::move(b).value(), (*l)->local_address());
  ASSERT_TRUE(c.ok()) << c.error().err;
  // Known before the handshake completes.
  EXPECT_EQ((*c)->local_address(), source);
  ASSERT_TRUE(WaitFor((*c)->fd(), Poller::kWritable));
  ASSERT_TRUE((*c)->FinishConnect().ok());
  EXPECT_EQ((*c)->local_address(), source);
  ASSERT_TRUE(WaitFor((*l)->fd(), Poller::kReadable));
  auto s = (*l)->Accept();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->peer_address(), source);
}

TEST_P(TcpTest, ConnectingConnectionKnowsItsLocalAddress) {
  auto l = TcpListener::Listen(Where(), 4);
  ASSERT_TRUE(l.ok());
  auto c = TcpConnection::Connect((*l)->local_address());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->local_address().valid());
  EXPECT_NE((*c)->local_address().port(), 0);
}

TEST_P(TcpTest, BindOnListeningAddressFails) {
  auto l = TcpListener::Listen(Where(), 4);
  ASSERT_TRUE(l.ok());
  auto b = TcpBoundSocket::Bind((*l)->local_address());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().err, EADDRINUSE);
}

TEST(TcpBoundSocketTest, ConnectToOtherFamilyIsRefused) {
  auto b = TcpBoundSocket::Bind(SockAddr::Loopback4());
  ASSERT_TRUE(b.ok());
  auto c = TcpConnection::ConnectFrom(std::move(b).value(), SockAddr::Loopback6(9));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().err, EAFNOSUPPORT);
  auto l = TcpListener::ListenOn(TcpBoundSocket{});
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().err, EBADF);
}

TEST(TcpBufferTest, SetBufferSizeReadsBackEffectiveValue) {
  Pair p = Connect(SockAddr::Loopback4());
  ASSERT_TRUE(p.client);
  auto* tcp = dynamic_cast<TcpConnection*>(p.client.get());
  ASSERT_NE(tcp, nullptr);
  auto r = tcp->SetSendBufferSize(64 * 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_GE(*r, 64 * 1024);
}

INSTANTIATE_TEST_SUITE_P(Families, TcpTest, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "Ipv6" : "Ipv4"; });

}  // namespace
}  // namespace iwarpx::transport
