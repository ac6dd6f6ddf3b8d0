// Receive read-ahead (queue_pair.h, "Receive read-ahead"): RecvV calls per
// FPDU, direct placement of bulk payloads, byte-at-a-time delivery of every
// opcode, staged bytes behind a blocked Send, CRC errors in staged FPDUs and
// the per-call budget. RecvV calls are counted by the fake connection.
#include <algorithm>
#include <cstdio>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"
#include "wire/markers.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;
using ::iwarpx::testing::RandomBytes;

Bytes WriteSegment(uint32_t stag, uint64_t to, bool last, size_t payload, uint8_t fill) {
  Bytes b(14 + payload, fill);
  (void)wire::EncodeWriteHeader(stag, to, last, b);
  return b;
}

// A responder after the RTR, facing a raw peer, with nothing posted.
struct Raw : RawPeer {
  explicit Raw(bool crc_on, QpConfig cfg = {}) : RawPeer(crc_on, cfg) {
    side.qp->Start();
    WriteUlpdu(Rtr());
    Drive(1);
  }
  void Post(uint64_t context, Bytes& buf) {
    RecvWr w;
    w.context = context;
    w.sgl.Add(buf.data(), buf.size());
    ASSERT_EQ(side.qp->PostRecv(w), QpStatus::kOk);
  }
  [[nodiscard]] size_t Calls() const { return side.conn->recv_calls(); }
};

class QpReadAheadCrcTest : public ::testing::TestWithParam<bool> {};

// 8 B Send ping-pong: each message costs one RecvV at the receiver (it was 6:
// length, control bytes, rest of header, payload, trailer, and an EAGAIN).
TEST_P(QpReadAheadCrcTest, PingPongOneRecvVPerMessage) {
  QpPair p(0, GetParam());
  p.Start();
  p.Pump();
  constexpr int kRounds = 100;
  Bytes abuf(8, 1), bbuf(8, 2), ar(8), br(8);
  const size_t a0 = p.a.conn->recv_calls();
  const size_t b0 = p.b.conn->recv_calls();
  for (int i = 0; i < kRounds; ++i) {
    RecvWr w;
    w.sgl.Add(ar.data(), ar.size());
    ASSERT_EQ(p.a.qp->PostRecv(w), QpStatus::kOk);
    w.sgl = {};
    w.sgl.Add(br.data(), br.size());
    ASSERT_EQ(p.b.qp->PostRecv(w), QpStatus::kOk);
    SendWr s;
    s.sgl.Add(abuf.data(), abuf.size());
    ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
    p.b.qp->OnReadable();
    ASSERT_EQ(p.b.sink.Count(Kind::kRecv), static_cast<size_t>(i + 1));
    s.sgl = {};
    s.sgl.Add(bbuf.data(), bbuf.size());
    ASSERT_EQ(p.b.qp->PostSend(s), QpStatus::kOk);
    p.a.qp->OnReadable();
    ASSERT_EQ(p.a.sink.Count(Kind::kRecv), static_cast<size_t>(i + 1));
  }
  EXPECT_TRUE(ar == bbuf);
  EXPECT_TRUE(br == abuf);
  const size_t calls = p.a.conn->recv_calls() - a0 + p.b.conn->recv_calls() - b0;
  std::printf("RecvV calls per 8 B Send: %.2f\n", static_cast<double>(calls) / (2.0 * kRounds));
  EXPECT_EQ(calls, size_t{2 * kRounds});
  EXPECT_FALSE(p.a.qp->wants_progress());
  EXPECT_FALSE(p.b.qp->wants_progress());
}

TEST_P(QpReadAheadCrcTest, SmallSendWholeFpduOneRecvV) {
  Raw peer(GetParam());
  Bytes r(64);
  peer.Post(1, r);
  peer.WriteUlpdu(SendSegment(1, 0, true, 8, 0x5A));
  const size_t c0 = peer.Calls();
  const uint64_t s0 = peer.side.qp->rx_stats().recv_calls;
  peer.side.qp->OnReadable();
  EXPECT_EQ(peer.Calls() - c0, 1u);
  EXPECT_EQ(peer.side.qp->rx_stats().recv_calls - s0, 1u);
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(peer.side.sink.completions[0].bytes, 8u);
  EXPECT_EQ(std::count(r.begin(), r.begin() + 8, 0x5A), 8);
  EXPECT_EQ(peer.side.qp->rx_staged_bytes(), 0u);
  EXPECT_FALSE(peer.side.qp->wants_progress());
}

