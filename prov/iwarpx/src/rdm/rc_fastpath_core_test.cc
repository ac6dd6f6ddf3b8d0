// RdmCore's RC-FP channel on a real engine with loopback UDP and TCP: a peer
// moves from datagrams (ud_sr) to the RDMA-write ring (rc_fp) with RC-SR
// and rendezvous interleaved by size, every message matched exactly once,
// in order, bit-exact (also through datagram faults during the switch);
// credits exhausted (the chain's next rule carries the message) and
// returned by explicit Writes; both directions at once (piggybacked
// credits); FI_IWARPX_MAX_FASTPATH on either side; a broken connection;
// credits withheld over the unexpected-message limit.
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rc_test_util.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {
namespace {

using namespace testing_rc;  // NOLINT(google-build-using-namespace): the shared harness

constexpr const char* kFpChain = "size<=512:rc_fp,size<=3000:rc_sr,size<=3000:ud_sr,any:ud_zcopy";

// Half the messages fit the fast path, the rest are RC-SR eager (513-3000)
// or, every 17th, rendezvous.
size_t FpMix(size_t i) {
  if (i % 17 == 0) return 20000 + (i * 7919) % 60000;
  if (i % 2 == 0) return (i * 13) % 513;
  return 513 + (i * 7919) % 2488;
}

class RcFastPathTest : public RcCoreTest {
 protected:
  static RdmConfig FpConfig() { return Config(kFpChain); }
  Flow FpFlow(Node& from, Node& to, size_t count) {
    Flow f = MakeFlow(from, to, count);
    f.size_of = FpMix;
    f.paced = true;
    return f;
  }
  bool FastPath(Node& from, Node& to) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    return from.core->HasFastPath(to.core->local_address());
  }
};

TEST_F(RcFastPathTest, MovesFromDatagramsToTheRingInOrderInterleavedWithRcSr) {
  Node& a = Add(FpConfig());
  Node& b = Add(FpConfig());
  Flow f = FpFlow(a, b, 3000);
  ASSERT_TRUE(Run({&f}, 120)) << Dump(a) << Dump(b);
  f.Check();
  const RdmCore::Counters& c = a.core->counters();
  EXPECT_EQ(c.rc_switches, 1u);
  EXPECT_GE(c.ud_sr_msgs, 50u);              // before the connection
  EXPECT_GT(c.rc_fp_msgs, 700u) << Dump(a);  // of the ~1400 that fit a slot after the switch
  EXPECT_GT(c.rc_sr_msgs, 1000u);
  EXPECT_GT(c.rc_rdma_msgs, 100u);
  EXPECT_EQ(c.ud_sr_msgs + c.ud_zcopy_msgs + c.rc_sr_msgs + c.rc_rdma_msgs + c.rc_fp_msgs, 3000u);
  EXPECT_EQ(b.core->counters().rc_fp_received, c.rc_fp_msgs);
  // Receives are posted ahead: most go straight from the slot.
  EXPECT_GT(b.core->counters().rc_fp_direct, c.rc_fp_msgs / 2);
  EXPECT_EQ(a.core->counters().protocol_errors + b.core->counters().protocol_errors, 0u);
  EXPECT_TRUE(FastPath(a, b));
  EXPECT_TRUE(FastPath(b, a));
  EXPECT_EQ(a.core->fp_links(), 1u);
  EXPECT_EQ(b.core->fp_links(), 1u);
}

TEST_F(RcFastPathTest, MovesInOrderThroughDatagramFaultsDuringTheSwitch) {
  auto faults = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=21");
  ASSERT_TRUE(faults.ok());
  Node& a = Add(FpConfig(), *faults);
  Node& b = Add(FpConfig(), *faults);
  Flow f = FpFlow(a, b, 3000);
  ASSERT_TRUE(Run({&f}, 120)) << Dump(a) << Dump(b);
  f.Check();
  EXPECT_EQ(a.core->counters().rc_switches, 1u);
  EXPECT_GT(a.core->counters().rc_fp_msgs, 500u);
  EXPECT_GE(a.core->counters().ud_sr_msgs, 50u);
}

TEST_F(RcFastPathTest, WithoutCreditsTheNextRuleCarriesTheMessageAndCreditsComeBack) {
  RdmConfig c = FpConfig();
  c.rc.fp_slots = 2;
  Node& a = Add(c);
  Node& b = Add(c);
  Flow f = MakeFlow(a, b, 4000);
  f.size_of = [](size_t i) { return i % 300; };  // every one fits a slot
  f.window = 64;                                 // bursts beyond the two slots
  f.paced = true;
  ASSERT_TRUE(Run({&f}, 120)) << Dump(a) << Dump(b);
  f.Check();
  const RdmCore::Counters& ca = a.core->counters();
  // Two slots: more than ten rings' worth means credits came back over and over.
  EXPECT_GT(ca.rc_fp_msgs, 20u) << Dump(a) << Dump(b);
  EXPECT_GT(ca.rc_sr_msgs, 100u);  // no credit: size<=3000:rc_sr
  // One-way traffic: nothing to piggyback on, so explicit updates.
  EXPECT_GT(b.core->counters().fp_credit_writes, 10u);
  EXPECT_EQ(b.core->counters().rc_fp_received, ca.rc_fp_msgs);
}

TEST_F(RcFastPathTest, BothDirectionsAtOnceOnTheRing) {
  RdmConfig c = FpConfig();
  c.rc.threshold_msgs = 20;
  Node& a = Add(c);
  Node& b = Add(c);
  Flow ab = FpFlow(a, b, 2000);
  Flow ba = FpFlow(b, a, 2000);
  ASSERT_TRUE(Run({&ab, &ba}, 120)) << Dump(a) << Dump(b);
  ab.Check();
  ba.Check();
  EXPECT_GT(a.core->counters().rc_fp_msgs, 500u);
  EXPECT_GT(b.core->counters().rc_fp_msgs, 500u);
  EXPECT_EQ(a.core->counters().protocol_errors + b.core->counters().protocol_errors, 0u);
  EXPECT_EQ(a.core->rc_links(), 1u);
  EXPECT_EQ(a.core->fp_links(), 1u);
}

TEST_F(RcFastPathTest, MaxFastPathOneWithTwoBusyPeersGivesOneRingAndOneRcSr) {
  RdmConfig capped = FpConfig();
  capped.rc.max_fastpath = 1;
  Node& a = Add(capped);
  Node& b = Add(FpConfig());
  Node& c = Add(FpConfig());
  Flow ab = FpFlow(a, b, 1500);
  Flow ac = FpFlow(a, c, 1500);
  ASSERT_TRUE(Run({&ab, &ac}, 120)) << Dump(a) << Dump(b) << Dump(c);
  ab.Check();
  ac.Check();
  EXPECT_EQ(a.core->rc_links(), 2u);
  EXPECT_EQ(a.core->fp_links(), 1u);
  const bool to_b = FastPath(a, b);
  const bool to_c = FastPath(a, c);
  EXPECT_NE(to_b, to_c);
  Node& fp_peer = to_b ? b : c;
  Node& sr_peer = to_b ? c : b;
  EXPECT_EQ(fp_peer.core->counters().rc_fp_received, a.core->counters().rc_fp_msgs);
  EXPECT_GT(a.core->counters().rc_fp_msgs, 300u);
  EXPECT_EQ(sr_peer.core->counters().rc_fp_received, 0u);
  EXPECT_EQ(sr_peer.core->fp_links(), 0u);  // it offered none back: ours was declined
}

TEST_F(RcFastPathTest, AResponderAtItsCapDeclinesTheRing) {
  RdmConfig none = FpConfig();
  none.rc.max_fastpath = 0;
  Node& a = Add(FpConfig());
  Node& b = Add(none);
  Flow f = FpFlow(a, b, 800);
  ASSERT_TRUE(Run({&f}, 120)) << Dump(a) << Dump(b);
  f.Check();
  EXPECT_GT(a.core->counters().rc_sr_msgs, 200u);
  EXPECT_EQ(a.core->counters().rc_fp_msgs, 0u);
  EXPECT_EQ(a.core->fp_links(), 0u);  // released when the Reply named no ring
  EXPECT_FALSE(FastPath(a, b));
}

TEST_F(RcFastPathTest, ABrokenConnectionReleasesTheRings) {
  Node& a = Add(FpConfig());
  Node& b = Add(FpConfig());
  Flow first = FpFlow(a, b, 600);
  ASSERT_TRUE(Run({&first}));
  first.Check();
  ASSERT_GT(a.core->counters().rc_fp_msgs, 0u);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    a.core->DropRcForTest(b.core->local_address());
    EXPECT_EQ(a.core->fp_links(), 0u);
  }
  ASSERT_TRUE(RunUntil([&] { return b.core->rc_links() == 0 && b.core->fp_links() == 0; }))
      << Dump(a) << Dump(b);
  a.sink = Sink{};
  b.sink = Sink{};
  Flow second = FpFlow(a, b, 600);
  ASSERT_TRUE(Run({&second}));
  second.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 2u);
  EXPECT_EQ(a.core->fp_links(), 1u);
}

