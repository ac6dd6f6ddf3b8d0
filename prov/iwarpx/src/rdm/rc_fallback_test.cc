// The lossless fall-back of a broken connection (rdm_core_fallback.cc,
// docs/design.md "Connected channels in the RDM endpoint", Failure), on a real
// engine with loopback UDP and TCP: thousands of mixed eager/rendezvous
// messages both ways, the connection's TCP socket broken under it
// mid-stream (or one side dropping it), and every message still arrives
// exactly once, in order, bit-exact, with no error completion; also through
// datagram faults, with rendezvous in flight, repeatedly (the peer promotes
// again), and a dead peer still fails within the RD timeout.
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rc_test_util.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {
namespace {

using namespace testing_rc;  // NOLINT(google-build-using-namespace): the shared harness

class RcFallbackTest : public RcCoreTest {
 protected:
  // Runs `flows` to the end, breaking a's connection to b each time the
  // flow a->b has sent another `every` messages while on it (at most
  // `breaks` times). `socket`: shut the TCP socket down under both ends;
  // else a drops the connection as a lost link would. Returns the breaks.
  int RunWithBreaks(Node& a, Node& b, const std::vector<Flow*>& flows, size_t every, int breaks,
                    bool socket, int seconds = 30) {
    int done = 0;
    size_t next = every;
    const bool ok = RunUntil(
        [&] {
          bool all = true;
          for (Flow* f : flows) {
            f->Step();
            all = all && f->Done();
          }
          if (done < breaks && flows[0]->sent >= next &&
              a.core->SendsOnRc(b.core->local_address())) {
            const bool broke = socket ? a.core->BreakRcSocketForTest(b.core->local_address())
                                      : (a.core->DropRcForTest(b.core->local_address()), true);
            if (broke) {
              ++done;
              next = flows[0]->sent + every;
            }
          }
          return all;
        },
        seconds);
    EXPECT_TRUE(ok) << "flows did not finish" << Dump(a) << Dump(b);
    return done;
  }
  static void ExpectNoErrors(const Node& a, const Node& b) {
    for (const Node* n : {&a, &b}) {
      EXPECT_EQ(n->sink.send_failed, 0u) << Dump(*n);
      EXPECT_EQ(n->sink.recv_failed, 0u) << Dump(*n);
      EXPECT_EQ(n->core->counters().peers_failed, 0u) << Dump(*n);
      EXPECT_EQ(n->core->counters().protocol_errors, 0u) << Dump(*n);
      EXPECT_EQ(n->sink.EventCount(PeerEvent::kRdFailed), 0u);
    }
  }
};

TEST_F(RcFallbackTest, SocketBrokenMidStreamBothWaysLosesNothing) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Flow ab = MakeFlow(a, b, 4000);
  Flow ba = MakeFlow(b, a, 4000);
  const int breaks = RunWithBreaks(a, b, {&ab, &ba}, 1200, 1, true);
  ASSERT_EQ(breaks, 1);
  ab.Check();
  ba.Check();
  ExpectNoErrors(a, b);
  EXPECT_EQ(a.core->counters().rc_fallbacks, 1u) << Dump(a);
  EXPECT_EQ(b.core->counters().rc_fallbacks, 1u) << Dump(b);
  EXPECT_GT(a.core->counters().rc_sr_msgs + a.core->counters().rc_rdma_msgs, 500u);
}

TEST_F(RcFallbackTest, OneSideDropsTheConnectionRepeatedlyAndPromotesAgain) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Flow ab = MakeFlow(a, b, 5000);
  Flow ba = MakeFlow(b, a, 5000);
  const int breaks = RunWithBreaks(a, b, {&ab, &ba}, 700, 4, false);
  ASSERT_EQ(breaks, 4);
  ab.Check();
  ba.Check();
  ExpectNoErrors(a, b);
  EXPECT_EQ(a.core->counters().rc_fallbacks, 4u) << Dump(a);
  EXPECT_EQ(b.core->counters().rc_fallbacks, 4u) << Dump(b);
  // Each break was followed by a new connection (the thresholds again).
  EXPECT_GE(a.core->counters().rc_opened + b.core->counters().rc_opened, 5u);
}

TEST_F(RcFallbackTest, BrokenThroughDatagramFaults) {
  auto faults = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=21");
  ASSERT_TRUE(faults.ok());
  Node& a = Add(Config(), *faults);
  Node& b = Add(Config(), *faults);
  Flow ab = MakeFlow(a, b, 3000);
  Flow ba = MakeFlow(b, a, 3000);
  const int breaks = RunWithBreaks(a, b, {&ab, &ba}, 800, 2, true);
  ASSERT_EQ(breaks, 2);
  ab.Check();
  ba.Check();
  ExpectNoErrors(a, b);
  EXPECT_EQ(a.core->counters().rc_fallbacks, 2u) << Dump(a);
}

