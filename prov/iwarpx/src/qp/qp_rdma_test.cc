// Steps 2 and 3: RDMA Write (direct placement, protection errors) and RDMA
// Read (responses placed into the local sink, ORD queueing, IRD overflow,
// source protection errors).
#include <algorithm>
#include <cstring>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;
using ::iwarpx::testing::RandomBytes;

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

// A buffer with guard bytes on both sides of a registered middle.
struct Guarded {
  Bytes all;
  size_t len;
  explicit Guarded(size_t n) : all(n + 2 * kGuard, kGuardByte), len(n) {}
  uint8_t* data() { return all.data() + kGuard; }
  [[nodiscard]] bool GuardsIntact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (all[i] != kGuardByte || all[kGuard + len + i] != kGuardByte) return false;
    }
    return true;
  }
  [[nodiscard]] bool MiddleUntouched() const {
    for (size_t i = 0; i < len; ++i) {
      if (all[kGuard + i] != kGuardByte) return false;
    }
    return true;
  }
  uint32_t Register(Side& s, uint32_t access, uint64_t base_to) {
    mem::RegionSpec spec;
    spec.host = data();
    spec.length = len;
    spec.base_to = base_to;
    spec.access = access;
    spec.pd = kPd;
    auto r = s.stags.Register(spec);
    return r.ok() ? *r : 0;
  }
};

class QpWriteTest : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(QpWriteTest, PlacedDirectlyNoTargetCompletion) {
  const auto [max_per_call, crc] = GetParam();
  QpConfig cfg;
  cfg.max_fpdu_payload = 1000;
  QpPair p(max_per_call, crc, cfg);
  p.Start();
  std::mt19937 rng(5);
  const size_t n = 70000;
  Guarded target(n);
  const uint32_t stag = target.Register(p.b, mem::kRemoteWrite, 0x10000);
  ASSERT_NE(stag, 0u);
  const Bytes data = RandomBytes(rng, n - 10);
  Bytes h1(data.begin(), data.begin() + 999), h2(data.begin() + 999, data.end());
  WriteWr wr;
  wr.context = 77;
  wr.sgl.Add(h1.data(), h1.size());
  wr.sgl.Add(h2.data(), h2.size());
  wr.remote_stag = stag;
  wr.remote_to = 0x10000 + 10;
  ASSERT_EQ(p.a.qp->PostWrite(wr), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.a.sink.completions.size(), 1u);
  EXPECT_EQ(p.a.sink.completions[0].kind, Kind::kRdma);
  EXPECT_EQ(p.a.sink.completions[0].op, WcOp::kWrite);
  EXPECT_EQ(p.a.sink.completions[0].context, 77u);
  EXPECT_TRUE(p.b.sink.completions.empty());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), target.data() + 10));
  EXPECT_EQ(target.data()[9], kGuardByte);
  EXPECT_TRUE(target.GuardsIntact());
}

// The target's placement report (CompletionSink::OnRemoteWrite, what RC-FP
// detects arrival by): once per Write, after its last segment, with every
// byte in place, in stream order between the Sends around it.
TEST_P(QpWriteTest, TargetReportsThePlacementInStreamOrder) {
  const auto [max_per_call, crc] = GetParam();
  QpConfig cfg;
  cfg.max_fpdu_payload = 1000;
  QpPair p(max_per_call, crc, cfg);
  p.Start();
  std::mt19937 rng(9);
  const size_t n = 5000;  // several segments
  Guarded target(n);
  const uint32_t stag = target.Register(p.b, mem::kRemoteWrite, 0);
  ASSERT_NE(stag, 0u);
  Bytes data = RandomBytes(rng, n);
  bool complete_when_reported = false;
  p.b.sink.on_remote_write = [&](uint32_t) {
    complete_when_reported = std::equal(data.begin(), data.end(), target.data());
  };
  Bytes r1(16), r2(16), s1(8, 1), s2(8, 2);
  RecvWr rv;
  rv.context = 1;
  rv.sgl.Add(r1.data(), r1.size());
  ASSERT_EQ(p.b.qp->PostRecv(rv), QpStatus::kOk);
  rv.context = 2;
  rv.sgl = Sgl{};
  rv.sgl.Add(r2.data(), r2.size());
  ASSERT_EQ(p.b.qp->PostRecv(rv), QpStatus::kOk);
  SendWr sw;
  sw.sgl.Add(s1.data(), s1.size());
  ASSERT_EQ(p.a.qp->PostSend(sw), QpStatus::kOk);
  WriteWr wr;
  wr.sgl.Add(data.data(), data.size());
  wr.remote_stag = stag;
  wr.remote_to = 0;
  ASSERT_EQ(p.a.qp->PostWrite(wr), QpStatus::kOk);
  WriteWr empty;  // zero-length: not reported
  empty.remote_stag = stag;
  ASSERT_EQ(p.a.qp->PostWrite(empty), QpStatus::kOk);
  SendWr sw2;
  sw2.sgl.Add(s2.data(), s2.size());
  ASSERT_EQ(p.a.qp->PostSend(sw2), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 2u);
  ASSERT_EQ(p.b.sink.remote_writes.size(), 1u);
  EXPECT_EQ(p.b.sink.remote_writes[0].first, stag);
  EXPECT_EQ(p.b.sink.remote_writes[0].second, 1u);  // after the first Send, before the second
  EXPECT_TRUE(complete_when_reported);
  EXPECT_TRUE(target.GuardsIntact());
}

INSTANTIATE_TEST_SUITE_P(Splits, QpWriteTest,
                         ::testing::Combine(::testing::Values(size_t{1}, size_t{7}, size_t{4096},
                                                              size_t{0}),
                                            ::testing::Bool()));

enum class Fault { kWrongStag, kOneBeyond, kNoRemoteWrite, kInvalidated, kOtherPd };

class QpWriteProtectionTest : public ::testing::TestWithParam<Fault> {};

