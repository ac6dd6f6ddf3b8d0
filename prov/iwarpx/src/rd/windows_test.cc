// Unit tests of the reliable-datagram windows: RtoEstimator, SendWindow and
// RecvWindow one rule at a time (docs/wire.md §3.6). The end-to-end runs
// through a lossy channel are in rd_sim_test.cc.
#include <algorithm>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "rd/recv_window.h"
#include "rd/rto.h"
#include "rd/send_window.h"

namespace iwarpx::rd {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(RtoTest, FirstSampleThenSmoothingClampAndBackoff) {
  RtoEstimator r({.initial_ns = 20 * kMs, .min_ns = 2 * kMs, .max_ns = 100 * kMs});
  EXPECT_EQ(r.rto(), 20 * kMs);
  EXPECT_FALSE(r.has_sample());
  r.OnSample(10 * kMs);  // srtt 10, rttvar 5: 10 + 20
  EXPECT_EQ(r.rto(), 30 * kMs);
  r.OnSample(10 * kMs);  // rttvar 3.75: 10 + 15
  EXPECT_EQ(r.rto(), 25 * kMs);
  r.OnTimeout();
  EXPECT_EQ(r.rto(), 50 * kMs);
  r.OnTimeout();
  r.OnTimeout();
  EXPECT_EQ(r.rto(), 100 * kMs);  // capped
  r.OnSample(1000);               // microsecond RTTs still give the minimum
  for (int i = 0; i < 50; ++i) r.OnSample(1000);
  EXPECT_EQ(r.rto(), 2 * kMs);
}

struct RecordingSink final : SendWindowSink {
  std::vector<std::pair<uint32_t, uint64_t>> acked;
  std::vector<uint32_t> resent;
  std::vector<uint32_t> probed;
  void Acked(uint32_t seq, uint64_t cookie) override { acked.emplace_back(seq, cookie); }
  void Resend(uint32_t seq, uint64_t /*cookie*/) override { resent.push_back(seq); }
  void ResendProbe(uint32_t seq, uint64_t /*cookie*/) override { probed.push_back(seq); }
};

SendConfig SmallConfig() {
  SendConfig c;
  c.capacity = 64;
  c.rto = {.initial_ns = 10 * kMs, .min_ns = 2 * kMs, .max_ns = 80 * kMs};
  c.dead_after_ns = 800 * kMs;  // an eighth (100 ms) above max_ns: max_ns caps the backoff
  return c;
}

TEST(SendWindowTest, InitialCreditsThenTheAckOpensTheWindow) {
  RecordingSink sink;
  SendWindow w(SmallConfig(), sink, 100, 4);
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(w.CanSend());
    EXPECT_EQ(w.OnSent(i, 0), 100 + i);
  }
  EXPECT_FALSE(w.CanSend());  // the peer's initial credits are used up
  EXPECT_EQ(w.OnAck({.ack = 102, .credits = 8}, kMs), AckVerdict::kAccepted);
  ASSERT_EQ(sink.acked.size(), 2u);
  EXPECT_EQ(sink.acked[0], std::make_pair(100u, uint64_t{0}));
  EXPECT_EQ(sink.acked[1], std::make_pair(101u, uint64_t{1}));
  EXPECT_EQ(w.right_edge(), 110u);
  EXPECT_EQ(w.outstanding(), 2u);
  // A smaller window later never moves the right edge back.
  EXPECT_EQ(w.OnAck({.ack = 103, .credits = 1}, kMs), AckVerdict::kAccepted);
  EXPECT_EQ(w.right_edge(), 110u);
}

TEST(SendWindowTest, StaleAndImpossibleAcksChangeNothing) {
  RecordingSink sink;
  SendWindow w(SmallConfig(), sink);
  for (uint64_t i = 0; i < 5; ++i) w.OnSent(i, 0);
  ASSERT_EQ(w.OnAck({.ack = 3, .credits = 16}, 0), AckVerdict::kAccepted);
  EXPECT_EQ(w.OnAck({.ack = 2, .credits = 100}, 0), AckVerdict::kStale);
  EXPECT_EQ(w.OnAck({.ack = 6, .credits = 100}, 0), AckVerdict::kInvalid);  // 5 was never sent
  EXPECT_EQ(w.OnAck({.ack = 0x80000000u, .credits = 100}, 0), AckVerdict::kInvalid);
  EXPECT_EQ(w.snd_una(), 3u);
  EXPECT_EQ(w.right_edge(), 19u);
  EXPECT_EQ(sink.acked.size(), 3u);
}

