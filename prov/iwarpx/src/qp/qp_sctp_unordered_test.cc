// Unordered Read Responses on SCTP (docs/design.md "Unordered Read
// Responses"; negotiated in session setup, docs/wire.md §2.2): the responder
// sends them unordered on their sink STag's stream, the requester holds a
// Read whose sink range overlaps an outstanding one, matches every segment to
// the one outstanding Read containing it, counts bytes, refuses forged or
// repeated segments before placing a byte, and completes in post order.
// Runs over FakeSctpConnection with ShuffleUnordered(): unordered messages
// overtake queued ones at random.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "qp/placed_ranges.h"
#include "testing/qp_sctp_harness.h"
#include "wire/ddp.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;

uint16_t StreamOf(uint32_t sink_stag) {  // docs/wire.md §2.2, 8 fake streams
  return static_cast<uint16_t>(1 + sink_stag % 7);
}

std::vector<uint64_t> RdmaContexts(const RecordingSink& sink) {
  std::vector<uint64_t> out;
  for (const Completion& c : sink.completions) {
    if (c.kind == Kind::kRdma) out.push_back(c.context);
  }
  return out;
}

Bytes ReadResponse(uint32_t stag, uint64_t to, bool last, size_t len, uint8_t fill) {
  Bytes b(wire::kDdpTaggedHeaderSize + len, fill);
  EXPECT_TRUE(wire::EncodeReadResponseHeader(stag, to, last, b).ok());
  return b;
}

// --- PlacedRanges ------------------------------------------------------------

TEST(PlacedRangesTest, MergesNeighboursAndRefusesOverlaps) {
  PlacedRanges r;
  EXPECT_TRUE(r.Free(0, 0, 100));
  ASSERT_TRUE(r.Add(0, 200, 300));
  ASSERT_TRUE(r.Add(0, 0, 100));
  EXPECT_EQ(r.size(), 2u);
  EXPECT_FALSE(r.Free(0, 50, 60));
  EXPECT_FALSE(r.Free(0, 99, 201));
  EXPECT_FALSE(r.Free(0, 299, 300));
  EXPECT_TRUE(r.Free(0, 100, 200));
  EXPECT_TRUE(r.Free(1, 0, 300));   // another slot
  ASSERT_TRUE(r.Add(0, 100, 200));  // joins both
  EXPECT_EQ(r.size(), 1u);
  EXPECT_FALSE(r.Free(0, 150, 151));
  ASSERT_TRUE(r.Add(1, 0, 10));
  r.Clear(0);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_TRUE(r.Free(0, 0, 300));
  EXPECT_FALSE(r.Free(1, 5, 6));
}

TEST(PlacedRangesTest, BoundedNumberOfRanges) {
  PlacedRanges r;
  for (uint64_t i = 0; i < PlacedRanges::kMaxRanges; ++i) ASSERT_TRUE(r.Add(0, 2 * i, 2 * i + 1));
  EXPECT_FALSE(r.Add(0, 10000, 10001));  // would need a new range
  EXPECT_EQ(r.size(), PlacedRanges::kMaxRanges);
  EXPECT_TRUE(r.Add(0, 1, 2));  // merges two: fewer ranges
  EXPECT_EQ(r.size(), PlacedRanges::kMaxRanges - 1);
}

// --- a pair of QPs, responses shuffled ---------------------------------------

