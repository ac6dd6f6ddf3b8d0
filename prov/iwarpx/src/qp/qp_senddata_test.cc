// Send with Immediate Data (the iwarpx extension of docs/wire.md, libfabric
// fi_senddata): the Send's last segment announces the Immediate Data message
// that follows it; the target completes the Send's one receive with the data.
// Only on a QP whose MPA exchange agreed on it (MpaOutcome::send_imm).
#include <algorithm>
#include <cstring>
#include <random>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;
using ::iwarpx::testing::RandomBytes;

// A started pair with small FPDUs, both sides agreeing on send_imm.
struct ImmPair : QpPair {
  explicit ImmPair(bool send_imm = true) : QpPair(7, true, Config()) {
    a.Recreate(send_imm);
    b.Recreate(send_imm);
    Start();
    Pump();
  }
  static QpConfig Config() {
    QpConfig cfg;
    cfg.max_fpdu_payload = 512;
    return cfg;
  }
};

QpStatus PostSendData(Side& s, uint64_t context, const Bytes& data, uint64_t imm) {
  SendWr wr;
  wr.context = context;
  if (!data.empty()) wr.sgl.Add(const_cast<uint8_t*>(data.data()), data.size());
  wr.with_imm = true;
  wr.imm = imm;
  return s.qp->PostSend(wr);
}

QpStatus PostRecvBuf(Side& s, uint64_t context, Bytes& buf) {
  RecvWr wr;
  wr.context = context;
  wr.sgl.Add(buf.data(), buf.size());
  return s.qp->PostRecv(wr);
}

TEST(QpSendDataTest, ZeroOneAndMultiSegmentSizes) {
  ImmPair p;
  std::mt19937 rng(5);
  const std::vector<Bytes> msgs = {Bytes{}, RandomBytes(rng, 1), RandomBytes(rng, 3000)};
  std::vector<Bytes> bufs(msgs.size(), Bytes(4096, 0xEE));
  for (size_t i = 0; i < msgs.size(); ++i) {
    ASSERT_EQ(PostRecvBuf(p.b, 10 + i, bufs[i]), QpStatus::kOk);
  }
  for (size_t i = 0; i < msgs.size(); ++i) {
    ASSERT_EQ(PostSendData(p.a, i, msgs[i], 0xA000000000000000ull + i), QpStatus::kOk);
  }
  p.Pump();
  ASSERT_EQ(p.b.sink.completions.size(), msgs.size());
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Completion& c = p.b.sink.completions[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(c.kind, Kind::kRecv);
    EXPECT_EQ(c.context, 10 + i);
    EXPECT_EQ(c.bytes, msgs[i].size());
    EXPECT_TRUE(c.recv.has_imm);
    EXPECT_TRUE(c.recv.send_imm);
    EXPECT_EQ(c.recv.imm, 0xA000000000000000ull + i);
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin()));
    EXPECT_EQ(bufs[i][msgs[i].size()], 0xEE);  // nothing past the message
  }
  ASSERT_EQ(p.a.sink.Count(Kind::kSend), msgs.size());
  EXPECT_EQ(p.a.sink.terminated, 0);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

