#include "rdm/peer_counters.h"

#include <random>

#include <gtest/gtest.h>

namespace iwarpx::rdm {
namespace {

void ExpectSame(const PeerStats& a, const PeerStats& b) {
  for (size_t c = 0; c < kChannelCount; ++c) {
    EXPECT_EQ(a.channel[c].msgs_sent, b.channel[c].msgs_sent) << c;
    EXPECT_EQ(a.channel[c].bytes_sent, b.channel[c].bytes_sent) << c;
    EXPECT_EQ(a.channel[c].msgs_received, b.channel[c].msgs_received) << c;
    EXPECT_EQ(a.channel[c].bytes_received, b.channel[c].bytes_received) << c;
  }
  EXPECT_EQ(a.rc_opened, b.rc_opened);
  EXPECT_EQ(a.rc_accepted, b.rc_accepted);
  EXPECT_EQ(a.rc_closed, b.rc_closed);
  EXPECT_EQ(a.rd_sessions, b.rd_sessions);
  EXPECT_EQ(a.rd_failed, b.rd_failed);
  EXPECT_EQ(a.rd_retransmitted, b.rd_retransmitted);
  EXPECT_EQ(a.rd_probes_sent, b.rd_probes_sent);
}

TEST(PeerCountersTest, StartsEmptyWithNothingAllocated) {
  PeerCounters c;
  EXPECT_FALSE(c.channels_allocated());
  EXPECT_FALSE(c.events_allocated());
  ExpectSame(c.Snapshot(), PeerStats{});
}

TEST(PeerCountersTest, TwoChannelsAndSessionsStayInline) {
  PeerCounters c;
  PeerStats ref;
  c.AddRdSession();
  ++ref.rd_sessions;
  for (uint64_t i = 0; i < 100; ++i) {
    const Channel ch = i < 50 ? Channel::kUdZcopy : Channel::kRcSr;
    c.CountSent(ch, i);
    ref.CountSent(ch, i);
    c.CountReceived(Channel::kUdZcopy, 2 * i);
    ref.CountReceived(Channel::kUdZcopy, 2 * i);
  }
  EXPECT_FALSE(c.channels_allocated());
  EXPECT_FALSE(c.events_allocated());
  ExpectSame(c.Snapshot(), ref);
  EXPECT_EQ(c.Snapshot().total_bytes(), ref.total_bytes());
}

TEST(PeerCountersTest, AThirdChannelOrAnEventMakesItsBlock) {
  PeerCounters a;
  a.CountSent(Channel::kUdSr, 8);
  a.CountReceived(Channel::kRcSr, 16);
  EXPECT_FALSE(a.channels_allocated());
  a.CountReceived(Channel::kRcFp, 32);
  EXPECT_TRUE(a.channels_allocated());
  EXPECT_FALSE(a.events_allocated());
  EXPECT_EQ(a.Snapshot().channel[static_cast<size_t>(Channel::kRcFp)].bytes_received, 32u);
  PeerCounters b;
  ++b.events().rc_opened;
  EXPECT_TRUE(b.events_allocated());
  EXPECT_FALSE(b.channels_allocated());
  EXPECT_EQ(b.Snapshot().rc_opened, 1u);
}

// Any mix of calls gives what a PeerStats counted the same way gives.
TEST(PeerCountersTest, MatchesPeerStatsForRandomCalls) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 50; ++round) {
    PeerCounters c;
    PeerStats ref;
    const int n = static_cast<int>(rng() % 400);
    for (int i = 0; i < n; ++i) {
      const auto ch = static_cast<Channel>(rng() % kChannelCount);
      const uint64_t bytes = rng() % 100000;
      switch (rng() % 10) {
        case 0:
          c.AddRdSession();
          ++ref.rd_sessions;
          break;
        case 1:
          ++c.events().rc_opened;
          ++ref.rc_opened;
          break;
        case 2:
          ++c.events().rc_accepted;
          ++ref.rc_accepted;
          break;
        case 3:
          ++c.events().rc_closed;
          ++ref.rc_closed;
          break;
        case 4:
          ++c.events().rd_failed;
          ++ref.rd_failed;
          c.events().rd_retransmitted += bytes;
          ref.rd_retransmitted += bytes;
          c.events().rd_probes_sent += static_cast<uint64_t>(i);
          ref.rd_probes_sent += static_cast<uint64_t>(i);
          break;
        case 5:
        case 6:
          c.CountSent(ch, bytes);
          ref.CountSent(ch, bytes);
          break;
        default:
          c.CountReceived(ch, bytes);
          ref.CountReceived(ch, bytes);
          break;
      }
    }
    ExpectSame(c.Snapshot(), ref);
  }
}

TEST(PeerCountersTest, IsSmallerThanPeerStats) {
  EXPECT_LE(sizeof(PeerCounters), 96u);
  EXPECT_LT(sizeof(PeerCounters), sizeof(PeerStats));
}

}  // namespace
}  // namespace iwarpx::rdm