// Many Reads into a few sinks, ranges chosen at random so some overlap (those
// run one after the other), with fetch-adds in between, every unordered
// message shuffled: each byte ends with the data of the last Read (in post
// order) that covered it, the atomics return what they must, completions come
// in post order and the responses really went (and arrived) unordered.
TEST(QpSctpUnorderedTest, RandomOverlappingReadsShuffledPlaceLikePostOrder) {
  for (const uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    QpConfig cfg;
    cfg.max_fpdu_payload = 300;  // 286 payload bytes per segment
    cfg.sq_size = 512;
    SctpPair p(cfg, /*unordered=*/true, /*ord=*/8);
    p.a.conn->ShuffleUnordered(seed);
    p.Start();
    std::mt19937 rng(seed);
    Bytes src = RandomBytes(rng, 30000);
    const uint32_t rstag = p.b.Register(src, mem::kRemoteRead, 0);
    alignas(8) uint64_t word = 7;
    const uint32_t wstag = p.b.RegisterRaw(&word, 8, mem::kRemoteAtomic, 0);
    constexpr size_t kSinks = 3;
    constexpr size_t kSinkSize = 8000;
    std::vector<Bytes> sinks(kSinks, Bytes(kSinkSize, 0));
    std::vector<Bytes> want(kSinks, Bytes(kSinkSize, 0));
    std::vector<uint32_t> lstags;
    lstags.reserve(kSinks);
    for (Bytes& s : sinks) lstags.push_back(p.a.Register(s, mem::kLocalWrite, 0));
    constexpr size_t kOps = 120;
    std::vector<uint64_t> results(kOps, 0);
    std::vector<uint64_t> add_expect;
    uint64_t expect = 7;
    for (size_t i = 0; i < kOps; ++i) {
      if (rng() % 8 == 0) {
        AtomicWr at;
        at.context = i;
        at.op = wire::AtomicOp::kFetchAdd;
        at.remote_stag = wstag;
        at.operand = 1 + rng() % 100;
        at.result = &results[i];
        add_expect.push_back(expect);
        expect += at.operand;
        ASSERT_EQ(p.a.qp->PostAtomic(at), QpStatus::kOk);
      } else {
        const size_t s = rng() % kSinks;
        const size_t len = 1 + rng() % 2500;
        const size_t at = rng() % (kSinkSize - len);
        const size_t from = rng() % (src.size() - len);
        std::memcpy(want[s].data() + at, src.data() + from, len);
        ASSERT_EQ(p.a.qp->PostRead(MakeRead(i, lstags[s], at, len, rstag, from)), QpStatus::kOk);
      }
      if (rng() % 4 == 0) p.Pump();
    }
    p.Pump();
    const auto ctx = RdmaContexts(p.a.sink);
    ASSERT_EQ(ctx.size(), kOps);
    for (size_t i = 0; i < kOps; ++i) ASSERT_EQ(ctx[i], i) << "completions out of post order";
    for (size_t s = 0; s < kSinks; ++s) EXPECT_TRUE(sinks[s] == want[s]) << "sink " << s;
    size_t k = 0;
    for (size_t i = 0; i < kOps && k < add_expect.size(); ++i) {
      if (results[i] != 0) {
        EXPECT_EQ(results[i], add_expect[k++]) << i;
      }
    }
    EXPECT_EQ(k, add_expect.size());
    EXPECT_EQ(word, expect);
    // Every Read Response went unordered on its sink STag's stream; nothing
    // else did.
    size_t responses = 0;
    for (const auto& m : p.b.conn->sent()) {
      if (m.info.stream != 0) {
        EXPECT_TRUE(m.info.unordered);
        ++responses;
      }
    }
    EXPECT_GT(responses, kOps);
    EXPECT_EQ(p.b.qp->sctp_framing()->unordered_sent(), responses);
    EXPECT_EQ(p.a.qp->sctp_framing()->unordered_received(), responses);
    for (const auto& m : p.a.conn->sent()) EXPECT_FALSE(m.info.unordered);
    EXPECT_GT(p.a.conn->overtakes(), 0u) << "the fake did not reorder anything";
    EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
  }
}

// Without the session bit nothing goes unordered (the extension is off).
TEST(QpSctpUnorderedTest, NotNegotiatedEverythingOrdered) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 300;
  SctpPair p(cfg, /*unordered=*/false);
  p.a.conn->ShuffleUnordered(5);
  p.Start();
  std::mt19937 rng(5);
  Bytes src = RandomBytes(rng, 3000);
  const uint32_t rstag = p.b.Register(src, mem::kRemoteRead, 0);
  Bytes sink(3000, 0);
  const uint32_t lstag = p.a.Register(sink, mem::kLocalWrite, 0);
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(1, lstag, 0, 3000, rstag, 0)), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(RdmaContexts(p.a.sink), std::vector<uint64_t>{1});
  EXPECT_TRUE(sink == src);
  for (const auto& m : p.b.conn->sent()) EXPECT_FALSE(m.info.unordered);
  EXPECT_EQ(p.b.qp->sctp_framing()->unordered_sent(), 0u);
}