// The RC-FP ring carries the small messages: those written into the peer's
// ring but not yet taken are kept and resent like Sends.
TEST_F(RcFallbackTest, FastPathMessagesSurviveABreak) {
  const RdmConfig c = Config("size<=2048:rc_fp,any:rc_sr,any:ud_sr,any:ud_zcopy");
  Node& a = Add(c);
  Node& b = Add(c);
  Flow ab = MakeFlow(a, b, 4000);
  Flow ba = MakeFlow(b, a, 4000);
  const int breaks = RunWithBreaks(a, b, {&ab, &ba}, 1000, 2, true);
  ASSERT_EQ(breaks, 2);
  ab.Check();
  ba.Check();
  ExpectNoErrors(a, b);
  EXPECT_GT(a.core->counters().rc_fp_msgs, 500u) << Dump(a);
  EXPECT_EQ(a.core->counters().rc_fallbacks, 2u) << Dump(a);
}

// Only rendezvous (every message larger than a bounce), many in flight both
// ways, so the break finds Reads outstanding and RTS/FIN not yet taken: the
// Reads start again on RD and every message still arrives.
TEST_F(RcFallbackTest, BreakWithRendezvousInFlight) {
  const RdmConfig c = Config("any:rc_sr,any:rc_rdma,any:ud_sr,any:ud_zcopy");
  Node& a = Add(c);
  Node& b = Add(c);
  Flow ab = MakeFlow(a, b, 600);
  Flow ba = MakeFlow(b, a, 600);
  for (Flow* f : {&ab, &ba}) {
    f->size_of = [](size_t i) { return size_t{5000} + (i * 7919) % 200000; };
    f->window = 16;
  }
  const int breaks = RunWithBreaks(a, b, {&ab, &ba}, 200, 2, true);
  ASSERT_EQ(breaks, 2);
  ab.Check();
  ba.Check();
  ExpectNoErrors(a, b);
  EXPECT_GT(a.core->counters().rc_resent + b.core->counters().rc_resent, 0u)
      << "nothing was in flight at the breaks" << Dump(a) << Dump(b);
  // The extension stats (fi_iwarpx_ep_stats 0.8) report both counters.
  std::lock_guard<std::mutex> lock(engine_->mu());
  for (const Node* n : {&a, &b}) {
    progress::EndpointStats st;
    n->core->CollectStats(&st);
    EXPECT_EQ(st.rdm_rc_fallbacks, n->core->counters().rc_fallbacks);
    EXPECT_GE(st.rdm_rc_fallbacks, 1u);
    EXPECT_EQ(st.rdm_rc_resent, n->core->counters().rc_resent);
  }
  progress::EndpointStats sa;
  progress::EndpointStats sb;
  a.core->CollectStats(&sa);
  b.core->CollectStats(&sb);
  EXPECT_GT(sa.rdm_rc_resent + sb.rdm_rc_resent, 0u);
}

// Messages piled up unexpected at the receiver (no receives posted) when
// the connection breaks: they were taken, so nothing is sent twice.
TEST_F(RcFallbackTest, UnexpectedMessagesAreNotSentTwice) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Flow warm = MakeFlow(a, b, 300);  // promotes
  ASSERT_TRUE(Run({&warm}));
  warm.Check();
  b.sink = Sink{};
  a.sink = Sink{};
  // 40 EAGER and 10 RTS sent with nothing posted at b.
  Flow f = MakeFlow(a, b, 50);
  f.size_of = [](size_t i) { return i % 5 == 0 ? size_t{30000} : size_t{500}; };
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a.core->SendsOnRc(b.core->local_address()));
    for (size_t i = 0; i < f.count; ++i) {
      f.tx[i] = Pattern(f.size_of(i), i);
      iovec v{f.tx[i].data(), f.tx[i].size()};
      ASSERT_EQ(a.core->Send(b.core->local_address(), &v, 1, true, i, false, 0, i), RdmStatus::kOk);
    }
    f.sent = f.count;
    a.core->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return b.core->counters().unexpected >= 50; })) << Dump(b);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a.core->BreakRcSocketForTest(b.core->local_address()));
  }
  ASSERT_TRUE(RunUntil([&] {
    return a.core->counters().rc_fallbacks == 1 && b.core->counters().rc_fallbacks == 1;
  })) << Dump(a)
      << Dump(b);
  ASSERT_TRUE(Run({&f})) << Dump(a) << Dump(b);
  f.Check();
  ExpectNoErrors(a, b);
  EXPECT_EQ(b.sink.recvs.size(), 50u);
}

// The peer dies: its connection ends, the BROKEN is never answered, and the
// RD session fails within its timeout (2 s here): errors, not a hang.
TEST_F(RcFallbackTest, ADeadPeerStillFailsInBoundedTime) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Flow warm = MakeFlow(a, b, 300);
  ASSERT_TRUE(Run({&warm}));
  warm.Check();
  a.sink = Sink{};
  // Rendezvous to b that b never receives: they wait for FINs.
  std::vector<std::vector<uint8_t>> bufs;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a.core->SendsOnRc(b.core->local_address()));
    for (size_t i = 0; i < 8; ++i) {
      bufs.push_back(Pattern(30000, i));
      iovec v{bufs.back().data(), bufs.back().size()};
      ASSERT_EQ(a.core->Send(b.core->local_address(), &v, 1, true, i, false, 0, i), RdmStatus::kOk);
    }
    a.core->AfterPost();
    b.core.reset();  // closes its sockets: a's connection ends
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(RunUntil([&] { return a.sink.send_failed == 8; }, 20)) << Dump(a);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_GE(a.core->counters().peers_failed, 1u);
  EXPECT_EQ(a.core->rc_links(), 0u);
}

}  // namespace
}  // namespace iwarpx::rdm
