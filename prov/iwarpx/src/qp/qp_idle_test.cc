// QueuePair::ReleaseIdle (qp_idle.cc): an idle QP gives its send ring,
// transmit slot, staging, receive ring and ORD/IRD queues back; the next
// Send, Write, Read or receive makes each again and every byte still
// arrives. A part that holds something (a posted receive, staged bytes of a
// blocked Send, an outstanding Read, an FPDU received in part) is kept.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;
using ::iwarpx::testing::RandomBytes;

// One Send from `from` to `to` of `len` random bytes, the receive posted
// first; checks the bytes and the completion.
void SendOne(QpPair& p, Side& from, Side& to, std::mt19937& rng, size_t len) {
  Bytes tx = RandomBytes(rng, len);
  Bytes rx(len + 16, 0);
  const size_t before = to.sink.Count(Kind::kRecv);
  RecvWr r;
  r.context = 900 + before;
  r.sgl.Add(rx.data(), rx.size());
  ASSERT_EQ(to.qp->PostRecv(r), QpStatus::kOk);
  SendWr s;
  s.context = 7;
  s.sgl.Add(tx.data(), tx.size());
  ASSERT_EQ(from.qp->PostSend(s), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(to.sink.Count(Kind::kRecv), before + 1);
  EXPECT_EQ(to.sink.completions.back().bytes, len);
  EXPECT_EQ(0, std::memcmp(rx.data(), tx.data(), len));
}

// A Write then a Read of `len` bytes a -> b -> a, both checked.
void WriteAndRead(QpPair& p, std::mt19937& rng, size_t len) {
  Bytes target(len, 0);
  const uint32_t target_stag = p.b.Register(target, mem::kRemoteWrite | mem::kRemoteRead, 0x4000);
  Bytes data = RandomBytes(rng, len);
  WriteWr w;
  w.context = 31;
  w.sgl.Add(data.data(), data.size());
  w.remote_stag = target_stag;
  w.remote_to = 0x4000;
  ASSERT_EQ(p.a.qp->PostWrite(w), QpStatus::kOk);
  Bytes back(len, 0);
  const uint32_t back_stag = p.a.Register(back, mem::kLocalWrite, 0x9000);
  ReadWr r;
  r.context = 32;
  r.local_stag = back_stag;
  r.local_to = 0x9000;
  r.length = static_cast<uint32_t>(len);
  r.remote_stag = target_stag;
  r.remote_to = 0x4000;
  ASSERT_EQ(p.a.qp->PostRead(r), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(target, data);
  EXPECT_EQ(back, data);
  EXPECT_EQ(p.a.qp->outstanding_reads(), 0u);
  EXPECT_EQ(p.b.qp->inbound_reads(), 0u);
}

TEST(QpIdleTest, ReleasedQpWorksAgainEveryTime) {
  QpConfig cfg;
  cfg.sq_size = 64;
  cfg.rq_size = 8;
  cfg.rx_staging_initial = kRxStagingMin;
  cfg.max_fpdu_payload = 1000;
  QpPair p(0, true, cfg);
  p.Start();
  p.Pump();
  std::mt19937 rng(5);
  for (int round = 0; round < 6; ++round) {
    // Small and multi-FPDU messages both ways, Writes and Reads.
    SendOne(p, p.a, p.b, rng, 1 + rng() % 64);
    SendOne(p, p.b, p.a, rng, 1 + rng() % 5000);
    WriteAndRead(p, rng, 1 + rng() % 9000);
    ASSERT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0) << round;
    // Everything done: both give back (send ring, transmit slot, staging,
    // receive ring; a: its ORQ, b: its IRQ), then nothing is left to give.
    const size_t a_bytes = p.a.qp->ReleaseIdle();
    const size_t b_bytes = p.b.qp->ReleaseIdle();
    EXPECT_GE(a_bytes, size_t{2} * 190 + kRxStagingMin) << round;
    EXPECT_GE(b_bytes, size_t{2} * 190 + kRxStagingMin) << round;
    EXPECT_EQ(p.a.qp->ReleaseIdle(), 0u);
    EXPECT_EQ(p.b.qp->ReleaseIdle(), 0u);
    EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  }
  // A burst after a release fills more than the initial parts: they grow
  // again from their initial sizes.
  std::vector<Bytes> tx(40);
  std::vector<Bytes> rx(40);
  for (size_t i = 0; i < tx.size(); ++i) {
    tx[i] = RandomBytes(rng, 1 + rng() % 3000);
    rx[i].assign(3000, 0);
    RecvWr r;
    r.context = i;
    r.sgl.Add(rx[i].data(), rx[i].size());
    ASSERT_EQ(p.b.qp->PostRecv(r), i < cfg.rq_size ? QpStatus::kOk : QpStatus::kQueueFull);
  }
  const size_t base = p.b.sink.Count(Kind::kRecv);
  for (size_t i = 0; i < cfg.rq_size; ++i) {
    SendWr s;
    s.sgl.Add(tx[i].data(), tx[i].size());
    ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
  }
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), base + cfg.rq_size);
  for (size_t i = 0; i < cfg.rq_size; ++i) {
    EXPECT_EQ(0, std::memcmp(rx[i].data(), tx[i].data(), tx[i].size())) << i;
  }
}