// --- the requester against a hand-driven responder ---------------------------

// Parsed Read Requests among what the QP sent.
std::vector<wire::ReadRequestBody> ReadRequests(SctpRawPeer& peer) {
  std::vector<wire::ReadRequestBody> out;
  for (const auto& [bytes, info] : peer.Received()) {
    auto seg = wire::ParseSegment(bytes);
    if (!seg.ok()) continue;
    if (const auto* b = std::get_if<wire::ReadRequestBody>(&seg->body)) out.push_back(*b);
  }
  return out;
}

// Read A (STag a, sink 0x1032..0x115E) and Read A2 (STag a, 0x1200..0x1232,
// disjoint from A), Read B (STag b).
struct Requester {
  SctpRawPeer peer{QpConfig{}, /*unordered=*/true};
  Bytes sink_a = Bytes(0x300, 0);
  Bytes sink_b = Bytes(100, 0);
  uint32_t a = 0;
  uint32_t b = 0;
  Requester() {
    a = peer.side.Register(sink_a, mem::kLocalWrite, 0x1000);
    b = peer.side.Register(sink_b, mem::kLocalWrite, 0x2000);
    EXPECT_EQ(peer.side.qp->PostRead(MakeRead(10, a, 0x1032, 300, 0x77, 0)), QpStatus::kOk);
    EXPECT_EQ(peer.side.qp->PostRead(MakeRead(11, a, 0x1200, 50, 0x77, 0)), QpStatus::kOk);
    EXPECT_EQ(peer.side.qp->PostRead(MakeRead(12, b, 0x2000, 100, 0x77, 0)), QpStatus::kOk);
    peer.Drive();
    EXPECT_EQ(ReadRequests(peer).size(), 3u);
  }
  void Respond(uint32_t stag, uint64_t to, bool last, size_t len, uint8_t fill) {
    peer.Inject(ReadResponse(stag, to, last, len, fill), kSctpPpidDdpSegment, StreamOf(stag),
                /*unordered=*/true);
  }
};

TEST(QpSctpUnorderedBadInputTest, SegmentsInAnyOrderCompleteInPostOrder) {
  Requester r;
  r.Respond(r.a, 0x1200 + 20, true, 30, 0xc2);  // A2's tail first
  r.Respond(r.b, 0x2000, true, 100, 0xbb);
  r.Respond(r.a, 0x1032 + 200, true, 100, 0xa3);  // A's last segment before the rest
  r.peer.Drive();
  EXPECT_TRUE(RdmaContexts(r.peer.side.sink).empty());
  r.Respond(r.a, 0x1032 + 100, false, 100, 0xa2);
  r.Respond(r.a, 0x1200, false, 20, 0xc1);  // A2 now complete, waits for A
  r.peer.Drive();
  EXPECT_TRUE(RdmaContexts(r.peer.side.sink).empty());
  EXPECT_EQ(r.peer.side.qp->outstanding_reads(), 3u);
  r.Respond(r.a, 0x1032, false, 100, 0xa1);
  r.peer.Drive();
  EXPECT_EQ(RdmaContexts(r.peer.side.sink), (std::vector<uint64_t>{10, 11, 12}));
  EXPECT_EQ(r.peer.side.qp->outstanding_reads(), 0u);
  EXPECT_EQ(r.sink_a[0x31], 0);
  EXPECT_EQ(r.sink_a[0x32], 0xa1);
  EXPECT_EQ(r.sink_a[0x32 + 100], 0xa2);
  EXPECT_EQ(r.sink_a[0x32 + 299], 0xa3);
  EXPECT_EQ(r.sink_a[0x32 + 300], 0);
  EXPECT_EQ(r.sink_a[0x200], 0xc1);
  EXPECT_EQ(r.sink_a[0x200 + 49], 0xc2);
  EXPECT_EQ(r.sink_a[0x200 + 50], 0);
  EXPECT_TRUE(std::all_of(r.sink_b.begin(), r.sink_b.end(), [](uint8_t x) { return x == 0xbb; }));
  EXPECT_EQ(r.peer.side.sink.terminated, 0);
  EXPECT_EQ(r.peer.side.qp->sctp_framing()->unordered_received(), 6u);
}

