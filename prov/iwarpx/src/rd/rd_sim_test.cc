// End-to-end runs of one reliable-datagram stream (SendWindow -> lossy link
// -> RecvWindow, acks back over a lossy link) on simulated time: every datagram
// arrives exactly once and in order through loss, duplication and
// reordering, and a peer that goes silent is declared dead within the
// configured time. Deterministic: each case has a fixed seed.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <queue>
#include <random>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "rd/recv_window.h"
#include "rd/send_window.h"

namespace iwarpx::rd {
namespace {

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;

struct Packet {
  uint64_t at = 0;
  bool data = false;
  uint32_t seq = 0;
  uint64_t payload = 0;
  bool ack_request = false;
  AckFields ack;
  bool operator>(const Packet& o) const { return at > o.at; }
};

// Delays each packet by base + random jitter (so later packets may overtake
// earlier ones), drops and duplicates at the given rates.
class LossyLink {
 public:
  LossyLink(uint64_t seed, double drop, double dup) : rng_(seed), drop_(drop), dup_(dup) {}

  void Send(Packet p, uint64_t now) {
    if (cut_) return;
    if (Chance(drop_)) {
      ++dropped_;
      return;
    }
    const int copies = Chance(dup_) ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      p.at = now + 20 * kUs + rng_() % (200 * kUs);
      q_.push(p);
    }
  }
  bool Pop(uint64_t now, Packet* p) {
    if (q_.empty() || q_.top().at > now) return false;
    *p = q_.top();
    q_.pop();
    return true;
  }
  void Cut() { cut_ = true; }
  [[nodiscard]] uint64_t dropped() const { return dropped_; }

 private:
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  std::mt19937_64 rng_;
  double drop_;
  double dup_;
  bool cut_ = false;
  uint64_t dropped_ = 0;
  std::priority_queue<Packet, std::vector<Packet>, std::greater<>> q_;
};

class Stream final : public SendWindowSink {
 public:
  Stream(uint64_t seed, double drop, double dup, uint64_t n)
      : forward_(seed, drop, dup),
        backward_(seed ^ 0x5bd1e995u, drop, dup),
        sender_(Config(), *this),
        receiver_({.window = 256, .ack_every = 16, .ack_delay_ns = kMs}),
        n_(n),
        acked_(n, 0) {}

  static SendConfig Config() {
    SendConfig c;
    c.dead_after_ns = 2000 * kMs;
    return c;
  }

  // One 50 µs step of both ends.
  void Step() {
    now_ += 50 * kUs;
    while (next_ < n_ && sender_.CanSend()) {
      const uint32_t seq = sender_.OnSent(next_, now_);
      SendData(seq, next_, !sender_.CanSend());
      ++next_;
    }
    Packet p;
    while (forward_.Pop(now_, &p)) Receive(p);
    if (receiver_.AckDue(now_)) {
      Packet ack;
      ack.ack = receiver_.Ack();
      backward_.Send(ack, now_);
      receiver_.OnAckSent();
    }
    while (backward_.Pop(now_, &p)) sender_.OnAck(p.ack, now_);
    if (sender_.Deadline() <= now_) sender_.OnTimer(now_);
  }

  void Acked(uint32_t /*seq*/, uint64_t cookie) override { ++acked_[cookie]; }
  void Resend(uint32_t seq, uint64_t cookie) override { SendData(seq, cookie, true); }

  [[nodiscard]] bool Done() const { return delivered_.size() == n_ && sender_.outstanding() == 0; }

  LossyLink forward_;
  LossyLink backward_;
  SendWindow sender_;
  RecvWindow receiver_;
  uint64_t n_;
  uint64_t next_ = 0;
  uint64_t now_ = 0;
  std::vector<uint8_t> acked_;
  std::vector<uint64_t> delivered_;

 private:
  void SendData(uint32_t seq, uint64_t payload, bool ack_request) {
    Packet p;
    p.data = true;
    p.seq = seq;
    p.payload = payload;
    p.ack_request = ack_request;
    forward_.Send(p, now_);
  }

