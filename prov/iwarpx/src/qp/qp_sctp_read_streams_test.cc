// Read Responses on SCTP streams (docs/design.md "Streams for Read
// Responses"): the responder puts each on the stream of its sink STag, the
// requester places each response as it arrives, matched by STag and TO, and
// reports Read and Atomic completions in post order; a response that does
// not continue its Read exactly ends in a Terminate before a byte is placed.
// Runs over FakeSctpConnection, whose HoldStream() delays one stream the way
// SCTP does while a chunk of it is retransmitted.
#include <algorithm>
#include <cstddef>
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

// The mapping docs/wire.md §2.2 fixes, with the fake's 8 streams.
uint16_t StreamOf(uint32_t sink_stag) {
  return static_cast<uint16_t>(1 + sink_stag % 7);
}

std::vector<uint64_t> RdmaContexts(const RecordingSink& sink) {
  std::vector<uint64_t> out;
  for (const Completion& c : sink.completions) {
    if (c.kind == Kind::kRdma) out.push_back(c.context);
  }
  return out;
}

bool Same(const Bytes& a, size_t a_off, const Bytes& b, size_t b_off, size_t len) {
  return std::equal(a.begin() + static_cast<ptrdiff_t>(a_off),
                    a.begin() + static_cast<ptrdiff_t>(a_off + len),
                    b.begin() + static_cast<ptrdiff_t>(b_off));
}

TEST(QpSctpReadStreamsTest, ReadResponsesGoOnTheStreamOfTheirSinkStag) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 512;
  SctpPair p(cfg);
  p.Start();
  std::mt19937 rng(3);
  Bytes src = RandomBytes(rng, 4000);
  const uint32_t rstag = p.b.Register(src, mem::kRemoteRead, 0x4000);
  std::vector<Bytes> sinks;
  sinks.reserve(4);
  sinks.emplace_back(4000, 0);
  const uint32_t first = p.a.Register(sinks.back(), mem::kLocalWrite, 0x1000);
  std::vector<uint32_t> stags{first};
  for (int i = 0; i < 3; ++i) {
    sinks.emplace_back(4000, 0);
    stags.push_back(p.a.Register(sinks.back(), mem::kLocalWrite, 0x1000));
  }
  for (size_t i = 0; i < stags.size(); ++i) {
    ASSERT_EQ(p.a.qp->PostRead(MakeRead(i, stags[i], 0x1000, 1000 * (i + 1), rstag, 0x4000)),
              QpStatus::kOk);
  }
  p.Pump();
  EXPECT_EQ(RdmaContexts(p.a.sink), (std::vector<uint64_t>{0, 1, 2, 3}));
  for (size_t i = 0; i < stags.size(); ++i) EXPECT_TRUE(Same(sinks[i], 0, src, 0, 1000 * (i + 1)));
  // b sent only Read Responses, each on its sink STag's stream, ordered; a
  // sent only Read Requests, on stream 0. Segments of <= 498 payload bytes.
  std::vector<size_t> per_stream(8, 0);
  for (const auto& m : p.b.conn->sent()) {
    EXPECT_FALSE(m.info.unordered);
    ASSERT_LT(m.info.stream, 8u);
    ++per_stream[m.info.stream];
  }
  std::vector<size_t> want(8, 0);
  for (size_t i = 0; i < stags.size(); ++i)
    want[StreamOf(stags[i])] += (1000 * (i + 1) + 497) / 498;
  EXPECT_EQ(per_stream, want);
  EXPECT_EQ(per_stream[0], 0u);
  for (const auto& m : p.a.conn->sent()) EXPECT_EQ(m.info.stream, 0u);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