TEST_P(QpWriteProtectionTest, TargetTerminatesAndMemoryUntouched) {
  const Fault fault = GetParam();
  QpPair p(7, true);
  p.Start();
  p.Pump();
  const size_t n = 256;
  Guarded target(n);
  uint32_t access =
      fault == Fault::kNoRemoteWrite ? mem::kRemoteRead | mem::kLocalWrite : mem::kRemoteWrite;
  uint32_t stag = 0;
  if (fault == Fault::kOtherPd) {
    mem::RegionSpec spec;
    spec.host = target.data();
    spec.length = n;
    spec.base_to = 0;
    spec.access = access;
    spec.pd = kPd + 1;
    auto r = p.b.stags.Register(spec);
    ASSERT_TRUE(r.ok());
    stag = *r;
  } else {
    stag = target.Register(p.b, access, 0);
  }
  if (fault == Fault::kInvalidated) {
    ASSERT_TRUE(p.b.stags.Invalidate(stag, kPd));
  }
  Bytes src(fault == Fault::kOneBeyond ? n + 1 : n, 0x11);
  WriteWr wr;
  wr.context = 9;
  wr.sgl.Add(src.data(), src.size());
  wr.remote_stag = fault == Fault::kWrongStag ? stag ^ 0x100 : stag;
  wr.remote_to = 0;
  // A receive at the target gets flushed too.
  Bytes rbuf(16);
  RecvWr rwr;
  rwr.context = 3;
  rwr.sgl.Add(rbuf.data(), rbuf.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostWrite(wr), QpStatus::kOk);
  p.Pump();

  wire::TermCause want{};
  switch (fault) {
    case Fault::kWrongStag:
    case Fault::kInvalidated:
    case Fault::kNoRemoteWrite:  // DDP has no access code (siw maps it to invalid STag)
      want = wire::term::kDdpTaggedInvalidStag;
      break;
    case Fault::kOneBeyond: want = wire::term::kDdpTaggedBaseBounds; break;
    case Fault::kOtherPd: want = wire::term::kDdpTaggedStagNotAssociated; break;
  }
  EXPECT_TRUE(target.MiddleUntouched());
  EXPECT_TRUE(target.GuardsIntact());
  EXPECT_EQ(p.b.sink.terminated, 1);
  EXPECT_EQ(p.b.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(p.b.sink.term_cause, want);
  ASSERT_EQ(p.b.sink.completions.size(), 1u);
  EXPECT_EQ(p.b.sink.completions[0].kind, Kind::kError);
  EXPECT_EQ(p.b.sink.completions[0].context, 3u);
  EXPECT_EQ(p.a.sink.terminated, 1);
  EXPECT_EQ(p.a.sink.term_origin, TermOrigin::kReceived);
  EXPECT_EQ(p.a.sink.term_cause, want);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
}

INSTANTIATE_TEST_SUITE_P(Faults, QpWriteProtectionTest,
                         ::testing::Values(Fault::kWrongStag, Fault::kOneBeyond,
                                           Fault::kNoRemoteWrite, Fault::kInvalidated,
                                           Fault::kOtherPd));

TEST(QpWriteProtectionTest, TerminateCarriesOffendingHeader) {
  RawPeer peer(true);
  peer.side.qp->Start();
  Bytes rtr(14);
  ASSERT_TRUE(wire::EncodeWriteHeader(1, 0, true, rtr).ok());
  peer.WriteUlpdu(rtr);
  Bytes w(14 + 8, 0x33);
  ASSERT_TRUE(wire::EncodeWriteHeader(0xDEAD, 0x40, true, w).ok());
  peer.WriteUlpdu(w);
  peer.Drive();
  const auto ulpdus = peer.ReadUlpdus();
  ASSERT_EQ(ulpdus.size(), 1u);
  auto seg = wire::ParseSegment(ulpdus[0]);
  ASSERT_TRUE(seg.ok());
  ASSERT_EQ(seg->opcode, wire::RdmapOpcode::kTerminate);
  auto th = wire::DecodeTerminate(std::get<wire::TerminateBodyView>(seg->body).bytes);
  ASSERT_TRUE(th.ok());
  EXPECT_EQ(th->cause, wire::term::kDdpTaggedInvalidStag);
  EXPECT_TRUE(th->m && th->d);
  ASSERT_EQ(th->ddp_header.size(), 14u);
  EXPECT_TRUE(std::equal(th->ddp_header.begin(), th->ddp_header.end(), w.begin()));
  EXPECT_EQ(peer.side.qp->state(), QpState::kError);
}

class QpReadTest : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(QpReadTest, ResponseStreamedIntoLocalSink) {
  const auto [max_per_call, crc] = GetParam();
  QpConfig cfg;
  cfg.max_fpdu_payload = 900;
  QpPair p(max_per_call, crc, cfg);
  p.Start();
  std::mt19937 rng(8);
  const size_t n = 50000;
  Bytes source = RandomBytes(rng, n);
  const uint32_t src_stag = p.b.Register(source, mem::kRemoteRead, 0x7000);
  Guarded sink(n);
  const uint32_t sink_stag = sink.Register(p.a, mem::kLocalWrite, 0x100);
  ReadWr wr;
  wr.context = 55;
  wr.local_stag = sink_stag;
  wr.local_to = 0x100;
  wr.length = static_cast<uint32_t>(n - 100);
  wr.remote_stag = src_stag;
  wr.remote_to = 0x7000 + 100;
  ASSERT_EQ(p.a.qp->PostRead(wr), QpStatus::kOk);
  // Zero-length Read too.
  ReadWr zero = wr;
  zero.context = 56;
  zero.length = 0;
  ASSERT_EQ(p.a.qp->PostRead(zero), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.a.sink.completions.size(), 2u);
  EXPECT_EQ(p.a.sink.completions[0].kind, Kind::kRdma);
  EXPECT_EQ(p.a.sink.completions[0].op, WcOp::kRead);
  EXPECT_EQ(p.a.sink.completions[0].context, 55u);
  EXPECT_EQ(p.a.sink.completions[1].context, 56u);
  EXPECT_TRUE(p.b.sink.completions.empty());
  EXPECT_TRUE(std::equal(source.begin() + 100, source.end(), sink.data()));
  EXPECT_TRUE(sink.GuardsIntact());
  EXPECT_EQ(sink.data()[n - 100], kGuardByte);
  EXPECT_EQ(p.a.qp->outstanding_reads(), 0u);
  EXPECT_EQ(p.b.qp->inbound_reads(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Splits, QpReadTest,
                         ::testing::Combine(::testing::Values(size_t{1}, size_t{7}, size_t{4096},
                                                              size_t{0}),
                                            ::testing::Bool()));

TEST(QpReadMiscTest, OrdQueuesExcessReadsAtRequester) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 256;
  QpPair p(0, true, cfg, /*ird=*/1, /*ord=*/1);
  p.Start();
  p.Pump();
  Bytes source(3000);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7);
  const uint32_t src_stag = p.b.Register(source, mem::kRemoteRead, 0);
  Bytes sink(3000, 0);
  const uint32_t sink_stag = p.a.Register(sink, mem::kLocalWrite, 0);
  for (uint32_t i = 0; i < 3; ++i) {
    ReadWr wr;
    wr.context = i;
    wr.local_stag = sink_stag;
    wr.local_to = uint64_t{i} * 1000;
    wr.length = 1000;
    wr.remote_stag = src_stag;
    wr.remote_to = uint64_t{i} * 1000;
    ASSERT_EQ(p.a.qp->PostRead(wr), QpStatus::kOk);
    EXPECT_LE(p.a.qp->outstanding_reads(), 1u);
  }
  // Only one Read Request left the requester.
  EXPECT_EQ(p.a.qp->outstanding_reads(), 1u);
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 3u);
  EXPECT_TRUE(sink == source);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

TEST(QpReadMiscTest, SourceProtectionFailureTerminates) {
  QpPair p(0, true);
  p.Start();
  Bytes source(100);
  const uint32_t src_stag = p.b.Register(source, mem::kRemoteWrite, 0);  // no kRemoteRead
  Bytes sink(100);
  const uint32_t sink_stag = p.a.Register(sink, mem::kLocalWrite, 0);
  ReadWr wr;
  wr.context = 4;
  wr.local_stag = sink_stag;
  wr.length = 100;
  wr.remote_stag = src_stag;
  ASSERT_EQ(p.a.qp->PostRead(wr), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(p.b.sink.term_cause, wire::term::kRdmapAccessRights);
  EXPECT_EQ(p.b.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(p.a.sink.term_cause, wire::term::kRdmapAccessRights);
  EXPECT_EQ(p.a.sink.term_origin, TermOrigin::kReceived);
  ASSERT_EQ(p.a.sink.completions.size(), 1u);
  EXPECT_EQ(p.a.sink.completions[0].kind, Kind::kError);
  EXPECT_EQ(p.a.sink.completions[0].op, WcOp::kRead);
  EXPECT_EQ(ProvErrno(p.a.sink.completions[0].error.cause), 0x000102);
}

// The start of the Read Response tests below: a started pair with FPDUs of
// `fpdu_payload` bytes, 4096 bytes of 0x5a registered at b for remote reads,
// a zeroed sink of the same size at a, and the Read of one into the other.
struct ReadSetup {
  explicit ReadSetup(size_t fpdu_payload) : p(0, true, Config(fpdu_payload)) {
    p.Start();
    p.Pump();
    wr.context = 9;
    wr.local_stag = p.a.Register(sink, mem::kLocalWrite, 0);
    wr.length = static_cast<uint32_t>(source.size());
    wr.remote_stag = p.b.Register(source, mem::kRemoteRead, 0);
  }
  static QpConfig Config(size_t fpdu_payload) {
    QpConfig cfg;
    cfg.max_fpdu_payload = fpdu_payload;
    return cfg;
  }
  QpPair p;
  Bytes source = Bytes(4096, 0x5a);
  Bytes sink = Bytes(4096, 0);
  ReadWr wr;
};

// The source of a Read is resolved again for every Read Response FPDU: a
// region deregistered while the response is being streamed is not read any
// further; the responder terminates with the RDMAP protection cause instead.
TEST(QpReadMiscTest, SourceDeregisteredMidResponseTerminates) {
  ReadSetup r(256);
  QpPair& p = r.p;
  Bytes& sink = r.sink;
  p.b.conn->set_send_capacity(600);  // the responder stalls after a few FPDUs
  ASSERT_EQ(p.a.qp->PostRead(r.wr), QpStatus::kOk);
  p.a.qp->OnWritable();
  p.b.qp->OnReadable();
  ASSERT_GT(p.a.conn->pending(), 0u) << "some Read Response FPDUs went out";
  ASSERT_TRUE(p.b.stags.Deregister(r.wr.remote_stag));
  p.b.conn->set_send_capacity(1 << 30);
  p.Pump();
  EXPECT_EQ(p.b.sink.term_cause, wire::term::kRdmapInvalidStag);
  EXPECT_EQ(p.b.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(p.a.sink.term_cause, wire::term::kRdmapInvalidStag);
  ASSERT_EQ(p.a.sink.completions.size(), 1u);
  EXPECT_EQ(p.a.sink.completions[0].kind, Kind::kError);
  EXPECT_EQ(p.a.sink.completions[0].op, WcOp::kRead);
  EXPECT_LT(std::count(sink.begin(), sink.end(), 0x5a), 4096) << "the read did not complete";
}

// A Read Response FPDU the socket took only part of must not keep pointing
// into the source region: the application may deregister and reuse that
// memory as soon as the engine call returns. The rest of the FPDU goes out
// from the QP's stash, with the bytes as they were when it was framed.
TEST(QpReadMiscTest, HalfSentResponseNeverRereadsTheRegion) {
  ReadSetup r(256);
  QpPair& p = r.p;
  Bytes& sink = r.sink;
  p.b.conn->set_send_capacity(600);  // stalls inside the third FPDU
  ASSERT_EQ(p.a.qp->PostRead(r.wr), QpStatus::kOk);
  p.a.qp->OnWritable();
  p.b.qp->OnReadable();
  ASSERT_EQ(p.a.conn->pending(), 600u) << "600 bytes: two 264-byte FPDUs and part of a third";
  // The application takes the region back and reuses the memory.
  ASSERT_TRUE(p.b.stags.Deregister(r.wr.remote_stag));
  std::fill(r.source.begin(), r.source.end(), 0xee);
  p.b.conn->set_send_capacity(1 << 30);
  p.Pump();
  EXPECT_EQ(std::count(sink.begin(), sink.end(), 0xee), 0) << "reused memory was sent";
  EXPECT_GT(std::count(sink.begin(), sink.end(), 0x5a), 512) << "the half-sent FPDU completed";
  EXPECT_EQ(p.b.sink.term_cause, wire::term::kRdmapInvalidStag);
  ASSERT_EQ(p.a.sink.completions.size(), 1u);
  EXPECT_EQ(p.a.sink.completions[0].kind, Kind::kError);
}

// Several Reads answered while the responder's socket keeps stalling in the
// middle of FPDUs: every stalled Read Response is stashed, and no FPDU built
// after a stashed one may overwrite the stash before it is out (the batch
// stops there). All data arrives with good CRCs.
TEST(QpReadMiscTest, RepeatedStallsAcrossManyReadResponses) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 512;
  QpPair p(0, true, cfg, 8, 8);
  p.Start();
  p.Pump();
  std::mt19937 rng(3);
  const Bytes source = RandomBytes(rng, 20000);
  Bytes src_copy = source;
  const uint32_t src_stag = p.b.Register(src_copy, mem::kRemoteRead, 0);
  std::vector<Bytes> sinks(6, Bytes(source.size(), 0));
  for (size_t i = 0; i < sinks.size(); ++i) {
    ReadWr wr;
    wr.context = i;
    wr.local_stag = p.a.Register(sinks[i], mem::kLocalWrite, 0);
    wr.length = static_cast<uint32_t>(source.size());
    wr.remote_stag = src_stag;
    ASSERT_EQ(p.a.qp->PostRead(wr), QpStatus::kOk);
  }
  p.a.qp->OnWritable();
  // The responder may put only a few hundred bytes at a time on the wire.
  for (int round = 0; round < 2000 && p.a.sink.completions.size() < sinks.size(); ++round) {
    p.b.conn->set_send_capacity(p.a.conn->pending() + 137 + static_cast<size_t>(round % 5) * 61);
    p.b.qp->OnReadable();
    p.b.qp->OnWritable();
    while (p.a.qp->wants_read() || p.a.qp->wants_progress()) {
      const size_t before = p.a.conn->pending();
      p.a.qp->OnReadable();
      if (p.a.conn->pending() == before && !p.a.qp->wants_progress()) break;
    }
  }
  EXPECT_EQ(p.a.sink.terminated, 0) << "CRC or protocol error";
  EXPECT_EQ(p.b.sink.terminated, 0);
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), sinks.size());
  for (const Bytes& s : sinks) EXPECT_EQ(s, source);
}

// The Read Responses of a Read go out many to a send, as Writes do (one send
// per 64 KiB FPDU made a Read over TCP far slower than a Write), and those
// the connection refused whole are built again later, from the region as
// it is then.
TEST(QpReadMiscTest, ReadResponsesShareSendsAndRefusedOnesAreRebuilt) {
  ReadSetup r(256);  // 16 Read Response FPDUs
  QpPair& p = r.p;
  Bytes& source = r.source;
  Bytes& sink = r.sink;
  ReadWr& wr = r.wr;
  ASSERT_EQ(p.a.qp->PostRead(wr), QpStatus::kOk);
  p.a.qp->OnWritable();
  const size_t before = p.b.conn->send_calls();
  p.b.qp->OnReadable();
  // The first batch has one slot; the ring grows to a full batch for the rest.
  EXPECT_LE(p.b.conn->send_calls() - before, 2u) << "one send per Read Response FPDU";
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 1u);
  EXPECT_EQ(sink, source);

  // The socket takes two FPDUs and part of a third of a second Read's
  // responses; the responder changes the source before the rest goes out.
  // The part-sent FPDU goes out as it was framed (stashed), the refused ones
  // are rebuilt from the changed region: the sink shows where the cut was.
  std::fill(sink.begin(), sink.end(), 0);
  p.b.conn->set_send_capacity(600);  // 264-byte FPDUs: 2 whole, 72 bytes of the third
  wr.context = 2;
  ASSERT_EQ(p.a.qp->PostRead(wr), QpStatus::kOk);
  p.a.qp->OnWritable();
  p.b.qp->OnReadable();
  ASSERT_EQ(p.a.conn->pending(), 600u);
  std::fill(source.begin(), source.end(), 0x77);
  p.b.conn->set_send_capacity(1 << 30);
  p.Pump();
  EXPECT_EQ(p.b.sink.terminated, 0);
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 2u);
  const ptrdiff_t cut = 3 * (256 - static_cast<ptrdiff_t>(wire::kDdpTaggedHeaderSize));
  EXPECT_EQ(std::count(sink.begin(), sink.begin() + cut, 0x5a), cut) << "the first three FPDUs";
  EXPECT_EQ(std::count(sink.begin() + cut, sink.end(), 0x77), 4096 - cut) << "rebuilt ones";
}