// Loss detection (RACK style): once a later transmission is SACKed, an
// earlier unacked datagram is resent after srtt + srtt/4; a resend that is
// lost too is caught the same way by a transmission made after it.
TEST(SendWindowTest, LaterTransmissionsAckedMarkEarlierOnesLost) {
  RecordingSink sink;
  SendWindow w(SmallConfig(), sink);
  for (uint64_t i = 0; i < 8; ++i) w.OnSent(i, 0);
  // 0 and 1 lost; 2 and 3 SACKed after 1 ms (the first RTT sample: 1 ms).
  w.OnAck({.ack = 0, .has_sack = true, .sack = 0b110, .credits = 16}, kMs);
  EXPECT_EQ(sink.acked.size(), 2u);
  EXPECT_EQ(w.Deadline(), kMs + kMs / 4);
  w.OnTimer(kMs + kMs / 4 - 1);
  EXPECT_TRUE(sink.resent.empty());
  w.OnTimer(kMs + kMs / 4);
  EXPECT_EQ(sink.resent, (std::vector<uint32_t>{0, 1}));
  // SACKs of datagrams transmitted before those resends change nothing, and
  // SACKed datagrams are not reported twice.
  w.OnAck({.ack = 0, .has_sack = true, .sack = 0b111110, .credits = 16}, 2 * kMs);
  EXPECT_EQ(sink.acked.size(), 5u);
  w.OnTimer(4 * kMs);
  EXPECT_EQ(sink.resent.size(), 2u);
  // 8 is sent after the resends and arrives; so does the resent 0, but not
  // the resent 1: 1 goes a third time, and 7 (never acked) too.
  w.OnSent(8, 5 * kMs);
  w.OnAck({.ack = 1, .has_sack = true, .sack = 0b1011111, .credits = 16}, 6 * kMs);
  EXPECT_EQ(w.Deadline(), 0u);
  w.OnTimer(6 * kMs);
  EXPECT_EQ(sink.resent, (std::vector<uint32_t>{0, 1, 1, 7}));
  // The cumulative ack reports the rest exactly once.
  w.OnAck({.ack = 9, .credits = 16}, 7 * kMs);
  EXPECT_EQ(sink.acked.size(), 9u);
  EXPECT_EQ(w.outstanding(), 0u);
  EXPECT_EQ(w.Deadline(), UINT64_MAX);
}

