#include "wire/ddp.h"

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(DdpControlTest, EncodesFlagsAndVersion) {
  EXPECT_EQ(EncodeDdpControl({false, false}), 0x01);
  EXPECT_EQ(EncodeDdpControl({false, true}), 0x41);
  EXPECT_EQ(EncodeDdpControl({true, false}), 0x81);
  EXPECT_EQ(EncodeDdpControl({true, true}), 0xC1);
}

TEST(DdpControlTest, DecodesEveryByteByTheRules) {
  for (int i = 0; i < 256; ++i) {
    const auto byte = static_cast<uint8_t>(i);
    const bool tagged = (byte & 0x80) != 0;
    auto c = DecodeDdpControl(byte);
    if ((byte & 0x03) != 1) {
      ASSERT_FALSE(c.ok()) << i;
      EXPECT_EQ(c.error(),
                tagged ? WireError::kDdpTaggedBadVersion : WireError::kDdpUntaggedBadVersion)
          << i;
    } else if ((byte & 0x3C) != 0) {
      ASSERT_FALSE(c.ok()) << i;
      EXPECT_EQ(c.error(), WireError::kDdpReservedBits) << i;
    } else {
      ASSERT_TRUE(c.ok()) << i;
      EXPECT_EQ(c->tagged, tagged);
      EXPECT_EQ(c->last, (byte & 0x40) != 0);
      EXPECT_EQ(EncodeDdpControl(c.value()), byte);
    }
  }
}

TEST(DdpControlTest, VersionIsCheckedBeforeReservedBits) {
  auto c = DecodeDdpControl(0x3C | 0x02);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), WireError::kDdpUntaggedBadVersion);
  c = DecodeDdpControl(0x80 | 0x3C);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), WireError::kDdpTaggedBadVersion);
}

TEST(DdpHeaderTest, DecodesTaggedKnownAnswer) {
  // tshark: iwarp_ddp.tagged_flag=1 last_flag=1 rsvd=0 dv=1,
  // iwarp_ddp.stag=0x12345678 iwarp_ddp.tagged_offset=0x0000000100002000.
  const auto bytes = FromHex("c1 40 12345678 0000000100002000 aabb");
  auto h = DecodeDdpHeader(bytes);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->tagged);
  EXPECT_TRUE(h->last);
  EXPECT_EQ(h->rsvd_ulp0, 0x40);
  EXPECT_EQ(h->stag, 0x12345678u);
  EXPECT_EQ(h->to, 0x0000000100002000u);
  EXPECT_EQ(h->size(), 14u);
  EXPECT_EQ(ToHex(EncodeDdpHeader(h.value()).view()),
            "c14012345678"
            "0000000100002000");
}

TEST(DdpHeaderTest, DecodesUntaggedKnownAnswer) {
  // tshark: iwarp_ddp.tagged_flag=0 last_flag=0, iwarp_ddp.rsvdulp=4400c0ffee,
  // iwarp_ddp.qn=0 iwarp_ddp.msn=7 iwarp_ddp.mo=4096.
  const auto bytes = FromHex("01 44 00c0ffee 00000000 00000007 00001000");
  auto h = DecodeDdpHeader(bytes);
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->tagged);
  EXPECT_FALSE(h->last);
  EXPECT_EQ(h->rsvd_ulp0, 0x44);
  EXPECT_EQ(h->rsvd_ulp1_4, 0x00C0FFEEu);
  EXPECT_EQ(h->qn, 0u);
  EXPECT_EQ(h->msn, 7u);
  EXPECT_EQ(h->mo, 0x1000u);
  EXPECT_EQ(h->size(), 18u);
  std::vector<uint8_t> out(18);
  auto n = EncodeDdpHeader(h.value(), out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 18u);
  EXPECT_EQ(out, bytes);
}

TEST(DdpHeaderTest, TruncatedHeadersAreRejected) {
  EXPECT_EQ(DecodeDdpHeader({}).error(), WireError::kTruncated);
  const auto tagged = FromHex("c1 40 12345678 0000000100002000");
  EXPECT_TRUE(DecodeDdpHeader(tagged).ok());
  EXPECT_EQ(DecodeDdpHeader(ByteSpan(tagged).first(13)).error(), WireError::kTruncated);
  EXPECT_EQ(DecodeDdpHeader(ByteSpan(tagged).first(1)).error(), WireError::kTruncated);
  const auto untagged = FromHex("41 43 00000000 00000000 00000001 00000000");
  EXPECT_TRUE(DecodeDdpHeader(untagged).ok());
  EXPECT_EQ(DecodeDdpHeader(ByteSpan(untagged).first(17)).error(), WireError::kTruncated);
  // A tagged-sized buffer is not enough for an untagged header.
  EXPECT_EQ(DecodeDdpHeader(ByteSpan(untagged).first(14)).error(), WireError::kTruncated);
}

