#include "base/result.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace iwarpx {
namespace {

enum class E { kA = 1, kB };

Result<int, E> Half(int v) {
  if (v % 2 != 0) return Err{E::kB};
  return v / 2;
}

TEST(Result, ValueAndError) {
  auto ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  auto bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), E::kB);
  EXPECT_FALSE(static_cast<bool>(bad));
}

TEST(Result, MoveOnlyValue) {
  Result<std::unique_ptr<std::string>, E> r(std::make_unique<std::string>("x"));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<std::string> p = std::move(r).value();
  EXPECT_EQ(*p, "x");
}

}  // namespace
}  // namespace iwarpx
