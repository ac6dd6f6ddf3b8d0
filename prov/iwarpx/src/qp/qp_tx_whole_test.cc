// Whole Sends (queue_pair.h SendWhole, qp_tx_whole.cc): on a connection that
// takes whole ULPDUs, a one-segment Send posted while the QP owes nothing
// else goes out as one ULPDU and completes at once; every other case takes
// the send queue, and either way the peer receives each message once, in
// order, with the MSNs it expects.
#include <algorithm>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;

struct WholePair : QpPair {
  explicit WholePair(bool crc, QpConfig cfg = {}) : QpPair(0, crc, cfg) {
    Start();
    Pump();
    a.conn->set_whole_sends(true);
  }
  void PostRecvs(size_t n, std::vector<Bytes>& rx) {
    rx.assign(n, Bytes(8192, 0));
    for (size_t i = 0; i < n; ++i) {
      RecvWr w;
      w.context = i;
      w.sgl.Add(rx[i].data(), rx[i].size());
      ASSERT_EQ(b.qp->PostRecv(w), QpStatus::kOk);
    }
  }
  QpStatus Send(uint64_t context, Bytes& data) {
    SendWr s;
    s.context = context;
    s.sgl.Add(data.data(), data.size());
    return a.qp->PostSend(s);
  }
};

TEST(QpTxWholeTest, AnIdleQpSendsOneSegmentWholeAndCompletesAtOnce) {
  WholePair p(false);
  std::vector<Bytes> rx;
  p.PostRecvs(3, rx);
  std::vector<Bytes> tx = {Bytes(100, 0x21), Bytes(0), Bytes(1000, 0x43)};
  for (size_t i = 0; i < tx.size(); ++i) {
    ASSERT_EQ(p.Send(i, tx[i]), QpStatus::kOk);
    EXPECT_EQ(p.a.conn->whole_sends(), i + 1);
    EXPECT_EQ(p.a.sink.Count(Kind::kSend), i + 1);  // before any pump
  }
  EXPECT_FALSE(p.a.qp->wants_write());
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 3u);
  for (size_t i = 0; i < tx.size(); ++i) {
    EXPECT_EQ(p.b.sink.completions[i].context, i);
    EXPECT_EQ(p.b.sink.completions[i].bytes, tx[i].size());
    EXPECT_TRUE(std::equal(tx[i].begin(), tx[i].end(), rx[i].begin())) << i;  // tx[1] is empty
  }
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
  EXPECT_EQ(p.a.qp->tx_stats().payload_bytes, 1100u);
}

TEST(QpTxWholeTest, ASendOfSeveralSegmentsTakesTheSendQueue) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 256;
  WholePair p(false, cfg);
  std::vector<Bytes> rx;
  p.PostRecvs(2, rx);
  Bytes big(1000, 0x5A);
  Bytes small(10, 0x11);
  ASSERT_EQ(p.Send(1, big), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 0u);
  p.Pump();
  ASSERT_EQ(p.Send(2, small), QpStatus::kOk);  // the queue is empty again: whole
  EXPECT_EQ(p.a.conn->whole_sends(), 1u);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(p.b.sink.completions[0].bytes, 1000u);
  EXPECT_EQ(0, std::memcmp(rx[0].data(), big.data(), big.size()));
  EXPECT_EQ(p.b.sink.completions[1].bytes, 10u);
  EXPECT_EQ(rx[1][9], 0x11);
}

TEST(QpTxWholeTest, NothingIsSentWholeWhileAReadIsOutstanding) {
  WholePair p(false);
  std::vector<Bytes> rx;
  p.PostRecvs(1, rx);
  Bytes source(64, 0x7E);
  const uint32_t stag = p.b.Register(source, mem::kRemoteRead);
  Bytes sink(64, 0);
  const uint32_t local = p.a.Register(sink, mem::kLocalWrite);
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(50, local, 0x1000, 64, stag, 0x1000)), QpStatus::kOk);
  Bytes msg(20, 0x33);
  ASSERT_EQ(p.Send(51, msg), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 0u);
  p.Pump();
  EXPECT_EQ(sink, source);
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(rx[0][19], 0x33);
  EXPECT_EQ(p.a.sink.Count(Kind::kRdma), 1u);
  EXPECT_EQ(p.a.sink.Count(Kind::kSend), 1u);
}

TEST(QpTxWholeTest, ARefusedWholeSendTakesTheQueueAndArrivesOnce) {
  WholePair p(false);
  std::vector<Bytes> rx;
  p.PostRecvs(1, rx);
  p.a.conn->set_send_capacity(40);  // the 2 + 18 + 100 + pad + 4 byte image does not fit
  Bytes msg(100, 0x66);
  ASSERT_EQ(p.Send(1, msg), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 0u);
  EXPECT_TRUE(p.a.qp->wants_write());  // queued, partly written
  p.a.conn->set_send_capacity(0);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(p.b.sink.completions[0].bytes, 100u);
  EXPECT_EQ(rx[0][99], 0x66);
  EXPECT_EQ(p.a.sink.Count(Kind::kSend), 1u);
}

TEST(QpTxWholeTest, NeverWholeWithTheMpaCrcOn) {
  WholePair p(true);
  std::vector<Bytes> rx;
  p.PostRecvs(1, rx);
  Bytes msg(30, 0x01);
  ASSERT_EQ(p.Send(1, msg), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 0u);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(rx[0][29], 0x01);
}

}  // namespace
}  // namespace iwarpx::qp::test
