#include "testing/fake_connection.h"

#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace iwarpx::transport {
namespace {

using testing::MakeFakeConnectionPair;

TEST(FakeConnectionTest, PartialIoAtMostNBytesPerCall) {
  auto [a, b] = MakeFakeConnectionPair(7);
  std::vector<uint8_t> data(100);
  std::iota(data.begin(), data.end(), uint8_t{0});
  size_t sent = 0;
  int calls = 0;
  while (sent < data.size()) {
    const iovec v[] = {{data.data() + sent, 3}, {data.data() + sent + 3, data.size() - sent - 3}};
    const size_t first = std::min<size_t>(3, data.size() - sent);
    const iovec tail[] = {{data.data() + sent, data.size() - sent}};
    const IoResult r = first == 3 ? a->SendV(v) : a->SendV(tail);
    ASSERT_TRUE(r.ok());
    ASSERT_LE(r.bytes, 7u);
    sent += r.bytes;
    ++calls;
  }
  EXPECT_EQ(calls, 15);
  EXPECT_EQ(b->pending(), 100u);
  std::vector<uint8_t> got(100);
  size_t received = 0;
  while (received < got.size()) {
    const size_t half = (got.size() - received) / 2;
    const iovec v[] = {{got.data() + received, half},
                       {got.data() + received + half, got.size() - received - half}};
    const IoResult r = b->RecvV(v);
    ASSERT_TRUE(r.ok());
    ASSERT_LE(r.bytes, 7u);
    received += r.bytes;
  }
  EXPECT_EQ(got, data);
  uint8_t x = 0;
  const iovec one{&x, 1};
  EXPECT_EQ(b->RecvV({&one, 1}).status, IoStatus::kWouldBlock);
}

TEST(FakeConnectionTest, CloseAndReset) {
  auto [a, b] = MakeFakeConnectionPair();
  uint8_t msg[4] = {1, 2, 3, 4};
  const iovec v{msg, 4};
  ASSERT_EQ(a->SendV({&v, 1}).bytes, 4u);
  a->Close();
  EXPECT_EQ(a->SendV({&v, 1}).err, EPIPE);
  uint8_t buf[8];
  const iovec in{buf, 8};
  EXPECT_EQ(b->RecvV({&in, 1}).bytes, 4u);
  EXPECT_EQ(b->RecvV({&in, 1}).status, IoStatus::kClosed);
  EXPECT_TRUE(b->SendV({&v, 1}).ok());  // half-close only
  b->Reset();
  const IoResult r = a->RecvV({&in, 1});
  EXPECT_EQ(r.status, IoStatus::kError);
  EXPECT_EQ(r.err, ECONNRESET);
  EXPECT_EQ(b->SendV({&v, 1}).err, ECONNRESET);
}

TEST(FakeConnectionTest, SendCapacityGivesWouldBlock) {
  auto [a, b] = MakeFakeConnectionPair();
  a->set_send_capacity(10);
  std::vector<uint8_t> data(25, 0x11);
  const iovec v{data.data(), data.size()};
  EXPECT_EQ(a->SendV({&v, 1}).bytes, 10u);
  EXPECT_EQ(a->SendV({&v, 1}).status, IoStatus::kWouldBlock);
  uint8_t buf[4];
  const iovec in{buf, 4};
  EXPECT_EQ(b->RecvV({&in, 1}).bytes, 4u);
  EXPECT_EQ(a->SendV({&v, 1}).bytes, 4u);
  EXPECT_EQ(a->fd(), -1);
  EXPECT_EQ(a->peer_address(), b->local_address());
  EXPECT_TRUE(a->connected());
}

}  // namespace
}  // namespace iwarpx::transport