TEST(DdpHeaderTest, ControlErrorsComeBeforeLength) {
  EXPECT_EQ(DecodeDdpHeader(FromHex("c0")).error(), WireError::kDdpTaggedBadVersion);
  EXPECT_EQ(DecodeDdpHeader(FromHex("42")).error(), WireError::kDdpUntaggedBadVersion);
  EXPECT_EQ(DecodeDdpHeader(FromHex("45")).error(), WireError::kDdpReservedBits);
}

TEST(DdpHeaderTest, EncoderNeedsRoom) {
  DdpHeader h;
  h.tagged = true;
  std::vector<uint8_t> out(13);
  EXPECT_EQ(EncodeDdpHeader(h, out).error(), WireError::kNoSpace);
  out.resize(14);
  EXPECT_EQ(EncodeDdpHeader(h, out).value(), 14u);
  h.tagged = false;
  EXPECT_EQ(EncodeDdpHeader(h, out).error(), WireError::kNoSpace);
  out.resize(100);
  EXPECT_EQ(EncodeDdpHeader(h, out).value(), 18u);
}

TEST(DdpHeaderTest, RandomRoundTrips) {
  std::mt19937_64 rng(5041);
  for (int i = 0; i < 2000; ++i) {
    DdpHeader h;
    h.tagged = (rng() & 1) != 0;
    h.last = (rng() & 1) != 0;
    h.rsvd_ulp0 = static_cast<uint8_t>(rng());
    if (h.tagged) {
      h.stag = static_cast<uint32_t>(rng());
      h.to = rng();
    } else {
      h.rsvd_ulp1_4 = static_cast<uint32_t>(rng());
      h.qn = static_cast<uint32_t>(rng());
      h.msn = static_cast<uint32_t>(rng());
      h.mo = static_cast<uint32_t>(rng());
    }
    const DdpHeaderBytes bytes = EncodeDdpHeader(h);
    ASSERT_EQ(bytes.size, h.size());
    auto back = DecodeDdpHeader(bytes.view());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value(), h);
  }
}

TEST(DdpRangeTest, TaggedRangeWraps) {
  EXPECT_FALSE(TaggedRangeWraps(0, 0));
  EXPECT_FALSE(TaggedRangeWraps(kMax, 0));
  EXPECT_FALSE(TaggedRangeWraps(kMax, 1));  // last byte is 2^64 - 1
  EXPECT_TRUE(TaggedRangeWraps(kMax, 2));
  EXPECT_FALSE(TaggedRangeWraps(0, kMax));
  EXPECT_FALSE(TaggedRangeWraps(1, kMax));  // [1, 2^64)
  EXPECT_TRUE(TaggedRangeWraps(2, kMax));
  EXPECT_FALSE(TaggedRangeWraps(uint64_t{1} << 63, uint64_t{1} << 63));
  EXPECT_TRUE(TaggedRangeWraps(uint64_t{1} << 63, (uint64_t{1} << 63) + 1));
  EXPECT_FALSE(TaggedRangeWraps(kMax - 9, 10));
  EXPECT_TRUE(TaggedRangeWraps(kMax - 9, 11));
  EXPECT_TRUE(TaggedRangeWraps(kMax, kMax));
}

TEST(DdpRangeTest, RangeWithin) {
  EXPECT_TRUE(RangeWithin(0x1000, 0x100, 0x1000, 0x100));
  EXPECT_FALSE(RangeWithin(0x1000, 0x100, 0x1001, 0x100));
  EXPECT_FALSE(RangeWithin(0x1000, 0x100, 0x0FFF, 1));
  EXPECT_TRUE(RangeWithin(0x1000, 0x100, 0x10FF, 1));
  EXPECT_TRUE(RangeWithin(0x1000, 0x100, 0x1100, 0));
  EXPECT_FALSE(RangeWithin(0x1000, 0x100, 0x1100, 1));
  EXPECT_FALSE(RangeWithin(0x1000, 0x100, 0x1000, 0x101));
  EXPECT_TRUE(RangeWithin(0x1000, 0, 0x1000, 0));
  EXPECT_FALSE(RangeWithin(0x1000, 0, 0x1000, 1));
  // Near 2^64: no sum is ever formed, so nothing wraps into a false "inside".
  EXPECT_TRUE(RangeWithin(kMax - 10, 10, kMax - 1, 1));
  EXPECT_FALSE(RangeWithin(kMax - 10, 10, kMax, 1));
  EXPECT_FALSE(RangeWithin(0, kMax, kMax, 2));
  EXPECT_FALSE(RangeWithin(0, kMax, 1, kMax));
  EXPECT_TRUE(RangeWithin(0, kMax, 0, kMax));
  EXPECT_FALSE(RangeWithin(kMax, 1, 0, 1));  // addr + len would wrap to 1
}

}  // namespace
}  // namespace iwarpx::wire
