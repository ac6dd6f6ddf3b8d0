// Rendezvous that arrived on an on-demand connection and wait unexpected
// (rdm_core_discard.cc, rdm_core_fallback.cc; docs/wire.md §3.10): dropped
// unread (FI_PEEK|FI_DISCARD, FI_CLAIM|FI_DISCARD) they are still answered on
// the connection, so the sender completes, with each rendezvous protocol
// (read, write handshake, copy); and an unexpected copy RTS whose connection
// breaks dies with it (its sender's copy failed there) instead of being
// answered on RD for a send that no longer exists (a protocol error that
// failed the pair's RD session too).
#include <cerrno>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rc_test_util.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {
namespace {

using namespace testing_rc;  // NOLINT(google-build-using-namespace): the shared harness

enum class Rndv : uint8_t { kRead, kWrite, kCopy };

class RcDiscardBase : public RcCoreTest {
 protected:
  static RdmConfig ModeConfig(Rndv mode) {
    RdmConfig c = Config(mode == Rndv::kCopy ? "any:rc_sr,any:copy,any:ud_zcopy"
                                             : "any:rc_sr,any:rc_rdma,any:ud_sr,any:ud_zcopy");
    c.rndv_write = mode == Rndv::kWrite;
    return c;
  }
  // a -> b until a's messages go on the connection; sinks cleared.
  void Promote(Node& a, Node& b) {
    Flow warm = MakeFlow(a, b, 300);
    ASSERT_TRUE(Run({&warm}));
    warm.Check();
    a.sink = Sink{};
    b.sink = Sink{};
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a.core->SendsOnRc(b.core->local_address()));
  }
  void SendTagged(Node& a, Node& b, std::vector<uint8_t>& buf, uint64_t tag, uint64_t ctx) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    ASSERT_EQ(a.core->Send(b.core->local_address(), &v, 1, true, tag, false, 0, ctx),
              RdmStatus::kOk);
    a.core->AfterPost();
  }
  static void ExpectHealthy(const Node& n) {
    EXPECT_EQ(n.core->counters().protocol_errors, 0u) << Dump(n);
    EXPECT_EQ(n.core->counters().peers_failed, 0u) << Dump(n);
    EXPECT_EQ(n.sink.EventCount(PeerEvent::kRdFailed), 0u) << Dump(n);
  }
};

class RcDiscardTest : public RcDiscardBase, public ::testing::WithParamInterface<Rndv> {};

TEST_P(RcDiscardTest, DiscardedOnTheConnectionTheSendCompletes) {
  Node& a = Add(ModeConfig(GetParam()));
  Node& b = Add(ModeConfig(GetParam()));
  Promote(a, b);
  std::vector<uint8_t> m1 = Pattern(30000, 1), m2 = Pattern(50000, 2);
  const uint64_t before = b.core->counters().unexpected;
  SendTagged(a, b, m1, 0xD1, 1);
  SendTagged(a, b, m2, 0xD2, 2);
  ASSERT_TRUE(RunUntil([&] { return b.core->counters().unexpected >= before + 2; })) << Dump(b);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    RecvRequest r;
    r.tagged = true;
    r.tag = 0xD1;
    RecvResult out;
    ASSERT_EQ(b.core->DiscardUnexpected(r, &out), RdmStatus::kOk);
    EXPECT_EQ(out.len, m1.size());
    r.tag = 0xD2;
    ASSERT_EQ(b.core->Peek(r, 0xC1A1, &out), RdmStatus::kOk);
    r.context = 77;
    ASSERT_EQ(b.core->ReceiveClaimed(r, 0xC1A1, true), RdmStatus::kOk);
    b.core->AfterPost();
  }
  ASSERT_EQ(b.sink.recvs.size(), 1u);
  EXPECT_EQ(b.sink.recvs[0].second.len, 0u);
  ASSERT_TRUE(RunUntil([&] { return a.sink.send_done == 2; }, 5))
      << "the sender of a discarded rendezvous waits forever" << Dump(a) << Dump(b);
  EXPECT_EQ(a.sink.send_failed, 0u);
  EXPECT_EQ(b.core->counters().discard_answers, 2u);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    EXPECT_TRUE(a.core->SendsOnRc(b.core->local_address())) << "the connection was lost";
  }
  // The pair carries on, on the connection.
  ExpectHealthy(a);
  ExpectHealthy(b);
  a.sink = Sink{};
  b.sink = Sink{};
  Flow after = MakeFlow(a, b, 100);
  ASSERT_TRUE(Run({&after})) << Dump(a) << Dump(b);
  after.Check();
  ExpectHealthy(a);
  ExpectHealthy(b);
}

INSTANTIATE_TEST_SUITE_P(Rndv, RcDiscardTest,
                         ::testing::Values(Rndv::kRead, Rndv::kWrite, Rndv::kCopy),
                         [](const ::testing::TestParamInfo<Rndv>& i) {
                           switch (i.param) {
                             case Rndv::kRead: return "read";
                             case Rndv::kWrite: return "write";
                             case Rndv::kCopy: return "copy";
                           }
                           return "unknown";
                         });

using RcCopyBreakTest = RcDiscardBase;

// A copy RTS waits unexpected at b when the connection breaks: a's copy
// fails with the link (its DATA are not kept), so b's later receive of it
// fails too, and nothing is sent for it on RD; the pair goes on without a
// protocol error.
TEST_F(RcCopyBreakTest, UnexpectedCopyRendezvousDiesWithTheLink) {
  Node& a = Add(ModeConfig(Rndv::kCopy));
  Node& b = Add(ModeConfig(Rndv::kCopy));
  Promote(a, b);
  std::vector<uint8_t> m = Pattern(30000, 3);
  const uint64_t before = b.core->counters().unexpected;
  SendTagged(a, b, m, 0xE1, 1);
  ASSERT_TRUE(RunUntil([&] { return b.core->counters().unexpected >= before + 1; })) << Dump(b);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a.core->BreakRcSocketForTest(b.core->local_address()));
  }
  ASSERT_TRUE(RunUntil([&] {
    return a.core->counters().rc_fallbacks == 1 && b.core->counters().rc_fallbacks == 1;
  })) << Dump(a)
      << Dump(b);
  EXPECT_EQ(a.sink.send_failed, 1u) << "the copy rendezvous fails with its connection";
  std::vector<uint8_t> rx(m.size());
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{rx.data(), rx.size()};
    RecvRequest r;
    r.tagged = true;
    r.tag = 0xE1;
    r.context = 5;
    r.iov = &v;
    r.count = 1;
    ASSERT_EQ(b.core->PostRecv(r), RdmStatus::kOk);
    b.core->AfterPost();
  }
  EXPECT_EQ(b.sink.recv_failed, 1u) << "a receive of a dead rendezvous must fail";
  // Whatever was answered has had time to arrive: the pair is still sound.
  ExpectHealthy(a);
  ExpectHealthy(b);
  a.sink = Sink{};
  b.sink = Sink{};
  Flow after = MakeFlow(a, b, 100);
  ASSERT_TRUE(Run({&after})) << Dump(a) << Dump(b);
  after.Check();
  ExpectHealthy(a);
  ExpectHealthy(b);
}

}  // namespace
}  // namespace iwarpx::rdm
