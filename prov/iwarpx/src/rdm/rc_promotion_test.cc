// RdmCore's connected channels on a real engine, real UDP and TCP sockets
// (loopback): a peer moves from datagrams to an on-demand connection
// mid-stream with every message matched exactly once, in order, bit-exact
// (also through datagram faults); thresholds, the cap, simultaneous connects
// (the lower address's connection wins on both sides), a connect that
// fails, and an established connection that breaks (the peer's RD session
// fails loudly; traffic goes on over datagrams).
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rc_hello.h"
#include "rdm/rc_test_util.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {
namespace {

using namespace testing_rc;  // NOLINT(google-build-using-namespace): the shared harness

class RcPromotionTest : public RcCoreTest {};

TEST(RcHelloTest, RoundTripAndRefusals) {
  const auto h = EncodeRcHello(4791);
  ASSERT_EQ(DecodeRcHello(ByteSpan(h.data(), h.size())), std::optional<uint16_t>(4791));
  for (size_t i = 0; i < h.size(); ++i) {
    auto bad = h;
    bad[i] ^= (i >= 6 ? 0xFF : 0x01);
    if (i >= 6) {
      // Another port is another hello; only port 0 is refused.
      continue;
    }
    EXPECT_FALSE(DecodeRcHello(ByteSpan(bad.data(), bad.size()))) << i;
  }
  const auto zero = EncodeRcHello(0);
  EXPECT_FALSE(DecodeRcHello(ByteSpan(zero.data(), zero.size())));
  EXPECT_FALSE(DecodeRcHello(ByteSpan(h.data(), h.size() - 1)));
  const auto caller = RcCaller(transport::SockAddr::Loopback4(50000), ByteSpan(h.data(), h.size()));
  ASSERT_TRUE(caller);
  EXPECT_EQ(*caller, transport::SockAddr::Loopback4(4791));
  EXPECT_TRUE(RcLower(transport::SockAddr::Loopback4(10), transport::SockAddr::Loopback4(11)));
  EXPECT_FALSE(RcLower(transport::SockAddr::Loopback4(11), transport::SockAddr::Loopback4(10)));
  EXPECT_FALSE(RcLower(transport::SockAddr::Loopback4(10), transport::SockAddr::Loopback4(10)));
}

TEST_F(RcPromotionTest, DefaultChainNeverListensOrConnects) {
  Node& a = Add(Config("any:ud_sr,any:ud_zcopy"));
  Node& b = Add(Config("any:ud_sr,any:ud_zcopy"));
  Flow f = MakeFlow(a, b, 400);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  EXPECT_FALSE(a.core->rc_available());
  EXPECT_EQ(a.core->counters().rc_opened, 0u);
  EXPECT_EQ(a.core->counters().rc_sr_msgs + a.core->counters().rc_rdma_msgs, 0u);
}

TEST_F(RcPromotionTest, MovesToTheConnectionMidStreamInOrder) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  ASSERT_TRUE(a.core->rc_available());
  Flow f = MakeFlow(a, b, 3000);
  ASSERT_TRUE(Run({&f}, 120));
  f.Check();
  const RdmCore::Counters& c = a.core->counters();
  EXPECT_EQ(c.rc_opened, 1u);
  EXPECT_EQ(b.core->counters().rc_accepted, 1u);
  EXPECT_EQ(c.rc_switches, 1u);
  EXPECT_EQ(c.rc_failed, 0u);
  // Before the threshold on datagrams, after it on the connection (eager and
  // rendezvous); nothing went back to datagrams after the SWITCH.
  EXPECT_GE(c.ud_sr_msgs + c.ud_zcopy_msgs, 100u);
  EXPECT_GT(c.rc_sr_msgs, 2000u);
  EXPECT_GT(c.rc_rdma_msgs, 100u);
  EXPECT_EQ(c.ud_sr_msgs + c.ud_zcopy_msgs + c.rc_sr_msgs + c.rc_rdma_msgs, 3000u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_TRUE(a.core->SendsOnRc(b.core->local_address()));
  EXPECT_EQ(a.core->rc_links(), 1u);
  EXPECT_EQ(b.core->rc_links(), 1u);
}

TEST_F(RcPromotionTest, BelowTheThresholdNothingOpens) {
  RdmConfig c = Config();
  c.rc.threshold_msgs = 1000;
  Node& a = Add(c);
  Node& b = Add(c);
  Flow f = MakeFlow(a, b, 999);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 0u);
  EXPECT_EQ(b.core->rc_links(), 0u);
}