struct Forged {
  const char* name;
  // (stag selector: 0 = a, 1 = b, 2 = unknown; TO; last; len)
  struct Seg {
    int which;
    uint64_t to;
    bool last;
    size_t len;
  };
  std::vector<Seg> segs;
  wire::TermCause cause;
  size_t placed_a;  // bytes of A placed from 0x1032 on (fill 1) before the refusal
};

TEST(QpSctpUnorderedBadInputTest, ForgedSegmentsTerminateWithoutPlacing) {
  const std::vector<Forged> cases = {
      {"unknown STag", {{2, 0x1032, true, 300}}, wire::term::kDdpTaggedInvalidStag, 0},
      {"before every Read of the STag",
       {{0, 0x1031, false, 10}},
       wire::term::kDdpTaggedBaseBounds,
       0},
      {"between two Reads of the STag",
       {{0, 0x1180, false, 10}},
       wire::term::kDdpTaggedBaseBounds,
       0},
      {"straddles the Read's end",
       {{0, 0x1032 + 290, true, 20}},
       wire::term::kDdpTaggedBaseBounds,
       0},
      {"duplicate segment",
       {{0, 0x1032, false, 100}, {0, 0x1032, false, 100}},
       wire::term::kDdpTaggedBaseBounds,
       100},
      {"overlaps placed bytes",
       {{0, 0x1032, false, 100}, {0, 0x1032 + 50, false, 100}},
       wire::term::kDdpTaggedBaseBounds,
       100},
      {"two halves twice cannot complete it",
       {{0, 0x1032, false, 150}, {0, 0x1032, false, 150}},
       wire::term::kDdpTaggedBaseBounds,
       150},
      {"last flag not on the last byte",
       {{0, 0x1032, true, 100}},
       wire::term::kDdpTaggedBaseBounds,
       0},
      {"no last flag on the last byte",
       {{0, 0x1032 + 200, false, 100}},
       wire::term::kDdpTaggedBaseBounds,
       0},
      {"zero-length segment", {{0, 0x1032, false, 0}}, wire::term::kDdpTaggedBaseBounds, 0},
  };
  for (const Forged& c : cases) {
    SCOPED_TRACE(c.name);
    Requester r;
    for (const Forged::Seg& s : c.segs) {
      const uint32_t stag = s.which == 0 ? r.a : s.which == 1 ? r.b : std::max(r.a, r.b) + 0x100;
      r.Respond(stag, s.to, s.last, s.len, 1);
    }
    r.peer.Drive();
    r.peer.ExpectTerminate(c.cause, 5);  // two receives and three Reads flushed
    EXPECT_TRUE(RdmaContexts(r.peer.side.sink).empty());
    for (size_t i = 0; i < r.sink_a.size(); ++i) {
      const bool in_placed = i >= 0x32 && i < 0x32 + c.placed_a;
      ASSERT_EQ(r.sink_a[i], in_placed ? 1 : 0) << i;
    }
    EXPECT_TRUE(std::all_of(r.sink_b.begin(), r.sink_b.end(), [](uint8_t x) { return x == 0; }));
  }
}