// Back-to-back small FPDUs of several kinds (Sends, a zero-length Write, a
// small Write, a Read Request, Immediate Data) are consumed in one RecvV.
TEST_P(QpReadAheadCrcTest, BackToBackSmallFpdusOneRecvV) {
  Raw peer(GetParam());
  std::vector<Bytes> rbufs(10, Bytes(32));
  for (size_t i = 0; i < rbufs.size(); ++i) peer.Post(i, rbufs[i]);
  Bytes region(64, 0);
  const uint32_t stag = peer.side.Register(region, mem::kRemoteWrite | mem::kRemoteRead, 0);
  Bytes stream;
  auto add = [&](const Bytes& ulpdu) {
    const Bytes f = RawPeer::Fpdu(ulpdu, peer.crc);
    stream.insert(stream.end(), f.begin(), f.end());
  };
  uint32_t msn = 1;
  for (int i = 0; i < 8; ++i) {
    add(SendSegment(msn++, 0, true, static_cast<size_t>(i + 1), static_cast<uint8_t>(i)));
  }
  add(WriteSegment(1, 0, true, 0, 0));  // zero length: not validated
  add(WriteSegment(stag, 4, true, 12, 0x77));
  Bytes rr(18 + wire::kReadRequestBodySize);
  wire::ReadRequestBody body;
  body.sink_stag = 9;
  body.source_stag = stag;
  body.source_to = 0;
  body.read_size = 16;
  ASSERT_TRUE(wire::EncodeReadRequest(1, body, rr).ok());
  add(rr);
  Bytes imm(18 + 8);
  ASSERT_TRUE(wire::EncodeImmediateData(false, msn++, 0xABCD, imm).ok());
  add(imm);
  peer.WriteBytes(stream);
  const size_t c0 = peer.Calls();
  peer.side.qp->OnReadable();
  EXPECT_EQ(peer.Calls() - c0, 1u);
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 9u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(peer.side.sink.completions[i].bytes, i + 1);
    EXPECT_EQ(rbufs[i][i], static_cast<uint8_t>(i));
  }
  EXPECT_TRUE(peer.side.sink.completions[8].recv.has_imm);
  EXPECT_EQ(peer.side.sink.completions[8].recv.imm, 0xABCDu);
  EXPECT_EQ(std::count(region.begin() + 4, region.begin() + 16, 0x77), 12);
  EXPECT_EQ(peer.side.qp->inbound_reads() + peer.ReadUlpdus().size(), 1u);  // answered or queued
  EXPECT_EQ(peer.side.sink.terminated, 0);
  EXPECT_EQ(peer.side.qp->rx_stats().direct_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Crc, QpReadAheadCrcTest, ::testing::Bool());

