// RdmCore on a real engine and real UDP sockets (loopback): untagged and
// tagged messages in both posting orders (receive first, or unexpected),
// ignore bits and directed receives, eager and rendezvous sizes up to 64 MiB
// bit-exact, truncation, peek/claim/discard, remote write data, and a peer
// that vanishes failing what waits on it; each with the read and the write
// rendezvous handshake and the copy rendezvous (rdm_core_fixture.h). An
// eager message for a posted receive is delivered without a bounce. A
// rendezvous whose peer forgot it (failed our session) fails too.
#include "rdm/rdm_core.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rdm_core_fixture.h"

namespace iwarpx::rdm {
namespace {

using testing_core::Event;
using testing_core::RdmCoreTest;
using testing_core::RdmMode;

TEST_P(RdmCoreTest, EagerAndRendezvousInBothPostingOrders) {
  for (const size_t size : {size_t{0}, size_t{10}, size_t{4000}, size_t{70000}, size_t{1} << 20}) {
    SCOPED_TRACE(size);
    sa_.ev.clear();
    sb_.ev.clear();
    // Receive posted first.
    std::vector<uint8_t> msg = Pattern(size, 1);
    std::vector<uint8_t> rx(size + 16, 0xEE);
    ASSERT_EQ(Recv(*b_, rx, 1), RdmStatus::kOk);
    ASSERT_EQ(Send(*a_, *b_, msg, 2), RdmStatus::kOk);
    ASSERT_TRUE(RunUntil(
        [&] { return sb_.Count(Event::kRecvDone) == 1 && sa_.Count(Event::kSendDone) == 1; }));
    EXPECT_EQ(sb_.ev[0].r.len, size);
    EXPECT_EQ(sb_.ev[0].r.truncated, 0u);
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), rx.begin()));
    EXPECT_EQ(rx[size], 0xEE);
    // Message first (unexpected), receive later.
    std::vector<uint8_t> msg2 = Pattern(size, 2);
    std::vector<uint8_t> rx2(size, 0);
    ASSERT_EQ(Send(*a_, *b_, msg2, 3), RdmStatus::kOk);
    if (size <= b_->eager_limit()) {
      // The eager message completes at the sender without the receiver.
      ASSERT_TRUE(RunUntil([&] { return sa_.Count(Event::kSendDone) == 2; }));
    } else {
      ASSERT_TRUE(RunUntil([&] { return b_->counters().unexpected >= 1; }));
    }
    ASSERT_EQ(Recv(*b_, rx2, 4), RdmStatus::kOk);
    ASSERT_TRUE(RunUntil(
        [&] { return sb_.Count(Event::kRecvDone) == 2 && sa_.Count(Event::kSendDone) == 2; }));
    EXPECT_TRUE(std::equal(msg2.begin(), msg2.end(), rx2.begin()));
    EXPECT_EQ(sa_.Count(Event::kSendFailed) + sb_.Count(Event::kRecvFailed), 0u);
  }
  EXPECT_GT(a_->counters().rts_sent, 0u);
  EXPECT_GT(a_->counters().eager_sent, 0u);
  // The protocol really used: CTS answers only in the write handshake and
  // the copy rendezvous, DATA fragments only in the latter.
  const RdmMode mode = GetParam();
  EXPECT_EQ(b_->counters().cts_sent, mode != RdmMode::kRead ? a_->counters().rts_sent : 0u);
  EXPECT_EQ(a_->counters().copy_msgs, mode == RdmMode::kCopy ? a_->counters().rts_sent : 0u);
  EXPECT_EQ(a_->counters().rndv_write_msgs, mode == RdmMode::kWrite ? a_->counters().rts_sent : 0u);
}

TEST_P(RdmCoreTest, SixtyFourMebibytesBitExact) {
  constexpr size_t kSize = size_t{64} << 20;
  std::vector<uint8_t> msg = Pattern(kSize, 9);
  std::vector<uint8_t> rx(kSize, 0);
  ASSERT_EQ(Recv(*b_, rx, 1, true, 5), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, msg, 2, true, 5), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil(
      [&] { return sb_.Count(Event::kRecvDone) == 1 && sa_.Count(Event::kSendDone) == 1; }, 60));
  EXPECT_EQ(sb_.ev[0].r.len, kSize);
  EXPECT_TRUE(msg == rx);
}

