// Step 4: bad input from the peer (corrupt CRC, bad headers, Terminate,
// close mid-message) and local Disconnect. Raw bytes are written straight into
// the fake connection.
#include <algorithm>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"
#include "wire/markers.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;

// A responder with two posted receives and one posted Send, after the RTR.
struct Armed : RawPeer {
  Bytes r1 = Bytes(64);
  Bytes r2 = Bytes(64);
  Bytes s1 = Bytes(8, 1);
  explicit Armed(bool crc_on) : RawPeer(crc_on) {
    side.qp->Start();
    WriteUlpdu(Rtr());
    Drive();
    RecvWr w;
    w.context = 1;
    w.sgl.Add(r1.data(), r1.size());
    (void)side.qp->PostRecv(w);
    w.context = 2;
    w.sgl = {};
    w.sgl.Add(r2.data(), r2.size());
    (void)side.qp->PostRecv(w);
  }
  [[nodiscard]] size_t Errors() const { return side.sink.Count(Kind::kError); }
};

TEST(QpBadInputTest, CrcErrorSendsLlpTerminateAndFlushes) {
  Armed peer(true);
  const uint64_t fpdus_before = peer.side.qp->rx_stats().fpdus;  // the setup's
  Bytes fpdu = RawPeer::Fpdu(SendSegment(1, 0, true, 20), true);
  fpdu[25] ^= 0x01;  // corrupt one payload byte
  peer.WriteBytes(fpdu);
  peer.Drive();
  EXPECT_EQ(peer.side.sink.terminated, 1);
  EXPECT_EQ(peer.side.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(peer.side.sink.term_cause, wire::term::kLlpCrcError);
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 0u);  // placed bytes never reported
  EXPECT_EQ(peer.Errors(), 2u);
  const auto ulpdus = peer.ReadUlpdus();
  ASSERT_EQ(ulpdus.size(), 1u);
  auto seg = wire::ParseSegment(ulpdus[0]);
  ASSERT_TRUE(seg.ok());
  ASSERT_EQ(seg->opcode, wire::RdmapOpcode::kTerminate);
  auto th = wire::DecodeTerminate(std::get<wire::TerminateBodyView>(seg->body).bytes);
  ASSERT_TRUE(th.ok());
  EXPECT_EQ(th->cause, wire::term::kLlpCrcError);
  EXPECT_FALSE(th->d);  // LLP causes carry no header
  EXPECT_EQ(peer.side.qp->state(), QpState::kError);
  EXPECT_EQ(peer.raw->RecvV({}).status, transport::IoStatus::kOk);
  EXPECT_FALSE(peer.side.qp->wants_read());
  // Counted (fi_iwarpx_ep_stats mpa_bad_crc): one bad FPDU, none completed.
  EXPECT_EQ(peer.side.qp->rx_stats().bad_crc, 1u);
  EXPECT_EQ(peer.side.qp->rx_stats().fpdus, fpdus_before);
}

TEST(QpBadInputTest, CrcIgnoredWhenNotNegotiated) {
  Armed peer(false);
  const qp::RxStats before = peer.side.qp->rx_stats();  // the setup's
  Bytes fpdu = RawPeer::Fpdu(SendSegment(1, 0, true, 20), false);
  fpdu[fpdu.size() - 1] ^= 0xFF;  // CRC field: ignored
  peer.WriteBytes(fpdu);
  peer.Drive();
  EXPECT_EQ(peer.side.sink.terminated, 0);
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(peer.side.qp->rx_stats().bad_crc, 0u);
  const qp::RxStats& after = peer.side.qp->rx_stats();
  EXPECT_EQ(after.fpdus, before.fpdus + 1);
  EXPECT_EQ(after.direct_bytes + after.staged_copies,
            before.direct_bytes + before.staged_copies + 20);
}

struct BadCase {
  const char* name;
  Bytes ulpdu;
  wire::TermCause want;
};

