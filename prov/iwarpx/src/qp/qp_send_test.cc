// Step 1: start-up (RTR), Send/Recv with segmentation, gather/scatter,
// backpressure, and the too-long message Terminate.
#include <cstring>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"
#include "wire/rdmap.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;
using ::iwarpx::testing::RandomBytes;

TEST(QpStartTest, InitiatorEstablishedAtOnceResponderOnRtr) {
  QpPair p(0, true);
  ASSERT_TRUE(p.a.qp && p.b.qp);
  p.Start();
  EXPECT_EQ(p.a.sink.established, 1);
  EXPECT_EQ(p.b.sink.established, 0);
  EXPECT_GT(p.b.conn->pending(), 0u);  // the RTR is on its way
  p.Pump();
  EXPECT_EQ(p.b.sink.established, 1);
  EXPECT_TRUE(p.b.qp->established());
  EXPECT_EQ(p.a.conn->pending(), 0u);
}

TEST(QpStartTest, RtrIsZeroLengthWriteStag1To0) {
  RawPeer peer(true, {}, 4, 4, wire::MpaRole::kInitiator);
  peer.side.qp->Start();
  const auto ulpdus = peer.ReadUlpdus();
  ASSERT_EQ(ulpdus.size(), 1u);
  auto seg = wire::ParseSegment(ulpdus[0]);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->opcode, wire::RdmapOpcode::kRdmaWrite);
  EXPECT_EQ(seg->ddp.stag, 1u);
  EXPECT_EQ(seg->ddp.to, 0u);
  EXPECT_TRUE(seg->ddp.last);
  EXPECT_TRUE(seg->payload.empty());
}

TEST(QpStartTest, ResponderSendsNothingBeforeRtr) {
  RawPeer peer(false);
  peer.side.qp->Start();
  Bytes buf(10, 1);
  SendWr wr;
  wr.sgl.Add(buf.data(), buf.size());
  EXPECT_EQ(peer.side.qp->PostSend(wr), QpStatus::kOk);
  peer.Drive();
  EXPECT_TRUE(peer.ReadUlpdus().empty());
  EXPECT_EQ(peer.side.sink.established, 0);
  // The RTR: a zero-length Write with STag 1 / TO 0 (not validated).
  Bytes rtr(14);
  ASSERT_TRUE(wire::EncodeWriteHeader(1, 0, true, rtr).ok());
  peer.WriteUlpdu(rtr);
  peer.Drive();
  EXPECT_EQ(peer.side.sink.established, 1);
  const auto ulpdus = peer.ReadUlpdus();
  ASSERT_EQ(ulpdus.size(), 1u);
  EXPECT_EQ(ulpdus[0].size(), 18u + 10u);
  ASSERT_EQ(peer.side.sink.Count(Kind::kSend), 1u);
}

TEST(QpCreateTest, RejectsBadConfig) {
  auto conns = ::iwarpx::testing::MakeFakeConnectionPair();
  mem::StagTable t(Random(1), 4);
  RecordingSink sink;
  QpConfig cfg;
  cfg.max_fpdu_payload = 64;
  auto o = MakeOutcome(wire::MpaRole::kInitiator, true, 1, 1);
  EXPECT_FALSE(QueuePair::Create(*conns.first, t, 1, o, cfg, sink).ok());
  cfg = {};
  cfg.sq_size = 0;
  EXPECT_FALSE(QueuePair::Create(*conns.first, t, 1, o, cfg, sink).ok());
  cfg = {};
  o.rtr = wire::MpaRtr::kSend;
  EXPECT_FALSE(QueuePair::Create(*conns.first, t, 1, o, cfg, sink).ok());
}

