// Whole FPDUs (queue_pair.h TakeWholeFpdu, qp_rx_whole.cc): a ULPDU handed
// over in one piece is checked, placed and completed as the byte stream would
// have done it, errors included (the Terminate names the segment and its
// length), and anything the QP cannot take now is declined with nothing taken.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;

// A QP facing a raw peer, started, its RTR received through the stream.
struct Started : RawPeer {
  explicit Started(bool crc_on) : RawPeer(crc_on) {
    side.qp->Start();
    WriteUlpdu(Rtr());
    Drive();
  }
  void Post(uint64_t context, Bytes& buf) {
    RecvWr w;
    w.context = context;
    w.sgl.Add(buf.data(), buf.size());
    ASSERT_EQ(side.qp->PostRecv(w), QpStatus::kOk);
  }
};

TEST(QpRxWholeTest, ASendTakenWholeCompletesWithItsBytesAndNoRead) {
  Started p(false);
  Bytes rx(64, 0);
  p.Post(7, rx);
  const size_t reads = p.side.conn->recv_calls();
  const size_t fpdus = p.side.qp->rx_stats().fpdus;
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(SendSegment(1, 0, true, 20, 0x5A)));
  ASSERT_EQ(p.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(p.side.sink.completions.back().context, 7u);
  EXPECT_EQ(p.side.sink.completions.back().bytes, 20u);
  EXPECT_EQ(rx[0], 0x5A);
  EXPECT_EQ(rx[19], 0x5A);
  EXPECT_EQ(rx[20], 0);
  EXPECT_EQ(p.side.conn->recv_calls(), reads);
  EXPECT_EQ(p.side.qp->rx_stats().fpdus, fpdus + 1);
  // The next Send continues the MSN sequence, through the stream as well.
  Bytes rx2(64, 0);
  p.Post(8, rx2);
  p.WriteUlpdu(SendSegment(2, 0, true, 3, 0x11));
  p.Drive();
  ASSERT_EQ(p.side.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(p.side.sink.completions.back().bytes, 3u);
  EXPECT_EQ(p.side.sink.terminated, 0);
}

TEST(QpRxWholeTest, DeclinedWhileTheMpaCrcIsOn) {
  Started p(true);
  Bytes rx(64, 0);
  p.Post(7, rx);
  EXPECT_FALSE(p.side.qp->TakeWholeFpdu(SendSegment(1, 0, true, 20)));
  EXPECT_EQ(p.side.sink.Count(Kind::kRecv), 0u);
  EXPECT_EQ(p.side.sink.terminated, 0);
  EXPECT_EQ(rx[0], 0);
}

TEST(QpRxWholeTest, ASendWithoutAReceiveIsDeclinedAndTheStreamDeliversItOnce) {
  Started p(false);
  const Bytes send = SendSegment(1, 0, true, 20, 0x33);
  EXPECT_FALSE(p.side.qp->TakeWholeFpdu(send));  // no receive posted: nothing taken
  EXPECT_TRUE(p.side.qp->wants_read());
  EXPECT_EQ(p.side.qp->rx_stats().fpdus, 1u);  // the RTR only
  p.WriteUlpdu(send);
  p.Drive();
  EXPECT_EQ(p.side.sink.Count(Kind::kRecv), 0u);  // stopped on it, as before
  Bytes rx(64, 0);
  p.Post(9, rx);
  p.Drive();
  ASSERT_EQ(p.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(p.side.sink.completions.back().bytes, 20u);
  EXPECT_EQ(rx[19], 0x33);
  EXPECT_EQ(p.side.sink.terminated, 0);
}

TEST(QpRxWholeTest, AnUnparsableHeaderIsLeftToTheStreamPath) {
  Started p(false);
  Bytes bad = SendSegment(1, 0, true, 4);
  bad[1] = 0x03;  // RDMAP version 0
  EXPECT_FALSE(p.side.qp->TakeWholeFpdu(bad));
  EXPECT_EQ(p.side.sink.terminated, 0);
  EXPECT_FALSE(p.side.qp->TakeWholeFpdu(Bytes{0x41}));  // shorter than the control bytes
  EXPECT_EQ(p.side.sink.terminated, 0);
}

TEST(QpRxWholeTest, AWrongMsnTakenWholeTerminatesNamingTheSegmentAndItsLength) {
  Started p(false);
  Bytes rx(64, 0);
  p.Post(7, rx);
  const Bytes send = SendSegment(5, 0, true, 20);  // MSN 1 is expected
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(send));
  EXPECT_EQ(p.side.sink.terminated, 1);
  EXPECT_EQ(p.side.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(p.side.sink.term_cause, wire::term::kDdpUntaggedMsnRange);
  EXPECT_EQ(p.side.sink.Count(Kind::kRecv), 0u);
  EXPECT_EQ(rx[0], 0);
  p.Drive();
  const auto ulpdus = p.ReadUlpdus();
  ASSERT_FALSE(ulpdus.empty());
  auto seg = wire::ParseSegment(ulpdus.back());
  ASSERT_TRUE(seg.ok());
  ASSERT_EQ(seg->opcode, wire::RdmapOpcode::kTerminate);
  auto th = wire::DecodeTerminate(std::get<wire::TerminateBodyView>(seg->body).bytes);
  ASSERT_TRUE(th.ok());
  EXPECT_TRUE(th->m);
  EXPECT_TRUE(th->d);
  EXPECT_EQ(th->ddp_segment_length, send.size());
  ASSERT_EQ(th->ddp_header.size(), 18u);
  EXPECT_EQ(0, std::memcmp(th->ddp_header.data(), send.data(), 18));
}

TEST(QpRxWholeTest, AWriteTakenWholeIsPlacedOnlyWithRemoteWriteRights) {
  Started p(false);
  Bytes region(256, 0);
  const uint32_t rw = p.side.Register(region, mem::kRemoteWrite, 0x1000);
  Bytes w(14 + 32, 0x77);
  ASSERT_TRUE(wire::EncodeWriteHeader(rw, 0x1010, true, w).ok());
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(w));
  EXPECT_EQ(region[0x0F], 0);
  EXPECT_EQ(region[0x10], 0x77);
  EXPECT_EQ(region[0x2F], 0x77);
  EXPECT_EQ(region[0x30], 0);
  ASSERT_EQ(p.side.sink.remote_writes.size(), 1u);
  EXPECT_EQ(p.side.sink.remote_writes[0].first, rw);
  // Read-only memory: refused with a Terminate, nothing written.
  Bytes ro_region(64, 0);
  const uint32_t ro = p.side.Register(ro_region, mem::kRemoteRead, 0x8000);
  Bytes w2(14 + 8, 0x66);
  ASSERT_TRUE(wire::EncodeWriteHeader(ro, 0x8000, true, w2).ok());
  ASSERT_TRUE(p.side.qp->TakeWholeFpdu(w2));
  EXPECT_EQ(p.side.sink.terminated, 1);
  EXPECT_EQ(ro_region[0], 0);
  // A QP in Terminate takes nothing more.
  EXPECT_FALSE(p.side.qp->TakeWholeFpdu(w));
}

}  // namespace
}  // namespace iwarpx::qp::test