TEST(QpBadInputTest, HeaderErrorsMapToTerminateCauses) {
  std::vector<BadCase> cases;
  cases.push_back({"wrong MSN", SendSegment(2, 0, true, 4), wire::term::kDdpUntaggedMsnRange});
  cases.push_back({"wrong MO", SendSegment(1, 8, true, 4), wire::term::kDdpUntaggedInvalidMo});
  Bytes bad_op = SendSegment(1, 0, true, 4);
  bad_op[1] = static_cast<uint8_t>((bad_op[1] & 0xF0) | 0x0C);
  cases.push_back({"reserved opcode", bad_op, wire::term::kRdmapUnexpectedOpcode});
  Bytes bad_qn = SendSegment(1, 0, true, 4);
  bad_qn[9] = 5;
  cases.push_back({"bad QN", bad_qn, wire::term::kDdpUntaggedInvalidQn});
  Bytes atomic(18 + 52);
  (void)wire::EncodeAtomicRequest(1, wire::AtomicRequestBody{}, atomic);
  cases.push_back({"atomic on unknown STag", atomic, wire::term::kRdmapInvalidStag});
  Bytes imm(18 + 8);
  (void)wire::EncodeImmediateData(false, 3, 7, imm);
  cases.push_back({"immediate data wrong MSN", imm, wire::term::kDdpUntaggedMsnRange});
  Bytes resp(14 + 4);
  (void)wire::EncodeReadResponseHeader(5, 0, true, resp);
  cases.push_back({"unexpected read response", resp, wire::term::kRdmapUnexpectedOpcode});
  for (const BadCase& c : cases) {
    Armed peer(true);
    peer.WriteUlpdu(c.ulpdu);
    peer.Drive();
    EXPECT_EQ(peer.side.sink.term_cause, c.want) << c.name;
    EXPECT_EQ(peer.side.sink.term_origin, TermOrigin::kSent) << c.name;
    EXPECT_EQ(peer.Errors(), 2u) << c.name;
    const auto ulpdus = peer.ReadUlpdus();
    ASSERT_EQ(ulpdus.size(), 1u) << c.name;
    auto seg = wire::ParseSegment(ulpdus[0]);
    ASSERT_TRUE(seg.ok()) << c.name;
    EXPECT_EQ(seg->opcode, wire::RdmapOpcode::kTerminate) << c.name;
  }
}

TEST(QpBadInputTest, ReceivedTerminateFlushesWithDecodedCause) {
  Armed peer(true);
  Bytes term(18 + 4);
  ASSERT_TRUE(
      wire::EncodeTerminateSegment(1, wire::MakeTerminate(wire::term::kRdmapOpUnspecified), term)
          .ok());
  peer.WriteUlpdu(term);
  peer.Drive();
  EXPECT_EQ(peer.side.sink.terminated, 1);
  EXPECT_EQ(peer.side.sink.term_origin, TermOrigin::kReceived);
  EXPECT_EQ(peer.side.sink.term_cause, wire::term::kRdmapOpUnspecified);
  ASSERT_EQ(peer.Errors(), 2u);
  EXPECT_EQ(peer.side.sink.completions[0].error.origin, TermOrigin::kReceived);
  EXPECT_EQ(peer.side.qp->state(), QpState::kError);
  EXPECT_TRUE(peer.ReadUlpdus().empty());  // no Terminate answers a Terminate
}

TEST(QpBadInputTest, PeerCloseMidMessageFlushes) {
  Armed peer(true);
  SendWr wr;
  wr.context = 9;
  wr.sgl.Add(peer.s1.data(), peer.s1.size());
  const Bytes fpdu = RawPeer::Fpdu(SendSegment(1, 0, true, 30), true);
  peer.WriteBytes(Bytes(fpdu.begin(), fpdu.begin() + 25));
  peer.Drive();
  EXPECT_EQ(peer.side.sink.terminated, 0);
  (void)peer.raw->ShutdownWrite();
  peer.Drive();
  EXPECT_EQ(peer.side.sink.terminated, 1);
  EXPECT_EQ(peer.side.sink.term_origin, TermOrigin::kConnectionLost);
  EXPECT_EQ(peer.side.sink.term_cause, wire::term::kLlpStreamLost);
  EXPECT_EQ(peer.Errors(), 2u);
  EXPECT_EQ(peer.side.qp->state(), QpState::kError);
  EXPECT_EQ(peer.side.qp->PostSend(wr), QpStatus::kBadState);
}