TEST(QpPostTest, QueueFullAndInvalid) {
  QpConfig cfg;
  cfg.sq_size = 2;
  cfg.rq_size = 1;
  RawPeer peer(false, cfg);  // responder: TX held until the RTR, so WRs stay queued
  peer.side.qp->Start();
  Bytes buf(8);
  SendWr wr;
  wr.sgl.Add(buf.data(), buf.size());
  EXPECT_EQ(peer.side.qp->PostSend(wr), QpStatus::kOk);
  EXPECT_EQ(peer.side.qp->PostSend(wr), QpStatus::kOk);
  EXPECT_EQ(peer.side.qp->PostSend(wr), QpStatus::kQueueFull);
  RecvWr rwr;
  rwr.sgl.Add(buf.data(), buf.size());
  EXPECT_EQ(peer.side.qp->PostRecv(rwr), QpStatus::kOk);
  EXPECT_EQ(peer.side.qp->PostRecv(rwr), QpStatus::kQueueFull);
  SendWr bad;
  bad.sgl.Add(nullptr, 5);
  EXPECT_EQ(peer.side.qp->PostSend(bad), QpStatus::kInvalid);
  WriteWr wrap;
  wrap.sgl.Add(buf.data(), buf.size());
  wrap.remote_to = UINT64_MAX - 2;
  EXPECT_EQ(peer.side.qp->PostWrite(wrap), QpStatus::kInvalid);
}

// Send/Recv over every I/O split and with CRC on and off.
class QpSendRecvTest : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(QpSendRecvTest, SizesGatherScatterByteExact) {
  const auto [max_per_call, crc] = GetParam();
  QpConfig cfg;
  cfg.max_fpdu_payload = 1024;
  cfg.sq_size = 16;
  cfg.rq_size = 16;
  QpPair p(max_per_call, crc, cfg);
  p.Start();
  std::vector<size_t> sizes = {0, 1, 3, 1006, 1007, 4099, 65536 + 5};
  if (max_per_call == 0 || max_per_call >= 4096) sizes.push_back(1u << 20);
  std::mt19937 rng(42);
  uint64_t ctx = 100;
  for (size_t n : sizes) {
    for (Side* from : {&p.a, &p.b}) {
      Side* to = from == &p.a ? &p.b : &p.a;
      const Bytes data = RandomBytes(rng, n);
      // Gather from three pieces; scatter into two, the second oversized.
      const size_t c1 = n / 3;
      const size_t c2 = n / 2 - c1 / 2;
      Bytes s1(data.begin(), data.begin() + static_cast<long>(c1));
      Bytes s2(data.begin() + static_cast<long>(c1), data.begin() + static_cast<long>(c1 + c2));
      Bytes s3(data.begin() + static_cast<long>(c1 + c2), data.end());
      const size_t r1len = n / 2 + 1;
      Bytes r1(r1len, 0xEE);
      Bytes r2(n + 16, 0xEE);
      RecvWr rwr;
      rwr.context = ++ctx;
      rwr.sgl.Add(r1.data(), r1.size());
      rwr.sgl.Add(r2.data(), r2.size());
      ASSERT_EQ(to->qp->PostRecv(rwr), QpStatus::kOk);
      SendWr swr;
      swr.context = ++ctx;
      swr.sgl.Add(s1.data(), s1.size());
      swr.sgl.Add(s2.data(), s2.size());
      swr.sgl.Add(s3.data(), s3.size());
      ASSERT_EQ(from->qp->PostSend(swr), QpStatus::kOk);
      p.Pump();
      ASSERT_FALSE(to->sink.completions.empty()) << "size " << n;
      const Completion& rc = to->sink.completions.back();
      ASSERT_EQ(rc.kind, Kind::kRecv) << "size " << n;
      EXPECT_EQ(rc.context, rwr.context);
      EXPECT_EQ(rc.bytes, n);
      const Completion& sc = from->sink.completions.back();
      ASSERT_EQ(sc.kind, Kind::kSend);
      EXPECT_EQ(sc.context, swr.context);
      Bytes got(r1.begin(), r1.end());
      got.insert(got.end(), r2.begin(), r2.end());
      got.resize(n);
      EXPECT_TRUE(got == data) << "size " << n;
      if (n < r1len) {
        EXPECT_EQ(r1[n], 0xEE);
      } else if (n - r1len < r2.size()) {
        EXPECT_EQ(r2[n - r1len], 0xEE);
      }
    }
  }
  EXPECT_EQ(p.a.sink.terminated, 0);
  EXPECT_EQ(p.b.sink.terminated, 0);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
}

INSTANTIATE_TEST_SUITE_P(Splits, QpSendRecvTest,
                         ::testing::Combine(::testing::Values(size_t{1}, size_t{7}, size_t{4096},
                                                              size_t{0}),
                                            ::testing::Bool()));

