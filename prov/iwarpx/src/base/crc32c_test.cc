#include "base/crc32c.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"

namespace iwarpx {
namespace {

using testing::FromHex;
using testing::ToHex;

ByteSpan AsBytes(std::string_view s) {
  return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// Bit-at-a-time reference, independent of the table and SSE4.2 code.
uint32_t ReferenceCrc32c(ByteSpan data) {
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : data) {
    c ^= b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) != 0 ? 0x82F63B78u : 0u);
  }
  return c ^ 0xFFFFFFFFu;
}

std::vector<uint8_t> RandomBytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Every implementation the tests exercise.
std::vector<uint32_t> AllImpls(ByteSpan data) {
  return {Crc32c(data), Crc32cPortable(data), Crc32cHardware(data), Crc32cVector(data),
          ReferenceCrc32c(data)};
}

void ExpectAll(ByteSpan data, uint32_t expected) {
  for (uint32_t v : AllImpls(data)) EXPECT_EQ(v, expected) << ToHex(data);
}

TEST(Crc32cTest, CheckValue) {
  ExpectAll(AsBytes("123456789"), 0xE3069283u);
}

TEST(Crc32cTest, EmptyIsZero) {
  ExpectAll(ByteSpan{}, 0u);
  EXPECT_EQ(Crc32cExtend(kCrc32cInit, ByteSpan{}), kCrc32cInit);
}

// RFC 3720 §B.4 "CRC Examples": the digest bytes printed there are the
// little-endian image of the CRC value (same byte order as the MPA CRC field).
TEST(Crc32cTest, Rfc3720ZeroBytes) {
  std::vector<uint8_t> zeros(32, 0x00);
  ExpectAll(zeros, 0x8A9136AAu);
  uint8_t wire[4];
  StoreCrcWire(wire, Crc32c(zeros));
  EXPECT_EQ(ToHex(wire), "aa36918a");
}

TEST(Crc32cTest, Rfc3720OnesBytes) {
  std::vector<uint8_t> ones(32, 0xFF);
  ExpectAll(ones, 0x62A8AB43u);
  uint8_t wire[4];
  StoreCrcWire(wire, Crc32c(ones));
  EXPECT_EQ(ToHex(wire), "43aba862");
}

TEST(Crc32cTest, Rfc3720IncrementingBytes) {
  std::vector<uint8_t> inc(32);
  for (size_t i = 0; i < inc.size(); ++i) inc[i] = static_cast<uint8_t>(i);
  ExpectAll(inc, 0x46DD794Eu);
  uint8_t wire[4];
  StoreCrcWire(wire, Crc32c(inc));
  EXPECT_EQ(ToHex(wire), "4e79dd46");
}

TEST(Crc32cTest, Rfc3720DecrementingBytes) {
  std::vector<uint8_t> dec(32);
  for (size_t i = 0; i < dec.size(); ++i) dec[i] = static_cast<uint8_t>(31 - i);
  ExpectAll(dec, 0x113FDB5Cu);
  uint8_t wire[4];
  StoreCrcWire(wire, Crc32c(dec));
  EXPECT_EQ(ToHex(wire), "5cdb3f11");
}

TEST(Crc32cTest, WireImageIsLittleEndian) {
  uint8_t wire[4];
  StoreCrcWire(wire, 0x8A9136AAu);
  EXPECT_EQ(ToHex(wire), "aa36918a");
  EXPECT_EQ(LoadCrcWire(FromHex("aa 36 91 8a").data()), 0x8A9136AAu);
  StoreCrcWire(wire, 0x01020304u);
  EXPECT_EQ(LoadCrcWire(wire), 0x01020304u);
}

TEST(Crc32cTest, HardwareMatchesPortableAllLengthsAndAlignments) {
  if (!Crc32cHasHardware()) {
    GTEST_LOG_(INFO) << "no SSE4.2 here: Crc32cHardware falls back to the portable code";
  }
  std::mt19937 rng(12345);
  // 8 bytes of slack so every alignment 0..7 can take the full length.
  std::vector<uint8_t> buf = RandomBytes(rng, 1100 + 8);
  for (size_t align = 0; align < 8; ++align) {
    for (size_t len = 0; len <= 1100; ++len) {
      ByteSpan s(buf.data() + align, len);
      const uint32_t portable = Crc32cPortable(s);
      ASSERT_EQ(Crc32cHardware(s), portable) << "len=" << len << " align=" << align;
      ASSERT_EQ(Crc32c(s), portable) << "len=" << len << " align=" << align;
      // Reference on a subset of lengths (it is slow).
      if (len < 80 || len % 97 == 0) {
        ASSERT_EQ(ReferenceCrc32c(s), portable) << "len=" << len << " align=" << align;
      }
    }
  }
}

TEST(Crc32cTest, HardwareMatchesPortableFromArbitraryState) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const uint32_t state = static_cast<uint32_t>(rng());
    std::vector<uint8_t> data = RandomBytes(rng, rng() % 300);
    EXPECT_EQ(Crc32cExtendHardware(state, data), Crc32cExtendPortable(state, data));
    EXPECT_EQ(Crc32cExtend(state, data), Crc32cExtendPortable(state, data));
  }
}