TEST(QpSendDataTest, InterleavesWithPlainSendsAndWriteData) {
  ImmPair p;
  Bytes target(256, 0);
  const uint32_t stag = p.b.Register(target, mem::kRemoteWrite, 0);
  const Bytes d1(100, 1);
  const Bytes d2(50, 2);
  const Bytes d3(200, 3);
  const Bytes d5(10, 5);
  std::vector<Bytes> bufs(6, Bytes(1024, 0));
  for (uint64_t c = 0; c < 6; ++c) ASSERT_EQ(PostRecvBuf(p.b, c, bufs[c]), QpStatus::kOk);
  ASSERT_EQ(PostSendData(p.a, 100, d1, 11), QpStatus::kOk);
  SendWr plain;
  plain.context = 101;
  plain.sgl.Add(const_cast<uint8_t*>(d2.data()), d2.size());
  ASSERT_EQ(p.a.qp->PostSend(plain), QpStatus::kOk);
  WriteWr w;
  w.context = 102;
  w.sgl.Add(const_cast<uint8_t*>(d3.data()), d3.size());
  w.remote_stag = stag;
  w.with_imm = true;
  w.imm = 33;
  ASSERT_EQ(p.a.qp->PostWrite(w), QpStatus::kOk);
  ASSERT_EQ(PostSendData(p.a, 103, Bytes{}, 44), QpStatus::kOk);
  plain.context = 104;
  plain.sgl = {};
  plain.sgl.Add(const_cast<uint8_t*>(d5.data()), d5.size());
  ASSERT_EQ(p.a.qp->PostSend(plain), QpStatus::kOk);
  ASSERT_EQ(PostSendData(p.a, 105, d1, 66), QpStatus::kOk);
  p.Pump();
  const auto& c = p.b.sink.completions;
  ASSERT_EQ(c.size(), 6u);
  for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(c[i].context, i);
  EXPECT_EQ(c[0].bytes, 100u);
  EXPECT_TRUE(c[0].recv.send_imm);
  EXPECT_EQ(c[0].recv.imm, 11u);
  EXPECT_EQ(c[1].bytes, 50u);
  EXPECT_FALSE(c[1].recv.has_imm);
  EXPECT_EQ(c[2].bytes, 0u);  // writedata: its own receive, no Send bytes
  EXPECT_TRUE(c[2].recv.has_imm);
  EXPECT_FALSE(c[2].recv.send_imm);
  EXPECT_EQ(c[2].recv.imm, 33u);
  EXPECT_TRUE(std::equal(d3.begin(), d3.end(), target.begin()));
  EXPECT_EQ(c[3].bytes, 0u);
  EXPECT_TRUE(c[3].recv.send_imm);
  EXPECT_EQ(c[3].recv.imm, 44u);
  EXPECT_EQ(c[4].bytes, 10u);
  EXPECT_FALSE(c[4].recv.has_imm);
  EXPECT_EQ(c[5].bytes, 100u);
  EXPECT_EQ(c[5].recv.imm, 66u);
  EXPECT_TRUE(
      std::all_of(bufs[5].begin(), bufs[5].begin() + 100, [](uint8_t v) { return v == 1; }));
  EXPECT_EQ(p.a.sink.Count(Kind::kSend), 5u);
  EXPECT_EQ(p.a.sink.Count(Kind::kRdma), 1u);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

TEST(QpSendDataTest, NoReceivePostedHoldsThenResumes) {
  ImmPair p;
  std::mt19937 rng(9);
  const Bytes d1 = RandomBytes(rng, 2000);
  const Bytes d2 = RandomBytes(rng, 30);
  ASSERT_EQ(PostSendData(p.a, 1, d1, 7), QpStatus::kOk);
  SendWr plain;
  plain.sgl.Add(const_cast<uint8_t*>(d2.data()), d2.size());
  ASSERT_EQ(p.a.qp->PostSend(plain), QpStatus::kOk);
  p.Pump();
  EXPECT_FALSE(p.b.qp->wants_read());
  EXPECT_GT(p.b.conn->pending(), 0u);
  EXPECT_TRUE(p.b.sink.completions.empty());
  Bytes r1(4096);
  Bytes r2(64);
  ASSERT_EQ(PostRecvBuf(p.b, 1, r1), QpStatus::kOk);
  p.Pump();
  // One receive takes the Send and its Immediate Data; the plain Send waits.
  ASSERT_EQ(p.b.sink.completions.size(), 1u);
  EXPECT_EQ(p.b.sink.completions[0].bytes, 2000u);
  EXPECT_EQ(p.b.sink.completions[0].recv.imm, 7u);
  EXPECT_TRUE(std::equal(d1.begin(), d1.end(), r1.begin()));
  EXPECT_FALSE(p.b.qp->wants_read());
  ASSERT_EQ(PostRecvBuf(p.b, 2, r2), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.completions.size(), 2u);
  EXPECT_EQ(p.b.sink.completions[1].bytes, 30u);
  EXPECT_FALSE(p.b.sink.completions[1].recv.has_imm);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

TEST(QpSendDataTest, NotNegotiatedIsRefusedAtPost) {
  ImmPair p(false);
  EXPECT_EQ(PostSendData(p.a, 1, Bytes(4, 1), 1), QpStatus::kNotNegotiated);
  p.Pump();
  EXPECT_TRUE(p.a.sink.completions.empty());
  EXPECT_EQ(p.b.conn->pending(), 0u);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
}

// The sender's wire: Send (L=1, RsvdULP 1, MSN n), Immediate Data (MSN n+1),
// and a plain Send after them uses MSN n+2.
TEST(QpSendDataWireTest, SendCarriesFlagThenImmediateData) {
  RawPeer peer(true);
  peer.side.Recreate(true);
  peer.side.qp->Start();
  peer.WriteUlpdu(Rtr());
  peer.Drive();
  const Bytes d(3, 9);
  ASSERT_EQ(PostSendData(peer.side, 1, d, 0x0102030405060708ull), QpStatus::kOk);
  SendWr plain;
  plain.sgl.Add(const_cast<uint8_t*>(d.data()), d.size());
  ASSERT_EQ(peer.side.qp->PostSend(plain), QpStatus::kOk);
  peer.Drive();
  const auto ulpdus = peer.ReadUlpdus();
  ASSERT_EQ(ulpdus.size(), 3u);
  auto send = wire::ParseSegment(ulpdus[0], wire::ParseOptions{.accept_send_imm = true});
  ASSERT_TRUE(send.ok());
  EXPECT_EQ(send->opcode, wire::RdmapOpcode::kSend);
  EXPECT_TRUE(send->ddp.last);
  EXPECT_EQ(send->ddp.rsvd_ulp1_4, wire::kSendImmFollows);
  EXPECT_EQ(send->ddp.msn, 1u);
  EXPECT_EQ(send->payload.size(), 3u);
  EXPECT_FALSE(wire::ParseSegment(ulpdus[0]).ok());  // a standard parser refuses it
  auto imm = wire::ParseSegment(ulpdus[1]);
  ASSERT_TRUE(imm.ok());
  EXPECT_EQ(imm->opcode, wire::RdmapOpcode::kImmediateData);
  EXPECT_EQ(imm->ddp.msn, 2u);
  EXPECT_EQ(std::get<wire::ImmediateDataBody>(imm->body).data, 0x0102030405060708ull);
  auto next = wire::ParseSegment(ulpdus[2]);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->ddp.rsvd_ulp1_4, 0u);
  EXPECT_EQ(next->ddp.msn, 3u);
  EXPECT_EQ(peer.side.sink.Count(Kind::kSend), 2u);
}

// A responder (send_imm as told) with two posted receives, after the RTR.
struct ArmedImm : RawPeer {
  Bytes r1 = Bytes(64, 0);
  Bytes r2 = Bytes(64, 0);
  explicit ArmedImm(bool send_imm) : RawPeer(true) {
    side.Recreate(send_imm);
    side.qp->Start();
    WriteUlpdu(Rtr());
    Drive();
    (void)PostRecvBuf(side, 1, r1);
    (void)PostRecvBuf(side, 2, r2);
  }
  // The one ULPDU the QP sent must be a Terminate with `want`.
  void ExpectTerminate(wire::TermCause want) {
    EXPECT_EQ(side.sink.terminated, 1);
    EXPECT_EQ(side.sink.term_origin, TermOrigin::kSent);
    EXPECT_EQ(side.sink.term_cause, want);
    EXPECT_EQ(side.sink.Count(Kind::kRecv), 0u);
    EXPECT_EQ(side.sink.Count(Kind::kError), 2u);  // the held receive is flushed too
    const auto ulpdus = ReadUlpdus();
    ASSERT_EQ(ulpdus.size(), 1u);
    auto seg = wire::ParseSegment(ulpdus[0]);
    ASSERT_TRUE(seg.ok());
    ASSERT_EQ(seg->opcode, wire::RdmapOpcode::kTerminate);
    auto th = wire::DecodeTerminate(std::get<wire::TerminateBodyView>(seg->body).bytes);
    ASSERT_TRUE(th.ok());
    EXPECT_EQ(th->cause, want);
  }
};

TEST(QpSendDataRxTest, TaggedTrafficBetweenSendAndImmediateData) {
  ArmedImm peer(true);
  Bytes target(16, 0);
  const uint32_t stag = peer.side.Register(target, mem::kRemoteWrite, 0);
  peer.WriteUlpdu(SendSegment(1, 0, false, 5, 0x11));
  peer.WriteUlpdu(SendSegment(1, 5, true, 4, 0x22, true));
  Bytes write(14 + 4, 0x77);
  (void)wire::EncodeWriteHeader(stag, 0, true, write);
  peer.WriteUlpdu(write);
  peer.Drive();
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 0u);  // waiting for the Immediate Data
  EXPECT_EQ(target[0], 0x77);
  peer.WriteUlpdu(ImmediateSegment(2, 99));
  peer.WriteUlpdu(SendSegment(3, 0, true, 2, 0x33));
  peer.Drive();
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 2u);
  const Completion& c = peer.side.sink.completions[0];
  EXPECT_EQ(c.context, 1u);
  EXPECT_EQ(c.bytes, 9u);
  EXPECT_TRUE(c.recv.send_imm);
  EXPECT_EQ(c.recv.imm, 99u);
  EXPECT_EQ(peer.r1[4], 0x11);
  EXPECT_EQ(peer.r1[5], 0x22);
  EXPECT_EQ(peer.side.sink.completions[1].context, 2u);
  EXPECT_EQ(peer.side.sink.completions[1].bytes, 2u);
  EXPECT_EQ(peer.side.sink.terminated, 0);
}

