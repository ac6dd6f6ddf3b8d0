#include "transport/udp.h"

#include <array>
#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "transport/test_util.h"

namespace iwarpx::transport {
namespace {

class UdpTest : public ::testing::TestWithParam<bool> {
 protected:
  SockAddr Where() const { return GetParam() ? SockAddr::Loopback6() : SockAddr::Loopback4(); }
  std::unique_ptr<UdpSocket> Open() {
    auto s = UdpSocket::Bind(Where());
    EXPECT_TRUE(s.ok());
    return s.ok() ? std::move(s).value() : nullptr;
  }
};

// Receives `n` datagrams into `bufs` (bounded), returning the messages.
std::vector<DgramMessage> RecvN(UdpSocket& s, std::vector<std::vector<uint8_t>>& bufs,
                                std::vector<iovec>& iovs, size_t n) {
  std::vector<DgramMessage> all;
  std::vector<DgramMessage> msgs(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    iovs[i] = iovec{bufs[i].data(), bufs[i].size()};
  }
  while (all.size() < n) {
    if (!WaitFor(s.fd(), Poller::kReadable)) break;
    const size_t room = n - all.size();
    for (size_t i = 0; i < room; ++i) msgs[i].iov = {&iovs[all.size() + i], 1};
    const BatchResult r = s.RecvBatch(std::span(msgs).first(room));
    if (r.status == IoStatus::kWouldBlock) continue;
    EXPECT_TRUE(r.ok()) << r.err;
    if (!r.ok()) break;
    all.insert(all.end(), msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(r.count));
  }
  return all;
}

TEST_P(UdpTest, BatchOf32WithSourceAddresses) {
  auto a = Open();
  auto b = Open();
  auto c = Open();
  ASSERT_TRUE(a && b && c);
  EXPECT_NE(b->local_address().port(), 0);
  constexpr size_t kN = 32;
  std::array<std::array<uint8_t, 8>, kN> headers{};
  std::array<std::array<uint8_t, 100>, kN> bodies{};
  std::array<std::array<iovec, 2>, kN> out_iov{};
  std::array<DgramMessage, kN> out{};
  for (size_t i = 0; i < kN; ++i) {
    headers[i].fill(static_cast<uint8_t>(i));
    bodies[i].fill(static_cast<uint8_t>(0x80 + i));
    out_iov[i] = {iovec{headers[i].data(), 8}, iovec{bodies[i].data(), 20 + i}};
    out[i].iov = out_iov[i];
    out[i].addr = c->local_address();
  }
  // Half from a, half from b, so the source addresses differ.
  BatchResult r1 = a->SendBatch(std::span(out).first(16));
  ASSERT_TRUE(r1.ok());
  ASSERT_EQ(r1.count, 16u);
  BatchResult r2 = b->SendBatch(std::span(out).subspan(16));
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2.count, 16u);
  EXPECT_EQ(out[3].bytes, 8u + 23u);

  std::vector<std::vector<uint8_t>> bufs(kN, std::vector<uint8_t>(256));
  std::vector<iovec> iovs(kN);
  auto got = RecvN(*c, bufs, iovs, kN);
  ASSERT_EQ(got.size(), kN);
  std::set<size_t> seen;
  for (size_t k = 0; k < kN; ++k) {
    const auto* p = static_cast<const uint8_t*>(got[k].iov[0].iov_base);
    const size_t i = p[0];
    ASSERT_LT(i, kN);
    seen.insert(i);
    EXPECT_FALSE(got[k].truncated);
    ASSERT_EQ(got[k].bytes, 8 + 20 + i);
    EXPECT_EQ(0, std::memcmp(p, headers[i].data(), 8));
    EXPECT_EQ(0, std::memcmp(p + 8, bodies[i].data(), 20 + i));
    EXPECT_EQ(got[k].addr, i < 16 ? a->local_address() : b->local_address());
  }
  EXPECT_EQ(seen.size(), kN);
}

TEST_P(UdpTest, TruncationIsReported) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  std::vector<uint8_t> big(1000, 0x5a);
  const iovec v{big.data(), big.size()};
  const IoResult s = a->SendTo(b->local_address(), {&v, 1});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.bytes, 1000u);
  std::vector<std::vector<uint8_t>> bufs(1, std::vector<uint8_t>(100));
  std::vector<iovec> iovs(1);
  auto got = RecvN(*b, bufs, iovs, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].truncated);
  EXPECT_EQ(got[0].bytes, 100u);
  EXPECT_EQ(got[0].addr, a->local_address());
}

