#include "base/lazy_deque.h"

#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace iwarpx {
namespace {

TEST(LazyDequeTest, AllocatesNothingUntilTheFirstElement) {
  LazyDeque<uint32_t> q;
  EXPECT_FALSE(q.allocated());
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  size_t visited = 0;
  for (const uint32_t v : q) visited += v + 1;
  EXPECT_EQ(visited, 0u);
  EXPECT_FALSE(q.allocated());
  q.push_back(7);
  EXPECT_TRUE(q.allocated());
  EXPECT_FALSE(q.empty());
}

TEST(LazyDequeTest, BehavesAsAQueueAtBothEnds) {
  LazyDeque<std::pair<uint32_t, size_t>> q;
  q.emplace_back(1u, size_t{10});
  q.push_back({2u, size_t{20}});
  q.push_front({0u, size_t{0}});
  ASSERT_EQ(q.size(), 3u);
  std::vector<uint32_t> seen;
  for (const auto& [a, b] : q) {
    EXPECT_EQ(b, size_t{a} * 10);
    seen.push_back(a);
  }
  EXPECT_EQ(seen, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(q.front().first, 0u);
  q.pop_front();
  EXPECT_EQ(q.front().first, 1u);
  q.pop_front();
  q.pop_front();
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.allocated());  // kept once used
  q.push_back({5u, size_t{50}});
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.allocated());
}

TEST(LazyDequeTest, SwapExchangesContents) {
  LazyDeque<uint32_t> a;
  LazyDeque<uint32_t> b;
  a.push_back(1);
  a.push_back(2);
  b.swap(a);
  EXPECT_TRUE(a.empty());
  EXPECT_FALSE(a.allocated());
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b.front(), 1u);
  const LazyDeque<uint32_t>& cb = b;
  uint32_t sum = 0;
  for (const uint32_t v : cb) sum += v;
  EXPECT_EQ(sum, 3u);
}

}  // namespace
}  // namespace iwarpx
