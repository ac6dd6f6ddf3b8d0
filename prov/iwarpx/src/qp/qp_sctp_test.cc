// The QueuePair over a message-preserving LLP (iWARP over SCTP, RFC 5043):
// qp/sctp_framing.h puts one DDP segment in each message (PPID 16, stream 0,
// no MPA bytes), the one engine does the rest; refused inbound messages end
// in a Terminate as on TCP. Runs over testing::FakeSctpConnection.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "testing/qp_sctp_harness.h"
#include "wire/ddp.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;

TEST(QpSctpTest, EachSegmentIsOneMessageWithoutMpaFraming) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 256;
  SctpPair p(cfg);
  p.Start();
  Bytes rbuf(1000);
  RecvWr r;
  r.context = 9;
  r.sgl.Add(rbuf.data(), rbuf.size());
  ASSERT_EQ(p.b.qp->PostRecv(r), QpStatus::kOk);
  std::mt19937 rng(3);
  const Bytes data = RandomBytes(rng, 1000);
  SendWr s;
  s.context = 5;
  s.sgl.Add(const_cast<uint8_t*>(data.data()), 600);        // NOLINT
  s.sgl.Add(const_cast<uint8_t*>(data.data()) + 600, 400);  // NOLINT
  ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(p.b.sink.completions[0].bytes, 1000u);
  EXPECT_EQ(rbuf, data);
  ASSERT_EQ(p.a.sink.Count(Kind::kSend), 1u);
  // 1000 bytes in segments of at most 256 - 18 = 238 payload bytes: five
  // messages, each exactly header + payload (no ULPDU_Length, pad or CRC).
  const auto& sent = p.a.conn->sent();
  ASSERT_EQ(sent.size(), 5u);
  size_t payload = 0;
  for (const auto& m : sent) {
    EXPECT_EQ(m.info.ppid, kSctpPpidDdpSegment);
    EXPECT_EQ(m.info.stream, 0u);
    EXPECT_FALSE(m.info.unordered);
    EXPECT_LE(m.size, 256u);
    payload += m.size - wire::kDdpUntaggedHeaderSize;
  }
  EXPECT_EQ(payload, 1000u);
}

TEST(QpSctpTest, WriteReadAndAtomicOverMessages) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 1000;
  SctpPair p(cfg);
  p.Start();
  std::mt19937 rng(7);
  const size_t n = 20000;
  Bytes target(n, 0);
  const uint32_t wstag = p.b.Register(target, mem::kRemoteWrite | mem::kRemoteRead, 0x10000);
  ASSERT_NE(wstag, 0u);
  const Bytes data = RandomBytes(rng, n);
  WriteWr w;
  w.context = 1;
  w.sgl.Add(const_cast<uint8_t*>(data.data()), n);  // NOLINT
  w.remote_stag = wstag;
  w.remote_to = 0x10000;
  ASSERT_EQ(p.a.qp->PostWrite(w), QpStatus::kOk);
  // Read it back into a local sink.
  Bytes back(n, 0);
  const uint32_t lstag = p.a.Register(back, mem::kLocalWrite, 0x20000);
  ReadWr rd;
  rd.context = 2;
  rd.local_stag = lstag;
  rd.local_to = 0x20000;
  rd.length = n;
  rd.remote_stag = wstag;
  rd.remote_to = 0x10000;
  ASSERT_EQ(p.a.qp->PostRead(rd), QpStatus::kOk);
  alignas(8) uint64_t word = 100;
  const uint32_t astag = p.b.RegisterRaw(&word, sizeof(word), mem::kRemoteAtomic, 0);
  uint64_t old = 0;
  AtomicWr at;
  at.context = 3;
  at.op = wire::AtomicOp::kFetchAdd;
  at.remote_stag = astag;
  at.remote_to = 0;
  at.operand = 23;
  at.result = &old;
  ASSERT_EQ(p.a.qp->PostAtomic(at), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(target, data);
  EXPECT_EQ(back, data);
  EXPECT_EQ(word, 123u);
  EXPECT_EQ(old, 100u);
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 3u);
  EXPECT_EQ(p.a.sink.Count(Kind::kError), 0u);
  EXPECT_EQ(p.b.sink.terminated, 0);
  // Everything on stream 0 but b's Read Responses, which go on the stream of
  // their sink STag (docs/wire.md §2.2): 1 + STag mod 7 with 8 streams.
  const auto rr_stream = static_cast<uint16_t>(1 + lstag % 7);
  for (const auto* side : {&p.a, &p.b}) {
    for (const auto& m : side->conn->sent()) {
      EXPECT_EQ(m.info.ppid, kSctpPpidDdpSegment);
      EXPECT_FALSE(m.info.unordered);
      // b sends the Read Response segments and one Atomic Response.
      const bool rr =
          side == &p.b && m.size != wire::kDdpUntaggedHeaderSize + wire::kAtomicResponseBodySize;
      EXPECT_EQ(m.info.stream, rr ? rr_stream : 0u);
      EXPECT_LE(m.size, 1000u);
    }
  }
}

