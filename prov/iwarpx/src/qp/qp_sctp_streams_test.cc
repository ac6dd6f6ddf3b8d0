// Untagged Sends on several SCTP streams (SendWr::stream; docs/design.md
// "Streams for untagged Sends"): the sender puts each Send's segments on its
// stream and everything else on stream 0; the receiver places and completes
// every message as its segments arrive, whatever happens on other streams,
// consuming posted receives in arrival order; what a correct sender never
// produces on a stream ends in a Terminate. Runs over FakeSctpConnection,
// whose HoldStream() delays one stream's messages the way SCTP does while a
// chunk of that stream is retransmitted.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
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

// Send payload bytes per segment at max_fpdu_payload 1024.
constexpr size_t kSeg = 1006;

SendWr SendOn(uint64_t context, Bytes& data, uint16_t stream) {
  SendWr s;
  s.context = context;
  s.sgl.Add(data.data(), data.size());
  s.stream = stream;
  return s;
}

void PostRecvs(SctpSide& side, std::vector<Bytes>& bufs, uint64_t first_context) {
  for (size_t i = 0; i < bufs.size(); ++i) {
    RecvWr r;
    r.context = first_context + i;
    r.sgl.Add(bufs[i].data(), bufs[i].size());
    ASSERT_EQ(side.qp->PostRecv(r), QpStatus::kOk);
  }
}

std::vector<Completion> Recvs(const RecordingSink& sink) {
  std::vector<Completion> out;
  for (const Completion& c : sink.completions) {
    if (c.kind == Kind::kRecv) out.push_back(c);
  }
  return out;
}

TEST(QpSctpStreamsTest, SendSegmentsGoOnTheirStreamEverythingElseOnStreamZero) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 512;
  SctpPair p(cfg);
  p.Start();
  std::vector<Bytes> rbufs(2, Bytes(3000, 0));
  PostRecvs(p.b, rbufs, 10);
  std::mt19937 rng(5);
  Bytes target(2000, 0);
  const uint32_t stag = p.b.Register(target, mem::kRemoteWrite | mem::kRemoteRead, 0x4000);
  Bytes wdata = RandomBytes(rng, 2000);
  Bytes s1 = RandomBytes(rng, 2500);  // 6 segments of <= 494 payload bytes
  Bytes s0 = RandomBytes(rng, 300);
  WriteWr w;
  w.context = 1;
  w.sgl.Add(wdata.data(), wdata.size());
  w.remote_stag = stag;
  w.remote_to = 0x4000;
  ASSERT_EQ(p.a.qp->PostWrite(w), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendOn(2, s1, 3)), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendOn(3, s0, 0)), QpStatus::kOk);
  Bytes back(2000, 0);
  const uint32_t lstag = p.a.Register(back, mem::kLocalWrite, 0x8000);
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(4, lstag, 0x8000, 2000, stag, 0x4000)), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(target, wdata);
  EXPECT_EQ(back, wdata);
  const auto recvs = Recvs(p.b.sink);
  ASSERT_EQ(recvs.size(), 2u);
  EXPECT_EQ(recvs[0].bytes, s1.size());
  EXPECT_TRUE(std::equal(s1.begin(), s1.end(), rbufs[0].begin()));
  EXPECT_EQ(recvs[1].bytes, s0.size());
  EXPECT_TRUE(std::equal(s0.begin(), s0.end(), rbufs[1].begin()));
  // a sent: 5 Write segments, 6 Send segments on stream 3, 1 Send, 1 Read
  // Request; b: 5 Read Response segments. Only the stream-3 Send left 0.
  size_t on3 = 0;
  size_t on0 = 0;
  for (const auto& m : p.a.conn->sent()) {
    EXPECT_EQ(m.info.ppid, kSctpPpidDdpSegment);
    EXPECT_FALSE(m.info.unordered);
    (m.info.stream == 3 ? on3 : on0) += 1;
    EXPECT_TRUE(m.info.stream == 0 || m.info.stream == 3);
  }
  EXPECT_EQ(on3, 6u);
  EXPECT_EQ(on0, 5u + 1u + 1u);
  // b's Read Responses: on their sink STag's stream (docs/wire.md §2.2).
  for (const auto& m : p.b.conn->sent()) EXPECT_EQ(m.info.stream, 1 + lstag % 7);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