TEST(QpBadInputTest, ResetFlushesSendQueue) {
  QpPair p(0, true);
  p.Start();
  p.Pump();
  Bytes buf(100);
  SendWr wr;
  wr.context = 4;
  wr.sgl.Add(buf.data(), buf.size());
  p.a.conn->Reset();
  ASSERT_EQ(p.a.qp->PostSend(wr), QpStatus::kOk);
  EXPECT_EQ(p.a.sink.terminated, 1);
  EXPECT_EQ(p.a.sink.term_origin, TermOrigin::kConnectionLost);
  ASSERT_EQ(p.a.sink.completions.size(), 1u);
  EXPECT_EQ(p.a.sink.completions[0].kind, Kind::kError);
  EXPECT_EQ(p.a.sink.completions[0].context, 4u);
}

TEST(QpBadInputTest, OversizedControlSegmentTerminates) {
  Armed peer(true);
  // A Read Request whose ULPDU claims 200 bytes: larger than the body allows.
  Bytes rr(200, 0);
  wire::ReadRequestBody body;
  (void)wire::EncodeReadRequest(1, body, rr);
  peer.WriteUlpdu(rr);
  peer.Drive();
  EXPECT_EQ(peer.side.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(peer.side.qp->state(), QpState::kError);
}

TEST(QpInvalidateTest, SendWithInvalidateInvalidatesOrTerminates) {
  for (const bool valid : {true, false}) {
    Armed peer(true);
    Bytes region(32);
    const uint32_t stag = peer.side.Register(region, mem::kRemoteWrite, 0);
    Bytes b(18 + 4, 0x10);
    wire::SendParams sp;
    sp.invalidate = true;
    sp.invalidate_stag = valid ? stag : stag ^ 0x40;
    ASSERT_TRUE(wire::EncodeSendHeader(sp, b).ok());
    peer.WriteUlpdu(b);
    peer.Drive();
    if (valid) {
      ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 1u);
      EXPECT_TRUE(peer.side.sink.completions[0].recv.invalidated);
      EXPECT_EQ(peer.side.sink.completions[0].recv.invalidated_stag, stag);
      EXPECT_FALSE(peer.side.stags.Resolve(stag, 0, 1, mem::kRemoteWrite, kPd).ok());
    } else {
      EXPECT_EQ(peer.side.sink.term_cause, wire::term::kRdmapCannotInvalidateOp);
      EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 0u);
      EXPECT_EQ(peer.Errors(), 2u);
    }
  }
}

// MPA rev 1 (no RTR): the responder is established at once but sends nothing
// until the initiator's first FPDU arrives.
TEST(QpStartRev1Test, ResponderHoldsTxUntilFirstFpdu) {
  auto conns = ::iwarpx::testing::MakeFakeConnectionPair();
  mem::StagTable t(Random(3), 4);
  RecordingSink sink;
  wire::MpaOutcome o;
  o.role = wire::MpaRole::kResponder;
  o.revision = 1;
  o.hold_tx_until_first_fpdu = true;
  QpConfig cfg;
  cfg.role = wire::MpaRole::kResponder;
  auto qp = QueuePair::Create(*conns.second, t, kPd, o, cfg, sink);
  ASSERT_TRUE(qp.ok());
  (*qp)->Start();
  EXPECT_EQ(sink.established, 1);
  Bytes buf(4, 1), rbuf(16);
  RecvWr rwr;
  rwr.sgl.Add(rbuf.data(), rbuf.size());
  ASSERT_EQ((*qp)->PostRecv(rwr), QpStatus::kOk);
  SendWr wr;
  wr.sgl.Add(buf.data(), buf.size());
  ASSERT_EQ((*qp)->PostSend(wr), QpStatus::kOk);
  EXPECT_EQ(conns.first->pending(), 0u);
  const Bytes first = RawPeer::Fpdu(SendSegment(1, 0, true, 3), false);
  const iovec v{const_cast<uint8_t*>(first.data()), first.size()};
  ASSERT_TRUE(conns.first->SendV(std::span<const iovec>(&v, 1)).ok());
  (*qp)->OnReadable();
  EXPECT_EQ(sink.Count(Kind::kRecv), 1u);
  EXPECT_GT(conns.first->pending(), 0u);
  EXPECT_EQ(sink.Count(Kind::kSend), 1u);
}

