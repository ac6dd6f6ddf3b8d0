#include "base/hash.h"

#include <cstdint>
#include <set>

#include <gtest/gtest.h>

namespace iwarpx {
namespace {

// HashMix is a bijection: distinct words never collide.
TEST(HashTest, MixHasNoCollisionsOnASample) {
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 100000; ++i) {
    EXPECT_TRUE(seen.insert(HashMix(i)).second) << i;
    EXPECT_TRUE(seen.insert(HashMix(i << 32)).second || i == 0) << i;
  }
}

// Every input bit reaches the output: flipping any one bit of a word (as a
// port or the last byte of an address would) changes about half of the bits.
TEST(HashTest, EveryInputBitAvalanches) {
  const uint64_t base = 0x0002'1F40'7F00'0001ULL;  // AF_INET, port 8000, 127.0.0.1
  for (int bit = 0; bit < 64; ++bit) {
    const uint64_t diff = HashMix(base) ^ HashMix(base ^ (uint64_t{1} << bit));
    const int changed = __builtin_popcountll(diff);
    EXPECT_GE(changed, 16) << "bit " << bit;
    EXPECT_LE(changed, 48) << "bit " << bit;
  }
}

TEST(HashTest, CombineDependsOnOrderAndEveryWord) {
  EXPECT_NE(HashCombine(HashCombine(0, 1), 2), HashCombine(HashCombine(0, 2), 1));
  EXPECT_NE(HashCombine(HashMix(7), 0), HashCombine(HashMix(7), 1));
  EXPECT_EQ(HashCombine(HashMix(7), 5), HashCombine(HashMix(7), 5));
}

}  // namespace
}  // namespace iwarpx