// Issue 8 item 3: a large message on one stream does not delay a small one
// on another. Counted, not timed: while the large Send is placed only in
// part (the rest of its stream held back, as behind a lost chunk), the small
// Send posted after it completes, and the receives are retired in order once
// the large one is in.
TEST(QpSctpStreamsTest, SmallSendOvertakesLargeOneHeldOnAnotherStream) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 1024;  // 1006 payload bytes per Send segment
  cfg.rq_size = 2;
  SctpPair p(cfg);
  p.Start();
  std::vector<Bytes> rbufs(2, Bytes(16384, 0));
  PostRecvs(p.b, rbufs, 100);
  std::mt19937 rng(9);
  Bytes large = RandomBytes(rng, 12 * kSeg);  // 12 segments
  Bytes small = RandomBytes(rng, 100);
  p.b.conn->HoldStream(1, 3);  // three segments of stream 1 get through
  ASSERT_EQ(p.a.qp->PostSend(SendOn(1, large, 1)), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendOn(2, small, 2)), QpStatus::kOk);
  p.Pump();
  auto recvs = Recvs(p.b.sink);
  ASSERT_EQ(recvs.size(), 1u);  // the small one; the large one is still open
  EXPECT_EQ(recvs[0].context, 101u);
  EXPECT_EQ(recvs[0].bytes, small.size());
  EXPECT_TRUE(std::equal(small.begin(), small.end(), rbufs[1].begin()));
  // The large Send claimed the first receive and is placed in part.
  EXPECT_TRUE(std::equal(large.begin(), large.begin() + static_cast<ptrdiff_t>(3 * kSeg),
                         rbufs[0].begin()));
  EXPECT_EQ(rbufs[0][3 * kSeg], 0);
  // Its receive is still open, so no slot is free yet.
  Bytes extra(10);
  RecvWr r;
  r.context = 102;
  r.sgl.Add(extra.data(), extra.size());
  EXPECT_EQ(p.b.qp->PostRecv(r), QpStatus::kQueueFull);
  p.b.conn->ReleaseStream(1);
  p.Pump();
  recvs = Recvs(p.b.sink);
  ASSERT_EQ(recvs.size(), 2u);
  EXPECT_EQ(recvs[1].context, 100u);
  EXPECT_EQ(recvs[1].bytes, large.size());
  EXPECT_TRUE(std::equal(large.begin(), large.end(), rbufs[0].begin()));
  // Both slots retired: two receives fit again.
  EXPECT_EQ(p.b.qp->PostRecv(r), QpStatus::kOk);
  r.context = 103;
  EXPECT_EQ(p.b.qp->PostRecv(r), QpStatus::kOk);
  EXPECT_EQ(p.b.sink.terminated, 0);
  EXPECT_EQ(p.a.sink.Count(Kind::kSend), 2u);
}

// The control: both Sends on stream 0, the same hold, and the small Send
// waits behind the large one (head-of-line blocking).
TEST(QpSctpStreamsTest, ControlOnOneStreamTheSmallSendWaits) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 1024;
  SctpPair p(cfg);
  p.Start();
  std::vector<Bytes> rbufs(2, Bytes(16384, 0));
  PostRecvs(p.b, rbufs, 100);
  std::mt19937 rng(9);
  Bytes large = RandomBytes(rng, 12 * kSeg);
  Bytes small = RandomBytes(rng, 100);
  p.b.conn->HoldStream(0, 3);
  ASSERT_EQ(p.a.qp->PostSend(SendOn(1, large, 0)), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendOn(2, small, 0)), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(Recvs(p.b.sink).size(), 0u);
  p.b.conn->ReleaseStream(0);
  p.Pump();
  const auto recvs = Recvs(p.b.sink);
  ASSERT_EQ(recvs.size(), 2u);
  EXPECT_EQ(recvs[0].context, 100u);  // MSN order
  EXPECT_EQ(recvs[0].bytes, large.size());
  EXPECT_EQ(recvs[1].context, 101u);
  EXPECT_EQ(recvs[1].bytes, small.size());
}

