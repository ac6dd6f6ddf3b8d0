#include "base/bytes.h"

#include <array>
#include <vector>

#include <gtest/gtest.h>

namespace iwarpx {
namespace {

TEST(ByteReader, ReadsBigEndianFields) {
  const std::array<uint8_t, 15> in{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                                   0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
  ByteReader r(in);
  uint8_t u8 = 0;
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  ASSERT_TRUE(r.ReadU8(u8));
  ASSERT_TRUE(r.ReadBe16(u16));
  ASSERT_TRUE(r.ReadBe32(u32));
  ASSERT_TRUE(r.ReadBe64(u64));
  EXPECT_EQ(u8, 0x01);
  EXPECT_EQ(u16, 0x0203);
  EXPECT_EQ(u32, 0x04050607u);
  EXPECT_EQ(u64, 0x08090a0b0c0d0e0full);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_TRUE(r.ok());
}

TEST(ByteReader, ShortReadFailsAndSticks) {
  const std::array<uint8_t, 3> in{0xaa, 0xbb, 0xcc};
  ByteReader r(in);
  uint32_t v = 0x12345678;
  EXPECT_FALSE(r.ReadBe32(v));
  EXPECT_EQ(v, 0x12345678u) << "output must be untouched on failure";
  EXPECT_FALSE(r.ok());
  uint8_t b = 0;
  EXPECT_FALSE(r.ReadU8(b)) << "a failed reader stays failed";
  EXPECT_TRUE(r.rest().empty());
}

TEST(ByteReader, ViewAndSkipStayInBounds) {
  const std::array<uint8_t, 6> in{1, 2, 3, 4, 5, 6};
  ByteReader r(in);
  ByteSpan v;
  ASSERT_TRUE(r.Skip(2));
  ASSERT_TRUE(r.ReadView(3, v));
  EXPECT_EQ(v.data(), in.data() + 2);
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(r.rest().size(), 1u);
  EXPECT_FALSE(r.ReadView(2, v));
  EXPECT_FALSE(r.Skip(SIZE_MAX)) << "huge skips must not wrap";
}

TEST(ByteReader, EmptyInput) {
  ByteReader r(ByteSpan{});
  uint8_t b = 0;
  EXPECT_TRUE(r.ReadBytes(MutableByteSpan{}));
  EXPECT_FALSE(r.ReadU8(b));
}

TEST(ByteWriter, WritesBigEndianAndRefusesOverflow) {
  std::array<uint8_t, 8> out{};
  ByteWriter w(out);
  ASSERT_TRUE(w.WriteBe16(0x0102));
  ASSERT_TRUE(w.WriteBe32(0x03040506));
  EXPECT_FALSE(w.WriteBe32(0x0708090a)) << "only 2 bytes left";
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(w.written(), 6u);
  EXPECT_EQ(out[6], 0) << "nothing written past a failed write";
  EXPECT_EQ(out[0], 0x01);
  EXPECT_EQ(out[5], 0x06);
}

TEST(ByteWriter, RoundTripWithReader) {
  std::vector<uint8_t> out(1 + 2 + 4 + 8 + 3 + 2);
  ByteWriter w(out);
  const std::array<uint8_t, 3> blob{9, 8, 7};
  ASSERT_TRUE(w.WriteU8(0xfe) && w.WriteBe16(0xbeef) && w.WriteBe32(0xdeadbeef) &&
              w.WriteBe64(0x0123456789abcdefull) && w.WriteBytes(blob) && w.WriteZeros(2));
  EXPECT_EQ(w.remaining(), 0u);
  ByteReader r(w.view());
  uint8_t a = 0;
  uint16_t b = 0;
  uint32_t c = 0;
  uint64_t d = 0;
  std::array<uint8_t, 3> e{};
  ASSERT_TRUE(r.ReadU8(a) && r.ReadBe16(b) && r.ReadBe32(c) && r.ReadBe64(d) && r.ReadBytes(e));
  EXPECT_EQ(a, 0xfe);
  EXPECT_EQ(b, 0xbeef);
  EXPECT_EQ(c, 0xdeadbeefu);
  EXPECT_EQ(d, 0x0123456789abcdefull);
  EXPECT_EQ(e, blob);
  EXPECT_EQ(r.remaining(), 2u);
}

}  // namespace
}  // namespace iwarpx
