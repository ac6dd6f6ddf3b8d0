// DgramChannel on a real engine and real UDP sockets (loopback): datagrams
// flow both ways with the engine's passes alone, and a closed channel is
// never called again.
#include "progress/dgram_channel.h"

#include <chrono>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"

namespace iwarpx::progress {
namespace {

struct Sink final : rd::UdSink {
  std::vector<uint64_t> sends;
  std::vector<std::pair<uint64_t, size_t>> recvs;
  std::vector<rd::UdRecvInfo> infos;
  void OnSendComplete(uint64_t context) override { sends.push_back(context); }
  void OnRecvComplete(uint64_t context, size_t bytes, const rd::UdRecvInfo& info) override {
    recvs.emplace_back(context, bytes);
    infos.push_back(info);
  }
  void OnError(uint64_t /*context*/, qp::WcOp /*op*/, rd::UdError /*error*/, int /*err*/) override {
  }
};

class DgramChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = Engine::Create(clock_);
    ASSERT_TRUE(e.ok());
    engine_ = std::move(e).value();
  }
  // Runs passes until `done` or 5 s.
  template <class F>
  bool RunUntil(F done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::lock_guard<std::mutex> lock(engine_->mu());
      engine_->RunOnce(10);
    }
    return true;
  }

  MonotonicClock clock_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(DgramChannelTest, EngineCarriesDatagramsBothWays) {
  Sink sa;
  Sink sb;
  std::unique_ptr<DgramChannel> a;
  std::unique_ptr<DgramChannel> b;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto ca = DgramChannel::Open(*engine_, transport::SockAddr::Loopback4(0), {}, {.qpn = 0}, sa);
    auto cb = DgramChannel::Open(*engine_, transport::SockAddr::Loopback4(0), {}, {.qpn = 0}, sb);
    ASSERT_TRUE(ca.ok() && cb.ok());
    a = std::move(ca).value();
    b = std::move(cb).value();
    EXPECT_EQ(engine_->registered(), 2u);
  }
  std::vector<uint8_t> ra(64);
  std::vector<uint8_t> rb(64);
  std::vector<uint8_t> msg = {1, 2, 3, 4, 5};
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    qp::RecvWr r;
    r.context = 7;
    r.sgl.Add(rb.data(), rb.size());
    ASSERT_EQ(b->qp().PostRecv(r), qp::QpStatus::kOk);
    r.context = 8;
    r.sgl = {};
    r.sgl.Add(ra.data(), ra.size());
    ASSERT_EQ(a->qp().PostRecv(r), qp::QpStatus::kOk);
    rd::UdSendWr s;
    s.context = 1;
    s.dest = b->local_address();
    s.sgl.Add(msg.data(), msg.size());
    ASSERT_EQ(a->qp().PostSend(s), qp::QpStatus::kOk);
    a->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return !sb.recvs.empty(); }));
  EXPECT_EQ(sb.recvs[0], std::make_pair(uint64_t{7}, size_t{5}));
  EXPECT_EQ(sb.infos[0].src, a->local_address());
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), rb.begin()));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    rd::UdSendWr s;
    s.context = 2;
    s.dest = sb.infos[0].src;  // reply to the source the completion named
    s.sgl.Add(msg.data(), 3);
    ASSERT_EQ(b->qp().PostSend(s), qp::QpStatus::kOk);
    b->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return !sa.recvs.empty(); }));
  EXPECT_EQ(sa.recvs[0], std::make_pair(uint64_t{8}, size_t{3}));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    a.reset();
    b.reset();
    EXPECT_EQ(engine_->registered(), 0u);
  }
}

}  // namespace
}  // namespace iwarpx::progress