// Many Sends of random sizes over four streams, with streams held and
// released at random: each arrives exactly once and intact, the Sends of one
// stream complete in the order they were posted, and some completed out of
// MSN order (the holds did overtake).
TEST(QpSctpStreamsTest, RandomHoldsEveryMessageOnceAndInOrderPerStream) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 700;
  cfg.sq_size = 256;
  cfg.rq_size = 256;
  SctpPair p(cfg);
  p.Start();
  constexpr size_t kMsgs = 200;
  std::vector<Bytes> rbufs(kMsgs, Bytes(5000, 0));
  PostRecvs(p.b, rbufs, 0);
  std::mt19937 rng(17);
  std::vector<Bytes> data;
  std::vector<uint16_t> stream_of;
  for (size_t i = 0; i < kMsgs; ++i) {
    Bytes d = RandomBytes(rng, 8 + rng() % 4000);
    const uint64_t tag = i;
    std::memcpy(d.data(), &tag, sizeof(tag));
    data.push_back(std::move(d));
    stream_of.push_back(static_cast<uint16_t>(rng() % 4));
  }
  for (size_t i = 0; i < kMsgs; ++i) {
    if (rng() % 4 == 0) p.b.conn->HoldStream(static_cast<uint16_t>(rng() % 4));
    if (rng() % 3 == 0) p.b.conn->ReleaseStream(static_cast<uint16_t>(rng() % 4));
    ASSERT_EQ(p.a.qp->PostSend(SendOn(i, data[i], stream_of[i])), QpStatus::kOk);
    p.Pump();
  }
  for (uint16_t s = 0; s < 4; ++s) p.b.conn->ReleaseStream(s);
  p.Pump();
  const auto recvs = Recvs(p.b.sink);
  ASSERT_EQ(recvs.size(), kMsgs);
  std::vector<int> seen(kMsgs, 0);
  std::map<uint16_t, uint64_t> last_on_stream;
  size_t out_of_order = 0;
  uint64_t prev = 0;
  for (size_t k = 0; k < recvs.size(); ++k) {
    const Bytes& buf = rbufs[recvs[k].context];
    uint64_t tag = 0;
    std::memcpy(&tag, buf.data(), sizeof(tag));
    ASSERT_LT(tag, kMsgs);
    ++seen[tag];
    ASSERT_EQ(recvs[k].bytes, data[tag].size());
    EXPECT_TRUE(std::equal(data[tag].begin(), data[tag].end(), buf.begin())) << tag;
    const uint16_t s = stream_of[tag];
    if (last_on_stream.count(s) != 0) {
      EXPECT_LT(last_on_stream[s], tag) << "stream " << s;
    }
    last_on_stream[s] = tag;
    if (k > 0 && tag < prev) ++out_of_order;
    prev = tag;
  }
  for (size_t i = 0; i < kMsgs; ++i) EXPECT_EQ(seen[i], 1) << i;
  EXPECT_GT(out_of_order, 0u);
  EXPECT_EQ(p.b.sink.terminated, 0);
  EXPECT_EQ(p.a.sink.Count(Kind::kSend), kMsgs);
}

TEST(QpSctpStreamsTest, PostSendRefusesStreamsItCannotUse) {
  SctpPair p;
  p.Start();
  Bytes d(10);
  EXPECT_EQ(p.a.qp->PostSend(SendOn(1, d, 8)), QpStatus::kInvalid);  // the fake has 8
  EXPECT_EQ(p.a.qp->PostSend(SendOn(1, d, 7)), QpStatus::kOk);
  SendWr imm = SendOn(1, d, 1);
  imm.with_imm = true;  // never negotiated on SCTP
  EXPECT_NE(p.a.qp->PostSend(imm), QpStatus::kOk);
  QpPair tcp(0, false);
  tcp.Start();
  EXPECT_EQ(tcp.a.qp->PostSend(SendOn(1, d, 1)), QpStatus::kInvalid);  // no streams on TCP
  EXPECT_EQ(tcp.a.qp->PostSend(SendOn(1, d, 0)), QpStatus::kOk);
}