TEST(QpSegmentationTest, MsnPerMessageMoPerSegmentLastOnLast) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 128;  // 110 payload bytes per Send segment
  RawPeer peer(true, cfg, 4, 4, wire::MpaRole::kInitiator);
  peer.side.qp->Start();
  Bytes m1(250, 1);
  Bytes m2(110, 2);
  for (Bytes* m : {&m1, &m2}) {
    SendWr wr;
    wr.sgl.Add(m->data(), m->size());
    ASSERT_EQ(peer.side.qp->PostSend(wr), QpStatus::kOk);
  }
  const auto ulpdus = peer.ReadUlpdus();
  ASSERT_EQ(ulpdus.size(), 1u + 3u + 1u);  // RTR, 110+110+30, 110
  struct Want {
    uint32_t msn, mo;
    bool last;
    size_t len;
  };
  const Want want[] = {
      {1, 0, false, 110}, {1, 110, false, 110}, {1, 220, true, 30}, {2, 0, true, 110}};
  for (size_t i = 0; i < 4; ++i) {
    auto seg = wire::ParseSegment(ulpdus[i + 1]);
    ASSERT_TRUE(seg.ok());
    EXPECT_EQ(seg->opcode, wire::RdmapOpcode::kSend);
    EXPECT_EQ(seg->ddp.qn, 0u);
    EXPECT_EQ(seg->ddp.msn, want[i].msn) << i;
    EXPECT_EQ(seg->ddp.mo, want[i].mo) << i;
    EXPECT_EQ(seg->ddp.last, want[i].last) << i;
    EXPECT_EQ(seg->payload.size(), want[i].len) << i;
  }
}