TEST_P(RdmCoreTest, TagsIgnoreBitsDirectedReceivesAndOrder) {
  std::vector<uint8_t> m1 = Pattern(100, 1), m2 = Pattern(100, 2), m3 = Pattern(100, 3);
  std::vector<uint8_t> r1(100), r2(100), r3(100);
  PeerId from_a = 0;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    from_a = b_->PeerIdOf(a_->local_address());
  }
  // r1 wants tag 0x20 exactly, r2 any tag 0x1?, r3 only from some other peer.
  ASSERT_EQ(Recv(*b_, r3, 3, true, 0x11, 0, from_a + 100), RdmStatus::kOk);
  ASSERT_EQ(Recv(*b_, r1, 1, true, 0x20), RdmStatus::kOk);
  ASSERT_EQ(Recv(*b_, r2, 2, true, 0x10, 0x0F, from_a), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, m1, 11, true, 0x11), RdmStatus::kOk);  // -> r2 (r3 is for another peer)
  ASSERT_EQ(Send(*a_, *b_, m2, 12, true, 0x20), RdmStatus::kOk);  // -> r1
  ASSERT_EQ(Send(*a_, *b_, m3, 13, false), RdmStatus::kOk);       // untagged: unexpected
  ASSERT_TRUE(
      RunUntil([&] { return sb_.Count(Event::kRecvDone) == 2 && b_->counters().unexpected == 1; }));
  const Event* e2 = sb_.Find(Event::kRecvDone, 2);
  const Event* e1 = sb_.Find(Event::kRecvDone, 1);
  ASSERT_NE(e1, nullptr);
  ASSERT_NE(e2, nullptr);
  EXPECT_EQ(e2->r.tag, 0x11u);
  EXPECT_EQ(e2->r.src, from_a);
  EXPECT_TRUE(r2 == m1);
  EXPECT_EQ(e1->r.tag, 0x20u);
  EXPECT_TRUE(r1 == m2);
  EXPECT_TRUE(sb_.Find(Event::kRecvDone, 3) == nullptr);
  std::vector<uint8_t> ru(100);
  ASSERT_EQ(Recv(*b_, ru, 4, false), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return sb_.Find(Event::kRecvDone, 4) != nullptr; }));
  EXPECT_TRUE(ru == m3);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_TRUE(b_->CancelRecv(true, 3));
  EXPECT_FALSE(b_->CancelRecv(true, 3));
}

TEST_P(RdmCoreTest, TruncationReportsWhatDidNotFit) {
  for (const size_t size : {size_t{3000}, size_t{300000}}) {
    SCOPED_TRACE(size);
    sb_.ev.clear();
    std::vector<uint8_t> msg = Pattern(size, 4);
    std::vector<uint8_t> rx(1000);
    ASSERT_EQ(Recv(*b_, rx, 1), RdmStatus::kOk);
    ASSERT_EQ(Send(*a_, *b_, msg, 2), RdmStatus::kOk);
    ASSERT_TRUE(RunUntil([&] { return sb_.Count(Event::kRecvDone) == 1; }));
    EXPECT_EQ(sb_.ev[0].r.len, 1000u);
    EXPECT_EQ(sb_.ev[0].r.truncated, size - 1000);
    EXPECT_TRUE(std::equal(rx.begin(), rx.end(), msg.begin()));
  }
  ASSERT_TRUE(RunUntil([&] { return sa_.Count(Event::kSendDone) == 2; }));
}

