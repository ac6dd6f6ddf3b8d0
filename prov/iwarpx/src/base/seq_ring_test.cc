#include "base/seq_ring.h"

#include <cstdint>
#include <memory>

#include <gtest/gtest.h>

namespace iwarpx {
namespace {

TEST(SeqRingTest, StartsSmallAndGrowsToCapacityKeepingLiveSlots) {
  SeqRing<uint64_t> r(64, 4);
  EXPECT_EQ(r.size(), 4u);
  EXPECT_EQ(r.capacity(), 64u);
  // Numbers 10..13 live, then 14..40 appended one at a time.
  uint64_t first = 10;
  size_t live = 0;
  for (uint64_t n = 10; n < 41; ++n) {
    r.Grow(first, live, live + 1);
    r[n] = n * 7;
    ++live;
    if (live == 20) {  // the oldest ten leave: the window slides
      first += 10;
      live -= 10;
    }
  }
  EXPECT_EQ(r.size(), 32u);
  for (uint64_t n = first; n < first + live; ++n) EXPECT_EQ(r[n], n * 7) << n;
  r.Grow(first, live, 64);
  EXPECT_EQ(r.size(), 64u);
  for (uint64_t n = first; n < first + live; ++n) EXPECT_EQ(r[n], n * 7) << n;
}

TEST(SeqRingTest, ThirtyTwoBitNumbersWrapAcrossAGrowth) {
  SeqRing<uint32_t> r(256, 8);
  const uint32_t first = UINT32_MAX - 5;  // live: 2^32-6 .. 2^32-1, 0, 1
  for (uint32_t k = 0; k < 8; ++k) r[static_cast<uint32_t>(first + k)] = k + 100;
  r.Grow(first, 8, 9);
  EXPECT_EQ(r.size(), 16u);
  for (uint32_t k = 0; k < 8; ++k) EXPECT_EQ(r[static_cast<uint32_t>(first + k)], k + 100) << k;
}

TEST(SeqRingTest, MoveOnlySlotsAndNoGrowthWhenThereIsRoom) {
  SeqRing<std::unique_ptr<int>> r(8, 2);
  r[0] = std::make_unique<int>(1);
  r[1] = std::make_unique<int>(2);
  const int* p = r[1].get();
  r.Grow(0, 2, 2);
  EXPECT_EQ(r.size(), 2u);
  r.Grow(0, 2, 5);
  EXPECT_EQ(r.size(), 8u);
  ASSERT_NE(r[1], nullptr);
  EXPECT_EQ(r[1].get(), p);
  EXPECT_EQ(*r[0], 1);
}

TEST(SeqRingTest, AnEmptyRingAllocatesOnItsFirstGrowth) {
  SeqRing<uint64_t> r(16, 0);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.capacity(), 16u);
  const uint64_t first = 1000;
  r.Grow(first, 0, 1);  // nothing live yet: only storage for one number
  EXPECT_EQ(r.size(), 1u);
  r[first] = 7;
  r.Grow(first, 1, 3);
  EXPECT_EQ(r.size(), 4u);
  EXPECT_EQ(r[first], 7u);
}

TEST(SeqRingTest, IsAPointerAndTwoSizes) {
  EXPECT_EQ(sizeof(SeqRing<uint64_t>), 16u);
  SeqRing<uint64_t> r(1u << 15, 0);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.capacity(), 1u << 15);
  r.Grow(0, 0, 3);
  EXPECT_EQ(r.size(), 4u);
  r[3] = 7;
  EXPECT_EQ(r[7], 7u);  // 7 & 3
  EXPECT_EQ(r.Release(), 4 * sizeof(uint64_t));
  EXPECT_EQ(r.size(), 0u);
}

}  // namespace
}  // namespace iwarpx