// The initiator sends its RTR and closes at once (fi_connect then
// fi_shutdown): the responder reports the connection established, then ended.
TEST(QpStartTest, RtrFollowedByCloseIsEstablishedThenEnded) {
  for (const size_t max_per_call : {size_t{0}, size_t{1}}) {
    QpPair p(max_per_call, true);
    p.Start();
    p.a.qp->Disconnect();
    p.Pump();
    EXPECT_EQ(p.b.sink.established, 1) << max_per_call;
    EXPECT_EQ(p.b.sink.terminated, 1) << max_per_call;
  }
}

TEST(QpReadMiscTest, SinkWithoutLocalWriteTerminatesAtRequester) {
  QpPair p(0, false);
  p.Start();
  Bytes source(100, 1);
  const uint32_t src_stag = p.b.Register(source, mem::kRemoteRead, 0);
  Guarded sink(100);
  const uint32_t sink_stag = sink.Register(p.a, mem::kLocalRead, 0);
  ReadWr wr;
  wr.local_stag = sink_stag;
  wr.length = 100;
  wr.remote_stag = src_stag;
  ASSERT_EQ(p.a.qp->PostRead(wr), QpStatus::kOk);
  p.Pump();
  EXPECT_TRUE(sink.MiddleUntouched());
  EXPECT_EQ(p.a.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(p.a.sink.term_cause, wire::term::kDdpTaggedInvalidStag);
  EXPECT_EQ(p.b.sink.term_origin, TermOrigin::kReceived);
}

TEST(QpReadMiscTest, IrdOverflowTerminatesWithCatastrophicStream) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 256;
  RawPeer peer(true, cfg, /*ird=*/1, /*ord=*/1);
  peer.side.qp->Start();
  Bytes source(20000, 0x5A);
  const uint32_t src_stag = peer.side.Register(source, mem::kRemoteRead, 0);
  Bytes rtr(14);
  ASSERT_TRUE(wire::EncodeWriteHeader(1, 0, true, rtr).ok());
  peer.WriteUlpdu(rtr);
  for (uint32_t msn = 1; msn <= 2; ++msn) {
    wire::ReadRequestBody body;
    body.sink_stag = 0x99;
    body.read_size = 20000;
    body.source_stag = src_stag;
    Bytes rr(18 + 28);
    ASSERT_TRUE(wire::EncodeReadRequest(msn, body, rr).ok());
    peer.WriteUlpdu(rr);
  }
  peer.raw->set_send_capacity(100);  // the responder's answer stalls mid-stream
  peer.Drive(4);
  EXPECT_EQ(peer.side.sink.term_cause, wire::term::kRdmapCatastrophicStream);
  EXPECT_EQ(peer.side.sink.term_origin, TermOrigin::kSent);
  // Drain: every FPDU is whole (the Terminate waited for a boundary).
  Bytes raw;
  for (int i = 0; i < 2000 && peer.side.qp->state() != QpState::kError; ++i) {
    const Bytes more = peer.ReadRaw();
    raw.insert(raw.end(), more.begin(), more.end());
    peer.Drive(1);
  }
  const Bytes rest = peer.ReadRaw();
  raw.insert(raw.end(), rest.begin(), rest.end());
  const std::vector<Bytes> ulpdus = peer.Parse(raw);
  ASSERT_FALSE(ulpdus.empty());
  auto last = wire::ParseSegment(ulpdus.back());
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->opcode, wire::RdmapOpcode::kTerminate);
  for (size_t i = 0; i + 1 < ulpdus.size(); ++i) {
    auto s = wire::ParseSegment(ulpdus[i]);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->opcode, wire::RdmapOpcode::kRdmaReadResponse);
  }
  EXPECT_EQ(peer.side.qp->state(), QpState::kError);
}

