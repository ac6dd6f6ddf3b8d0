// A whole Send offered to the RecvSource (recv_source.h TakeSend,
// qp_rx_whole.cc OfferSend): taken, it uses its MSN and completes no receive;
// declined, or not a plain next Send, it goes the usual way (a supplied
// receive, its completion, or the Terminate the byte-stream path sends).
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "qp/recv_source.h"
#include "testing/qp_harness.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;

// Takes Sends while `take` is true (keeping their payloads); supplies one
// receive of its own per Supply call.
class TakingSource final : public RecvSource {
 public:
  bool Supply(QueuePair& qp) override {
    ++asked;
    RecvWr wr;
    wr.context = 100 + supplied_.size();
    supplied_.emplace_back(64, 0);
    wr.sgl.Add(supplied_.back().data(), supplied_.back().size());
    return qp.PostRecv(wr) == QpStatus::kOk;
  }
  bool TakeSend(QueuePair& /*qp*/, ByteSpan payload) override {
    ++offered;
    if (!take) return false;
    taken.emplace_back(payload.begin(), payload.end());
    return true;
  }
  bool take = true;
  int asked = 0;
  int offered = 0;
  std::vector<Bytes> taken;

 private:
  std::vector<Bytes> supplied_;  // the supplied receives' buffers
};

struct Started : RawPeer {
  explicit Started(TakingSource& src) : RawPeer(false) {
    side.qp->SetRecvSource(&src);
    side.qp->Start();
    WriteUlpdu(Rtr());
    Drive();
  }
};

TEST(QpTakeSendTest, APlainWholeSendGoesToTheSourceAndUsesItsMsn) {
  TakingSource src;
  Started p(src);
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(1, 0, true, 20, 0x5A)));
  ASSERT_EQ(src.taken.size(), 1u);
  EXPECT_EQ(src.taken[0], Bytes(20, 0x5A));
  EXPECT_EQ(src.asked, 0);  // no receive was supplied for it
  EXPECT_EQ(p.side.sink.Count(Kind::kRecv), 0u);
  EXPECT_EQ(p.side.qp->rx_stats().sends_taken, 1u);
  // The next MSN is 2, whichever way the Send comes: declined by the source,
  // it is placed in a supplied receive and completes there.
  src.take = false;
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(2, 0, true, 3, 0x11)));
  ASSERT_EQ(p.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(p.side.sink.completions.back().context, 100u);
  EXPECT_EQ(p.side.sink.completions.back().bytes, 3u);
  EXPECT_EQ(p.side.qp->rx_stats().sends_taken, 1u);
  EXPECT_EQ(p.side.sink.terminated, 0);
}

TEST(QpTakeSendTest, APostedReceiveKeepsItsTurn) {
  TakingSource src;
  Started p(src);
  Bytes mine(64, 0);
  RecvWr wr;
  wr.context = 9;
  wr.sgl.Add(mine.data(), mine.size());
  ASSERT_EQ(p.side.qp->PostRecv(wr), QpStatus::kOk);
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(1, 0, true, 8, 0x21)));
  EXPECT_EQ(src.offered, 0);
  ASSERT_EQ(p.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(p.side.sink.completions.back().context, 9u);
  EXPECT_EQ(mine[7], 0x21);
  // With the queue empty again the next one is offered.
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(2, 0, true, 8, 0x22)));
  EXPECT_EQ(src.taken.size(), 1u);
}

TEST(QpTakeSendTest, OnlyAPlainLastSendIsOffered) {
  TakingSource src;
  Started p(src);
  // The two segments of a longer message: the usual path (a supplied
  // receive) takes them.
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(1, 0, false, 10, 0x01)));
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(1, 10, true, 10, 0x02)));
  EXPECT_EQ(src.offered, 0);
  ASSERT_EQ(p.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(p.side.sink.completions.back().bytes, 20u);
  EXPECT_EQ(p.side.sink.terminated, 0);
}

TEST(QpTakeSendTest, AWrongMsnIsNotOfferedAndTerminatesAsBefore) {
  TakingSource src;
  Started p(src);
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(5, 0, true, 20)));  // MSN 1 is expected
  EXPECT_EQ(src.offered, 0);
  EXPECT_TRUE(src.taken.empty());
  EXPECT_EQ(p.side.sink.terminated, 1);
  EXPECT_EQ(p.side.sink.term_cause, wire::term::kDdpUntaggedMsnRange);
}

TEST(QpTakeSendTest, ANonZeroOffsetIsNotOfferedAndTerminatesAsBefore) {
  TakingSource src;
  Started p(src);
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(1, 4, true, 20)));
  EXPECT_EQ(src.offered, 0);
  EXPECT_EQ(p.side.sink.terminated, 1);
  EXPECT_EQ(p.side.sink.term_cause, wire::term::kDdpUntaggedInvalidMo);
}

}  // namespace
}  // namespace iwarpx::qp::test
