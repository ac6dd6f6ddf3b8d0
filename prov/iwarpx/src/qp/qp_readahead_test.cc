// Receive read-ahead: RecvV calls per FPDU.
#include <gtest/gtest.h>

#include "testing/qp_harness.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;

TEST(QpReadAheadTest, PingPongRecvCallsPerMessage) {
  QpPair p(0, true);
  p.Start();
  p.Pump();
  constexpr int kRounds = 100;
  Bytes abuf(8, 1), bbuf(8, 2), ar(8), br(8);
  const size_t a0 = p.a.conn->recv_calls();
  const size_t b0 = p.b.conn->recv_calls();
  for (int i = 0; i < kRounds; ++i) {
    RecvWr w;
    w.sgl.Add(ar.data(), ar.size());
    ASSERT_EQ(p.a.qp->PostRecv(w), QpStatus::kOk);
    w.sgl = {};
    w.sgl.Add(br.data(), br.size());
    ASSERT_EQ(p.b.qp->PostRecv(w), QpStatus::kOk);
    SendWr s;
    s.sgl.Add(abuf.data(), abuf.size());
    ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
    p.b.qp->OnReadable();
    s.sgl = {};
    s.sgl.Add(bbuf.data(), bbuf.size());
    ASSERT_EQ(p.b.qp->PostSend(s), QpStatus::kOk);
    p.a.qp->OnReadable();
  }
  EXPECT_EQ(p.a.sink.Count(Kind::kRecv), size_t{kRounds});
  EXPECT_EQ(p.b.sink.Count(Kind::kRecv), size_t{kRounds});
  const double per = static_cast<double>(p.a.conn->recv_calls() - a0 + p.b.conn->recv_calls() - b0) /
                     (2.0 * kRounds);
  std::printf("RecvV calls per 8 B Send: %.2f\n", per);
}

}  // namespace
}  // namespace iwarpx::qp::test