TEST(QpSctpUnorderedBadInputTest, OnlyReadResponsesMayComeUnordered) {
  {
    SCOPED_TRACE("an unordered Write");
    Requester r;
    Bytes w(wire::kDdpTaggedHeaderSize + 8, 1);
    ASSERT_TRUE(wire::EncodeWriteHeader(r.a, 0x1032, true, w).ok());
    r.peer.Inject(w, kSctpPpidDdpSegment, 0, /*unordered=*/true);
    r.peer.Drive();
    r.peer.ExpectTerminate(wire::term::kLlpInvalidReqRep, 5);
    EXPECT_TRUE(std::all_of(r.sink_a.begin(), r.sink_a.end(), [](uint8_t x) { return x == 0; }));
  }
  {
    SCOPED_TRACE("an unordered Read Response the session did not negotiate");
    SctpRawPeer peer;  // unordered not negotiated
    Bytes sink(400, 0);
    const uint32_t s = peer.side.Register(sink, mem::kLocalWrite, 0x1000);
    ASSERT_EQ(peer.side.qp->PostRead(MakeRead(1, s, 0x1000, 100, 0x77, 0)), QpStatus::kOk);
    peer.Drive();
    ASSERT_EQ(ReadRequests(peer).size(), 1u);
    peer.Inject(ReadResponse(s, 0x1000, true, 100, 1), kSctpPpidDdpSegment, StreamOf(s), true);
    peer.Drive();
    peer.ExpectTerminate(wire::term::kLlpInvalidReqRep, 3);
    EXPECT_TRUE(std::all_of(sink.begin(), sink.end(), [](uint8_t x) { return x == 0; }));
  }
}

// A Read into bytes an outstanding Read still fills waits (with the WRs
// behind it) until that one is answered, then goes out.
TEST(QpSctpUnorderedBadInputTest, OverlappingReadIsHeldThenIssued) {
  SctpRawPeer peer{QpConfig{}, /*unordered=*/true};
  Bytes sink(0x400, 0);
  Bytes other(64, 0);
  const uint32_t s = peer.side.Register(sink, mem::kLocalWrite, 0x1000);
  const uint32_t o = peer.side.Register(other, mem::kLocalWrite, 0x3000);
  ASSERT_EQ(peer.side.qp->PostRead(MakeRead(1, s, 0x1000, 0x100, 0x77, 0)), QpStatus::kOk);
  ASSERT_EQ(peer.side.qp->PostRead(MakeRead(2, s, 0x1100, 0x10, 0x77, 0)),
            QpStatus::kOk);  // adjacent
  ASSERT_EQ(peer.side.qp->PostRead(MakeRead(3, s, 0x10FF, 0x2, 0x77, 0)),
            QpStatus::kOk);  // overlaps 1, 2
  ASSERT_EQ(peer.side.qp->PostRead(MakeRead(4, o, 0x3000, 8, 0x77, 0)), QpStatus::kOk);  // behind 3
  peer.Drive();
  auto reqs = ReadRequests(peer);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].sink_to, 0x1000u);
  EXPECT_EQ(reqs[1].sink_to, 0x1100u);
  auto respond = [&](uint32_t stag, uint64_t to, bool last, size_t len, uint8_t fill) {
    peer.Inject(ReadResponse(stag, to, last, len, fill), kSctpPpidDdpSegment, StreamOf(stag), true);
  };
  respond(s, 0x1100, true, 0x10, 2);  // Read 2 done; Read 3 still overlaps Read 1
  peer.Drive();
  EXPECT_TRUE(ReadRequests(peer).empty());
  respond(s, 0x1080, true, 0x80, 1);
  peer.Drive();
  EXPECT_TRUE(ReadRequests(peer).empty());
  respond(s, 0x1000, false, 0x80, 1);  // Read 1 done: 3 and 4 go out
  peer.Drive();
  EXPECT_EQ(RdmaContexts(peer.side.sink), (std::vector<uint64_t>{1, 2}));
  reqs = ReadRequests(peer);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].sink_to, 0x10FFu);
  EXPECT_EQ(reqs[1].sink_stag, o);
  respond(o, 0x3000, true, 8, 4);
  respond(s, 0x10FF, true, 2, 3);
  peer.Drive();
  EXPECT_EQ(RdmaContexts(peer.side.sink), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(sink[0xFE], 1);
  EXPECT_EQ(sink[0xFF], 3);
  EXPECT_EQ(sink[0x100], 3);
  EXPECT_EQ(sink[0x101], 2);
  EXPECT_EQ(other[7], 4);
  EXPECT_EQ(peer.side.sink.terminated, 0);
}

}  // namespace
}  // namespace iwarpx::qp::test