TEST_P(RdmCoreTest, AnEagerForAPostedReceiveSkipsTheBounceAndAnUnexpectedOneDoesNot) {
  // Posted first, tagged then untagged: delivered from the datagram
  // (qp::RecvSource::TakeSend), counted as rd_direct, truncation as usual.
  std::vector<uint8_t> m1 = Pattern(200, 1), m2 = Pattern(40, 2), m3 = Pattern(64, 3);
  std::vector<uint8_t> r1(200, 0), r2(16, 0), r3(64, 0);
  ASSERT_EQ(Recv(*b_, r1, 1, true, 7), RdmStatus::kOk);
  ASSERT_EQ(Recv(*b_, r2, 2), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, m1, 3, true, 7), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, m2, 4), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return sb_.Count(Event::kRecvDone) == 2; }));
  EXPECT_EQ(b_->counters().rd_direct, 2u);
  EXPECT_EQ(b_->counters().unexpected, 0u);
  EXPECT_TRUE(m1 == r1);
  EXPECT_TRUE(std::equal(r2.begin(), r2.end(), m2.begin()));
  EXPECT_EQ(sb_.ev[1].r.truncated, 24u);
  // No receive posted: the message waits in a bounce, and is delivered from
  // there when one is posted.
  ASSERT_EQ(Send(*a_, *b_, m3, 5, true, 9), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return b_->counters().unexpected == 1; }));
  EXPECT_EQ(b_->counters().rd_direct, 2u);
  ASSERT_EQ(Recv(*b_, r3, 6, true, 9), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return sb_.Count(Event::kRecvDone) == 3; }));
  EXPECT_TRUE(m3 == r3);
  EXPECT_EQ(b_->counters().protocol_errors, 0u);
}

TEST_P(RdmCoreTest, PeekClaimAndDiscard) {
  std::vector<uint8_t> m1 = Pattern(50, 1), m2 = Pattern(60, 2);
  ASSERT_EQ(Send(*a_, *b_, m1, 1, true, 7), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, m2, 2, true, 8), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return b_->counters().unexpected == 2; }));
  std::lock_guard<std::mutex> lock(engine_->mu());
  RecvRequest r;
  r.tagged = true;
  r.tag = 7;
  RecvResult out;
  ASSERT_EQ(b_->Peek(r, 0, &out), RdmStatus::kOk);
  EXPECT_EQ(out.len, 50u);
  ASSERT_EQ(b_->Peek(r, 0xC1A1, &out), RdmStatus::kOk);    // claimed
  EXPECT_EQ(b_->Peek(r, 0, &out), RdmStatus::kNoMessage);  // hidden now
  std::vector<uint8_t> rx(64);
  iovec v{rx.data(), rx.size()};
  r.iov = &v;
  r.count = 1;
  r.context = 5;
  ASSERT_EQ(b_->ReceiveClaimed(r, 0xC1A1, false), RdmStatus::kOk);
  ASSERT_NE(sb_.Find(Event::kRecvDone, 5), nullptr);
  EXPECT_TRUE(std::equal(m1.begin(), m1.end(), rx.begin()));
  EXPECT_EQ(b_->ReceiveClaimed(r, 0xC1A1, false), RdmStatus::kNoMessage);
  r.tag = 8;
  ASSERT_EQ(b_->DiscardUnexpected(r, &out), RdmStatus::kOk);
  EXPECT_EQ(out.tag, 8u);
  EXPECT_EQ(b_->Peek(r, 0, &out), RdmStatus::kNoMessage);
}