// RFC 7306 Immediate Data after a Write (fi_writedata): the data is placed,
// then the Immediate Data consumes a receive; a zero-length Write with data
// sends the Immediate Data alone. Without a posted receive the target stops
// reading until one is posted.
TEST(QpImmediateTest, WriteWithImmediateConsumesReceive) {
  QpConfig cfg;
  cfg.max_fpdu_payload = 512;
  QpPair p(7, true, cfg);
  p.Start();
  p.Pump();
  Guarded target(3000);
  const uint32_t stag = target.Register(p.b, mem::kRemoteWrite, 0);
  Bytes src(3000, 0x61);
  WriteWr wr;
  wr.context = 1;
  wr.sgl.Add(src.data(), src.size());
  wr.remote_stag = stag;
  wr.with_imm = true;
  wr.imm = 0x1122334455667788ull;
  ASSERT_EQ(p.a.qp->PostWrite(wr), QpStatus::kOk);
  WriteWr zero;
  zero.context = 2;
  zero.remote_stag = stag;
  zero.with_imm = true;
  zero.imm = 42;
  ASSERT_EQ(p.a.qp->PostWrite(zero), QpStatus::kOk);
  p.Pump();
  EXPECT_TRUE(std::equal(src.begin(), src.end(), target.data()));  // placed, no receive needed
  EXPECT_TRUE(p.b.sink.completions.empty());
  EXPECT_FALSE(p.b.qp->wants_read());
  Bytes rbuf(8);
  for (uint64_t c = 10; c < 12; ++c) {
    RecvWr rwr;
    rwr.context = c;
    rwr.sgl.Add(rbuf.data(), rbuf.size());
    ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  }
  p.Pump();
  ASSERT_EQ(p.b.sink.completions.size(), 2u);
  EXPECT_EQ(p.b.sink.completions[0].context, 10u);
  EXPECT_EQ(p.b.sink.completions[0].bytes, 0u);
  EXPECT_TRUE(p.b.sink.completions[0].recv.has_imm);
  EXPECT_EQ(p.b.sink.completions[0].recv.imm, 0x1122334455667788ull);
  EXPECT_EQ(p.b.sink.completions[1].recv.imm, 42u);
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 2u);
  EXPECT_EQ(p.b.sink.terminated, 0);
  // The Send MSN sequence is shared: a Send afterwards still matches.
  Bytes msg(5, 9);
  RecvWr rwr;
  rwr.context = 12;
  rwr.sgl.Add(rbuf.data(), rbuf.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  SendWr swr;
  swr.sgl.Add(msg.data(), msg.size());
  ASSERT_EQ(p.a.qp->PostSend(swr), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.completions.size(), 3u);
  EXPECT_EQ(p.b.sink.completions[2].bytes, 5u);
  EXPECT_FALSE(p.b.sink.completions[2].recv.has_imm);
}