// A 1 MiB RDMA Write (and a 1 MiB Send): the payload lands in the registered
// region / posted receive, the bulk received directly; at most one staging
// fill is copied, and there is about one RecvV per FPDU.
class QpReadAheadBulkTest : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(QpReadAheadBulkTest, LargeWriteAndSendPlacedDirectly) {
  const auto [fpdu_payload, send] = GetParam();
  QpConfig cfg;
  cfg.max_fpdu_payload = fpdu_payload;
  QpPair p(0, true, cfg);
  p.Start();
  p.Pump();
  std::mt19937 rng(11);
  constexpr size_t kSize = 1 << 20;
  const Bytes data = RandomBytes(rng, kSize);
  Bytes target(kSize + 16, 0xEE);
  const RxStats before = p.b.qp->rx_stats();
  const size_t c0 = p.b.conn->recv_calls();
  if (send) {
    RecvWr rwr;
    rwr.sgl.Add(target.data(), kSize / 2);
    rwr.sgl.Add(target.data() + kSize / 2, target.size() - kSize / 2);
    ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
    SendWr swr;
    swr.sgl.Add(const_cast<uint8_t*>(data.data()), data.size());
    ASSERT_EQ(p.a.qp->PostSend(swr), QpStatus::kOk);
  } else {
    const uint32_t stag = p.b.Register(target, mem::kRemoteWrite, 0);
    WriteWr wr;
    wr.sgl.Add(const_cast<uint8_t*>(data.data()), data.size());
    wr.remote_stag = stag;
    wr.remote_to = 0;
    ASSERT_EQ(p.a.qp->PostWrite(wr), QpStatus::kOk);
  }
  p.Pump();
  ASSERT_EQ(p.a.sink.completions.size(), 1u);
  EXPECT_NE(p.a.sink.completions[0].kind, Kind::kError);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), target.begin()));
  EXPECT_EQ(target[kSize], 0xEE);
  const RxStats& after = p.b.qp->rx_stats();
  const uint64_t copied = after.staged_copies - before.staged_copies;
  const uint64_t direct = after.direct_bytes - before.direct_bytes;
  const uint64_t fpdus = after.fpdus - before.fpdus;
  const size_t calls = p.b.conn->recv_calls() - c0;
  std::printf("payload %zu %s: fpdus %llu, RecvV %zu, copied %llu, direct %llu\n", fpdu_payload,
              send ? "send" : "write", static_cast<unsigned long long>(fpdus), calls,
              static_cast<unsigned long long>(copied), static_cast<unsigned long long>(direct));
  EXPECT_EQ(copied + direct, kSize);
  EXPECT_LE(copied, kRxStagingSize);
  EXPECT_LE(calls, fpdus + 3);
  EXPECT_EQ(p.b.sink.terminated, 0);
}

INSTANTIATE_TEST_SUITE_P(Sizes, QpReadAheadBulkTest,
                         ::testing::Combine(::testing::Values(size_t{1448}, size_t{9000},
                                                              size_t{65535}),
                                            ::testing::Bool()));

// Every opcode delivered with partial reads of every size class.
class QpReadAheadSplitTest : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(QpReadAheadSplitTest, EveryOpcodeUnderPartialReads) {
  const auto [max_per_call, crc] = GetParam();
  QpConfig cfg;
  cfg.max_fpdu_payload = 1200;
  QpPair p(max_per_call, crc, cfg);
  p.Start();
  p.Pump();
  ASSERT_EQ(p.b.sink.established, 1);
  std::mt19937 rng(static_cast<unsigned>(max_per_call) + 1);
  // Send: small and multi-segment, into a two-piece receive.
  const Bytes small = RandomBytes(rng, 8);
  const Bytes big = RandomBytes(rng, 5000);
  Bytes r1(16), r2a(3000), r2b(3000), r3(8);
  RecvWr rwr;
  rwr.context = 1;
  rwr.sgl.Add(r1.data(), r1.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  rwr = {};
  rwr.context = 2;
  rwr.sgl.Add(r2a.data(), r2a.size());
  rwr.sgl.Add(r2b.data(), r2b.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  rwr = {};
  rwr.context = 3;
  rwr.sgl.Add(r3.data(), r3.size());
  ASSERT_EQ(p.b.qp->PostRecv(rwr), QpStatus::kOk);
  for (const Bytes* d : {&small, &big}) {
    SendWr s;
    s.sgl.Add(const_cast<uint8_t*>(d->data()), d->size());
    ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
  }
  // Write with immediate data (consumes receive 3).
  const Bytes wdata = RandomBytes(rng, 4000);
  Bytes wtarget(4000);
  WriteWr wr;
  wr.sgl.Add(const_cast<uint8_t*>(wdata.data()), wdata.size());
  wr.remote_stag = p.b.Register(wtarget, mem::kRemoteWrite, 0);
  wr.with_imm = true;
  wr.imm = 99;
  ASSERT_EQ(p.a.qp->PostWrite(wr), QpStatus::kOk);
  // Read: Read Request at b, Read Responses at a.
  const Bytes rsrc = RandomBytes(rng, 3333);
  Bytes rsrc_copy = rsrc;
  Bytes rsink(3333);
  ReadWr rd;
  rd.length = static_cast<uint32_t>(rsrc.size());
  rd.remote_stag = p.b.Register(rsrc_copy, mem::kRemoteRead, 0x100);
  rd.remote_to = 0x100;
  rd.local_stag = p.a.Register(rsink, mem::kLocalWrite, 0x200);
  rd.local_to = 0x200;
  ASSERT_EQ(p.a.qp->PostRead(rd), QpStatus::kOk);
  // Atomic: request at b, response at a.
  alignas(8) uint64_t cell = 40;
  mem::RegionSpec spec;
  spec.host = reinterpret_cast<uint8_t*>(&cell);
  spec.length = sizeof(cell);
  spec.access = mem::kRemoteAtomic;
  spec.pd = kPd;
  auto astag = p.b.stags.Register(spec);
  ASSERT_TRUE(astag.ok());
  uint64_t result = 0;
  AtomicWr aw;
  aw.op = wire::AtomicOp::kFetchAdd;
  aw.remote_stag = *astag;
  aw.operand = 2;
  aw.result = &result;
  ASSERT_EQ(p.a.qp->PostAtomic(aw), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 3u);
  EXPECT_EQ(p.b.sink.completions[0].bytes, 8u);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), r1.begin()));
  EXPECT_EQ(p.b.sink.completions[1].bytes, 5000u);
  EXPECT_TRUE(std::equal(big.begin(), big.begin() + 3000, r2a.begin()));
  EXPECT_TRUE(std::equal(big.begin() + 3000, big.end(), r2b.begin()));
  EXPECT_TRUE(p.b.sink.completions[2].recv.has_imm);
  EXPECT_EQ(p.b.sink.completions[2].recv.imm, 99u);
  EXPECT_TRUE(wtarget == wdata);
  EXPECT_TRUE(rsink == rsrc);
  EXPECT_EQ(result, 40u);
  EXPECT_EQ(cell, 42u);
  EXPECT_EQ(p.a.sink.Count(Kind::kSend) + p.a.sink.Count(Kind::kRdma), 5u);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
  // A Terminate from the peer, byte by byte too.
  p.a.qp->Disconnect();
  p.Pump();
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
}