// One message, one iovec (recvfrom) and one message, two iovecs (recvmsg):
// the same bytes, sizes, truncation and source either way.
TEST_P(UdpTest, OneMessageWithOneOrTwoIovecs) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  std::array<uint8_t, 48> data{};
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i + 1);
  const iovec whole{data.data(), data.size()};
  const std::array<iovec, 2> halves{iovec{data.data(), 20}, iovec{data.data() + 20, 28}};
  for (int round = 0; round < 2; ++round) {
    const IoResult s = round == 0 ? a->SendTo(b->local_address(), {&whole, 1})
                                  : a->SendTo(b->local_address(), halves);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.bytes, data.size());
  }
  std::array<uint8_t, 64> one{};
  std::array<uint8_t, 30> first{};
  std::array<uint8_t, 30> second{};
  const iovec in_one{one.data(), one.size()};
  const std::array<iovec, 2> in_two{iovec{first.data(), first.size()},
                                    iovec{second.data(), second.size()}};
  DgramMessage m1;
  m1.iov = {&in_one, 1};
  DgramMessage m2;
  m2.iov = in_two;
  ASSERT_TRUE(WaitFor(b->fd(), Poller::kReadable));
  BatchResult r = b->RecvBatch({&m1, 1});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(m1.bytes, data.size());
  EXPECT_FALSE(m1.truncated);
  EXPECT_EQ(m1.addr, a->local_address());
  EXPECT_EQ(0, std::memcmp(one.data(), data.data(), data.size()));
  ASSERT_TRUE(WaitFor(b->fd(), Poller::kReadable));
  r = b->RecvBatch({&m2, 1});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(m2.bytes, data.size());
  EXPECT_FALSE(m2.truncated);
  EXPECT_EQ(m2.addr, a->local_address());
  EXPECT_EQ(0, std::memcmp(first.data(), data.data(), 30));
  EXPECT_EQ(0, std::memcmp(second.data(), data.data() + 30, 18));
  // Too long for two iovecs of 30 + 30: cut at 60, reported.
  std::array<uint8_t, 100> big{};
  const iovec v{big.data(), big.size()};
  ASSERT_TRUE(a->SendTo(b->local_address(), {&v, 1}).ok());
  ASSERT_TRUE(WaitFor(b->fd(), Poller::kReadable));
  r = b->RecvBatch({&m2, 1});
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(m2.bytes, 60u);
  EXPECT_TRUE(m2.truncated);
}

TEST_P(UdpTest, EmptyDatagramIsReceivedAsZeroBytes) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  const iovec none{nullptr, 0};
  const IoResult s = a->SendTo(b->local_address(), {&none, 1});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.bytes, 0u);
  std::vector<std::vector<uint8_t>> bufs(1, std::vector<uint8_t>(16));
  std::vector<iovec> iovs(1);
  auto got = RecvN(*b, bufs, iovs, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, 0u);
  EXPECT_FALSE(got[0].truncated);
  EXPECT_EQ(got[0].addr, a->local_address());
}

TEST_P(UdpTest, EmptyReceiveWouldBlockAndOversizeFails) {
  auto a = Open();
  ASSERT_TRUE(a);
  uint8_t buf[16];
  const iovec in{buf, sizeof(buf)};
  DgramMessage m;
  m.iov = {&in, 1};
  const BatchResult r = a->RecvBatch({&m, 1});
  EXPECT_EQ(r.status, IoStatus::kWouldBlock);
  EXPECT_EQ(r.count, 0u);
  std::vector<uint8_t> huge(70000);
  const iovec v{huge.data(), huge.size()};
  const IoResult s = a->SendTo(a->local_address(), {&v, 1});
  EXPECT_EQ(s.status, IoStatus::kError);
  EXPECT_EQ(s.err, EMSGSIZE);
}

TEST_P(UdpTest, BufferSizesReadBack) {
  auto a = Open();
  ASSERT_TRUE(a);
  auto r = a->SetRecvBufferSize(256 * 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_GE(*r, 4096);  // the kernel doubles the request, capped by rmem_max
  auto s = a->SetSendBufferSize(128 * 1024);
  ASSERT_TRUE(s.ok());
  EXPECT_GE(*s, 4096);
  auto bad = a->SetRecvBufferSize(-1);
  if (!bad.ok()) {
    EXPECT_EQ(bad.error().status, IoStatus::kError);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, UdpTest, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "Ipv6" : "Ipv4"; });

}  // namespace
}  // namespace iwarpx::transport