// RFC 7306 atomics: executed at the responder on registered, aligned memory;
// the original value comes back to the requester's result pointer.
TEST(QpAtomicTest, FetchAddSwapCmpSwap) {
  QpPair p(7, true);
  p.Start();
  p.Pump();
  alignas(8) uint64_t cell[2] = {100, 0xFFFF};
  const uint32_t stag = p.b.RegisterRaw(cell, sizeof(cell), mem::kRemoteAtomic);
  ASSERT_NE(stag, 0u);
  uint64_t r[4] = {};
  auto post = [&](uint64_t ctx, wire::AtomicOp op, uint64_t to, uint64_t operand, uint64_t cmp) {
    AtomicWr wr;
    wr.context = ctx;
    wr.op = op;
    wr.remote_stag = stag;
    wr.remote_to = to;
    wr.operand = operand;
    wr.compare = cmp;
    wr.result = ctx < 4 ? &r[ctx] : nullptr;
    return p.a.qp->PostAtomic(wr);
  };
  ASSERT_EQ(post(0, wire::AtomicOp::kFetchAdd, 0, 5, 0), QpStatus::kOk);
  ASSERT_EQ(post(1, wire::AtomicOp::kCmpSwap, 0, 7, 105), QpStatus::kOk);  // matches
  ASSERT_EQ(post(2, wire::AtomicOp::kCmpSwap, 0, 9, 105), QpStatus::kOk);  // does not
  ASSERT_EQ(post(3, wire::AtomicOp::kSwap, 8, 0x1234, 0), QpStatus::kOk);
  EXPECT_EQ(post(9, wire::AtomicOp::kSwap, 4, 1, 0), QpStatus::kInvalid);  // unaligned
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 4u);
  EXPECT_EQ(p.a.sink.completions[0].op, WcOp::kAtomic);
  EXPECT_EQ(r[0], 100u);
  EXPECT_EQ(r[1], 105u);
  EXPECT_EQ(r[2], 7u);
  EXPECT_EQ(r[3], 0xFFFFu);
  EXPECT_EQ(cell[0], 7u);
  EXPECT_EQ(cell[1], 0x1234u);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