INSTANTIATE_TEST_SUITE_P(Splits, QpReadAheadSplitTest,
                         ::testing::Combine(::testing::Values(size_t{1}, size_t{3}, size_t{31},
                                                              size_t{0}),
                                            ::testing::Bool()));

// A raw stream with a received Terminate, delivered byte by byte.
TEST(QpReadAheadSplitMiscTest, TerminateByteByByte) {
  RawPeer peer(::iwarpx::testing::MakeFakeConnectionPair(1), true, {}, 4, 4,
               wire::MpaRole::kResponder);
  peer.side.qp->Start();
  Bytes term(18 + 4);
  ASSERT_TRUE(
      wire::EncodeTerminateSegment(1, wire::MakeTerminate(wire::term::kRdmapOpUnspecified), term)
          .ok());
  Bytes stream = RawPeer::Fpdu(Rtr(), true);
  const Bytes t = RawPeer::Fpdu(term, true);
  stream.insert(stream.end(), t.begin(), t.end());
  for (uint8_t b : stream) peer.WriteBytes(Bytes{b});
  for (int i = 0; i < 200 && peer.side.qp->wants_read(); ++i) peer.side.qp->OnReadable();
  EXPECT_EQ(peer.side.sink.established, 1);
  EXPECT_EQ(peer.side.sink.terminated, 1);
  EXPECT_EQ(peer.side.sink.term_origin, TermOrigin::kReceived);
  EXPECT_EQ(peer.side.sink.term_cause, wire::term::kRdmapOpUnspecified);
}