TEST(QpIdleTest, PartsInUseAreKept) {
  QpConfig cfg;
  cfg.rx_staging_initial = kRxStagingMin;
  QpPair p(0, true, cfg);
  p.Start();
  p.Pump();
  std::mt19937 rng(9);
  SendOne(p, p.a, p.b, rng, 100);
  // A Send arrives with no receive posted: b stops with its bytes staged.
  Bytes tx = RandomBytes(rng, 120);
  SendWr s;
  s.sgl.Add(tx.data(), tx.size());
  ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
  p.Pump();
  ASSERT_GT(p.b.qp->rx_staged_bytes(), 0u);
  (void)p.b.qp->ReleaseIdle();  // the send ring and slot may go, not the staging
  EXPECT_GT(p.b.qp->rx_staged_bytes(), 0u);
  Bytes rx(200, 0);
  RecvWr r;
  r.sgl.Add(rx.data(), rx.size());
  const size_t before = p.b.sink.Count(Kind::kRecv);
  ASSERT_EQ(p.b.qp->PostRecv(r), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), before + 1);
  EXPECT_EQ(0, std::memcmp(rx.data(), tx.data(), tx.size()));

  // A posted receive survives a release and takes the next Send.
  Bytes rx2(200, 0);
  RecvWr r2;
  r2.context = 77;
  r2.sgl.Add(rx2.data(), rx2.size());
  ASSERT_EQ(p.b.qp->PostRecv(r2), QpStatus::kOk);
  (void)p.b.qp->ReleaseIdle();
  Bytes tx2 = RandomBytes(rng, 150);
  SendWr s2;
  s2.sgl.Add(tx2.data(), tx2.size());
  ASSERT_EQ(p.a.qp->PostSend(s2), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.completions.back().context, 77u);
  EXPECT_EQ(0, std::memcmp(rx2.data(), tx2.data(), tx2.size()));

  // An outstanding Read keeps the requester's send ring and ORQ: released
  // between posting and the response, the Read still completes exactly.
  Bytes source = RandomBytes(rng, 3000);
  const uint32_t src = p.b.Register(source, mem::kRemoteRead, 0);
  Bytes sink(3000, 0);
  const uint32_t dst = p.a.Register(sink, mem::kLocalWrite, 0);
  ReadWr rd;
  rd.context = 88;
  rd.local_stag = dst;
  rd.length = 3000;
  rd.remote_stag = src;
  ASSERT_EQ(p.a.qp->PostRead(rd), QpStatus::kOk);
  ASSERT_EQ(p.a.qp->outstanding_reads(), 1u);
  (void)p.a.qp->ReleaseIdle();
  (void)p.b.qp->ReleaseIdle();
  p.Pump();
  EXPECT_EQ(sink, source);
  EXPECT_EQ(p.a.sink.completions.back().context, 88u);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

// An FPDU received in part keeps its receive state (receiver with its CRC,
// header copy, segment) through a release: the rest completes it with the
// CRC verified. Cut inside the length field, inside the header, and inside
// the payload; then a whole FPDU after a release that did take the state.
TEST(QpIdleTest, FpduInProgressKeepsItsReceiveState) {
  for (const size_t cut : {size_t{1}, size_t{10}, size_t{100}}) {
    QpConfig cfg;
    cfg.rx_staging_initial = kRxStagingMin;
    RawPeer peer(true, cfg);
    peer.side.qp->Start();
    peer.WriteUlpdu(Rtr());
    peer.side.qp->OnReadable();
    Bytes r(600, 0);
    RecvWr w;
    w.context = 1;
    w.sgl.Add(r.data(), r.size());
    ASSERT_EQ(peer.side.qp->PostRecv(w), QpStatus::kOk);
    const Bytes f = RawPeer::Fpdu(SendSegment(1, 0, true, 600, 0x66), true);
    peer.WriteBytes(Bytes(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(cut)));
    peer.side.qp->OnReadable();
    (void)peer.side.qp->ReleaseIdle();
    peer.WriteBytes(Bytes(f.begin() + static_cast<std::ptrdiff_t>(cut), f.end()));
    peer.side.qp->OnReadable();
    ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 1u) << cut;
    EXPECT_EQ(std::count(r.begin(), r.end(), 0x66), 600) << cut;
    EXPECT_EQ(peer.side.sink.terminated, 0) << cut;
    // Between FPDUs the state goes (with the staging and the receive ring)
    // and the next FPDU is received by a fresh one, CRC checked.
    EXPECT_GE(peer.side.qp->ReleaseIdle(), size_t{400}) << cut;
    ASSERT_EQ(peer.side.qp->PostRecv(w), QpStatus::kOk);
    peer.WriteBytes(RawPeer::Fpdu(SendSegment(2, 0, true, 300, 0x77), true));
    peer.side.qp->OnReadable();
    ASSERT_EQ(peer.side.sink.Count(Kind::kRecv), 2u) << cut;
    EXPECT_EQ(std::count(r.begin(), r.begin() + 300, 0x77), 300) << cut;
    EXPECT_EQ(peer.side.sink.terminated, 0) << cut;
  }
}

}  // namespace
}  // namespace iwarpx::qp::test