TEST(QpSctpTest, BackpressureAndPartialDeliveryKeepOrder) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 512;
  SctpPair p(cfg);
  p.a.conn->set_send_capacity(2);   // the peer holds at most 2 unread messages
  p.a.conn->set_max_per_recv(100);  // every message arrives in pieces
  p.Start();
  constexpr size_t kMsgs = 20;
  std::vector<Bytes> rbufs(kMsgs, Bytes(3000, 0));
  for (size_t i = 0; i < kMsgs; ++i) {
    RecvWr r;
    r.context = i;
    r.sgl.Add(rbufs[i].data(), rbufs[i].size());
    ASSERT_EQ(p.b.qp->PostRecv(r), QpStatus::kOk);
  }
  std::mt19937 rng(11);
  std::vector<Bytes> data;
  for (size_t i = 0; i < kMsgs; ++i) data.push_back(RandomBytes(rng, 100 + 137 * i));
  for (size_t i = 0; i < kMsgs; ++i) {
    SendWr s;
    s.context = i;
    s.sgl.Add(data[i].data(), data[i].size());
    ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
  }
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), kMsgs);
  for (size_t i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(p.b.sink.completions[i].context, i);
    ASSERT_EQ(p.b.sink.completions[i].bytes, data[i].size());
    EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), rbufs[i].begin()));
  }
  EXPECT_EQ(p.a.sink.Count(Kind::kSend), kMsgs);
}

TEST(QpSctpTest, CreateRefusesMpaFramingOnSctp) {
  auto conns = MakeFakeSctpPair();
  SctpSide s(std::move(conns.first), 1);
  wire::MpaOutcome o = SctpOutcome(wire::MpaRole::kInitiator);
  o.crc = true;
  s.CreateWith(o, {});
  EXPECT_EQ(s.qp, nullptr);
  o.crc = false;
  o.markers_rx = true;
  s.CreateWith(o, {});
  EXPECT_EQ(s.qp, nullptr);
  o.markers_rx = false;
  s.CreateWith(o, {});
  EXPECT_NE(s.qp, nullptr);
}

