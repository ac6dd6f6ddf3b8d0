#include "base/compact_vec.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

namespace iwarpx {
namespace {

TEST(CompactVecTest, IsSmallAndAllocatesNothingEmpty) {
  EXPECT_EQ(sizeof(CompactVec<uint64_t>), 16u);
  CompactVec<int> v;
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.data(), nullptr);
  EXPECT_EQ(v.begin(), v.end());
}

TEST(CompactVecTest, BehavesAsAVectorForResizeAssignAndSwap) {
  CompactVec<int> v(3);
  std::vector<int> ref(3);
  EXPECT_EQ(v.size(), 3u);
  for (int x : v) EXPECT_EQ(x, 0);  // value-initialised
  for (size_t i = 0; i < 3; ++i) v[i] = ref[i] = static_cast<int>(i) + 1;
  v.resize(8);
  ref.resize(8);
  ASSERT_EQ(v.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(v[i], ref[i]) << i;
  v.resize(2);
  ref.resize(2);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 2);
  v.assign(5, 9);
  EXPECT_EQ(v.size(), 5u);
  for (int x : v) EXPECT_EQ(x, 9);
  CompactVec<int> w;
  w.swap(v);
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(w.size(), 5u);
  EXPECT_EQ(w.capacity(), 5u);
  w.resize(0);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(w.data(), nullptr);
}

TEST(CompactVecTest, MovesMoveOnlyElementsAndLeavesTheSourceEmpty) {
  CompactVec<std::unique_ptr<int>> v(2);
  v[1] = std::make_unique<int>(42);
  v.resize(4);
  ASSERT_NE(v[1], nullptr);
  EXPECT_EQ(*v[1], 42);
  CompactVec<std::unique_ptr<int>> w(std::move(v));
  EXPECT_EQ(w.size(), 4u);
  EXPECT_EQ(v.size(), 0u);  // NOLINT(bugprone-use-after-move): the contract says so
  EXPECT_EQ(*w[1], 42);
}

}  // namespace
}  // namespace iwarpx