TEST(SctpFramingTest, ImageNamingAStreamTheAssociationLacksIsRefused) {
  auto conns = MakeFakeSctpPair();
  SctpFraming f(*conns.first);
  EXPECT_EQ(f.tx_streams(), 8u);
  Bytes img(wire::FpduWireLength(30), 0x11);
  img[0] = 0;
  img[1] = 30;
  SctpFraming::SetImageStream(img.data() + img.size() - wire::kFpduCrcSize, 8);
  const iovec v{img.data(), img.size()};
  transport::IoResult r = f.SendV(std::span<const iovec>(&v, 1));
  EXPECT_EQ(r.status, transport::IoStatus::kError);
  EXPECT_EQ(r.err, EINVAL);
  SctpFraming::SetImageStream(img.data() + img.size() - wire::kFpduCrcSize, 5);
  r = f.SendV(std::span<const iovec>(&v, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(conns.second->pending(), 1u);
  EXPECT_EQ(conns.second->front().info.stream, 5u);
  EXPECT_EQ(conns.second->front().bytes.size(), 30u);  // the field is not sent
}

// --- receive side against a hand-driven peer --------------------------------

TEST(QpSctpStreamsBadInputTest, SendsCompleteInArrivalOrderAcrossStreams) {
  SctpRawPeer peer;
  peer.Inject(SendSegment(2, 0, true, 20, 0x22), kSctpPpidDdpSegment, 2);
  peer.Inject(SendSegment(1, 0, false, 10, 0x11), kSctpPpidDdpSegment, 1);
  peer.Inject(SendSegment(3, 0, true, 5, 0x33), kSctpPpidDdpSegment, 2);
  peer.Drive();
  // MSN 2 took the first receive, MSN 1 (in progress) the second; MSN 3
  // waits for a receive of its own.
  auto recvs = Recvs(peer.side.sink);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].context, 1u);
  EXPECT_EQ(recvs[0].bytes, 20u);
  // Both receives share peer.rbuf: MSN 1's 10 bytes went over the start.
  EXPECT_EQ(peer.rbuf[0], 0x11);
  EXPECT_EQ(peer.rbuf[15], 0x22);
  EXPECT_EQ(peer.side.sink.terminated, 0);
  peer.Inject(SendSegment(1, 10, true, 6, 0x44), kSctpPpidDdpSegment, 1);
  Bytes third(64);
  RecvWr r;
  r.context = 3;
  r.sgl.Add(third.data(), third.size());
  ASSERT_EQ(peer.side.qp->PostRecv(r), QpStatus::kOk);
  peer.Drive();
  recvs = Recvs(peer.side.sink);
  ASSERT_EQ(recvs.size(), 3u);
  EXPECT_EQ(recvs[1].context, 3u);  // MSN 3 was next in the socket
  EXPECT_EQ(recvs[1].bytes, 5u);
  EXPECT_EQ(third[0], 0x33);
  EXPECT_EQ(peer.rbuf[15], 0x44);  // MSN 1's second segment at MO 10
  EXPECT_EQ(recvs[2].context, 2u);
  EXPECT_EQ(recvs[2].bytes, 16u);
  EXPECT_EQ(peer.side.sink.terminated, 0);
}

struct StreamCase {
  const char* name;
  std::vector<std::pair<Bytes, uint16_t>> segments;  // ULPDU, stream
  wire::TermCause cause;
  size_t flushed;  // receives flushed by the Terminate (not completed before)
};