// 32-bit atomics: the masked RFC 7306 request on the enclosing 8-byte word.
// Each touches only its own 4-byte lane (a fetch-add that wraps does not
// carry into the neighbour), and exactly 4 result bytes come back.
TEST(QpAtomicTest, ThirtyTwoBitLanesStayApart) {
  QpPair p(7, true);
  p.Start();
  p.Pump();
  alignas(8) uint32_t cell[4] = {0xFFFFFFFEu, 10, 20, 0xAAAAAAAAu};
  const uint32_t stag = p.b.RegisterRaw(cell, sizeof(cell), mem::kRemoteAtomic);
  ASSERT_NE(stag, 0u);
  // Results with guard words on both sides: only the middle 4 bytes change.
  uint32_t r[5][3] = {};
  for (auto& g : r) g[0] = g[2] = 0x5A5A5A5Au;
  auto post = [&](uint64_t ctx, wire::AtomicOp op, uint64_t to, uint64_t operand, uint64_t cmp) {
    AtomicWr wr;
    wr.context = ctx;
    wr.op = op;
    wr.size = 4;
    wr.remote_stag = stag;
    wr.remote_to = to;
    wr.operand = operand;
    wr.compare = cmp;
    wr.result = ctx < 5 ? &r[ctx][1] : nullptr;
    return p.a.qp->PostAtomic(wr);
  };
  ASSERT_EQ(post(0, wire::AtomicOp::kFetchAdd, 0, 3, 0), QpStatus::kOk);            // wraps to 1
  ASSERT_EQ(post(1, wire::AtomicOp::kFetchAdd, 4, 0xFFFFFFFFu, 0), QpStatus::kOk);  // 10-1
  ASSERT_EQ(post(2, wire::AtomicOp::kCmpSwap, 8, 77, 20), QpStatus::kOk);           // matches
  ASSERT_EQ(post(3, wire::AtomicOp::kCmpSwap, 4, 55, 10), QpStatus::kOk);  // 9 now: no swap
  ASSERT_EQ(post(4, wire::AtomicOp::kSwap, 12, 0x12345678u, 0), QpStatus::kOk);
  EXPECT_EQ(post(9, wire::AtomicOp::kSwap, 2, 1, 0), QpStatus::kInvalid);  // unaligned
  AtomicWr odd;
  odd.size = 2;
  odd.remote_stag = stag;
  EXPECT_EQ(p.a.qp->PostAtomic(odd), QpStatus::kInvalid);  // neither 4 nor 8 bytes
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 5u);
  EXPECT_EQ(r[0][1], 0xFFFFFFFEu);
  EXPECT_EQ(r[1][1], 10u);
  EXPECT_EQ(r[2][1], 20u);
  EXPECT_EQ(r[3][1], 9u);
  EXPECT_EQ(r[4][1], 0xAAAAAAAAu);
  for (const auto& g : r) {
    EXPECT_EQ(g[0], 0x5A5A5A5Au);
    EXPECT_EQ(g[2], 0x5A5A5A5Au);
  }
  EXPECT_EQ(cell[0], 1u);
  EXPECT_EQ(cell[1], 9u);
  EXPECT_EQ(cell[2], 77u);
  EXPECT_EQ(cell[3], 0x12345678u);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