// Markers towards us (the peer asked for them, RFC 5044 §4.2): the receiver
// strips them wherever they fall, inside headers and payloads included.
TEST(QpMarkersTest, ReceivesMarkedStream) {
  for (const bool crc : {false, true}) {
    auto conns = ::iwarpx::testing::MakeFakeConnectionPair(5);
    mem::StagTable t(Random(3), 4);
    RecordingSink sink;
    wire::MpaOutcome o = MakeOutcome(wire::MpaRole::kResponder, crc, 1, 1);
    o.markers_rx = true;
    QpConfig cfg;
    cfg.role = wire::MpaRole::kResponder;
    cfg.rq_size = 64;
    auto qp = QueuePair::Create(*conns.second, t, kPd, o, cfg, sink);
    ASSERT_TRUE(qp.ok());
    (*qp)->Start();
    std::vector<Bytes> bufs(40, Bytes(200, 0));
    for (size_t i = 0; i < bufs.size(); ++i) {
      RecvWr w;
      w.context = i;
      w.sgl.Add(bufs[i].data(), bufs[i].size());
      ASSERT_EQ((*qp)->PostRecv(w), QpStatus::kOk);
    }
    wire::MarkerInserter ins;
    Bytes stream;
    auto add = [&](const Bytes& ulpdu) {
      Bytes plain = RawPeer::Fpdu(ulpdu, crc);
      plain.resize(plain.size() - 4);  // body without the CRC field
      Bytes out(ins.MarkedSize(plain.size()));
      auto n = ins.Insert(plain, crc, out);
      ASSERT_TRUE(n.ok());
      out.resize(*n);
      stream.insert(stream.end(), out.begin(), out.end());
    };
    add(Rtr());
    for (uint32_t i = 0; i < bufs.size(); ++i) {
      add(SendSegment(i + 1, 0, true, 3 + (i * 37) % 190, static_cast<uint8_t>(i)));
    }
    size_t off = 0;
    while (off < stream.size()) {
      const iovec part{stream.data() + off, stream.size() - off};
      auto r = conns.first->SendV(std::span<const iovec>(&part, 1));
      ASSERT_TRUE(r.ok());
      off += r.bytes;
    }
    // OnReadable() ends after a short RecvV (the fake splits at 5 bytes):
    // call it while bytes are pending, as a poller would on readiness.
    for (int i = 0; i < 10000 && (conns.second->pending() > 0 || (*qp)->wants_progress()); ++i) {
      (*qp)->OnReadable();
    }
    ASSERT_EQ(sink.Count(Kind::kRecv), bufs.size()) << "crc " << crc;
    for (uint32_t i = 0; i < bufs.size(); ++i) {
      const size_t n = 3 + (i * 37) % 190;
      EXPECT_EQ(sink.completions[i].bytes, n);
      EXPECT_EQ(std::count(bufs[i].begin(), bufs[i].begin() + static_cast<long>(n),
                           static_cast<uint8_t>(i)),
                static_cast<long>(n));
    }
    EXPECT_EQ(sink.terminated, 0);
  }
}

TEST(QpDisconnectTest, LocalCloseFlushesAndPeerSeesLoss) {
  QpPair p(0, true);
  p.Start();
  p.Pump();
  Bytes buf(10);
  RecvWr rwr;
  rwr.context = 8;
  rwr.sgl.Add(buf.data(), buf.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostRecv(rwr), QpStatus::kOk);
  p.a.qp->Disconnect();
  EXPECT_EQ(p.a.qp->state(), QpState::kClosing);
  EXPECT_EQ(p.a.sink.term_origin, TermOrigin::kLocalClose);
  EXPECT_EQ(p.a.sink.Count(Kind::kError), 1u);
  p.Pump();
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
  EXPECT_EQ(p.b.sink.term_origin, TermOrigin::kConnectionLost);
  EXPECT_EQ(p.b.sink.Count(Kind::kError), 1u);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
}

}  // namespace
}  // namespace iwarpx::qp::test
