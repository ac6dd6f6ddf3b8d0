// Bounces on demand (rdm_core_bounce.cc): RD QPs keep none posted, take one
// from the pool when a message arrives and give a matched one back at once;
// unexpected-message backpressure stays bounded per peer and never blocks a
// peer whose message has a receive waiting.
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "rdm/rdm_core.h"
#include "testing/engine_fixture.h"

namespace iwarpx::rdm {
namespace {

class CountingSink final : public RdmSink {
 public:
  void SendDone(uint64_t /*c*/) override { ++sends_done; }
  void SendFailed(uint64_t /*c*/, int /*err*/) override { ++failed; }
  void RecvDone(uint64_t c, const RecvResult& r) override { recvs.emplace_back(c, r); }
  void RecvFailed(uint64_t /*c*/, int /*err*/) override { ++failed; }
  void RmaDone(uint64_t /*c*/) override {}
  void RmaFailed(uint64_t /*c*/, const qp::WcError& /*e*/) override { ++failed; }
  void RemoteWriteData(uint64_t /*data*/, PeerId /*src*/) override {}
  size_t sends_done = 0;
  size_t failed = 0;
  std::vector<std::pair<uint64_t, RecvResult>> recvs;
};

struct Node {
  mem::StagTable stags{Random(7), 256};
  CountingSink sink;
  std::unique_ptr<RdmCore> core;
};

class RdmBounceTest : public testing::EngineFixture<::testing::Test, 20> {
 protected:
  void TearDown() override {
    std::lock_guard<std::mutex> lock(engine_->mu());
    nodes_.clear();
  }
  static RdmConfig Config() {
    RdmConfig c;
    c.channel.pd = 1;
    c.bounce_size = 4096;
    c.bounces_per_peer = 2;
    return c;
  }
  Node& Add(const RdmConfig& c) {
    auto n = std::make_unique<Node>();
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto core = RdmCore::Open(*engine_, transport::SockAddr::Loopback4(0), c, n->stags, n->sink);
    EXPECT_TRUE(core.ok());
    if (core.ok()) n->core = std::move(core).value();
    nodes_.push_back(std::move(n));
    return *nodes_.back();
  }
  void Spin(int passes) {
    for (int i = 0; i < passes; ++i) {
      std::lock_guard<std::mutex> lock(engine_->mu());
      engine_->RunOnce(1);
    }
  }
  RdmStatus Send(Node& from, Node& to, std::vector<uint8_t>& buf, uint64_t tag, uint64_t ctx) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    const RdmStatus s = from.core->Send(to.core->local_address(), &v, 1, true, tag, false, 0, ctx);
    from.core->AfterPost();
    return s;
  }
  RdmStatus Recv(Node& on, std::vector<uint8_t>& buf, uint64_t tag, uint64_t ctx) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    RecvRequest r;
    r.tagged = true;
    r.tag = tag;
    r.context = ctx;
    r.iov = &v;
    r.count = 1;
    const RdmStatus s = on.core->PostRecv(r);
    on.core->AfterPost();
    return s;
  }

  std::vector<std::unique_ptr<Node>> nodes_;
};

// 24 peers send one message each to a hub that has a receive posted for it:
// the hub's pool stays at the bounces in use at once, not 2 per peer.
TEST_F(RdmBounceTest, QuietPeersHoldNoBounces) {
  Node& hub = Add(Config());
  constexpr size_t kPeers = 24;
  std::vector<Node*> peers;
  for (size_t i = 0; i < kPeers; ++i) peers.push_back(&Add(Config()));
  std::vector<std::vector<uint8_t>> rx(kPeers, std::vector<uint8_t>(64));
  std::vector<std::vector<uint8_t>> tx(kPeers, std::vector<uint8_t>(40));
  for (size_t i = 0; i < kPeers; ++i) {
    ASSERT_EQ(Recv(hub, rx[i], i, i), RdmStatus::kOk);
    tx[i].assign(40, static_cast<uint8_t>(i + 1));
  }
  for (size_t i = 0; i < kPeers; ++i) {
    ASSERT_EQ(Send(*peers[i], hub, tx[i], i, i), RdmStatus::kOk);
    ASSERT_TRUE(RunUntil([&] { return hub.sink.recvs.size() == i + 1; })) << i;
  }
  for (size_t i = 0; i < kPeers; ++i) EXPECT_EQ(rx[i][0], i + 1) << i;
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(hub.core->peer_count(), kPeers);
  EXPECT_LE(hub.core->bounces_made(), 2u);
  EXPECT_EQ(hub.core->counters().unexpected, 0u);
}

// A floods the hub with messages nobody receives yet: the hub takes them as
// unexpected up to the limit plus A's own allowance (bounces_per_peer), then
// A's window closes. C's message, for which a receive is posted, still gets
// through; once the application takes A's messages, the rest arrive in order.
TEST_F(RdmBounceTest, BackpressureIsPerPeerAndReleases) {
  RdmConfig c = Config();
  c.unexpected_limit = size_t{4} * c.bounce_size;
  Node& hub = Add(c);
  Node& a = Add(c);
  Node& other = Add(c);
  constexpr size_t kFlood = 40;
  std::vector<std::vector<uint8_t>> tx(kFlood);
  for (size_t i = 0; i < kFlood; ++i) {
    tx[i].assign(100, static_cast<uint8_t>(i));
    ASSERT_EQ(Send(a, hub, tx[i], 1, i), RdmStatus::kOk);
  }
  Spin(3000);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    // The limit (4) and A's allowance (2): never more.
    EXPECT_GE(hub.core->counters().unexpected, 4u);
    EXPECT_LE(hub.core->counters().unexpected, 6u);
  }
  std::vector<uint8_t> crx(64);
  std::vector<uint8_t> ctx_buf(30, 0xC5);
  ASSERT_EQ(Recv(hub, crx, 2, 1000), RdmStatus::kOk);
  ASSERT_EQ(Send(other, hub, ctx_buf, 2, 0), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return hub.sink.recvs.size() == 1; }));
  EXPECT_EQ(hub.sink.recvs[0].first, 1000u);
  EXPECT_EQ(crx[0], 0xC5);
  // Now A's messages, every one, in send order.
  std::vector<std::vector<uint8_t>> rx(kFlood, std::vector<uint8_t>(128));
  for (size_t i = 0; i < kFlood; ++i) ASSERT_EQ(Recv(hub, rx[i], 1, i), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return hub.sink.recvs.size() == kFlood + 1; }))
      << hub.sink.recvs.size();
  for (size_t i = 0; i < kFlood; ++i) {
    EXPECT_EQ(hub.sink.recvs[i + 1].first, i);
    EXPECT_EQ(hub.sink.recvs[i + 1].second.len, 100u);
    EXPECT_EQ(rx[i][0], static_cast<uint8_t>(i)) << i;
  }
  EXPECT_EQ(hub.sink.failed + a.sink.failed + other.sink.failed, 0u);
}

}  // namespace
}  // namespace iwarpx::rdm