  void Receive(const Packet& p) {
    switch (receiver_.OnData(p.seq, p.ack_request, now_)) {
      case Arrival::kInOrder:
        delivered_.push_back(p.payload);
        receiver_.Advance(now_);
        while (receiver_.HeadHeld()) {
          auto it = held_.find(receiver_.rcv_nxt());
          ASSERT_NE(it, held_.end());
          delivered_.push_back(it->second);
          held_.erase(it);
          receiver_.Advance(now_);
        }
        break;
      case Arrival::kEarly: held_[p.seq] = p.payload; break;
      case Arrival::kDuplicate:
      case Arrival::kOutsideWindow: break;
    }
  }

  std::unordered_map<uint32_t, uint64_t> held_;
};

struct SimCase {
  uint64_t seed;
  double drop;
  double dup;
  uint64_t max_ms;  // simulated time the transfer may take (efficiency bound)
};

class RdSimTest : public ::testing::TestWithParam<SimCase> {};

TEST_P(RdSimTest, EveryDatagramExactlyOnceInOrder) {
  const SimCase c = GetParam();
  constexpr uint64_t kN = 20'000;
  Stream s(c.seed, c.drop, c.dup, kN);
  while (!s.Done() && s.now_ < 120'000 * kMs && !::testing::Test::HasFatalFailure()) s.Step();
  ASSERT_TRUE(s.Done()) << "stalled at " << s.delivered_.size() << " delivered, "
                        << s.sender_.outstanding() << " outstanding, snd_una "
                        << s.sender_.snd_una() << ", rcv_nxt " << s.receiver_.rcv_nxt() << ", rto "
                        << s.sender_.rto() << ", retransmissions " << s.sender_.retransmissions()
                        << ", t " << s.now_;
  for (uint64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(s.delivered_[i], i) << "delivery " << i;
    ASSERT_EQ(s.acked_[i], 1) << "datagram " << i << " acked " << int{s.acked_[i]} << " times";
  }
  if (c.drop > 0) {
    EXPECT_GT(s.forward_.dropped(), 0u);
    EXPECT_GT(s.sender_.retransmissions(), 0u);
  }
  // Efficiency: resends stay close to what was really lost (data or acks),
  // and the transfer does not crawl from timeout to timeout.
  EXPECT_LE(s.sender_.retransmissions(), 2 * (s.forward_.dropped() + s.backward_.dropped()) + 50);
  EXPECT_LE(s.now_, c.max_ms * kMs);
  if (c.dup > 0) {
    EXPECT_GT(s.receiver_.duplicates(), 0u);
  }
  EXPECT_FALSE(s.sender_.Dead(s.now_));
  std::printf(
      "    simulated %.1f ms, %lu dropped, %lu retransmitted (%lu timeouts, reorder steps %u), %lu "
      "duplicates\n",
      static_cast<double>(s.now_) / kMs, static_cast<unsigned long>(s.forward_.dropped()),
      static_cast<unsigned long>(s.sender_.retransmissions()),
      static_cast<unsigned long>(s.sender_.timeouts()), s.sender_.reorder_steps(),
      static_cast<unsigned long>(s.receiver_.duplicates()));
}

INSTANTIATE_TEST_SUITE_P(Faults, RdSimTest,
                         ::testing::Values(SimCase{1, 0.0, 0.0, 100}, SimCase{2, 0.05, 0.05, 1000},
                                           SimCase{3, 0.05, 0.05, 1000},
                                           SimCase{4, 0.20, 0.02, 5000}));

// The peer vanishes mid-stream: no more acks. The sender must call the
// stream dead no later than dead_after after the last ack it saw.
TEST(RdSimDeadTest, SilentPeerIsDeadWithinTheTimeout) {
  Stream s(7, 0.0, 0.0, 1'000'000);
  while (s.now_ < 100 * kMs) s.Step();
  ASSERT_FALSE(s.sender_.Dead(s.now_));
  s.forward_.Cut();
  s.backward_.Cut();
  const uint64_t cut_at = s.now_;
  while (!s.sender_.Dead(s.now_) && s.now_ < cut_at + 10'000 * kMs) s.Step();
  EXPECT_TRUE(s.sender_.Dead(s.now_));
  // Acks already in flight may land up to ~0.3 ms after the cut.
  EXPECT_LE(s.now_, cut_at + Stream::Config().dead_after_ns + kMs);
  EXPECT_GE(s.now_, cut_at + Stream::Config().dead_after_ns - kMs);
}

}  // namespace
}  // namespace iwarpx::rd