// Masked swap (AtomicWr::swap_mask): only the selected bits change, in 64-bit
// words and in 32-bit lanes; ones under mask x is OR x, zeros under ~x is
// AND x (what fi_atomic FI_BOR / FI_BAND post). The original value comes back.
TEST(QpAtomicTest, MaskedSwapIsBitwiseOrAndAnd) {
  QpPair p(7, true);
  p.Start();
  p.Pump();
  alignas(8) uint64_t word[2] = {0xF0F0F0F0F0F0F0F0ull, 0};
  alignas(8) uint32_t lanes[2] = {0x0000FFFFu, 0xFF00FF00u};
  const uint32_t s64 = p.b.RegisterRaw(word, sizeof(word), mem::kRemoteAtomic);
  const uint32_t s32 = p.b.RegisterRaw(lanes, sizeof(lanes), mem::kRemoteAtomic);
  ASSERT_NE(s64, 0u);
  ASSERT_NE(s32, 0u);
  uint64_t r64[2] = {};
  uint32_t r32[2] = {};
  auto post = [&](uint64_t ctx, uint32_t stag, uint8_t size, uint64_t to, uint64_t operand,
                  uint64_t mask, void* result) {
    AtomicWr wr;
    wr.context = ctx;
    wr.op = wire::AtomicOp::kSwap;
    wr.size = size;
    wr.remote_stag = stag;
    wr.remote_to = to;
    wr.operand = operand;
    wr.swap_mask = mask;
    wr.result = result;
    return p.a.qp->PostAtomic(wr);
  };
  // 64-bit: OR 0x0F (ones under the mask), then AND ~0xFF00 (zeros under 0xFF00).
  ASSERT_EQ(post(0, s64, 8, 0, UINT64_MAX, 0x0F, &r64[0]), QpStatus::kOk);
  ASSERT_EQ(post(1, s64, 8, 0, 0, 0xFF00, &r64[1]), QpStatus::kOk);
  // 32-bit lanes: OR 0x00F00000 into lane 0, AND 0x0F0F0F0F into lane 1.
  ASSERT_EQ(post(2, s32, 4, 0, UINT64_MAX, 0x00F00000u, &r32[0]), QpStatus::kOk);
  ASSERT_EQ(post(3, s32, 4, 4, 0, ~uint64_t{0x0F0F0F0Fu}, &r32[1]), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 4u);
  EXPECT_EQ(r64[0], 0xF0F0F0F0F0F0F0F0ull);
  EXPECT_EQ(r64[1], 0xF0F0F0F0F0F0F0FFull);
  EXPECT_EQ(word[0], 0xF0F0F0F0F0F000FFull);
  EXPECT_EQ(word[1], 0u);
  EXPECT_EQ(r32[0], 0x0000FFFFu);
  EXPECT_EQ(r32[1], 0xFF00FF00u);
  EXPECT_EQ(lanes[0], 0x00F0FFFFu);
  EXPECT_EQ(lanes[1], 0x0F000F00u);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

// XOR (AtomicWr::xor_loop) as a compare-and-swap loop: right from a zero
// word (first guess hits) and from a non-zero one (a miss, then the value the
// miss returned), in 64-bit words and 32-bit lanes (the other lane kept);
// the original value comes back, and work posted after the loop executes
// after it: a fetch-add queued behind an XOR sees the XORed value.
TEST(QpAtomicTest, XorLoopIsAtomicXorAndKeepsOrder) {
  QpPair p(7, true);
  p.Start();
  p.Pump();
  alignas(8) uint64_t word[2] = {0, 0x5ull};
  alignas(8) uint32_t lanes[2] = {0x12345678u, 0xCAFEF00Du};
  const uint32_t s64 = p.b.RegisterRaw(word, sizeof(word), mem::kRemoteAtomic);
  const uint32_t s32 = p.b.RegisterRaw(lanes, sizeof(lanes), mem::kRemoteAtomic);
  uint64_t r64[3] = {};
  uint32_t r32 = 0;
  auto post_xor = [&](uint64_t ctx, uint32_t stag, uint8_t size, uint64_t to, uint64_t x,
                      void* result) {
    AtomicWr wr;
    wr.context = ctx;
    wr.xor_loop = true;
    wr.size = size;
    wr.remote_stag = stag;
    wr.remote_to = to;
    wr.operand = x;
    wr.result = result;
    return p.a.qp->PostAtomic(wr);
  };
  ASSERT_EQ(post_xor(0, s64, 8, 0, 0xFF, &r64[0]), QpStatus::kOk);  // 0 ^ 0xFF: first guess
  ASSERT_EQ(post_xor(1, s64, 8, 8, 0x3, &r64[1]), QpStatus::kOk);   // 5 ^ 3: one miss
  AtomicWr add;
  add.context = 2;
  add.op = wire::AtomicOp::kFetchAdd;
  add.remote_stag = s64;
  add.remote_to = 8;
  add.operand = 1;
  add.result = &r64[2];
  ASSERT_EQ(p.a.qp->PostAtomic(add), QpStatus::kOk);
  ASSERT_EQ(post_xor(3, s32, 4, 4, 0xFFFF0000u, &r32), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 4u);
  EXPECT_EQ(r64[0], 0u);
  EXPECT_EQ(word[0], 0xFFu);
  EXPECT_EQ(r64[1], 0x5u);
  EXPECT_EQ(r64[2], 0x6u);  // the fetch-add ran after the XOR
  EXPECT_EQ(word[1], 0x7u);
  EXPECT_EQ(r32, 0xCAFEF00Du);
  EXPECT_EQ(lanes[1], 0x3501F00Du);
  EXPECT_EQ(lanes[0], 0x12345678u);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

// A 32-bit target in the last 4 bytes of a region whose enclosing word runs
// past the region's end: the responder refuses it (protection), nothing
// outside the region is touched.
TEST(QpAtomicTest, ThirtyTwoBitWordMustLieInsideTheRegion) {
  QpPair p(7, true);
  p.Start();
  p.Pump();
  alignas(8) uint32_t cell[2] = {5, 0xC0FFEEu};
  // The first lane only.
  const uint32_t stag = p.b.RegisterRaw(cell, sizeof(uint32_t), mem::kRemoteAtomic);
  ASSERT_NE(stag, 0u);
  AtomicWr wr;
  wr.size = 4;
  wr.remote_stag = stag;
  wr.operand = 1;
  ASSERT_EQ(p.a.qp->PostAtomic(wr), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(p.b.sink.term_cause, wire::term::kRdmapBaseBounds);
  EXPECT_EQ(p.a.sink.completions.back().kind, Kind::kError);
  EXPECT_EQ(cell[0], 5u);
  EXPECT_EQ(cell[1], 0xC0FFEEu);
}

TEST(QpAtomicTest, MixedWithReadsInOrderAndProtection) {
  QpPair p(0, true, {}, 2, 2);
  p.Start();
  p.Pump();
  alignas(8) uint64_t cell = 1;
  mem::RegionSpec spec;
  spec.host = reinterpret_cast<uint8_t*>(&cell);
  spec.length = sizeof(cell);
  spec.access = mem::kRemoteAtomic | mem::kRemoteRead;
  spec.pd = kPd;
  auto stag = p.b.stags.Register(spec);
  ASSERT_TRUE(stag.ok());
  Bytes sink(8);
  const uint32_t sink_stag = p.a.Register(sink, mem::kLocalWrite, 0);
  ReadWr rd;
  rd.context = 1;
  rd.local_stag = sink_stag;
  rd.length = 8;
  rd.remote_stag = *stag;
  AtomicWr add;
  add.context = 2;
  add.remote_stag = *stag;
  add.operand = 10;
  ASSERT_EQ(p.a.qp->PostRead(rd), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->PostAtomic(add), QpStatus::kOk);
  rd.context = 3;
  ASSERT_EQ(p.a.qp->PostRead(rd), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.a.sink.Count(Kind::kRdma), 3u);
  uint64_t seen = 0;
  std::memcpy(&seen, sink.data(), 8);
  EXPECT_EQ(seen, 11u);  // the second Read ran after the add
  EXPECT_EQ(cell, 11u);
  // Without kRemoteAtomic: Terminate with the RDMAP access-rights cause.
  spec.access = mem::kRemoteRead;
  auto ro = p.b.stags.Register(spec);
  ASSERT_TRUE(ro.ok());
  add.remote_stag = *ro;
  add.context = 4;
  ASSERT_EQ(p.a.qp->PostAtomic(add), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(p.b.sink.term_cause, wire::term::kRdmapAccessRights);
  EXPECT_EQ(p.a.sink.term_origin, TermOrigin::kReceived);
  EXPECT_EQ(p.a.sink.completions.back().kind, Kind::kError);
  EXPECT_EQ(p.a.sink.completions.back().op, WcOp::kAtomic);
  EXPECT_EQ(cell, 11u);
}

// A masked fetch-add from a raw peer: carries stop at the mask's set bits
// (two 32-bit lanes here).
TEST(QpAtomicTest, MaskedFetchAddKeepsLanesApart) {
  RawPeer peer(true);
  peer.side.qp->Start();
  alignas(8) uint64_t cell = 0x00000001FFFFFFFFull;
  mem::RegionSpec spec;
  spec.host = reinterpret_cast<uint8_t*>(&cell);
  spec.length = sizeof(cell);
  spec.access = mem::kRemoteAtomic;
  spec.pd = kPd;
  auto stag = peer.side.stags.Register(spec);
  ASSERT_TRUE(stag.ok());
  Bytes rtr(14);
  ASSERT_TRUE(wire::EncodeWriteHeader(1, 0, true, rtr).ok());
  peer.WriteUlpdu(rtr);
  wire::AtomicRequestBody body;
  body.op = wire::AtomicOp::kFetchAdd;
  body.request_id = 77;
  body.remote_stag = *stag;
  body.add_or_swap_data = 0x0000000100000001ull;
  body.add_or_swap_mask = 0x8000000080000000ull;
  Bytes req(18 + 52);
  ASSERT_TRUE(wire::EncodeAtomicRequest(1, body, req).ok());
  peer.WriteUlpdu(req);
  peer.Drive();
  EXPECT_EQ(cell, 0x0000000200000000ull);
  const auto ulpdus = peer.ReadUlpdus();
  ASSERT_EQ(ulpdus.size(), 1u);
  auto seg = wire::ParseSegment(ulpdus[0]);
  ASSERT_TRUE(seg.ok());
  ASSERT_EQ(seg->opcode, wire::RdmapOpcode::kAtomicResponse);
  EXPECT_EQ(seg->ddp.qn, 3u);
  EXPECT_EQ(seg->ddp.msn, 1u);
  const auto& resp = std::get<wire::AtomicResponseBody>(seg->body);
  EXPECT_EQ(resp.original_request_id, 77u);
  EXPECT_EQ(resp.original_remote_data, 0x00000001FFFFFFFFull);
}

class QpFenceTest : public ::testing::TestWithParam<bool> {};

// FI_FENCE: a fenced WR waits until every earlier Read has completed; an
// unfenced Send completes (on transmit) while the Read is still outstanding.
TEST_P(QpFenceTest, FencedSendWaitsForOutstandingRead) {
  const bool fenced = GetParam();
  QpPair p(0, true);
  p.Start();
  p.Pump();
  Bytes source(5000, 3);
  const uint32_t src_stag = p.b.Register(source, mem::kRemoteRead, 0);
  Bytes sink(5000);
  const uint32_t sink_stag = p.a.Register(sink, mem::kLocalWrite, 0);
  Bytes rbuf(16), sbuf(16, 4);
  RecvWr rwr;
  rwr.sgl.Add(rbuf.data(), rbuf.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  ReadWr rd;
  rd.context = 1;
  rd.local_stag = sink_stag;
  rd.length = 5000;
  rd.remote_stag = src_stag;
  ASSERT_EQ(p.a.qp->PostRead(rd), QpStatus::kOk);
  SendWr wr;
  wr.context = 2;
  wr.flags = kWrSignaled | (fenced ? kWrFence : 0u);
  wr.sgl.Add(sbuf.data(), sbuf.size());
  ASSERT_EQ(p.a.qp->PostSend(wr), QpStatus::kOk);
  EXPECT_EQ(p.a.sink.completions.size(), fenced ? 0u : 1u);
  p.Pump();
  ASSERT_EQ(p.a.sink.completions.size(), 2u);
  EXPECT_EQ(p.a.sink.completions[0].context, fenced ? 1u : 2u);
  EXPECT_EQ(p.a.sink.completions[1].context, fenced ? 2u : 1u);
  EXPECT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
  EXPECT_TRUE(sink == source);
}

INSTANTIATE_TEST_SUITE_P(Fence, QpFenceTest, ::testing::Bool());

}  // namespace
}  // namespace iwarpx::qp::test
