// IdleSweep on two real RdChannels (loopback UDP, the real engine and
// clock): peers that stay idle give their QP's and stream's buffers back and
// then send, receive, write and read exactly as before, also through the
// seeded fault injector (FI_IWARPX_FAULT's layer); a peer in a ping-pong is
// never swept, however long it runs; a sweep of 0 releases nothing.
#include "progress/idle_sweep.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "progress/rd_channel_fixture.h"

namespace iwarpx::progress {
namespace {

using qp::test::Completion;
using Kind = Completion::Kind;

class IdleSweepTest : public RdChannelTest {
 protected:
  uint32_t Register(mem::StagTable& t, std::vector<uint8_t>& buf, uint32_t access) {
    mem::RegionSpec spec;
    spec.host = buf.data();
    spec.length = buf.size();
    spec.access = access;
    spec.pd = kPd;
    auto r = t.Register(spec);
    return r.ok() ? *r : 0;
  }
  // Runs one exchange: a Send each way (receives posted first), a Write
  // a -> b and a Read of it back; every byte checked. Sizes from `round`.
  void Exchange(int round) {
    const size_t n_ab = 1 + (size_t(round) * 7919) % 20000;
    const size_t n_ba = 1 + (size_t(round) * 104729) % 3000;
    const size_t n_rw = 1000 + (size_t(round) * 3571) % 30000;
    std::vector<uint8_t> tx_ab(n_ab), tx_ba(n_ba), rx_ab(20000), rx_ba(3000);
    std::vector<uint8_t> data(n_rw), target(n_rw, 0), back(n_rw, 0);
    for (size_t i = 0; i < n_ab; ++i) tx_ab[i] = uint8_t(i * 13 + size_t(round));
    for (size_t i = 0; i < n_ba; ++i) tx_ba[i] = uint8_t(i * 29 + size_t(round));
    for (size_t i = 0; i < n_rw; ++i) data[i] = uint8_t(i * 7 + 3 * size_t(round));
    const size_t recv_a = ca_.sink.Count(Kind::kRecv);
    const size_t recv_b = cb_.sink.Count(Kind::kRecv);
    const size_t rdma_a = ca_.sink.Count(Kind::kRdma);
    uint32_t target_stag = 0;
    uint32_t back_stag = 0;
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      target_stag = Register(stags_b_, target, mem::kRemoteWrite | mem::kRemoteRead);
      back_stag = Register(stags_a_, back, mem::kLocalWrite);
      ASSERT_NE(target_stag, 0u);
      ASSERT_NE(back_stag, 0u);
      rd::RdQp* qa = a_->Peer(KeyOf(*b_));
      rd::RdQp* qb = b_->Peer(KeyOf(*a_));
      ASSERT_NE(qa, nullptr);
      ASSERT_NE(qb, nullptr);
      qp::RecvWr r;
      r.sgl.Add(rx_ab.data(), rx_ab.size());
      ASSERT_EQ(qb->qp().PostRecv(r), qp::QpStatus::kOk);
      qp::RecvWr r2;
      r2.sgl.Add(rx_ba.data(), rx_ba.size());
      ASSERT_EQ(qa->qp().PostRecv(r2), qp::QpStatus::kOk);
      qp::SendWr s;
      s.sgl.Add(tx_ab.data(), n_ab);
      ASSERT_EQ(qa->qp().PostSend(s), qp::QpStatus::kOk);
      qp::SendWr s2;
      s2.sgl.Add(tx_ba.data(), n_ba);
      ASSERT_EQ(qb->qp().PostSend(s2), qp::QpStatus::kOk);
      qp::WriteWr w;
      w.sgl.Add(data.data(), n_rw);
      w.remote_stag = target_stag;
      ASSERT_EQ(qa->qp().PostWrite(w), qp::QpStatus::kOk);
      qp::ReadWr rd;
      rd.local_stag = back_stag;
      rd.length = uint32_t(n_rw);
      rd.remote_stag = target_stag;
      ASSERT_EQ(qa->qp().PostRead(rd), qp::QpStatus::kOk);
      a_->AfterPost();
      b_->AfterPost();
    }
    ASSERT_TRUE(RunUntil([&] {
      return ca_.sink.Count(Kind::kRecv) == recv_a + 1 &&
             cb_.sink.Count(Kind::kRecv) == recv_b + 1 && ca_.sink.Count(Kind::kRdma) == rdma_a + 2;
    })) << "round "
        << round;
    EXPECT_EQ(0, std::memcmp(rx_ab.data(), tx_ab.data(), n_ab)) << round;
    EXPECT_EQ(0, std::memcmp(rx_ba.data(), tx_ba.data(), n_ba)) << round;
    EXPECT_EQ(target, data) << round;
    EXPECT_EQ(back, data) << round;
    std::lock_guard<std::mutex> lock(engine_->mu());
    EXPECT_TRUE(stags_b_.Deregister(target_stag));
    EXPECT_TRUE(stags_a_.Deregister(back_stag));
  }
};

TEST_F(IdleSweepTest, IdlePeersGiveBuffersBackAndWorkAgainThroughFaults) {
  auto fa = transport::FaultSpec::Parse("drop=150,dup=100,reorder=100,corrupt=20,seed=15");
  auto fb = transport::FaultSpec::Parse("drop=150,dup=100,reorder=100,corrupt=20,seed=16");
  ASSERT_TRUE(fa.ok() && fb.ok());
  idle_release_ns_ = 20'000'000;  // 20 ms
  Open(*fa, *fb);
  for (int round = 1; round <= 6; ++round) {
    const uint64_t ra = a_->idle_sweep().releases();
    const uint64_t rb = b_->idle_sweep().releases();
    Exchange(round);
    if (::testing::Test::HasFatalFailure()) return;
    // Both peers stop: each side's QP is released within two periods of
    // its last datagram (the fault layer's resends can delay that).
    ASSERT_TRUE(RunUntil([&] {
      return a_->idle_sweep().releases() > ra && b_->idle_sweep().releases() > rb;
    })) << "round "
        << round;
    // A released QP gave back at least its send ring, transmit slot,
    // staging and the stream's copy buffer.
    EXPECT_GE(a_->idle_sweep().released_bytes(), uint64_t(round) * 1000);
    EXPECT_EQ(a_->idle_sweep().queued(), 0u);
  }
  EXPECT_EQ(ca_.failed.size() + cb_.failed.size(), 0u);
  EXPECT_EQ(ca_.sink.terminated + cb_.sink.terminated, 0);
  // The faults were really applied, on both sides.
  EndpointStats sa;
  EndpointStats sb;
  a_->CollectStats(&sa);
  b_->CollectStats(&sb);
  EXPECT_GT(sa.fault_dropped + sa.fault_duplicated + sa.fault_reordered, 0u);
  EXPECT_GT(sb.fault_dropped + sb.fault_duplicated + sb.fault_reordered, 0u);
}

TEST_F(IdleSweepTest, APeerInAPingPongIsNeverSwept) {
  idle_release_ns_ = 10'000'000;  // 10 ms: 60 sweeps of the running ping-pong
  Open();
  std::vector<uint8_t> ping(8, 0x11), pong(8, 0x22), rx_a(64), rx_b(64);
  size_t pings = 0;
  size_t pongs = 0;
  bool more = true;
  bool answered = false;
  auto next_ping = std::chrono::steady_clock::now();
  bool bad = false;
  rd::RdQp* qa = nullptr;
  rd::RdQp* qb = nullptr;
  auto post_recv = [&](rd::RdQp* q, std::vector<uint8_t>& buf) {
    qp::RecvWr r;
    r.sgl.Add(buf.data(), buf.size());
    bad |= q->qp().PostRecv(r) != qp::QpStatus::kOk;
  };
  auto send = [&](rd::RdQp* q, std::vector<uint8_t>& msg) {
    qp::SendWr s;
    s.sgl.Add(msg.data(), msg.size());
    bad |= q->qp().PostSend(s) != qp::QpStatus::kOk;
  };
  // One ping a -> b, its pong b -> a, a pause of 2 ms (a fifth of a period:
  // both QPs go idle between round trips, as a busy application's peer
  // does), then the next ping.
  auto serve = [&] {
    if (qa == nullptr) {
      qa = a_->Peer(KeyOf(*b_));
      qb = b_->Peer(KeyOf(*a_));
      post_recv(qb, rx_b);
      post_recv(qa, rx_a);
      send(qa, ping);
      pings = 1;
      a_->AfterPost();
      b_->AfterPost();
    }
    if (cb_.sink.Count(Kind::kRecv) == pings && pongs < pings) {
      bad |= std::memcmp(rx_b.data(), ping.data(), ping.size()) != 0;
      post_recv(qb, rx_b);
      send(qb, pong);
      ++pongs;
      b_->AfterPost();
    }
    if (ca_.sink.Count(Kind::kRecv) == pongs && pings == pongs && !answered) {
      answered = true;  // the next ping after a pause: a QP idle between messages
      bad |= std::memcmp(rx_a.data(), pong.data(), pong.size()) != 0;
      next_ping = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    }
    if (more && answered && std::chrono::steady_clock::now() >= next_ping) {
      answered = false;
      post_recv(qa, rx_a);
      send(qa, ping);
      ++pings;
      a_->AfterPost();
    }
  };
  // Sixty periods of ping-pong: neither side is released.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  (void)RunUntil([&] {
    serve();
    return bad || std::chrono::steady_clock::now() >= until;
  });
  ASSERT_FALSE(bad);
  EXPECT_GT(pongs, 50u);
  EXPECT_EQ(a_->idle_sweep().releases(), 0u);
  EXPECT_EQ(b_->idle_sweep().releases(), 0u);
  // Stopped (the last ping answered), both are released within two periods.
  more = false;
  ASSERT_TRUE(RunUntil([&] {
    serve();  // the last ping is answered
    return a_->idle_sweep().releases() == 1 && b_->idle_sweep().releases() == 1;
  }));
  EXPECT_FALSE(bad);
  EXPECT_EQ(ca_.sink.Count(Kind::kRecv), pongs);
}

TEST_F(IdleSweepTest, PeriodZeroReleasesNothing) {
  idle_release_ns_ = 0;
  Open();
  Exchange(1);
  if (::testing::Test::HasFatalFailure()) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  (void)RunUntil([&] { return std::chrono::steady_clock::now() >= until; });
  EXPECT_EQ(a_->idle_sweep().queued(), 0u);
  EXPECT_EQ(a_->idle_sweep().releases(), 0u);
  EXPECT_EQ(a_->idle_sweep().due(), UINT64_MAX);
}

}  // namespace
}  // namespace iwarpx::progress
