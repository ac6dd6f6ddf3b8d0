#include "base/clock.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace iwarpx {
namespace {

TEST(MonotonicClockTest, NeverDecreases) {
  MonotonicClock clock;
  uint64_t last = clock.NowNs();
  EXPECT_GT(last, 0U);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t now = clock.NowNs();
    EXPECT_GE(now, last);
    last = now;
  }
}

TEST(FakeClockTest, MovesOnlyWhenTold) {
  testing::FakeClock clock(5);
  EXPECT_EQ(clock.NowNs(), 5U);
  EXPECT_EQ(clock.NowNs(), 5U);
  clock.Advance(10);
  EXPECT_EQ(clock.NowNs(), 15U);
  clock.Set(100);
  EXPECT_EQ(clock.NowNs(), 100U);
  const Clock& as_base = clock;
  EXPECT_EQ(as_base.NowNs(), 100U);
}

}  // namespace
}  // namespace iwarpx