TEST(QpSctpStreamsBadInputTest, MisusedStreamsTerminate) {
  Bytes write(wire::kDdpTaggedHeaderSize + 8, 0x11);
  ASSERT_TRUE(wire::EncodeWriteHeader(0x1234, 0, true, write).ok());
  Bytes read(wire::kDdpUntaggedHeaderSize + wire::kReadRequestBodySize);
  wire::ReadRequestBody rr;
  rr.read_size = 8;
  ASSERT_TRUE(wire::EncodeReadRequest(1, rr, read).ok());
  std::vector<StreamCase> cases;
  cases.push_back({"tagged Write on stream 1", {{write, 1}}, wire::term::kLlpInvalidReqRep, 2});
  cases.push_back({"Read Request on stream 2", {{read, 2}}, wire::term::kLlpInvalidReqRep, 2});
  cases.push_back({"Immediate Data on stream 1",
                   {{ImmediateSegment(1, 7), 1}},
                   wire::term::kLlpInvalidReqRep,
                   2});
  cases.push_back({"Send on stream 16",
                   {{SendSegment(1, 0, true, 4), kMaxSctpStreams}},
                   wire::term::kLlpInvalidReqRep,
                   2});
  cases.push_back({"MSN going back on a stream",
                   {{SendSegment(2, 0, true, 4), 1}, {SendSegment(1, 0, true, 4), 1}},
                   wire::term::kDdpUntaggedMsnRange,
                   1});
  cases.push_back({"MSN repeated on a stream",
                   {{SendSegment(2, 0, true, 4), 1}, {SendSegment(2, 0, true, 4), 1}},
                   wire::term::kDdpUntaggedMsnRange,
                   1});
  cases.push_back({"first segment with MO != 0",
                   {{SendSegment(1, 8, true, 4), 2}},
                   wire::term::kDdpUntaggedInvalidMo,
                   2});
  cases.push_back({"next segment skips bytes",
                   {{SendSegment(1, 0, false, 20), 1}, {SendSegment(1, 30, true, 4), 1}},
                   wire::term::kDdpUntaggedInvalidMo,
                   2});
  cases.push_back({"another MSN while a message is open on the stream",
                   {{SendSegment(1, 0, false, 20), 1}, {SendSegment(2, 0, true, 4), 1}},
                   wire::term::kDdpUntaggedMsnRange,
                   2});
  cases.push_back({"an MSN in progress on another stream",
                   {{SendSegment(1, 0, false, 20), 1}, {SendSegment(1, 0, true, 4), 2}},
                   wire::term::kDdpUntaggedInvalidMo,
                   2});
  for (const StreamCase& c : cases) {
    SCOPED_TRACE(c.name);
    SctpRawPeer peer;
    for (const auto& [seg, stream] : c.segments) {
      peer.Inject(seg, kSctpPpidDdpSegment, stream);
    }
    peer.Drive();
    peer.ExpectTerminate(c.cause, c.flushed);
  }
}

// A Terminate flushes the receive a message in progress holds, not the one
// a later message on another stream already completed.
TEST(QpSctpStreamsBadInputTest, FlushSkipsReceivesCompletedOutOfOrder) {
  SctpRawPeer peer;
  peer.Inject(SendSegment(1, 0, false, 20, 0x11), kSctpPpidDdpSegment, 1);
  peer.Inject(SendSegment(2, 0, true, 8, 0x22), kSctpPpidDdpSegment, 2);
  peer.Inject(SendSegment(3, 0, true, 4), kSctpPpidDdpSegment, kMaxSctpStreams + 1);
  peer.Drive();
  const auto recvs = Recvs(peer.side.sink);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].context, 2u);
  peer.ExpectTerminate(wire::term::kLlpInvalidReqRep, 1);
  size_t errors_for_1 = 0;
  for (const Completion& c : peer.side.sink.completions) {
    if (c.kind == Kind::kError) errors_for_1 += c.context == 1u ? 1 : 0;
  }
  EXPECT_EQ(errors_for_1, 1u);
}

}  // namespace
}  // namespace iwarpx::qp::test
