#include "transport/own_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace iwarpx::transport {
namespace {

TEST(CopyOwnMemoryTest, CopiesMappedBytesAndRefusesUnmappedOnes) {
  std::vector<uint8_t> src(100000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> dst(src.size());
  ASSERT_TRUE(CopyOwnMemory(dst.data(), src.data(), src.size()));
  EXPECT_EQ(dst, src);
  EXPECT_TRUE(CopyOwnMemory(dst.data(), nullptr, 0));

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* p = static_cast<uint8_t*>(m);
  std::memset(p, 0x5a, 2 * page);
  // Inaccessible pages (PROT_NONE, like unmapped ones but no other mapping
  // can land there while the test runs) are refused, not faulted on.
  ASSERT_EQ(mprotect(p + page, page, PROT_NONE), 0);
  EXPECT_TRUE(CopyOwnMemory(dst.data(), p, page));
  EXPECT_EQ(dst[page - 1], 0x5a);
  EXPECT_FALSE(CopyOwnMemory(dst.data(), p + page - 10, 20));  // runs into the hole
  ASSERT_EQ(mprotect(p, page, PROT_NONE), 0);
  EXPECT_FALSE(CopyOwnMemory(dst.data(), p, 8));
  ASSERT_EQ(munmap(p, 2 * page), 0);
}

}  // namespace
}  // namespace iwarpx::transport
