// Whole Sends and Writes (queue_pair.h SendWhole, WriteWhole,
// qp_tx_whole.cc): on a connection that takes whole ULPDUs, a one-segment
// Send or RDMA Write posted while the QP owes nothing else goes out as one
// ULPDU and completes at once; every other case takes the send queue, and
// either way the peer receives each message once, in order, with the MSNs
// it expects, and each Write's bytes land where it names.
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
  EXPECT_EQ(p.a.conn->whole_sends(), 1u);  // the Read itself: the QP was idle
  Bytes msg(20, 0x33);
  ASSERT_EQ(p.Send(51, msg), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 1u);
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

WriteWr MakeWrite(uint64_t context, Bytes& data, uint32_t stag, uint64_t to) {
  WriteWr w;
  w.context = context;
  w.sgl.Add(data.data(), data.size());
  w.remote_stag = stag;
  w.remote_to = to;
  return w;
}

TEST(QpTxWholeTest, AnIdleQpWritesOneSegmentWholeAndCompletesAtOnce) {
  WholePair p(false);
  Bytes window(4096, 0);
  const uint32_t stag = p.b.Register(window, mem::kRemoteWrite);
  std::vector<Bytes> tx = {Bytes(8, 0x21), Bytes(0), Bytes(1000, 0x43)};
  const uint64_t to[] = {0x1000, 0x1100, 0x1200};
  for (size_t i = 0; i < tx.size(); ++i) {
    ASSERT_EQ(p.a.qp->PostWrite(MakeWrite(i, tx[i], stag, to[i])), QpStatus::kOk);
    EXPECT_EQ(p.a.conn->whole_sends(), i + 1);
    EXPECT_EQ(p.a.sink.Count(Kind::kRdma), i + 1);  // before any pump
    EXPECT_EQ(p.a.sink.completions[i].context, i);
    EXPECT_EQ(p.a.sink.completions[i].op, WcOp::kWrite);
  }
  EXPECT_FALSE(p.a.qp->wants_write());
  p.Pump();
  EXPECT_TRUE(std::equal(tx[0].begin(), tx[0].end(), window.begin()));
  EXPECT_TRUE(std::equal(tx[2].begin(), tx[2].end(), window.begin() + 0x200));
  EXPECT_EQ(std::count(window.begin(), window.end(), 0), 4096 - 1008);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
  EXPECT_EQ(p.a.qp->tx_stats().payload_bytes, 1008u);
}

TEST(QpTxWholeTest, WritesAndSendsWholeStayInOrderWithTheirMsns) {
  WholePair p(false);
  std::vector<Bytes> rx;
  p.PostRecvs(2, rx);
  Bytes window(64, 0);
  const uint32_t stag = p.b.Register(window, mem::kRemoteWrite);
  Bytes w1(16, 0x01), s1(10, 0x02), w2(16, 0x03), s2(20, 0x04);
  ASSERT_EQ(p.a.qp->PostWrite(MakeWrite(1, w1, stag, 0x1000)), QpStatus::kOk);
  ASSERT_EQ(p.Send(2, s1), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostWrite(MakeWrite(3, w2, stag, 0x1010)), QpStatus::kOk);
  ASSERT_EQ(p.Send(4, s2), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 4u);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(p.b.sink.completions[0].bytes, 10u);
  EXPECT_EQ(p.b.sink.completions[1].bytes, 20u);
  EXPECT_EQ(rx[1][19], 0x04);
  EXPECT_TRUE(std::equal(w1.begin(), w1.end(), window.begin()));
  EXPECT_TRUE(std::equal(w2.begin(), w2.end(), window.begin() + 16));
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

TEST(QpTxWholeTest, AWriteBehindAnOutstandingReadOrLongerThanASegmentTakesTheQueue) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 256;
  WholePair p(false, cfg);
  Bytes source(64, 0x7E);
  const uint32_t rstag = p.b.Register(source, mem::kRemoteRead);
  Bytes sink(64, 0);
  const uint32_t local = p.a.Register(sink, mem::kLocalWrite);
  Bytes window(2048, 0);
  const uint32_t wstag = p.b.Register(window, mem::kRemoteWrite, 0x8000);
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(50, local, 0x1000, 64, rstag, 0x1000)), QpStatus::kOk);
  Bytes small(20, 0x33);
  EXPECT_EQ(p.a.conn->whole_sends(), 1u);  // the Read itself: the QP was idle
  ASSERT_EQ(p.a.qp->PostWrite(MakeWrite(51, small, wstag, 0x8000)), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 1u);
  p.Pump();
  EXPECT_EQ(sink, source);
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 2u);
  Bytes big(1000, 0x5A);
  ASSERT_EQ(p.a.qp->PostWrite(MakeWrite(52, big, wstag, 0x8100)), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 1u);  // four segments: the send queue
  p.Pump();
  EXPECT_TRUE(std::equal(small.begin(), small.end(), window.begin()));
  EXPECT_TRUE(std::equal(big.begin(), big.end(), window.begin() + 0x100));
  EXPECT_EQ(p.a.sink.Count(Kind::kRdma), 3u);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

