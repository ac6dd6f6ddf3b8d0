// DgramChannel on a real engine and real UDP sockets (loopback): datagrams
// flow both ways with the engine's passes alone, a closed channel is never
// called again, and QPs sharing one channel receive only what is sent to
// their QP number.
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

TEST_F(DgramChannelTest, SharedChannelDispatchesByQpnAndQpsComeAndGo) {
  Sink tx_sink;
  Sink sinks[3];
  std::unique_ptr<DgramChannel> shared;
  std::unique_ptr<DgramChannel> peer;
  rd::UdQp* rx[3] = {};
  std::vector<std::vector<uint8_t>> bufs(6, std::vector<uint8_t>(16, 0));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto cs = DgramChannel::OpenShared(*engine_, transport::SockAddr::Loopback4(0), {});
    auto cp =
        DgramChannel::Open(*engine_, transport::SockAddr::Loopback4(0), {}, {.qpn = 0}, tx_sink);
    ASSERT_TRUE(cs.ok() && cp.ok());
    shared = std::move(cs).value();
    peer = std::move(cp).value();
    for (uint32_t i = 0; i < 3; ++i) {
      rx[i] = shared->AddQp({.qpn = i}, sinks[i]);
      ASSERT_NE(rx[i], nullptr);
      for (uint32_t k = 0; k < 2; ++k) {
        qp::RecvWr r;
        r.context = 10 * i + k;
        r.sgl.Add(bufs[2 * i + k].data(), bufs[2 * i + k].size());
        ASSERT_EQ(rx[i]->PostRecv(r), qp::QpStatus::kOk);
      }
    }
    EXPECT_EQ(shared->AddQp({.qpn = 1}, tx_sink), nullptr);  // QPN 1 is taken
    // A send-only QP may use a taken number as its src_qpn.
    EXPECT_NE(shared->AddQp({.qpn = 1, .receives = false}, tx_sink), nullptr);
    // QP i gets i + 1 messages of (i + 1) bytes; only two receives each, so
    // QP 2's third message is dropped as no_receive, never given to another QP.
    for (uint32_t i = 0; i < 3; ++i) {
      for (uint32_t k = 0; k <= i; ++k) {
        rd::UdSendWr s;
        s.context = 100 + i;
        s.dest = shared->local_address();
        s.dest_qpn = i;
        s.sgl.Add(bufs[0].data(), i + 1);  // contents do not matter here
        ASSERT_EQ(peer->qp().PostSend(s), qp::QpStatus::kOk);
      }
    }
    peer->AfterPost();
  }
  // Single-threaded: the engine runs only inside RunUntil's passes.
  auto no_receive = [&] {
    EndpointStats st;
    shared->CollectStats(&st);
    return st.ud_no_receive;
  };
  ASSERT_TRUE(RunUntil([&] {
    return sinks[0].recvs.size() == 1 && sinks[1].recvs.size() == 2 && sinks[2].recvs.size() == 2 &&
           no_receive() == 1;
  }));
  for (uint32_t i = 0; i < 3; ++i) {
    for (const auto& [context, bytes] : sinks[i].recvs) {
      EXPECT_EQ(context / 10, i);
      EXPECT_EQ(bytes, i + 1);
    }
  }
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    // QP 1 leaves: its number is free again, datagrams to it are unknown_qpn.
    shared->RemoveQp(rx[1]);
    EXPECT_NE(shared->AddQp({.qpn = 1}, sinks[1]), nullptr);
    shared.reset();
    peer.reset();
    EXPECT_EQ(engine_->registered(), 0u);
  }
}

}  // namespace
}  // namespace iwarpx::progress