// Nothing is received for a while: the ring's messages pile up as
// unexpected ones. Over the limit the receiver withholds credits, so the
// sender leaves the ring (and RC-SR then meets the bounce backpressure);
// once receives drain the pile, everything arrives in order.
TEST_F(RcFastPathTest, CreditsAreWithheldOverTheUnexpectedLimit) {
  RdmConfig c = FpConfig();
  c.rc.threshold_msgs = 10;
  c.unexpected_limit = size_t{16} * 4096;  // 16 bounces
  Node& a = Add(c);
  Node& b = Add(c);
  Flow f = MakeFlow(a, b, 600);
  f.size_of = [](size_t i) { return 1 + i % 200; };
  f.window = 600;
  // Sends only (no receives posted) until the sender stops making progress.
  size_t last = SIZE_MAX;
  for (int round = 0; round < 50 && f.sent != last; ++round) {
    last = f.sent;
    RunUntil(
        [&] {
          while (f.sent < f.count) {
            f.tx[f.sent] = Pattern(f.size_of(f.sent), f.sent);
            iovec v{f.tx[f.sent].data(), f.tx[f.sent].size()};
            if (a.core->Send(b.core->local_address(), &v, 1, true, f.sent, false, 0, f.sent) !=
                RdmStatus::kOk) {
              break;
            }
            ++f.sent;
          }
          a.core->AfterPost();
          return true;
        },
        1);
    for (int i = 0; i < 200; ++i) RunUntil([] { return false; }, 0);
  }
  const uint64_t fp_before = a.core->counters().rc_fp_msgs;
  EXPECT_GT(fp_before, 0u) << Dump(a) << Dump(b);
  // 16 bounces' worth, then at most one ring of unreported slots.
  EXPECT_LE(b.core->counters().rc_fp_received, 16u + 32u + 16u) << Dump(b);
  ASSERT_TRUE(Run({&f}, 120)) << Dump(a) << Dump(b);
  f.Check();
  EXPECT_GT(a.core->counters().rc_sr_msgs, 0u);
}

}  // namespace
}  // namespace iwarpx::rdm