// Sends staged behind a Send that found no receive: nothing more is read,
// the staged FPDUs wait (in order with a Write behind them), and each
// PostRecv processes them at once, with no new input.
TEST(QpReadAheadBlockedTest, StagedBytesProcessedByPostRecv) {
  Raw peer(true);
  Bytes region(16, 0);
  const uint32_t stag = peer.side.Register(region, mem::kRemoteWrite, 0);
  Bytes stream;
  for (const Bytes& u : {SendSegment(1, 0, true, 5, 0x11), SendSegment(2, 0, true, 6, 0x22),
                         WriteSegment(stag, 0, true, 4, 0x33), SendSegment(3, 0, true, 7, 0x44)}) {
    const Bytes f = RawPeer::Fpdu(u, true);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  peer.WriteBytes(stream);
  const size_t c0 = peer.Calls();
  peer.side.qp->OnReadable();
  EXPECT_EQ(peer.Calls() - c0, 1u);
  EXPECT_EQ(peer.raw->pending(), 0u);              // all read ahead ...
  EXPECT_GT(peer.side.qp->rx_staged_bytes(), 0u);  // ... and staged
  EXPECT_FALSE(peer.side.qp->wants_read());
  EXPECT_FALSE(peer.side.qp->wants_progress());
  EXPECT_TRUE(peer.side.sink.completions.empty());
  peer.side.qp->OnReadable();  // a stray call changes nothing
  EXPECT_EQ(peer.Calls() - c0, 1u);

  Bytes r1(8), r2(8), r3(8);
  peer.Post(1, r1);
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(r1[4], 0x11);
  EXPECT_FALSE(peer.side.qp->wants_read());  // blocked on the second Send
  EXPECT_EQ(region[0], 0);                   // the Write behind it waits
  peer.Post(2, r2);
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(r2[5], 0x22);
  EXPECT_EQ(std::count(region.begin(), region.begin() + 4, 0x33), 4);
  EXPECT_FALSE(peer.side.qp->wants_read());
  peer.Post(3, r3);
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 3u);
  EXPECT_EQ(r3[6], 0x44);
  EXPECT_EQ(peer.side.qp->rx_staged_bytes(), 0u);
  EXPECT_TRUE(peer.side.qp->wants_read());
  EXPECT_FALSE(peer.side.qp->wants_progress());
  EXPECT_EQ(peer.side.sink.terminated, 0);
}

// The header and part of the payload of a blocked Send are staged, the rest
// is still in the socket: PostRecv places the staged part and reads the rest.
TEST(QpReadAheadBlockedTest, BlockedSendPartlyStaged) {
  Raw peer(true);
  const Bytes f = RawPeer::Fpdu(SendSegment(1, 0, true, 600, 0x66), true);
  peer.WriteBytes(Bytes(f.begin(), f.begin() + 100));
  peer.side.qp->OnReadable();
  EXPECT_FALSE(peer.side.qp->wants_read());
  EXPECT_EQ(peer.side.qp->rx_staged_bytes(), 100u - 20u);
  peer.WriteBytes(Bytes(f.begin() + 100, f.end()));
  Bytes r(600);
  peer.Post(1, r);
  ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(std::count(r.begin(), r.end(), 0x66), 600);
  EXPECT_EQ(peer.side.qp->rx_stats().staged_copies, 80u);
  EXPECT_EQ(peer.side.qp->rx_stats().direct_bytes, 520u);
}

// A corrupt FPDU among staged ones: the FPDUs before it complete, it
// Terminates (LLP CRC error), nothing after it is delivered.
TEST(QpReadAheadCrcErrorTest, CorruptStagedFpduTerminates) {
  Raw peer(true);
  std::vector<Bytes> rbufs(4, Bytes(32));
  for (size_t i = 0; i < rbufs.size(); ++i) peer.Post(i, rbufs[i]);
  Bytes stream;
  for (uint32_t i = 0; i < 4; ++i) {
    Bytes f = RawPeer::Fpdu(SendSegment(i + 1, 0, true, 10), true);
    if (i == 2) f[25] ^= 0x01;
    stream.insert(stream.end(), f.begin(), f.end());
  }
  peer.WriteBytes(stream);
  const size_t c0 = peer.Calls();
  peer.side.qp->OnReadable();
  EXPECT_EQ(peer.Calls() - c0, 1u);
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 2u);
  EXPECT_EQ(peer.side.sink.terminated, 1);
  EXPECT_EQ(peer.side.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(peer.side.sink.term_cause, wire::term::kLlpCrcError);
  EXPECT_EQ(peer.side.sink.Count(Kind::kError), 2u);  // the two receives left
  EXPECT_FALSE(peer.side.qp->wants_progress());
  EXPECT_EQ(peer.side.qp->state(), QpState::kError);
}