// A rendezvous dropped unread (FI_PEEK|FI_DISCARD, FI_CLAIM|FI_DISCARD) is
// still answered: the sender's send completes (it was delivered and
// discarded), nothing fails, and the pair goes on working.
TEST_P(RdmCoreTest, DiscardedRendezvousCompletesTheSend) {
  std::vector<uint8_t> m1 = Pattern(70000, 1), m2 = Pattern(90000, 2), m3 = Pattern(80000, 3);
  ASSERT_EQ(Send(*a_, *b_, m1, 1, true, 7), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, m2, 2, true, 8), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return b_->counters().unexpected == 2; }));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    RecvRequest r;
    r.tagged = true;
    r.tag = 7;
    RecvResult out;
    ASSERT_EQ(b_->DiscardUnexpected(r, &out), RdmStatus::kOk);
    EXPECT_EQ(out.len, 70000u);
    r.tag = 8;
    ASSERT_EQ(b_->Peek(r, 0xC1A1, &out), RdmStatus::kOk);
    r.context = 5;
    ASSERT_EQ(b_->ReceiveClaimed(r, 0xC1A1, true), RdmStatus::kOk);
    const Event* d = sb_.Find(Event::kRecvDone, 5);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->r.len, 0u);
    EXPECT_EQ(d->r.tag, 8u);
    b_->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return sa_.Count(Event::kSendDone) == 2; }, 5))
      << "the sender of a discarded rendezvous waits forever";
  EXPECT_EQ(sa_.Count(Event::kSendFailed), 0u);
  EXPECT_EQ(b_->counters().discard_answers, 2u);
  // Nothing was written into the receiver, and the pair still works.
  std::vector<uint8_t> rx(80000);
  ASSERT_EQ(Send(*a_, *b_, m3, 3, true, 9), RdmStatus::kOk);
  ASSERT_EQ(Recv(*b_, rx, 6, true, 9), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] {
    return sb_.Find(Event::kRecvDone, 6) != nullptr && sa_.Count(Event::kSendDone) == 3;
  }));
  EXPECT_EQ(rx, m3);
  EXPECT_EQ(a_->counters().protocol_errors, 0u);
  EXPECT_EQ(b_->counters().protocol_errors, 0u);
  EXPECT_EQ(sb_.Count(Event::kRecvFailed), 0u);
}

TEST_P(RdmCoreTest, ManyMessagesThroughFaultsInOrder) {
  auto f = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=12");
  ASSERT_TRUE(f.ok());
  Open(*f);
  constexpr size_t kCount = 2000;
  std::vector<std::vector<uint8_t>> tx(kCount), rx(kCount);
  auto size_of = [](size_t i) { return (i * 7919) % (i % 50 == 0 ? 200000 : 3000); };
  size_t sent = 0;
  size_t posted = 0;
  ASSERT_TRUE(RunUntil(
      [&] {
        while (posted < kCount && posted < sb_.ev.size() + 64) {
          rx[posted].assign(size_of(posted), 0);
          iovec v{rx[posted].data(), rx[posted].size()};
          RecvRequest r;
          r.tagged = true;
          r.tag = 0;  // one tag for all: message i must match receive i (order)
          r.context = posted;
          r.iov = &v;
          r.count = 1;
          if (b_->PostRecv(r) != RdmStatus::kOk) break;
          ++posted;
        }
        while (sent < kCount && sent < sa_.ev.size() + 64) {
          tx[sent] = Pattern(size_of(sent), static_cast<uint8_t>(sent));
          iovec v{tx[sent].data(), tx[sent].size()};
          if (a_->Send(b_->local_address(), &v, 1, true, 0, false, 0, sent) != RdmStatus::kOk) {
            break;
          }
          ++sent;
        }
        a_->AfterPost();
        b_->AfterPost();
        return sb_.ev.size() == kCount && sa_.ev.size() == kCount;
      },
      120));
  // Completions may come out of order (a rendezvous finishes after the eager
  // messages behind it), but matching is in order: receive i holds message i.
  std::vector<int> seen(kCount, 0);
  for (const Event& e : sb_.ev) {
    ASSERT_EQ(e.kind, Event::kRecvDone);
    ASSERT_LT(e.context, kCount);
    ++seen[e.context];
    ASSERT_EQ(e.r.len, tx[e.context].size()) << e.context;
    ASSERT_TRUE(rx[e.context] == tx[e.context]) << e.context;
  }
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(seen[i], 1) << i;
}

TEST_P(RdmCoreTest, VanishedPeerFailsWhatWaitsOnIt) {
  Open({}, 300'000'000);
  std::vector<uint8_t> big = Pattern(100000, 1);
  std::vector<uint8_t> small = Pattern(10, 2);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    const transport::SockAddr gone = b_->local_address();
    b_.reset();
    iovec v{big.data(), big.size()};
    ASSERT_EQ(a_->Send(gone, &v, 1, false, 0, false, 0, 1), RdmStatus::kOk);
    iovec w{small.data(), small.size()};
    ASSERT_EQ(a_->Send(gone, &w, 1, false, 0, false, 0, 2), RdmStatus::kOk);
    a_->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return sa_.Find(Event::kSendFailed, 1) != nullptr; }, 5));
  const Event* failed = sa_.Find(Event::kSendFailed, 1);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->err, ECONNRESET);
  EXPECT_EQ(a_->counters().peers_failed, 1u);
}