// The adapter's send contract: whole images or nothing, a short count at an
// image boundary, and an incomplete first image is a caller bug.
TEST(SctpFramingTest, SendTakesWholeImagesOnly) {
  auto conns = MakeFakeSctpPair();
  SctpFraming f(*conns.first);
  auto image = [](size_t ulpdu, uint8_t fill) {
    Bytes b(wire::FpduWireLength(ulpdu), 0);
    b[0] = static_cast<uint8_t>(ulpdu >> 8);
    b[1] = static_cast<uint8_t>(ulpdu & 0xFF);
    std::fill_n(b.begin() + 2, ulpdu, fill);
    return b;
  };
  const Bytes one = image(30, 0x11);
  const Bytes two = image(45, 0x22);
  Bytes both(one);
  both.insert(both.end(), two.begin(), two.end());
  conns.first->set_send_capacity(1);  // room for one message
  const iovec v{both.data(), both.size()};
  transport::IoResult r = f.SendV(std::span<const iovec>(&v, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.bytes, one.size());  // the first image only, at its boundary
  r = f.SendV(std::span<const iovec>(&v, 1));
  EXPECT_EQ(r.status, transport::IoStatus::kWouldBlock);
  ASSERT_EQ(conns.second->pending(), 1u);
  EXPECT_EQ(conns.second->front().bytes, Bytes(30, 0x11));  // just the ULPDU
  EXPECT_EQ(conns.second->front().info.ppid, kSctpPpidDdpSegment);
  const iovec cut{both.data(), one.size() - 1};  // the first image, less its last byte
  conns.first->set_send_capacity(0);
  r = f.SendV(std::span<const iovec>(&cut, 1));
  EXPECT_EQ(r.status, transport::IoStatus::kError);
  EXPECT_EQ(r.err, EMSGSIZE);
  EXPECT_EQ(f.messages_sent(), 1u);
}

TEST(QpSctpBadInputTest, WrongPpidTerminates) {
  SctpRawPeer peer;
  peer.Inject(SendSegment(1, 0, true, 20), 17);  // a session control PPID after setup
  peer.Drive();
  peer.ExpectTerminate(wire::term::kLlpInvalidReqRep);
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 0u);
}

TEST(QpSctpBadInputTest, UnknownSessionMessageTerminates) {
  SctpRawPeer peer;
  peer.Inject({0x00, 0x63, 0x00, 0x00}, 17);  // Function Code 99, no private data
  peer.Drive();
  peer.ExpectTerminate(wire::term::kLlpInvalidReqRep);
}

TEST(QpSctpBadInputTest, SegmentShorterThanDdpHeaderTerminates) {
  {
    SctpRawPeer peer;
    Bytes seg = SendSegment(1, 0, true, 0);
    seg.resize(10);  // shorter than any DDP header
    peer.Inject(seg);
    peer.Drive();
    peer.ExpectTerminate(wire::term::kLlpMarkerMismatch);  // as a short FPDU on TCP
  }
  {
    SctpRawPeer peer;
    Bytes seg = SendSegment(1, 0, true, 0);
    seg.resize(16);  // a tagged header's worth, but an untagged segment
    peer.Inject(seg);
    peer.Drive();
    EXPECT_EQ(peer.side.sink.terminated, 1);
    EXPECT_EQ(peer.side.qp->term_stats().sent, 1u);
    EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 0u);
    EXPECT_EQ(peer.side.qp->state(), QpState::kError);
  }
}

TEST(QpSctpBadInputTest, MessageLongerThanAnyUlpduTerminates) {
  SctpRawPeer peer;
  peer.Inject(SendSegment(1, 0, true, wire::kMaxUlpduLength));  // 18 bytes too long
  peer.Drive();
  peer.ExpectTerminate(wire::term::kLlpMarkerMismatch);
}

TEST(QpSctpBadInputTest, GoodSegmentBeforeBadOneIsDelivered) {
  SctpRawPeer peer;
  peer.Inject(SendSegment(1, 0, true, 20, 0x33));
  peer.Inject(SendSegment(2, 0, true, 20, 0x44), 99);
  peer.Drive();
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(peer.side.sink.completions[0].context, 1u);
  EXPECT_EQ(peer.rbuf[0], 0x33);
  EXPECT_EQ(peer.side.sink.terminated, 1);
  EXPECT_EQ(peer.side.sink.term_cause, wire::term::kLlpInvalidReqRep);
  EXPECT_EQ(peer.side.sink.Count(Kind::kError), 1u);  // the second receive
}

TEST(QpSctpBadInputTest, ProtectionErrorTerminatesAsOnTcp) {
  SctpRawPeer peer;
  Bytes seg(wire::kDdpTaggedHeaderSize + 8, 0x11);
  ASSERT_TRUE(wire::EncodeWriteHeader(0xDEAD00, 0, true, seg).ok());  // unknown STag
  peer.Inject(seg);
  peer.Drive();
  peer.ExpectTerminate(wire::term::kDdpTaggedInvalidStag);
}

}  // namespace
}  // namespace iwarpx::qp::test
