// Reliable-datagram sessions, rule by rule (docs/wire.md §3.6 rules 1-5, 13).
#include "rd/session.h"

#include <set>

#include <gtest/gtest.h>

namespace iwarpx::rd {
namespace {

TEST(OutboundSessionTest, RandomNonZeroIdSynUntilEchoedNewIdOnReset) {
  Random random(42);
  std::set<uint32_t> ids;
  for (int i = 0; i < 100; ++i) {
    OutboundSession s(random);
    EXPECT_NE(s.id(), 0u);
    ids.insert(s.id());
  }
  EXPECT_GT(ids.size(), 95u);  // random, not sequential or fixed
  OutboundSession s(random);
  const uint32_t first = s.id();
  EXPECT_TRUE(s.syn());
  EXPECT_FALSE(s.OnAckEcho(first + 1));  // an ack for another session: ignored
  EXPECT_TRUE(s.syn());
  EXPECT_TRUE(s.OnAckEcho(first));
  EXPECT_FALSE(s.syn());
  EXPECT_FALSE(s.OnReset(first ^ 1));  // a RESET for another session: ignored
  EXPECT_EQ(s.id(), first);
  EXPECT_TRUE(s.OnReset(first));  // refused: reopen
  EXPECT_NE(s.id(), first);
  EXPECT_NE(s.id(), 0u);
  EXPECT_TRUE(s.syn());
}

TEST(InboundSessionsTest, AdoptCurrentRetiredAndReset) {
  InboundSessions in;
  // Unknown without Y: the receiver holds no state for it -> RESET.
  EXPECT_EQ(in.Classify(7, false), SessionVerdict::kReset);
  EXPECT_EQ(in.current(), 0u);
  // Unknown with Y: a new peer.
  EXPECT_EQ(in.Classify(7, true), SessionVerdict::kAdopted);
  EXPECT_EQ(in.Classify(7, false), SessionVerdict::kCurrent);
  EXPECT_EQ(in.Classify(7, true), SessionVerdict::kCurrent);
  // The peer restarted: 7 is retired, its late datagrams dropped silently.
  EXPECT_EQ(in.Classify(9, true), SessionVerdict::kAdopted);
  EXPECT_EQ(in.Classify(7, false), SessionVerdict::kRetired);
  EXPECT_EQ(in.Classify(7, true), SessionVerdict::kRetired);
  EXPECT_EQ(in.current(), 9u);
  // Only the last kRetiredKept sessions are remembered.
  for (uint32_t s = 10; s < 10 + InboundSessions::kRetiredKept; ++s) {
    EXPECT_EQ(in.Classify(s, true), SessionVerdict::kAdopted);
  }
  EXPECT_EQ(in.Classify(9, false), SessionVerdict::kRetired);
  EXPECT_EQ(in.Classify(7, false), SessionVerdict::kReset);  // long forgotten
  // Session 0 never matches anything.
  EXPECT_EQ(in.Classify(0, true), SessionVerdict::kRetired);
}

TEST(InboundSessionsTest, ForgetAfterTerminateDrawsReset) {
  InboundSessions in;
  ASSERT_EQ(in.Classify(5, true), SessionVerdict::kAdopted);
  in.Forget();
  EXPECT_EQ(in.current(), 0u);
  EXPECT_EQ(in.Classify(5, false), SessionVerdict::kReset);
  // The peer reopens with a new session and Y.
  EXPECT_EQ(in.Classify(6, true), SessionVerdict::kAdopted);
}

}  // namespace
}  // namespace iwarpx::rd
