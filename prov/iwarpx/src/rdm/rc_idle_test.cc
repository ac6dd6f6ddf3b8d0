// Idle connections (config.rc.idle_ms, FI_IWARPX_RC_IDLE_MS) on a real
// engine with loopback UDP and TCP: a connection that carried nothing for
// the idle time is left by both sides with a SWITCH back and closed without
// failing the RD session; traffic right behind the SWITCH back (on RD,
// overtaking it) is still matched in order; later traffic reopens a
// connection; a connection in use is never closed; idle_ms 0 closes nothing.
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rc_test_util.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {
namespace {

using namespace testing_rc;  // NOLINT(google-build-using-namespace): the shared harness

class RcIdleTest : public RcCoreTest {
 protected:
  static RdmConfig IdleConfig(uint32_t idle_ms) {
    RdmConfig c = Config("size<=512:rc_fp,size<=3000:rc_sr,any:ud_sr,any:ud_zcopy");
    c.rc.idle_ms = idle_ms;
    return c;
  }
  size_t Links(Node& n) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    return n.core->rc_links();
  }
};

TEST_F(RcIdleTest, AnIdleConnectionIsClosedCleanlyAndReopenedOnDemand) {
  Node& a = Add(IdleConfig(100));
  Node& b = Add(IdleConfig(100));
  Flow first = MakeFlow(a, b, 600);
  ASSERT_TRUE(Run({&first}, 60)) << Dump(a) << Dump(b);
  first.Check();
  ASSERT_EQ(a.core->counters().rc_opened, 1u);
  // Nothing flows: within 1.5x the idle time (and some slack) both sides
  // have left it, without failing the RD session.
  ASSERT_TRUE(RunUntil([&] { return a.core->rc_links() == 0 && b.core->rc_links() == 0; }, 10))
      << Dump(a) << Dump(b);
  EXPECT_EQ(a.core->counters().rc_idle_closed, 1u) << Dump(a);
  EXPECT_EQ(b.core->counters().rc_idle_closed, 1u) << Dump(b);
  EXPECT_EQ(a.core->counters().rc_failed + b.core->counters().rc_failed, 0u);
  EXPECT_EQ(a.core->counters().peers_failed + b.core->counters().peers_failed, 0u);
  EXPECT_EQ(a.core->fp_links() + b.core->fp_links(), 0u);
  // Traffic again: datagrams first, a new connection after the threshold.
  a.sink = Sink{};
  b.sink = Sink{};
  Flow second = MakeFlow(a, b, 600);
  ASSERT_TRUE(Run({&second}, 60)) << Dump(a) << Dump(b);
  second.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 2u);
  EXPECT_EQ(a.core->counters().rc_switches, 2u);
  EXPECT_EQ(a.core->counters().peers_failed + b.core->counters().peers_failed, 0u);
}

// b receives nothing for a while: a's last connection messages stay in b's
// socket (b's connection runs out of receives over the unexpected limit),
// a goes idle and sends its SWITCH back behind them, then more messages on
// RD, which reach b first. b must match them after the stuck ones.
TEST_F(RcIdleTest, DatagramsThatOvertakeTheSwitchBackAreMatchedAfterIt) {
  RdmConfig c = IdleConfig(50);
  c.unexpected_limit = size_t{4} * 4096;  // b's connection stalls after a few
  Node& a = Add(c);
  Node& b = Add(c);
  Flow first = MakeFlow(a, b, 300);
  first.size_of = [](size_t i) { return 1 + i % 2000; };
  ASSERT_TRUE(Run({&first}, 60)) << Dump(a) << Dump(b);
  first.Check();
  ASSERT_TRUE(a.core->SendsOnRc(b.core->local_address()));
  a.sink = Sink{};
  b.sink = Sink{};
  Flow f = MakeFlow(a, b, 200);
  f.size_of = [](size_t i) { return 1 + i % 1500; };
  f.window = 200;
  auto send_upto = [&](size_t n) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    while (f.sent < n) {
      f.tx[f.sent] = Pattern(f.size_of(f.sent), f.sent);
      iovec v{f.tx[f.sent].data(), f.tx[f.sent].size()};
      ASSERT_EQ(a.core->Send(b.core->local_address(), &v, 1, true, f.sent, false, 0, f.sent),
                RdmStatus::kOk);
      ++f.sent;
    }
    a.core->AfterPost();
  };
  send_upto(100);  // on the connection; b posts nothing
  ASSERT_TRUE(RunUntil([&] { return !a.core->SendsOnRc(b.core->local_address()); }, 10))
      << Dump(a) << Dump(b);
  send_upto(200);  // on RD, behind the SWITCH back
  for (int i = 0; i < 50; ++i) RunUntil([] { return false; }, 0);
  ASSERT_TRUE(Run({&f}, 60)) << Dump(a) << Dump(b);
  f.Check();
  EXPECT_GT(a.core->counters().ud_sr_msgs, 0u);
  EXPECT_EQ(a.core->counters().peers_failed + b.core->counters().peers_failed, 0u);
  EXPECT_EQ(a.core->counters().protocol_errors + b.core->counters().protocol_errors, 0u);
  ASSERT_TRUE(RunUntil([&] { return a.core->rc_links() == 0 && b.core->rc_links() == 0; }, 10))
      << Dump(a) << Dump(b);
}

TEST_F(RcIdleTest, ABusyConnectionStaysAndIdleZeroClosesNothing) {
  Node& a = Add(IdleConfig(30));
  Node& b = Add(IdleConfig(30));
  Node& c = Add(IdleConfig(0));
  Node& d = Add(IdleConfig(0));
  Flow ab = MakeFlow(a, b, 4000);  // longer than many idle periods
  ab.paced = true;
  ab.window = 4;
  Flow cd = MakeFlow(c, d, 400);
  ASSERT_TRUE(Run({&ab, &cd}, 120)) << Dump(a) << Dump(b);
  ab.Check();
  cd.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 1u) << Dump(a);
  EXPECT_EQ(a.core->counters().rc_idle_closed, 0u);
  // c's connection outlives many 30 ms periods.
  RunUntil([] { return false; }, 1);
  EXPECT_EQ(Links(c), 1u);
  EXPECT_EQ(c.core->counters().rc_idle_closed, 0u);
}

}  // namespace
}  // namespace iwarpx::rdm