TEST_F(RcPromotionTest, ByteThresholdAlsoPromotes) {
  RdmConfig c = Config();
  c.rc.threshold_msgs = 1'000'000;
  c.rc.threshold_bytes = 200'000;
  Node& a = Add(c);
  Node& b = Add(c);
  Flow f = MakeFlow(a, b, 600);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 1u);
  EXPECT_GT(a.core->counters().rc_sr_msgs, 0u);
}

TEST_F(RcPromotionTest, MovesInOrderThroughDatagramFaults) {
  auto faults = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=12");
  ASSERT_TRUE(faults.ok());
  Node& a = Add(Config(), *faults);
  Node& b = Add(Config(), *faults);
  Flow f = MakeFlow(a, b, 3000);
  ASSERT_TRUE(Run({&f}, 120));
  f.Check();
  EXPECT_EQ(a.core->counters().rc_switches, 1u);
  EXPECT_GT(a.core->counters().rc_sr_msgs, 1000u);
}

TEST_F(RcPromotionTest, SimultaneousConnectsEndWithTheLowerAddresssConnection) {
  RdmConfig c = Config();
  c.rc.threshold_msgs = 20;
  Node& a = Add(c);
  Node& b = Add(c);
  // Both cross the threshold before the engine runs: two connects cross.
  Flow ab = MakeFlow(a, b, 1500);
  Flow ba = MakeFlow(b, a, 1500);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ab.Step();
    ba.Step();
    ASSERT_EQ(a.core->counters().rc_opened, 1u);
    ASSERT_EQ(b.core->counters().rc_opened, 1u);
  }
  ASSERT_TRUE(Run({&ab, &ba}, 60)) << Dump(a) << Dump(b) << "\n  sent " << ab.sent << "/" << ba.sent
                                   << " posted " << ab.posted << "/" << ba.posted;
  ab.Check();
  ba.Check();
  const bool a_lower = RcLower(a.core->local_address(), b.core->local_address());
  Node& lo = a_lower ? a : b;
  Node& hi = a_lower ? b : a;
  EXPECT_EQ(lo.core->counters().rc_accepted, 0u);
  EXPECT_EQ(lo.core->counters().rc_rejected, 1u);
  EXPECT_EQ(hi.core->counters().rc_accepted, 1u);
  EXPECT_EQ(lo.core->counters().rc_failed, 0u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(a.core->rc_links(), 1u);
  EXPECT_EQ(b.core->rc_links(), 1u);
  EXPECT_TRUE(a.core->SendsOnRc(b.core->local_address()));
  EXPECT_TRUE(b.core->SendsOnRc(a.core->local_address()));
}

TEST_F(RcPromotionTest, CapLimitsConnectionsAndRefusesRequestsBeyondIt) {
  RdmConfig capped = Config();
  capped.rc.max_links = 1;
  Node& a = Add(capped);
  Node& b = Add(Config());
  Node& c = Add(Config());
  Node& d = Add(Config());
  Flow ab = MakeFlow(a, b, 400);
  Flow ac = MakeFlow(a, c, 400);
  ASSERT_TRUE(Run({&ab, &ac}));
  ab.Check();
  ac.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 1u);
  // d's connect to the capped a is refused; d stays on datagrams.
  Flow da = MakeFlow(d, a, 400);
  ASSERT_TRUE(Run({&da}));
  da.Check();
  EXPECT_GE(a.core->counters().rc_rejected, 1u);
  EXPECT_GE(d.core->counters().rc_failed, 1u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(a.core->rc_links(), 1u);
  EXPECT_FALSE(d.core->SendsOnRc(a.core->local_address()));
}

