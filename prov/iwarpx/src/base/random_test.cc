#include "base/random.h"

#include <set>

#include <gtest/gtest.h>

namespace iwarpx {
namespace {

TEST(Random, SameSeedSameSequence) {
  Random a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const uint64_t va = a.Next64();
    EXPECT_EQ(va, b.Next64());
    EXPECT_NE(va, c.Next64());
  }
}

TEST(Random, BelowStaysInRangeAndCoversIt) {
  Random r(7);
  std::set<uint64_t> seen;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = r.Below(10);
    ASSERT_LT(v, 10u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 10u);
}

TEST(Random, OsSeedsDiffer) {
  Random a = Random::FromOs();
  Random b = Random::FromOs();
  EXPECT_NE(a.Next64(), b.Next64());
}

}  // namespace
}  // namespace iwarpx