// A Read whose stream is held does not hold back the placement of a later
// Read on another stream, but its completion still comes first.
TEST(QpSctpReadStreamsTest, HeldStreamLaterReadPlacedFirstCompletionsInPostOrder) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 512;  // 498 payload bytes per Read Response segment
  SctpPair p(cfg);
  p.Start();
  std::mt19937 rng(11);
  Bytes src = RandomBytes(rng, 6000);
  const uint32_t rstag = p.b.Register(src, mem::kRemoteRead, 0x4000);
  std::vector<Bytes> sinks;
  sinks.reserve(41);
  sinks.emplace_back(6000, 0);
  std::vector<uint32_t> stags;
  stags.push_back(p.a.Register(sinks.back(), mem::kLocalWrite, 0x1000));
  for (int i = 0; i < 40 && stags.size() < 2; ++i) {
    sinks.emplace_back(6000, 0);
    const uint32_t s = p.a.Register(sinks.back(), mem::kLocalWrite, 0x1000);
    if (StreamOf(s) != StreamOf(stags[0])) stags.push_back(s);
  }
  ASSERT_EQ(stags.size(), 2u);
  Bytes& sink_a = sinks.front();
  Bytes& sink_b = sinks.back();
  p.a.conn->HoldStream(StreamOf(stags[0]), 1);  // one segment of Read A gets through
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(1, stags[0], 0x1000, 5000, rstag, 0x4000)), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostRead(MakeRead(2, stags[1], 0x1000, 3000, rstag, 0x4000 + 3000)),
            QpStatus::kOk);
  p.Pump();
  // B is placed in full, A only its first segment; nothing completed.
  EXPECT_TRUE(Same(sink_b, 0, src, 3000, 3000));
  EXPECT_TRUE(Same(sink_a, 0, src, 0, 498));
  EXPECT_EQ(sink_a[498], 0);
  EXPECT_TRUE(RdmaContexts(p.a.sink).empty());
  EXPECT_EQ(p.a.qp->outstanding_reads(), 2u);
  p.a.conn->ReleaseStream(StreamOf(stags[0]));
  p.Pump();
  EXPECT_EQ(RdmaContexts(p.a.sink), (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(Same(sink_a, 0, src, 0, 5000));
  EXPECT_TRUE(Same(sink_b, 0, src, 3000, 3000));
  EXPECT_EQ(p.a.qp->outstanding_reads(), 0u);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

// Many Reads (several per sink STag), fetch-adds and XOR loops, with streams
// held and released at random: every Read's bytes arrive intact in its own
// range, every atomic returns the value it must, completions come in post
// order, and some Reads were placed while an earlier one was still open.
TEST(QpSctpReadStreamsTest, RandomReadsAndAtomicsWithHolds) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 600;
  cfg.sq_size = 512;
  SctpPair p(cfg);
  p.Start();
  std::mt19937 rng(23);
  Bytes src = RandomBytes(rng, 20000);
  const uint32_t rstag = p.b.Register(src, mem::kRemoteRead, 0);
  alignas(8) uint64_t add_word = 1000;
  alignas(8) uint64_t xor_word = 0x5a5a;
  const uint32_t add_stag = p.b.RegisterRaw(&add_word, 8, mem::kRemoteAtomic, 0);
  const uint32_t xor_stag = p.b.RegisterRaw(&xor_word, 8, mem::kRemoteAtomic, 0);
  constexpr size_t kSinks = 5;
  constexpr size_t kSinkSize = 200000;
  std::vector<Bytes> sinks(kSinks, Bytes(kSinkSize, 0));
  std::vector<uint32_t> lstags;
  lstags.reserve(kSinks);
  for (Bytes& s : sinks) lstags.push_back(p.a.Register(s, mem::kLocalWrite, 0));
  std::vector<size_t> fill(kSinks, 0);
  struct Op {
    bool read = false;
    size_t sink = 0, at = 0, len = 0, src_at = 0;
    bool xor_op = false;
    uint64_t operand = 0;
    uint64_t result = 0;
  };
  constexpr size_t kOps = 240;
  std::vector<Op> ops(kOps);
  size_t placed_ahead = 0;
  uint64_t done = 0;  // completions seen so far (= the oldest open op)
  for (size_t i = 0; i < kOps; ++i) {
    if (rng() % 3 == 0) p.a.conn->HoldStream(static_cast<uint16_t>(rng() % 8), rng() % 3);
    if (rng() % 3 == 0) p.a.conn->ReleaseStream(static_cast<uint16_t>(rng() % 8));
    Op& op = ops[i];
    const auto kind = static_cast<unsigned>(rng() % 10);
    if (kind < 7) {
      op.read = true;
      op.sink = rng() % kSinks;
      op.len = 1 + rng() % 3000;
      op.at = fill[op.sink];
      fill[op.sink] += op.len;
      ASSERT_LE(fill[op.sink], kSinkSize);
      op.src_at = rng() % (src.size() - op.len);
      ASSERT_EQ(p.a.qp->PostRead(MakeRead(i, lstags[op.sink], op.at, op.len, rstag, op.src_at)),
                QpStatus::kOk);
    } else {
      AtomicWr at;
      at.context = i;
      op.xor_op = kind == 9;
      op.operand = 1 + rng() % 1000;
      at.op = wire::AtomicOp::kFetchAdd;
      at.xor_loop = op.xor_op;
      at.remote_stag = op.xor_op ? xor_stag : add_stag;
      at.operand = op.operand;
      at.result = &op.result;
      ASSERT_EQ(p.a.qp->PostAtomic(at), QpStatus::kOk);
    }
    p.Pump();
    done = RdmaContexts(p.a.sink).size();
    for (size_t j = done + 1; j <= i; ++j) {
      const Op& o = ops[j];
      if (o.read && o.len >= 16 && Same(sinks[o.sink], o.at, src, o.src_at, o.len)) {
        ++placed_ahead;
        break;
      }
    }
  }
  for (uint16_t s = 0; s < 8; ++s) p.a.conn->ReleaseStream(s);
  p.Pump();
  const auto ctx = RdmaContexts(p.a.sink);
  ASSERT_EQ(ctx.size(), kOps);
  for (size_t i = 0; i < kOps; ++i) ASSERT_EQ(ctx[i], i) << "completions out of post order";
  uint64_t add_expect = 1000;
  uint64_t xor_expect = 0x5a5a;
  for (size_t i = 0; i < kOps; ++i) {
    const Op& o = ops[i];
    if (o.read) {
      EXPECT_TRUE(Same(sinks[o.sink], o.at, src, o.src_at, o.len)) << i;
    } else if (o.xor_op) {
      EXPECT_EQ(o.result, xor_expect) << i;
      xor_expect ^= o.operand;
    } else {
      EXPECT_EQ(o.result, add_expect) << i;
      add_expect += o.operand;
    }
  }
  EXPECT_EQ(add_word, add_expect);
  EXPECT_EQ(xor_word, xor_expect);
  // Bytes between the Reads' ranges were never written.
  for (size_t s = 0; s < kSinks; ++s) {
    EXPECT_TRUE(std::all_of(sinks[s].begin() + static_cast<ptrdiff_t>(fill[s]), sinks[s].end(),
                            [](uint8_t b) { return b == 0; }));
  }
  EXPECT_GT(placed_ahead, 0u);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

// --- forged responses against a hand-driven responder -----------------------

Bytes ReadResponse(uint32_t stag, uint64_t to, bool last, size_t len, uint8_t fill) {
  Bytes b(wire::kDdpTaggedHeaderSize + len, fill);
  EXPECT_TRUE(wire::EncodeReadResponseHeader(stag, to, last, b).ok());
  return b;
}

struct ForgedCase {
  const char* name;
  // Segments after the requester posted Read A (STag a, TO 0x1032, 300
  // bytes, sink region 0x1000..0x1190) and Read B (STag b, 100 bytes).
  std::vector<std::pair<Bytes, uint16_t>> (*segments)(uint32_t a, uint32_t b);
  wire::TermCause cause;
  size_t placed_a;  // bytes of Read A placed before the refusal
};

// The requester side of SctpRawPeer: posts Reads A and B and swallows the
// Read Requests, so the next message the QP sends is its Terminate.
struct Requester {
  SctpRawPeer peer;
  Bytes sink_a = Bytes(400, 0);
  Bytes sink_b = Bytes(100, 0);
  uint32_t a = 0;
  uint32_t b = 0;
  Requester() {
    a = peer.side.Register(sink_a, mem::kLocalWrite, 0x1000);
    for (int i = 0; i < 40; ++i) {  // B on another stream than A
      b = peer.side.Register(sink_b, mem::kLocalWrite, 0x2000);
      if (StreamOf(b) != StreamOf(a)) break;
    }
    EXPECT_EQ(peer.side.qp->PostRead(MakeRead(10, a, 0x1032, 300, 0x77, 0)), QpStatus::kOk);
    EXPECT_EQ(peer.side.qp->PostRead(MakeRead(11, b, 0x2000, 100, 0x77, 0)), QpStatus::kOk);
    peer.Drive();
    EXPECT_EQ(peer.Received().size(), 2u);
  }
};

TEST(QpSctpReadStreamsBadInputTest, ResponsesOutOfStagOrderCompleteInPostOrder) {
  Requester r;
  r.peer.Inject(ReadResponse(r.b, 0x2000, true, 100, 0xbb), kSctpPpidDdpSegment, StreamOf(r.b));
  r.peer.Drive();
  EXPECT_TRUE(RdmaContexts(r.peer.side.sink).empty());  // B placed, waits for A
  EXPECT_TRUE(std::all_of(r.sink_b.begin(), r.sink_b.end(), [](uint8_t x) { return x == 0xbb; }));
  r.peer.Inject(ReadResponse(r.a, 0x1032, false, 200, 0xaa), kSctpPpidDdpSegment, StreamOf(r.a));
  r.peer.Inject(ReadResponse(r.a, 0x1032 + 200, true, 100, 0xab), kSctpPpidDdpSegment, 0);
  r.peer.Drive();
  EXPECT_EQ(RdmaContexts(r.peer.side.sink), (std::vector<uint64_t>{10, 11}));
  EXPECT_EQ(r.sink_a[0x31], 0);
  EXPECT_EQ(r.sink_a[0x32], 0xaa);
  EXPECT_EQ(r.sink_a[0x32 + 199], 0xaa);
  EXPECT_EQ(r.sink_a[0x32 + 200], 0xab);
  EXPECT_EQ(r.sink_a[0x32 + 299], 0xab);
  EXPECT_EQ(r.sink_a[0x32 + 300], 0);
  EXPECT_EQ(r.peer.side.sink.terminated, 0);
}

TEST(QpSctpReadStreamsBadInputTest, ForgedResponsesTerminateWithoutPlacing) {
  using Segs = std::vector<std::pair<Bytes, uint16_t>>;
  const std::vector<ForgedCase> cases = {
      {"unknown STag",
       [](uint32_t a, uint32_t b) {
         const uint32_t other = (a ^ 0x100) == b ? a ^ 0x200 : a ^ 0x100;
         return Segs{{ReadResponse(other, 0x1032, true, 300, 1), 1}};
       },
       wire::term::kDdpTaggedInvalidStag, 0},
      {"gap in TO",
       [](uint32_t a, uint32_t) {
         return Segs{{ReadResponse(a, 0x1033, false, 10, 1), 1}};
       },
       wire::term::kDdpTaggedBaseBounds, 0},
      {"gap after a segment",
       [](uint32_t a, uint32_t) {
         return Segs{{ReadResponse(a, 0x1032, false, 100, 1), 1},
                     {ReadResponse(a, 0x1032 + 101, true, 199, 2), 1}};
       },
       wire::term::kDdpTaggedBaseBounds, 100},
      {"last flag early",
       [](uint32_t a, uint32_t) {
         return Segs{{ReadResponse(a, 0x1032, true, 299, 1), 1}};
       },
       wire::term::kDdpTaggedBaseBounds, 0},
      {"last flag late (a non-last segment reaches the end)",
       [](uint32_t a, uint32_t) {
         return Segs{{ReadResponse(a, 0x1032, false, 300, 1), 2}};
       },
       wire::term::kDdpTaggedBaseBounds, 0},
      {"longer than the Read",
       [](uint32_t a, uint32_t) {
         return Segs{{ReadResponse(a, 0x1032, true, 301, 1), 1}};
       },
       wire::term::kDdpTaggedBaseBounds, 0},
      {"duplicate segment",
       [](uint32_t a, uint32_t) {
         return Segs{{ReadResponse(a, 0x1032, false, 100, 1), 3},
                     {ReadResponse(a, 0x1032, false, 100, 2), 3}};
       },
       wire::term::kDdpTaggedBaseBounds, 100},
      {"Write on a Read Response stream",
       [](uint32_t a, uint32_t) {
         Bytes w(wire::kDdpTaggedHeaderSize + 8, 1);
         EXPECT_TRUE(wire::EncodeWriteHeader(a, 0x1032, true, w).ok());
         return Segs{{w, 1}};
       },
       wire::term::kLlpInvalidReqRep, 0},
      {"Atomic Response on stream 2",
       [](uint32_t, uint32_t) {
         Bytes m(wire::kDdpUntaggedHeaderSize + wire::kAtomicResponseBodySize);
         wire::AtomicResponseBody body;
         EXPECT_TRUE(wire::EncodeAtomicResponse(1, body, m).ok());
         return Segs{{m, 2}};
       },
       wire::term::kLlpInvalidReqRep, 0},
      {"Atomic Response with no Atomic outstanding",
       [](uint32_t, uint32_t) {
         Bytes m(wire::kDdpUntaggedHeaderSize + wire::kAtomicResponseBodySize);
         wire::AtomicResponseBody body;
         EXPECT_TRUE(wire::EncodeAtomicResponse(1, body, m).ok());
         return Segs{{m, 0}};
       },
       wire::term::kRdmapUnexpectedOpcode, 0},
  };
  for (const ForgedCase& c : cases) {
    SCOPED_TRACE(c.name);
    Requester r;
    for (auto& [seg, stream] : c.segments(r.a, r.b)) {
      r.peer.Inject(seg, kSctpPpidDdpSegment, stream);
    }
    r.peer.Drive();
    // Two receives and both Reads flushed.
    r.peer.ExpectTerminate(c.cause, 4);
    EXPECT_TRUE(RdmaContexts(r.peer.side.sink).empty());
    for (size_t i = 0; i < r.sink_a.size(); ++i) {
      const bool in_placed = i >= 0x32 && i < 0x32 + c.placed_a;
      ASSERT_EQ(r.sink_a[i], in_placed ? 1 : 0) << i;
    }
    EXPECT_TRUE(std::all_of(r.sink_b.begin(), r.sink_b.end(), [](uint8_t x) { return x == 0; }));
  }
}

TEST(QpSctpReadStreamsBadInputTest, ReadResponseWithNoReadOutstandingIsUnexpected) {
  SctpRawPeer peer;
  Bytes sink(64, 0);
  const uint32_t s = peer.side.Register(sink, mem::kLocalWrite, 0x1000);
  peer.Inject(ReadResponse(s, 0x1000, true, 8, 1), kSctpPpidDdpSegment, StreamOf(s));
  peer.Drive();
  peer.ExpectTerminate(wire::term::kRdmapUnexpectedOpcode, 2);
  EXPECT_TRUE(std::all_of(sink.begin(), sink.end(), [](uint8_t x) { return x == 0; }));
}

}  // namespace
}  // namespace iwarpx::qp::test