TEST_F(RcPromotionTest, ConnectToAPeerWithoutListenerFallsBackToDatagrams) {
  Node& a = Add(Config());
  Node& b = Add(Config("any:ud_sr,any:ud_zcopy"));  // no listener
  ASSERT_FALSE(b.core->rc_available());
  Flow f = MakeFlow(a, b, 600);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  EXPECT_GE(a.core->counters().rc_opened, 1u);
  EXPECT_EQ(a.core->counters().rc_failed, a.core->counters().rc_opened);
  EXPECT_EQ(a.core->counters().rc_sr_msgs, 0u);
  EXPECT_EQ(a.core->counters().peers_failed, 0u);
}

TEST_F(RcPromotionTest, ABrokenConnectionFailsThePeerLoudlyThenDatagramsCarryOn) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Flow first = MakeFlow(a, b, 400);
  ASSERT_TRUE(Run({&first}));
  first.Check();
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a.core->SendsOnRc(b.core->local_address()));
    a.core->DropRcForTest(b.core->local_address());
    EXPECT_EQ(a.core->rc_links(), 0u);
  }
  ASSERT_TRUE(RunUntil([&] {
    return a.core->counters().peers_failed >= 1 && b.core->counters().peers_failed >= 1 &&
           b.core->rc_links() == 0;
  }));
  // A fresh start on both sides: new RD session, promoted again later.
  a.sink = Sink{};
  b.sink = Sink{};
  Flow second = MakeFlow(a, b, 400);
  ASSERT_TRUE(Run({&second}));
  second.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 2u);
}

// Rendezvous in both directions at once: a Read or FIN that finds the send
// queue full waits for its completions (before, a FIN without room failed
// the peer and a Read without room failed the receive with EAGAIN).
TEST_F(RcPromotionTest, BothDirectionsAtOnceWithASmallSendQueueOnDatagrams) {
  RdmConfig c = Config("any:ud_sr,any:ud_zcopy");
  c.channel.qp.sq_size = 16;  // far less than the Reads, FINs and sends in flight
  Node& a = Add(c);
  Node& b = Add(c);
  Flow ab = MakeFlow(a, b, 1500);
  Flow ba = MakeFlow(b, a, 1500);
  ab.size_of = ba.size_of = [](size_t i) { return i % 3 == 0 ? size_t{30000} : size_t{100}; };
  ASSERT_TRUE(Run({&ab, &ba})) << Dump(a) << Dump(b);
  ab.Check();
  ba.Check();
  EXPECT_EQ(a.core->counters().protocol_errors + b.core->counters().protocol_errors, 0u);
  EXPECT_EQ(a.sink.recv_failed + b.sink.recv_failed, 0u);
}

TEST_F(RcPromotionTest, BothDirectionsOnTheConnectionWithASmallSendQueue) {
  RdmConfig c = Config();
  c.rc.qp.sq_size = 16;
  c.rc.threshold_msgs = 20;
  Node& a = Add(c);
  Node& b = Add(c);
  Flow ab = MakeFlow(a, b, 1500);
  Flow ba = MakeFlow(b, a, 1500);
  ab.size_of = ba.size_of = [](size_t i) { return i % 3 == 0 ? size_t{30000} : size_t{100}; };
  ASSERT_TRUE(Run({&ab, &ba})) << Dump(a) << Dump(b);
  ab.Check();
  ba.Check();
  EXPECT_GT(a.core->counters().rc_rdma_msgs, 300u);
  EXPECT_EQ(a.sink.recv_failed + b.sink.recv_failed, 0u);
}

}  // namespace
}  // namespace iwarpx::rdm