TEST(QpSendDataRxTest, FlaggedSendFollowedBySendTerminates) {
  ArmedImm peer(true);
  peer.WriteUlpdu(SendSegment(1, 0, true, 4, 0x42, true));
  peer.WriteUlpdu(SendSegment(2, 0, true, 4));
  peer.Drive();
  peer.ExpectTerminate(wire::term::kRdmapUnexpectedOpcode);
}

TEST(QpSendDataRxTest, ImmediateDataWithWrongMsnTerminates) {
  ArmedImm peer(true);
  peer.WriteUlpdu(SendSegment(1, 0, true, 4, 0x42, true));
  peer.WriteUlpdu(ImmediateSegment(3, 1));
  peer.Drive();
  peer.ExpectTerminate(wire::term::kDdpUntaggedMsnRange);
}

TEST(QpSendDataRxTest, FlaggedSendRefusedWithoutNegotiation) {
  ArmedImm peer(false);
  peer.WriteUlpdu(SendSegment(1, 0, true, 4, 0x42, true));
  peer.WriteUlpdu(ImmediateSegment(2, 1));
  peer.Drive();
  peer.ExpectTerminate(wire::TerminateCauseFor(wire::WireError::kRdmapBadHeaderForOpcode));
}

TEST(QpSendDataRxTest, FlagOnNonLastSegmentRefusedEvenWhenNegotiated) {
  ArmedImm peer(true);
  Bytes seg = SendSegment(1, 0, false, 4);
  seg[5] = 1;  // RsvdULP[1..4] = 1 on L=0
  peer.WriteUlpdu(seg);
  peer.Drive();
  peer.ExpectTerminate(wire::TerminateCauseFor(wire::WireError::kRdmapBadHeaderForOpcode));
}

}  // namespace
}  // namespace iwarpx::qp::test