// The same, with the corrupt FPDU staged behind a blocked Send: found when
// PostRecv resumes.
TEST(QpReadAheadCrcErrorTest, CorruptFpduBehindBlockedSend) {
  Raw peer(true);
  Bytes stream = RawPeer::Fpdu(SendSegment(1, 0, true, 10), true);
  Bytes bad = RawPeer::Fpdu(SendSegment(2, 0, true, 10), true);
  bad[bad.size() - 1] ^= 0x80;  // CRC field
  stream.insert(stream.end(), bad.begin(), bad.end());
  peer.WriteBytes(stream);
  peer.side.qp->OnReadable();
  EXPECT_FALSE(peer.side.qp->wants_read());
  EXPECT_EQ(peer.side.sink.terminated, 0);
  Bytes r1(16), r2(16);
  peer.Post(1, r1);
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(peer.side.sink.terminated, 0);
  peer.Post(2, r2);
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(peer.side.sink.terminated, 1);
  EXPECT_EQ(peer.side.sink.term_cause, wire::term::kLlpCrcError);
  ASSERT_EQ(peer.side.sink.Count(Kind::kError), 1u);
}

// The FPDU budget: at most rx_budget_fpdus FPDUs per OnReadable(); the rest
// stays staged and wants_progress() asks for another call.
TEST(QpReadAheadBudgetTest, FpduBudgetStopsAndResumesFromStaging) {
  QpConfig cfg;
  cfg.rx_budget_fpdus = 4;
  Raw peer(false, cfg);
  std::vector<Bytes> rbufs(10, Bytes(8));
  for (size_t i = 0; i < rbufs.size(); ++i) peer.Post(i, rbufs[i]);
  Bytes stream;
  for (uint32_t i = 0; i < 10; ++i) {
    const Bytes f = RawPeer::Fpdu(SendSegment(i + 1, 0, true, 4), false);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  peer.WriteBytes(stream);
  const size_t c0 = peer.Calls();
  peer.side.qp->OnReadable();
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 4u);
  EXPECT_TRUE(peer.side.qp->wants_progress());
  EXPECT_EQ(peer.raw->pending(), 0u);  // only staged bytes are left: no readiness will come
  peer.side.qp->OnReadable();
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 8u);
  EXPECT_TRUE(peer.side.qp->wants_progress());
  peer.side.qp->OnReadable();
  EXPECT_EQ(peer.side.sink.Count(Kind::kRecv), 10u);
  EXPECT_FALSE(peer.side.qp->wants_progress());
  // All FPDUs came from the first read; the call that empties staging reads
  // on (here: kWouldBlock), as a budget stop says nothing about the socket.
  EXPECT_EQ(peer.Calls() - c0, 2u);
}

// The byte budget: no new RecvV once rx_budget_bytes were received in a call.
TEST(QpReadAheadBudgetTest, ByteBudgetBoundsOneCall) {
  QpConfig cfg;
  cfg.rx_budget_bytes = 4096;
  QpPair p(0, false, cfg);
  p.Start();
  p.Pump();
  std::mt19937 rng(2);
  const Bytes data = RandomBytes(rng, 200000);
  Bytes target(data.size());
  WriteWr wr;
  wr.sgl.Add(const_cast<uint8_t*>(data.data()), data.size());
  wr.remote_stag = p.b.Register(target, mem::kRemoteWrite, 0);
  ASSERT_EQ(p.a.qp->PostWrite(wr), QpStatus::kOk);
  while (p.a.qp->wants_write()) p.a.qp->OnWritable();
  size_t calls = 0;
  size_t largest = 0;
  while ((p.b.conn->pending() > 0 || p.b.qp->wants_progress()) && calls < 10000) {
    const size_t before = p.b.conn->pending();
    p.b.qp->OnReadable();
    largest = std::max(largest, before - p.b.conn->pending());
    ++calls;
    if (p.b.conn->pending() > 0) {
      EXPECT_TRUE(p.b.qp->wants_progress());
    }
  }
  // One call reads at most the budget plus one read (a staging fill or one
  // FPDU's payload and lookahead).
  EXPECT_LE(largest, cfg.rx_budget_bytes + kRxStagingSize);
  EXPECT_GT(calls, data.size() / (cfg.rx_budget_bytes + kRxStagingSize));
  EXPECT_TRUE(target == data);
}