// The peer took our RTS (its stream acknowledged it; no receive matches it
// yet) and then failed our session (a timeout of its own, say): it will
// never answer, and our RD stream has nothing in flight. The send still
// ends, in an error, well within a second: the await check marks the peer,
// its stream probes, the peer's RESET fails the session (rdm_core_await.cc).
TEST_P(RdmCoreTest, ARendezvousThePeerForgotFailsInsteadOfWaiting) {
  Open({}, 400'000'000);
  std::vector<uint8_t> big = Pattern(100000, 3);
  ASSERT_EQ(Send(*a_, *b_, big, 1), RdmStatus::kOk);
  const auto posted = std::chrono::steady_clock::now();
  // 100 ms of passes: the RTS arrives and is acknowledged, nothing answers.
  ASSERT_TRUE(RunUntil([&] {
    return !sa_.ev.empty() ||
           std::chrono::steady_clock::now() - posted > std::chrono::milliseconds(100);
  }));
  ASSERT_TRUE(sa_.ev.empty()) << "the send ended before anything happened to the peer";
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(b_->FailRdForTest(a_->local_address()));
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(RunUntil([&] { return sa_.Find(Event::kSendFailed, 1) != nullptr; }, 5))
      << "the send waits for an answer that will never come";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_EQ(a_->counters().peers_failed, 1u);
  EXPECT_EQ(sa_.Count(Event::kSendDone), 0u);
}

TEST_P(RdmCoreTest, MultiReceiveBufferFillsInOrderAndReleasesBelowTheMinimum) {
  // Three messages arrive before the buffer is posted (unexpected), the rest after.
  constexpr size_t kMsg = 900;
  constexpr size_t kCount = 12;
  std::vector<std::vector<uint8_t>> msgs;
  for (size_t i = 0; i < kCount; ++i) msgs.push_back(Pattern(kMsg, static_cast<uint8_t>(i)));
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(Send(*a_, *b_, msgs[i], i), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return b_->counters().unexpected == 3; }));
  std::vector<uint8_t> buf(10000, 0xEE);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    RecvRequest r;
    r.context = 77;
    r.iov = &v;
    r.count = 1;
    r.multi = true;
    r.multi_min = 1000;
    ASSERT_EQ(b_->PostRecv(r), RdmStatus::kOk);
    b_->AfterPost();
  }
  std::vector<uint8_t> plain(kMsg);
  ASSERT_EQ(Recv(*b_, plain, 78), RdmStatus::kOk);  // ordinary receive, posted later
  for (size_t i = 3; i < kCount; ++i) ASSERT_EQ(Send(*a_, *b_, msgs[i], i), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return sb_.Count(Event::kRecvDone) == kCount; }));
  // Messages 0..10 fill the buffer back to back; after the 11th, 100 bytes are
  // left (< 1000): that completion releases it; the 12th goes to the ordinary receive.
  size_t multi_seen = 0;
  for (const Event& e : sb_.ev) {
    if (e.context == 78) {
      EXPECT_TRUE(plain == msgs[11]);
      continue;
    }
    ASSERT_EQ(e.context, 77u);
    ASSERT_EQ(e.r.len, kMsg);
    EXPECT_EQ(e.r.buf, buf.data() + multi_seen * kMsg);
    EXPECT_TRUE(std::equal(msgs[multi_seen].begin(), msgs[multi_seen].end(),
                           buf.begin() + static_cast<std::ptrdiff_t>(multi_seen * kMsg)));
    EXPECT_EQ(e.r.released, multi_seen == 10) << multi_seen;
    ++multi_seen;
  }
  EXPECT_EQ(multi_seen, 11u);
  EXPECT_EQ(buf[11 * kMsg], 0xEE);  // nothing written past the last message
}

INSTANTIATE_TEST_SUITE_P(Rndv, RdmCoreTest,
                         ::testing::Values(RdmMode::kRead, RdmMode::kWrite, RdmMode::kCopy),
                         testing_core::ModeName);

}  // namespace
}  // namespace iwarpx::rdm