// The interleaved lanes (3 x 4 KiB and 3 x 256 B blocks plus a tail) give the
// same register as one lane, from any state, around every block boundary.
TEST(Crc32cTest, InterleavedLanesMatchPortableAroundBlockBoundaries) {
  std::mt19937 rng(2024);
  const std::vector<uint8_t> buf = RandomBytes(rng, 3 * 3 * 4096 + 3 * 256 + 64);
  std::vector<size_t> lengths;
  for (const size_t base : {size_t{768}, size_t{3 * 4096}, size_t{2 * 3 * 4096},
                            size_t{3 * 4096 + 768}, size_t{3 * 3 * 4096}}) {
    for (size_t d = 0; d < 20; ++d) {
      lengths.push_back(base + d);
      lengths.push_back(base - 1 - d);
    }
  }
  for (int i = 0; i < 50; ++i) lengths.push_back(rng() % (buf.size() - 8));
  for (const size_t len : lengths) {
    for (const size_t align : {size_t{0}, size_t{3}}) {
      const uint32_t state = static_cast<uint32_t>(rng());
      ByteSpan s(buf.data() + align, len);
      ASSERT_EQ(Crc32cExtendHardware(state, s), Crc32cExtendPortable(state, s))
          << "len=" << len << " align=" << align;
    }
  }
}

// The VPCLMULQDQ folding (256-byte steps, then 16-byte folds, then a tail of
// fewer than 16 bytes) gives the portable register from any state, at every
// length around its step sizes and at every alignment; Crc32cExtend takes it
// from kVpclmulMinBytes on. Where the CPU lacks it, Crc32cExtendVector is the
// SSE4.2 path and this still checks that.
TEST(Crc32cTest, VectorFoldingMatchesPortableAroundEveryBoundary) {
  if (!Crc32cHasVector()) {
    GTEST_LOG_(INFO) << "no VPCLMULQDQ/AVX-512 here: Crc32cExtendVector is the SSE4.2 path";
  }
  std::mt19937 rng(5043);
  const std::vector<uint8_t> buf = RandomBytes(rng, 70000);
  std::vector<size_t> lengths;
  for (size_t len = 0; len <= 1100; ++len) lengths.push_back(len);
  for (const size_t base : {size_t{2048}, size_t{4096}, size_t{65536}}) {
    for (size_t d = 0; d < 40; ++d) {
      lengths.push_back(base + d);
      lengths.push_back(base - 1 - d);
    }
  }
  for (int i = 0; i < 200; ++i) lengths.push_back(rng() % (buf.size() - 64));
  for (const size_t len : lengths) {
    const size_t align = rng() % 64;
    const uint32_t state = (len % 3 == 0) ? kCrc32cInit : static_cast<uint32_t>(rng());
    ByteSpan s(buf.data() + align, len);
    const uint32_t expected = Crc32cExtendPortable(state, s);
    ASSERT_EQ(Crc32cExtendVector(state, s), expected) << "len=" << len << " align=" << align;
    ASSERT_EQ(Crc32cExtend(state, s), expected) << "len=" << len << " align=" << align;
  }
  // A register that is all ones or zero in the first bytes' lanes.
  for (const uint32_t state : {0u, 0xFFFFFFFFu, 0x80000001u}) {
    ByteSpan s(buf.data(), 4096);
    EXPECT_EQ(Crc32cExtendVector(state, s), Crc32cExtendPortable(state, s));
  }
}

TEST(Crc32cTest, IncrementalEqualsOneShotRandomSplits) {
  std::mt19937 rng(99);
  for (int round = 0; round < 500; ++round) {
    std::vector<uint8_t> data = RandomBytes(rng, rng() % 2000);
    const uint32_t expected = Crc32c(data);
    // Random split points, including empty pieces.
    uint32_t state = kCrc32cInit;
    uint32_t portable_state = kCrc32cInit;
    Crc32cAccumulator acc;
    size_t pos = 0;
    while (pos < data.size()) {
      const size_t piece = std::min<size_t>(data.size() - pos, rng() % 40);
      ByteSpan s(data.data() + pos, piece);
      state = Crc32cExtend(state, s);
      portable_state = Crc32cExtendPortable(portable_state, s);
      acc.Update(s);
      pos += piece;
    }
    EXPECT_EQ(Crc32cFinalize(state), expected);
    EXPECT_EQ(Crc32cFinalize(portable_state), expected);
    EXPECT_EQ(acc.Value(), expected);
  }
}

TEST(Crc32cTest, AccumulatorValueDoesNotDisturbAndResets) {
  Crc32cAccumulator acc;
  EXPECT_EQ(acc.Value(), 0u);
  acc.Update(AsBytes("1234"));
  (void)acc.Value();
  acc.Update(AsBytes("56789"));
  EXPECT_EQ(acc.Value(), 0xE3069283u);
  acc.Reset();
  acc.Update(AsBytes("123456789"));
  EXPECT_EQ(acc.Value(), 0xE3069283u);
}

// A property MPA receivers can rely on: appending the wire image of the CRC
// to the data yields the constant residue of CRC32c (0x48674BC7 after the
// final XOR), so a checker may also run the CRC over data+CRC.
TEST(Crc32cTest, ResidueOverDataAndWireCrc) {
  std::mt19937 rng(3);
  for (int round = 0; round < 50; ++round) {
    std::vector<uint8_t> data = RandomBytes(rng, 1 + rng() % 100);
    const uint32_t crc = Crc32c(data);
    data.resize(data.size() + 4);
    StoreCrcWire(data.data() + data.size() - 4, crc);
    EXPECT_EQ(Crc32c(data), 0x48674BC7u);
  }
}

}  // namespace
}  // namespace iwarpx