TEST(QpReadAheadBudgetTest, ZeroBudgetRejected) {
  auto conns = ::iwarpx::testing::MakeFakeConnectionPair();
  mem::StagTable t(Random(1), 4);
  RecordingSink sink;
  const auto o = MakeOutcome(wire::MpaRole::kInitiator, true, 1, 1);
  QpConfig cfg;
  cfg.rx_budget_fpdus = 0;
  EXPECT_FALSE(QueuePair::Create(*conns.first, t, 1, o, cfg, sink).ok());
  cfg = {};
  cfg.rx_budget_bytes = 0;
  EXPECT_FALSE(QueuePair::Create(*conns.first, t, 1, o, cfg, sink).ok());
}

// Markers with read-ahead: small Sends and bulk Write segments in a marked
// stream, read whole, in odd pieces and byte by byte.
TEST(QpReadAheadMarkersTest, MarkedMixedStream) {
  for (const size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{700}}) {
    for (const bool crc : {false, true}) {
      auto conns = ::iwarpx::testing::MakeFakeConnectionPair(split);
      mem::StagTable t(Random(3), 4);
      RecordingSink sink;
      wire::MpaOutcome o = MakeOutcome(wire::MpaRole::kResponder, crc, 1, 1);
      o.markers_rx = true;
      QpConfig cfg;
      cfg.role = wire::MpaRole::kResponder;
      auto qp = QueuePair::Create(*conns.second, t, kPd, o, cfg, sink);
      ASSERT_TRUE(qp.ok());
      (*qp)->Start();
      Bytes region(20000, 0);
      mem::RegionSpec spec;
      spec.host = region.data();
      spec.length = region.size();
      spec.access = mem::kRemoteWrite;
      spec.pd = kPd;
      auto stag = t.Register(spec);
      ASSERT_TRUE(stag.ok());
      std::vector<Bytes> bufs(12, Bytes(100, 0));
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
        plain.resize(plain.size() - 4);
        Bytes out(ins.MarkedSize(plain.size()));
        auto n = ins.Insert(plain, crc, out);
        ASSERT_TRUE(n.ok());
        out.resize(*n);
        stream.insert(stream.end(), out.begin(), out.end());
      };
      add(Rtr());
      uint32_t msn = 1;
      size_t to = 0;
      for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 4; ++i) {
          add(SendSegment(msn, 0, true, 1 + (msn * 13) % 90, static_cast<uint8_t>(msn)));
          ++msn;
        }
        for (int i = 0; i < 4; ++i) {
          add(WriteSegment(*stag, to, i == 3, 1400, static_cast<uint8_t>(0x80 + round)));
          to += 1400;
        }
      }
      size_t off = 0;
      while (off < stream.size()) {
        const iovec part{stream.data() + off, stream.size() - off};
        auto r = conns.first->SendV(std::span<const iovec>(&part, 1));
        ASSERT_TRUE(r.ok());
        off += r.bytes;
      }
      for (int i = 0; i < 100000 && (conns.second->pending() > 0 || (*qp)->wants_progress()); ++i) {
        (*qp)->OnReadable();
      }
      ASSERT_EQ(sink.Count(Kind::kRecv), bufs.size()) << split << " crc " << crc;
      for (uint32_t m = 1; m < msn; ++m) {
        const size_t n = 1 + (m * 13) % 90;
        EXPECT_EQ(sink.completions[m - 1].bytes, n);
        EXPECT_EQ(std::count(bufs[m - 1].begin(), bufs[m - 1].begin() + static_cast<long>(n),
                             static_cast<uint8_t>(m)),
                  static_cast<long>(n));
      }
      for (int round = 0; round < 3; ++round) {
        const auto first = region.begin() + static_cast<long>(round) * 5600;
        EXPECT_EQ(std::count(first, first + 5600, static_cast<uint8_t>(0x80 + round)), 5600)
            << split << " crc " << crc;
      }
      EXPECT_EQ(sink.terminated, 0);
    }
  }
}

}  // namespace
}  // namespace iwarpx::qp::test