TEST(QpTxWholeTest, AnIdleQpSendsAReadRequestWholeAndItCompletesAtItsResponse) {
  WholePair p(false);
  Bytes source(256, 0);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7 + 1);
  const uint32_t rstag = p.b.Register(source, mem::kRemoteRead);
  Bytes sink(256, 0);
  const uint32_t local = p.a.Register(sink, mem::kLocalWrite);
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(60, local, 0x1000, 100, rstag, 0x1000)), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 1u);
  EXPECT_EQ(p.a.sink.Count(Kind::kRdma), 0u);  // only at its response
  // A second Read while the first is outstanding takes the send queue.
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(61, local, 0x1080, 50, rstag, 0x1080)), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 1u);
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 2u);
  EXPECT_EQ(p.a.sink.completions[0].context, 60u);
  EXPECT_EQ(p.a.sink.completions[0].op, WcOp::kRead);
  EXPECT_EQ(p.a.sink.completions[1].context, 61u);
  EXPECT_TRUE(std::equal(source.begin(), source.begin() + 100, sink.begin()));
  EXPECT_TRUE(std::equal(source.begin() + 0x80, source.begin() + 0x80 + 50, sink.begin() + 0x80));
  EXPECT_EQ(sink[100], 0);
  EXPECT_FALSE(p.a.qp->wants_write());
  // Idle again: the next Read goes whole, and so does a zero-length one.
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(62, local, 0x10C0, 8, rstag, 0x10F0)), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 2u);
  p.Pump();
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(63, local, 0x1000, 0, rstag, 0x1000)), QpStatus::kOk);
  EXPECT_EQ(p.a.conn->whole_sends(), 3u);
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 4u);
  EXPECT_EQ(p.a.sink.completions[3].context, 63u);
  EXPECT_TRUE(std::equal(source.begin() + 0xF0, source.begin() + 0xF8, sink.begin() + 0xC0));
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

TEST(QpTxWholeTest, AWriteThenAReadWholeIsTheFlushPattern) {
  // MPI_Put + MPI_Win_flush over osc iwarpx: a Write, then a Read of another
  // region behind it; both go whole, the Read completes once both are in.
  WholePair p(false);
  Bytes window(64, 0);
  const uint32_t wstag = p.b.Register(window, mem::kRemoteWrite | mem::kRemoteRead);
  Bytes sink(8, 0);
  const uint32_t local = p.a.Register(sink, mem::kLocalWrite);
  for (uint64_t i = 0; i < 5; ++i) {
    Bytes data(8, static_cast<uint8_t>(0x40 + i));
    ASSERT_EQ(p.a.qp->PostWrite(MakeWrite(2 * i, data, wstag, 0x1000 + 8 * i)), QpStatus::kOk);
    ASSERT_EQ(p.a.qp->PostRead(MakeRead(2 * i + 1, local, 0x1000, 8, wstag, 0x1000 + 8 * i)),
              QpStatus::kOk);
    EXPECT_EQ(p.a.conn->whole_sends(), 2 * i + 2);
    p.Pump();
    ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 2 * i + 2);
    EXPECT_EQ(p.a.sink.completions.back().context, 2 * i + 1);
    EXPECT_EQ(sink, data);  // the Read saw the Write before it
  }
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

}  // namespace
}  // namespace iwarpx::qp::test