TEST(QpSendRecvMiscTest, PartialWritesResumeUnderSendCapacity) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 512;
  QpPair p(0, true, cfg);
  p.a.conn->set_send_capacity(37);
  p.Start();
  std::mt19937 rng(1);
  const Bytes data = RandomBytes(rng, 20000);
  Bytes rbuf(20000);
  RecvWr rwr;
  rwr.sgl.Add(rbuf.data(), rbuf.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  SendWr swr;
  swr.sgl.Add(const_cast<uint8_t*>(data.data()), data.size());
  ASSERT_EQ(p.a.qp->PostSend(swr), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
  EXPECT_TRUE(rbuf == data);
}

TEST(QpBackpressureTest, SendBeforeRecvIsHeldNotLost) {
  QpPair p(7, true);
  p.Start();
  p.Pump();
  std::mt19937 rng(3);
  const Bytes d1 = RandomBytes(rng, 5000);
  const Bytes d2 = RandomBytes(rng, 300);
  for (const Bytes* d : {&d1, &d2}) {
    SendWr wr;
    wr.sgl.Add(const_cast<uint8_t*>(d->data()), d->size());
    ASSERT_EQ(p.a.qp->PostSend(wr), QpStatus::kOk);
  }
  p.Pump();
  EXPECT_FALSE(p.b.qp->wants_read());
  EXPECT_GT(p.b.conn->pending(), 0u);  // left in the "socket", not buffered by the QP
  EXPECT_EQ(p.b.sink.completions.size(), 0u);
  Bytes r1(5000), r2(1000);
  RecvWr w1, w2;
  w1.context = 1;
  w1.sgl.Add(r1.data(), r1.size());
  w2.context = 2;
  w2.sgl.Add(r2.data(), r2.size());
  ASSERT_EQ(p.b.qp->PostRecv(w1), QpStatus::kOk);
  EXPECT_TRUE(p.b.qp->wants_read());
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
  EXPECT_FALSE(p.b.qp->wants_read());
  ASSERT_EQ(p.b.qp->PostRecv(w2), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(p.b.sink.completions[1].bytes, 300u);
  EXPECT_TRUE(r1 == d1);
  EXPECT_TRUE(std::equal(d2.begin(), d2.end(), r2.begin()));
  EXPECT_EQ(p.b.sink.terminated, 0);
}

TEST(QpSendRecvMiscTest, TooLongForBufferTerminatesBothSides) {
  QpPair p(0, true);
  p.Start();
  Bytes small(100), big(200, 9);
  RecvWr rwr;
  rwr.context = 5;
  rwr.sgl.Add(small.data(), small.size());
  RecvWr rwr2;
  rwr2.context = 6;
  rwr2.sgl.Add(small.data(), small.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  ASSERT_EQ(p.b.qp->PostRecv(rwr2), QpStatus::kOk);
  SendWr swr;
  swr.context = 7;
  swr.sgl.Add(big.data(), big.size());
  ASSERT_EQ(p.a.qp->PostSend(swr), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(p.b.sink.terminated, 1);
  EXPECT_EQ(p.b.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(p.b.sink.term_cause, wire::term::kDdpUntaggedTooLong);
  ASSERT_EQ(p.b.sink.Count(Kind::kError), 2u);
  EXPECT_EQ(p.b.sink.completions[0].context, 5u);
  EXPECT_EQ(p.b.sink.completions[0].op, WcOp::kRecv);
  EXPECT_EQ(p.b.sink.completions[0].error.cause, wire::term::kDdpUntaggedTooLong);
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
  EXPECT_EQ(p.a.sink.terminated, 1);
  EXPECT_EQ(p.a.sink.term_origin, TermOrigin::kReceived);
  EXPECT_EQ(p.a.sink.term_cause, wire::term::kDdpUntaggedTooLong);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  // Posting after the error is refused.
  EXPECT_EQ(p.a.qp->PostSend(swr), QpStatus::kBadState);
}

TEST(QpSendRecvMiscTest, UnsignaledSendHasNoSuccessCompletion) {
  QpPair p(0, false);
  p.Start();
  Bytes buf(10), rbuf(10);
  RecvWr rwr;
  rwr.sgl.Add(rbuf.data(), rbuf.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  SendWr swr;
  swr.flags = 0;
  swr.sgl.Add(buf.data(), buf.size());
  ASSERT_EQ(p.a.qp->PostSend(swr), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(p.a.sink.completions.size(), 0u);
  EXPECT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
}

}  // namespace
// The send queue's storage starts small and grows to sq_size while entries
// are outstanding (queue_pair.h, sq_): entries posted across a growth, with
// the ring already wrapped, keep their order and contents, and sq_size
// still bounds the queue.
TEST(QpSendQueueTest, GrowsToSqSizeKeepingOrderAcrossWrap) {
  QpConfig cfg;
  cfg.sq_size = 64;
  cfg.rq_size = 128;
  QpPair p(0, true, cfg);
  p.Start();
  p.Pump();
  std::mt19937 rng(5);
  constexpr size_t kMsgs = 64;
  std::vector<Bytes> data;
  std::vector<Bytes> rbufs(kMsgs + 5, Bytes(200));
  for (size_t i = 0; i < rbufs.size(); ++i) {
    RecvWr r;
    r.context = 1000 + i;
    r.sgl.Add(rbufs[i].data(), rbufs[i].size());
    ASSERT_EQ(p.b.qp->PostRecv(r), QpStatus::kOk);
  }
  // Five sends through first, so the ring's head is not at slot 0.
  for (size_t i = 0; i < 5; ++i) {
    data.push_back(RandomBytes(rng, 1 + (i * 37) % 200));
    SendWr w;
    w.context = i;
    w.sgl.Add(data.back().data(), data.back().size());
    ASSERT_EQ(p.a.qp->PostSend(w), QpStatus::kOk);
    p.Pump();
  }
  // Then the connection takes almost nothing, so the queue fills to its size.
  p.a.conn->set_send_capacity(16);
  for (size_t i = 0; i < kMsgs; ++i) {
    data.push_back(RandomBytes(rng, 1 + (i * 53) % 200));
    SendWr w;
    w.context = 5 + i;
    w.sgl.Add(data.back().data(), data.back().size());
    ASSERT_EQ(p.a.qp->PostSend(w), QpStatus::kOk) << i;
  }
  EXPECT_EQ(p.a.qp->sq_free(), 0u);
  SendWr extra;
  extra.sgl.Add(data[0].data(), data[0].size());
  EXPECT_EQ(p.a.qp->PostSend(extra), QpStatus::kQueueFull);
  p.a.conn->set_send_capacity(SIZE_MAX);
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kSend), 5 + kMsgs);
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 5 + kMsgs);
  for (size_t i = 0; i < 5 + kMsgs; ++i) {
    EXPECT_EQ(p.a.sink.completions[i].context, i);
    const auto& rc = p.b.sink.completions[i];
    ASSERT_EQ(rc.bytes, data[i].size()) << i;
    EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), rbufs[rc.context - 1000].begin())) << i;
  }
  EXPECT_EQ(p.a.qp->sq_free(), 64u);
}

}  // namespace iwarpx::qp::test
