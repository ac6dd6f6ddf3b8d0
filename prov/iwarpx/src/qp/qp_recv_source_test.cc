// RecvSource (qp/recv_source.h): receives supplied on demand when a Send
// finds none posted, and backpressure when the source has none.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "qp/recv_source.h"
#include "testing/qp_harness.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;
using ::iwarpx::testing::RandomBytes;

// Posts one buffer of its pool per call while `give` is true.
class PoolSource final : public RecvSource {
 public:
  explicit PoolSource(size_t buffers) : bufs_(buffers, Bytes(6000)) {}
  bool Supply(QueuePair& qp) override {
    ++asked;
    if (!give || next_ >= bufs_.size()) return false;
    RecvWr wr;
    wr.context = 100 + next_;
    wr.sgl.Add(bufs_[next_].data(), bufs_[next_].size());
    if (qp.PostRecv(wr) != QpStatus::kOk) return false;
    ++next_;
    return true;
  }
  Bytes& Buf(size_t i) { return bufs_[i]; }
  bool give = true;
  int asked = 0;

 private:
  std::vector<Bytes> bufs_;
  size_t next_ = 0;
};

void SendBytes(QpPair& p, const Bytes& d) {
  SendWr wr;
  wr.sgl.Add(const_cast<uint8_t*>(d.data()), d.size());
  ASSERT_EQ(p.a.qp->PostSend(wr), QpStatus::kOk);
}

TEST(QpRecvSourceTest, SendsFindingNoReceiveTakeOneFromTheSource) {
  QpPair p(7, true);
  PoolSource src(4);
  p.b.qp->SetRecvSource(&src);
  p.Start();
  p.Pump();
  EXPECT_EQ(src.asked, 0);  // nothing is taken before a Send needs it
  std::mt19937 rng(5);
  const Bytes d1 = RandomBytes(rng, 5000);  // several FPDUs: one receive
  const Bytes d2 = RandomBytes(rng, 40);
  SendBytes(p, d1);
  SendBytes(p, d2);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(src.asked, 2);
  EXPECT_EQ(p.b.sink.completions[0].context, 100u);
  EXPECT_EQ(p.b.sink.completions[0].bytes, 5000u);
  EXPECT_EQ(p.b.sink.completions[1].context, 101u);
  EXPECT_EQ(0, std::memcmp(src.Buf(0).data(), d1.data(), d1.size()));
  EXPECT_EQ(0, std::memcmp(src.Buf(1).data(), d2.data(), d2.size()));
  EXPECT_EQ(p.b.sink.terminated, 0);
}

TEST(QpRecvSourceTest, PostedReceivesGoFirst) {
  QpPair p(0, true);
  PoolSource src(2);
  p.b.qp->SetRecvSource(&src);
  p.Start();
  Bytes mine(100);
  RecvWr wr;
  wr.context = 9;
  wr.sgl.Add(mine.data(), mine.size());
  ASSERT_EQ(p.b.qp->PostRecv(wr), QpStatus::kOk);
  SendBytes(p, Bytes(10, 1));
  SendBytes(p, Bytes(20, 2));
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(p.b.sink.completions[0].context, 9u);
  EXPECT_EQ(p.b.sink.completions[1].context, 100u);
  EXPECT_EQ(src.asked, 1);
}

TEST(QpRecvSourceTest, ARefusingSourceIsBackpressureUntilAReceiveIsPosted) {
  QpPair p(7, true);
  PoolSource src(1);
  src.give = false;
  p.b.qp->SetRecvSource(&src);
  p.Start();
  p.Pump();
  std::mt19937 rng(9);
  const Bytes d1 = RandomBytes(rng, 3000);
  const Bytes d2 = RandomBytes(rng, 64);
  SendBytes(p, d1);
  SendBytes(p, d2);
  p.Pump();
  EXPECT_GE(src.asked, 1);
  EXPECT_FALSE(p.b.qp->wants_read());
  EXPECT_GT(p.b.conn->pending(), 0u);  // left in the "socket"
  EXPECT_EQ(p.b.sink.completions.size(), 0u);
  // The source has buffers again; a receive posted by the owner resumes the
  // QP, the next Send asks the source.
  src.give = true;
  Bytes r1(4000);
  RecvWr wr;
  wr.context = 1;
  wr.sgl.Add(r1.data(), r1.size());
  ASSERT_EQ(p.b.qp->PostRecv(wr), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(p.b.sink.completions[0].context, 1u);
  EXPECT_EQ(p.b.sink.completions[1].context, 100u);
  EXPECT_EQ(0, std::memcmp(r1.data(), d1.data(), d1.size()));
  EXPECT_EQ(0, std::memcmp(src.Buf(0).data(), d2.data(), d2.size()));
  EXPECT_EQ(p.b.sink.terminated, 0);
}

}  // namespace
}  // namespace iwarpx::qp::test
