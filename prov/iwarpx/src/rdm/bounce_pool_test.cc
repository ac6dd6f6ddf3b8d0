#include "rdm/bounce_pool.h"

#include <cstring>
#include <set>

#include <gtest/gtest.h>

namespace iwarpx::rdm {
namespace {

TEST(BouncePoolTest, BuffersAreDisjointStableAndReusedLastFreedFirst) {
  BouncePool pool(1000);
  std::set<uint8_t*> seen;
  std::vector<uint32_t> ids;
  for (uint32_t n = 0; n < BouncePool::kPerSlab * 2 + 3; ++n) {
    const uint32_t i = pool.Alloc();
    EXPECT_EQ(i, n);
    uint8_t* b = pool.Buf(i);
    EXPECT_TRUE(seen.insert(b).second);
    std::memset(b, static_cast<int>(n & 0xff), pool.buffer_size());  // whole buffer writable
    ids.push_back(i);
  }
  EXPECT_EQ(pool.count(), BouncePool::kPerSlab * 2 + 3);
  // Contents survive growth: no buffer overlaps another or moved.
  for (uint32_t i : ids) {
    const uint8_t* b = pool.Buf(i);
    EXPECT_EQ(b[0], i & 0xff);
    EXPECT_EQ(b[pool.buffer_size() - 1], i & 0xff);
  }
  pool.Free(5);
  pool.Free(70);
  EXPECT_EQ(pool.Alloc(), 70u);
  EXPECT_EQ(pool.Alloc(), 5u);
  EXPECT_EQ(pool.Alloc(), BouncePool::kPerSlab * 2 + 3);
}

}  // namespace
}  // namespace iwarpx::rdm