TEST(SendWindowTest, TimeoutResendsTheOldestAndBacksOff) {
  RecordingSink sink;
  SendWindow w(SmallConfig(), sink);
  w.OnSent(0, 0);
  w.OnSent(1, 5 * kMs);
  EXPECT_EQ(w.Deadline(), 10 * kMs);
  w.OnTimer(9 * kMs);
  EXPECT_TRUE(sink.resent.empty());
  w.OnTimer(10 * kMs);
  EXPECT_EQ(sink.resent, (std::vector<uint32_t>{0}));
  EXPECT_EQ(w.rto(), 20 * kMs);
  EXPECT_EQ(w.Deadline(), 30 * kMs);
  w.OnTimer(30 * kMs);  // again only the oldest
  EXPECT_EQ(sink.resent, (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(w.rto(), 40 * kMs);
  EXPECT_EQ(w.timeouts(), 2u);
  EXPECT_EQ(w.retransmissions(), 2u);
  // The ack of the resent 0 gives no RTT sample (Karn) but shows the peer is
  // answering: the backoff is undone.
  w.OnAck({.ack = 1, .credits = 16}, 31 * kMs);
  EXPECT_EQ(w.rto(), 10 * kMs);
  // 1 was sent once: a sample of 26 ms (srtt 26, rttvar 13: RTO 78 ms).
  w.OnAck({.ack = 2, .credits = 16}, 31 * kMs);
  EXPECT_EQ(w.rto(), 78 * kMs);
  EXPECT_EQ(w.Deadline(), UINT64_MAX);
}

// The backoff stops at an eighth of the RD timeout (below rto.max_ns): a
// silent peer gets about eight retransmissions before it is declared dead,
// however short the timeout.
TEST(SendWindowTest, BackoffStopsAtAnEighthOfTheTimeout) {
  RecordingSink sink;
  SendConfig c = SmallConfig();
  c.dead_after_ns = 240 * kMs;  // an eighth: 30 ms, below max_ns (80 ms)
  SendWindow w(c, sink);
  w.OnSent(0, 0);
  uint64_t now = 0;
  size_t resends = 0;
  while (!w.Dead(now)) {
    now = w.Deadline();
    w.OnTimer(now);
    EXPECT_LE(w.rto(), 30 * kMs);
    resends = sink.resent.size();
  }
  EXPECT_EQ(w.rto(), 30 * kMs);
  EXPECT_GE(resends, 8u);
  // A timeout whose eighth is above max_ns leaves max_ns the cap.
  RecordingSink sink2;
  c.dead_after_ns = 2000 * kMs;
  SendWindow w2(c, sink2);
  w2.OnSent(0, 0);
  for (int i = 0; i < 8; ++i) w2.OnTimer(w2.Deadline());
  EXPECT_EQ(w2.rto(), 80 * kMs);
}

// A lost last datagram of a burst: nothing sent after it can be acked, so
// loss detection cannot see it. The tail loss probe resends it with an ack
// request 2 x srtt + 50 us after the last progress, long before the 2 ms
// retransmission timer; its SACK then shows the earlier loss, which loss
// detection repairs. One probe per flight; none before an RTT sample.
TEST(SendWindowTest, TailLossProbeFindsALostLastDatagramBeforeTheTimer) {
  constexpr uint64_t kUs = 1'000;
  RecordingSink sink;
  SendWindow w(SmallConfig(), sink);
  EXPECT_EQ(w.OnSent(0, 0), wire::kDgramInitialSeq);
  EXPECT_EQ(w.Deadline(), 10 * kMs);  // no RTT sample yet: the timer only
  for (uint64_t i = 1; i < 6; ++i) w.OnSent(i, 0);
  const uint32_t s0 = wire::kDgramInitialSeq;
  // 0..2 arrive (100 us round trip); 3 and 5 are lost, 4 is held.
  w.OnAck({.ack = s0 + 3, .credits = 64}, 100 * kUs);
  ASSERT_EQ(sink.acked.size(), 3u);
  const uint64_t probe_at = 100 * kUs + 2 * 100 * kUs + 50 * kUs;
  EXPECT_EQ(w.Deadline(), probe_at);
  w.OnTimer(probe_at - 1);
  EXPECT_TRUE(sink.probed.empty());
  w.OnTimer(probe_at);
  EXPECT_EQ(sink.probed, (std::vector<uint32_t>{s0 + 5}));  // the most recent
  EXPECT_TRUE(sink.resent.empty());
  EXPECT_EQ(w.tail_probes(), 1u);
  EXPECT_EQ(w.Deadline(), 100 * kUs + 2 * kMs);  // back to the timer: one probe
  w.OnTimer(probe_at + 100 * kUs);
  EXPECT_EQ(sink.probed.size(), 1u);
  // The probe's ack SACKs 4 and 5: 3, sent before them, is presumed lost
  // after the reordering allowance and resent; all far below the 2 ms timer.
  w.OnAck({.ack = s0 + 3, .has_sack = true, .sack = 0b11, .credits = 64}, probe_at + 100 * kUs);
  ASSERT_NE(w.Deadline(), UINT64_MAX);
  const uint64_t repair = w.Deadline();
  EXPECT_LT(repair, 100 * kUs + 2 * kMs);
  w.OnTimer(repair);
  EXPECT_EQ(sink.resent, (std::vector<uint32_t>{s0 + 3}));
  w.OnAck({.ack = s0 + 6, .credits = 64}, repair + 100 * kUs);
  EXPECT_EQ(w.outstanding(), 0u);
  EXPECT_EQ(w.Deadline(), UINT64_MAX);
}

// The reordering allowance grows by a step when a resend turns out spurious
// (acked faster than any round trip) and goes back to one step after 16
// repairs without a spurious one (RFC 8985 §6.2), so a passing burst of
// apparent reordering does not slow later repairs for good.
TEST(SendWindowTest, ReorderingAllowanceShrinksAfterSixteenRealRepairs) {
  RecordingSink sink;
  SendWindow w(SmallConfig(), sink);
  uint64_t now = 0;
  uint32_t next = wire::kDgramInitialSeq;
  w.OnSent(0, now);
  now += kMs;
  w.OnAck({.ack = ++next, .credits = 64}, now);  // RTT sample: 1 ms
  // One repair: `a` and `b` sent, only `b` acked, `a` resent once the
  // allowance passed, then both acked `later` after the resend.
  auto repair = [&](uint64_t later) {
    const uint32_t a = w.OnSent(1, now);
    w.OnSent(2, now);
    now += kMs;
    w.OnAck({.ack = a, .has_sack = true, .sack = 0b1, .credits = 64}, now);
    const size_t before = sink.resent.size();
    for (int i = 0; i < 100 && sink.resent.size() == before; ++i) {
      now = std::max(now + 1, w.Deadline());
      w.OnTimer(now);
    }
    ASSERT_EQ(sink.resent.size(), before + 1);
    ASSERT_EQ(sink.resent.back(), a);
    now += later;
    w.OnAck({.ack = a + 2, .credits = 64}, now);
  };
  repair(kMs / 10);  // acked 0.1 ms after the resend: the original arrived, spurious
  EXPECT_EQ(w.reorder_steps(), 2u);
  repair(kMs / 10);
  EXPECT_EQ(w.reorder_steps(), 3u);
  for (int i = 0; i < 15; ++i) repair(2 * kMs);  // real losses: the resend was needed
  EXPECT_EQ(w.reorder_steps(), 3u);
  repair(2 * kMs);  // the 16th
  EXPECT_EQ(w.reorder_steps(), 1u);
}

TEST(SendWindowTest, DeadAfterNoProgressForTheConfiguredTime) {
  RecordingSink sink;
  SendWindow w(SmallConfig(), sink);
  EXPECT_FALSE(w.Dead(10'000 * kMs));  // nothing outstanding: never dead
  w.OnSent(0, 1000 * kMs);
  w.OnSent(1, 1000 * kMs);
  EXPECT_FALSE(w.Dead(1799 * kMs));
  // Progress (one of two acked) restarts the clock.
  w.OnAck({.ack = 1, .credits = 16}, 1400 * kMs);
  EXPECT_FALSE(w.Dead(2199 * kMs));
  EXPECT_TRUE(w.Dead(2200 * kMs));
}

TEST(RecvWindowTest, InOrderEarlyDuplicateAndOutsideTheWindow) {
  RecvWindow r({.window = 8, .ack_every = 4, .ack_delay_ns = kMs}, 10);
  EXPECT_EQ(r.OnData(10, false, 0), Arrival::kInOrder);
  r.Advance(0);
  EXPECT_FALSE(r.AckDue(0));
  EXPECT_EQ(r.OnData(13, false, 0), Arrival::kEarly);  // 11, 12 missing
  EXPECT_TRUE(r.AckDue(0));
  AckFields a = r.Ack();
  EXPECT_EQ(a.ack, 11u);
  EXPECT_TRUE(a.has_sack);
  EXPECT_EQ(a.sack, 0b10u);  // bit i = ack + 1 + i: 13
  EXPECT_EQ(a.credits, 8);
  r.OnAckSent();
  EXPECT_EQ(r.OnData(13, false, 0), Arrival::kDuplicate);  // held already
  EXPECT_EQ(r.OnData(10, false, 0), Arrival::kDuplicate);  // before rcv_nxt
  EXPECT_TRUE(r.AckDue(0));
  EXPECT_EQ(r.OnData(19, false, 0), Arrival::kOutsideWindow);  // [11, 19)
  EXPECT_EQ(r.duplicates(), 2u);
  EXPECT_EQ(r.outside_window(), 1u);
  // 11 arrives: deliver it, then 12 is still missing, so 13 waits.
  EXPECT_EQ(r.OnData(11, false, 0), Arrival::kInOrder);
  r.Advance(0);
  EXPECT_FALSE(r.HeadHeld());
  EXPECT_EQ(r.OnData(12, false, 0), Arrival::kInOrder);
  r.Advance(0);
  ASSERT_TRUE(r.HeadHeld());
  r.Advance(0);
  EXPECT_FALSE(r.HeadHeld());
  EXPECT_EQ(r.rcv_nxt(), 14u);
  r.OnAckSent();
  a = r.Ack();
  EXPECT_EQ(a.ack, 14u);
  EXPECT_FALSE(a.has_sack);
}

TEST(RecvWindowTest, DelayedAckAfterNOrTAndAtOnceWhenAsked) {
  RecvWindow r({.window = 64, .ack_every = 3, .ack_delay_ns = kMs});
  EXPECT_EQ(r.AckDeadline(), UINT64_MAX);
  ASSERT_EQ(r.OnData(0, false, 100), Arrival::kInOrder);
  r.Advance(100);
  EXPECT_EQ(r.AckDeadline(), 100 + kMs);
  EXPECT_FALSE(r.AckDue(100 + kMs - 1));
  EXPECT_TRUE(r.AckDue(100 + kMs));
  ASSERT_EQ(r.OnData(1, false, 200), Arrival::kInOrder);
  r.Advance(200);
  ASSERT_EQ(r.OnData(2, false, 300), Arrival::kInOrder);
  r.Advance(300);
  EXPECT_TRUE(r.AckDue(300));  // the third in-order datagram
  r.OnAckSent();
  EXPECT_FALSE(r.AckDue(300));
  ASSERT_EQ(r.OnData(3, true, 400), Arrival::kInOrder);  // R set
  EXPECT_TRUE(r.AckDue(400));
  r.Advance(400);
  r.OnAckSent();
  r.OnPeerSndNxt(4);  // nothing missing
  EXPECT_FALSE(r.AckDue(400));
  r.OnPeerSndNxt(6);  // the peer sent 4 and 5: lost at the tail
  EXPECT_TRUE(r.AckDue(400));
  r.OnAckSent();
  r.OnProbe();
  EXPECT_TRUE(r.AckDue(400));
}

TEST(RecvWindowTest, AckRequestWaitsForItsDelayAndAReplyClearsIt) {
  RecvWindow r({.window = 64, .ack_every = 16, .ack_delay_ns = kMs, .ack_request_delay_ns = 50});
  ASSERT_EQ(r.OnData(0, true, 1000), Arrival::kInOrder);  // R set
  r.Advance(1000);
  EXPECT_EQ(r.AckDeadline(), 1050u);
  EXPECT_FALSE(r.AckDue(1049));
  EXPECT_TRUE(r.AckDue(1050));
  r.OnAckSent();  // a reply carried it
  EXPECT_FALSE(r.AckDue(5000));
  EXPECT_EQ(r.AckDeadline(), UINT64_MAX);
  // Holes still ask for an ack at once.
  ASSERT_EQ(r.OnData(2, true, 6000), Arrival::kEarly);
  EXPECT_TRUE(r.AckDue(6000));
}

TEST(RecvWindowTest, HoldKeepsAnUndeliverableHeadWithoutAckingIt) {
  RecvWindow r({.window = 8, .ack_every = 1, .ack_delay_ns = kMs});
  ASSERT_EQ(r.OnData(0, false, 0), Arrival::kInOrder);
  r.Hold();  // no receive posted yet
  EXPECT_EQ(r.Ack().ack, 0u);
  EXPECT_EQ(r.OnData(0, false, 0), Arrival::kDuplicate);
  ASSERT_TRUE(r.HeadHeld());
  r.Advance(0);  // a receive was posted and the held datagram delivered
  EXPECT_EQ(r.Ack().ack, 1u);
  EXPECT_FALSE(r.HeadHeld());
}

TEST(RecvWindowTest, BacklogShrinksTheCreditsAndConsumingSendsAWindowUpdate) {
  RecvWindow w({.window = 8, .ack_every = 100, .ack_delay_ns = 100 * kMs});
  for (uint32_t s = 0; s < 3; ++s) {
    ASSERT_EQ(w.OnData(s, false, 0), Arrival::kInOrder);
    w.Receive(0);
  }
  EXPECT_EQ(w.rcv_nxt(), 3u);
  EXPECT_EQ(w.backlog(), 3u);
  AckFields a = w.Ack();
  EXPECT_EQ(a.ack, 3u);      // received is acknowledged ...
  EXPECT_EQ(a.credits, 5u);  // ... but the right edge stays at 8
  w.OnAckSent();
  // The window now ends at 8: seq 8 is outside, 7 inside.
  EXPECT_EQ(w.OnData(8, false, 0), Arrival::kOutsideWindow);
  EXPECT_EQ(w.OnData(7, false, 0), Arrival::kEarly);
  // Fill the window completely: credits 0.
  for (uint32_t s = 3; s < 7; ++s) {
    ASSERT_EQ(w.OnData(s, false, 0), Arrival::kInOrder);
    w.Receive(0);
  }
  ASSERT_TRUE(w.HeadHeld());
  w.Receive(0);  // seq 7, held early, now in order
  EXPECT_EQ(w.backlog(), 8u);
  EXPECT_EQ(w.Ack().credits, 0u);
  w.OnAckSent();
  EXPECT_FALSE(w.AckDue(1));
  // Consuming opens the edge; at half a window beyond the last advertised
  // edge an ack is due at once (a window update), not before.
  for (int i = 0; i < 3; ++i) w.Consume();
  EXPECT_FALSE(w.AckDue(1));
  w.Consume();
  EXPECT_TRUE(w.AckDue(1));
  EXPECT_EQ(w.Ack().credits, 4u);
  EXPECT_EQ(w.Ack().ack + w.Ack().credits, 12u);
}

}  // namespace
}  // namespace iwarpx::rd
