// The orderly close of an endpoint with on-demand connections
// (rdm_core_close.cc): CloseStep leaves every connection as an idle one is
// left, so the surviving peer counts a close (rc_idle_closed, rc_closed),
// not a broken connection (rc_failed), starts no fall-back, and its RD
// session to the closed endpoint does not fail either. The control: the
// same endpoint destroyed without CloseStep (a crash, or a close before
// 0.8) is counted as a failure, so the test tells the two apart.
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "progress/endpoint_stats.h"
#include "rdm/rc_test_util.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {
namespace {

using namespace testing_rc;  // NOLINT(google-build-using-namespace): the shared harness

class RcCloseTest : public RcCoreTest {
 protected:
  // a <-> b with a's and b's messages on their connection; sinks cleared.
  void Connect(Node& a, Node& b) {
    Flow ab = MakeFlow(a, b, 300);
    Flow ba = MakeFlow(b, a, 300);
    ASSERT_TRUE(Run({&ab, &ba}));
    ab.Check();
    ba.Check();
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a.core->SendsOnRc(b.core->local_address()));
    ASSERT_TRUE(b.core->SendsOnRc(a.core->local_address()));
  }
  // Destroys a's core, then runs the engine past b's RD timeout (2 s here),
  // so a failure of b's RD session to a would have been counted.
  void CloseAndWait(Node& a) {
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      a.core.reset();
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2600);
    (void)RunUntil([&] { return std::chrono::steady_clock::now() >= until; }, 10);
  }
  static progress::EndpointStats StatsOf(const Node& n) {
    progress::EndpointStats st;
    n.core->CollectStats(&st);
    return st;
  }
};

TEST_F(RcCloseTest, AnOrderlyCloseIsAClosedConnectionAtThePeer) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Connect(a, b);
  const transport::SockAddr a_addr = a.core->local_address();
  PeerSnapshot before;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(b.core->Snapshot(b.core->PeerIdOf(a_addr), &before));
  }
  ASSERT_TRUE(RunUntil(
      [&] {
        return a.core->CloseStep();  // under the engine lock (RunEngineUntil)
      },
      5))
      << "the close did not settle" << Dump(a) << Dump(b);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    EXPECT_EQ(a.core->rc_links(), 0u);
    EXPECT_EQ(a.core->counters().rc_idle_closed, 1u) << Dump(a);
  }
  CloseAndWait(a);
  std::lock_guard<std::mutex> lock(engine_->mu());
  const RdmCore::Counters& c = b.core->counters();
  EXPECT_EQ(c.rc_failed, 0u) << Dump(b);
  EXPECT_EQ(c.rc_idle_closed, 1u) << Dump(b);
  EXPECT_EQ(c.rc_fallbacks, 0u) << Dump(b);
  EXPECT_EQ(c.peers_failed, 0u) << Dump(b);
  EXPECT_EQ(b.sink.EventCount(PeerEvent::kRdFailed), 0u);
  const progress::EndpointStats st = StatsOf(b);
  EXPECT_EQ(st.rc_failed, 0u);
  EXPECT_EQ(st.rd_peers_failed, 0u);
  // Per peer: one more connection closed (a lost tie-break counts there
  // too), no RD session failed.
  PeerSnapshot snap;
  ASSERT_TRUE(b.core->Snapshot(b.core->PeerIdOf(a_addr), &snap));
  EXPECT_EQ(snap.stats.rc_closed, before.stats.rc_closed + 1);
  EXPECT_EQ(snap.stats.rd_failed, 0u);
  EXPECT_EQ(snap.state, PeerState::kDatagram);
}

// The control: no CloseStep, the connection simply ends under b.
TEST_F(RcCloseTest, WithoutCloseStepThePeerCountsAFailure) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Connect(a, b);
  CloseAndWait(a);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_GE(b.core->counters().rc_failed, 1u) << Dump(b);
  EXPECT_EQ(b.core->counters().rc_idle_closed, 0u) << Dump(b);
}

// Sends on the connection still waiting for the peer (rendezvous it has not
// received) hold the close: CloseStep stays false until they are done.
TEST_F(RcCloseTest, TheCloseWaitsForWorkOnTheConnection) {
  Node& a = Add(Config("any:rc_sr,any:rc_rdma,any:ud_sr,any:ud_zcopy"));
  Node& b = Add(Config("any:rc_sr,any:rc_rdma,any:ud_sr,any:ud_zcopy"));
  Connect(a, b);
  a.sink = Sink{};
  b.sink = Sink{};
  Flow f = MakeFlow(a, b, 4);
  f.size_of = [](size_t i) { return size_t{20000} + i; };
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    for (size_t i = 0; i < f.count; ++i) {
      f.tx[i] = Pattern(f.size_of(i), i);
      iovec v{f.tx[i].data(), f.tx[i].size()};
      ASSERT_EQ(a.core->Send(b.core->local_address(), &v, 1, true, i, false, 0, i), RdmStatus::kOk);
    }
    f.sent = f.count;
    a.core->AfterPost();
  }
  // Nothing posted at b: the RTS wait unexpected, a's sends wait for FINs.
  const bool settled = RunUntil(
      [&] {
        return a.core->CloseStep();  // under the engine lock (RunEngineUntil)
      },
      1);
  EXPECT_FALSE(settled) << "closed with rendezvous still waiting on the connection";
  ASSERT_TRUE(Run({&f})) << Dump(a) << Dump(b);  // b receives: the FINs complete a's sends
  f.Check();
  ASSERT_TRUE(RunUntil(
      [&] {
        return a.core->CloseStep();  // under the engine lock (RunEngineUntil)
      },
      5))
      << Dump(a) << Dump(b);
  CloseAndWait(a);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(b.core->counters().rc_failed, 0u) << Dump(b);
  EXPECT_EQ(b.core->counters().peers_failed, 0u) << Dump(b);
}

}  // namespace
}  // namespace iwarpx::rdm
