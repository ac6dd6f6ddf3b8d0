#include "wire/fpdu.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "testing/fpdu_recorder.h"
#include "testing/hex.h"

namespace iwarpx::wire {
namespace {

using iwarpx::testing::Bytes;
using iwarpx::testing::FromHex;
using iwarpx::testing::Iota;
using iwarpx::testing::ToHex;
using Recorder = iwarpx::testing::FpduRecorder;
using iwarpx::testing::RandomBytes;
using Stage = FpduReceiver::Stage;

Bytes Encode(ByteSpan ulpdu, bool crc) {
  Bytes out(FpduWireLength(ulpdu.size()));
  auto r = EncodeFpdu(ulpdu, crc, out);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.value(), out.size());
  return out;
}

FpduRxConfig Config(bool crc, size_t min_ulpdu = 0, size_t max_ulpdu = kMaxUlpduLength) {
  FpduRxConfig c;
  c.crc = crc;
  c.min_ulpdu = min_ulpdu;
  c.max_ulpdu = max_ulpdu;
  return c;
}

// ---------------------------------------------------------------------------
// Sizes

TEST(FpduSizeTest, PadAndWireLength) {
  EXPECT_EQ(PadFor(0), 2u);
  EXPECT_EQ(PadFor(1), 1u);
  EXPECT_EQ(PadFor(2), 0u);
  EXPECT_EQ(PadFor(3), 3u);
  EXPECT_EQ(PadFor(14), 0u);
  EXPECT_EQ(PadFor(18), 0u);
  EXPECT_EQ(PadFor(65535), 3u);
  for (size_t n = 0; n < 100; ++n) {
    EXPECT_EQ((2 + n + PadFor(n)) % 4, 0u);
    EXPECT_LE(PadFor(n), 3u);
    EXPECT_EQ(FpduWireLength(n), 2 + n + PadFor(n) + 4);
  }
  EXPECT_EQ(FpduWireLength(46), 52u);  // RDMA Read Request (WIRE.md §4.2)
}

TEST(FpduSizeTest, MaxUlpduLengthFormula) {
  // EMSS 1460: 6 + 4 * ceil(1460 / 512) + 0 = 18.
  EXPECT_EQ(MaxUlpduLength(1460, true), 1442u);
  EXPECT_EQ(MaxUlpduLength(1460, false), 1454u);
  EXPECT_EQ(MaxUlpduLength(1461, true), 1461u - (6 + 12 + 1));
  EXPECT_EQ(MaxUlpduLength(1461, false), 1461u - 7);
  EXPECT_EQ(MaxUlpduLength(8960, true), 8960u - (6 + 4 * 18));
  EXPECT_EQ(MaxUlpduLength(6, false), 0u);
  EXPECT_EQ(MaxUlpduLength(10, true), 0u);
  EXPECT_EQ(MaxUlpduLength(1u << 20, false), kMaxUlpduLength);
}

TEST(FpduSizeTest, MaxUlpduFitsInEmss) {
  for (size_t emss = 8; emss < 9100; ++emss) {
    const size_t plain = MaxUlpduLength(emss, false);
    if (plain != 0) {
      EXPECT_LE(FpduWireLength(plain), emss) << emss;
    }
  }
}

// ---------------------------------------------------------------------------
// Transmit

TEST(FpduEncodeTest, KnownVectors) {
  // CRC values from an independent bit-serial CRC32c model.
  EXPECT_EQ(ToHex(Encode(Iota(14), true)),
            "000e000102030405060708090a0b0c0d"
            "a3ea3007");
  EXPECT_EQ(ToHex(Encode(FromHex("aa"), true)),
            "0001aa00"
            "14333fd3");
  // Zero-length ULPDU: 2 pad bytes; CRC of four zero bytes.
  EXPECT_EQ(ToHex(Encode(Bytes{}, true)),
            "00000000"
            "c74b6748");
  EXPECT_EQ(ToHex(Encode(Iota(14), false)),
            "000e000102030405060708090a0b0c0d"
            "00000000");
}

TEST(FpduEncodeTest, Errors) {
  Bytes ulpdu = Iota(14);
  Bytes small(FpduWireLength(14) - 1, 0xEE);
  auto r = EncodeFpdu(ulpdu, true, small);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kNoSpace);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0xEE; }));

  Bytes huge(kMaxUlpduLength + 1);
  Bytes out(FpduWireLength(huge.size()));
  r = EncodeFpdu(huge, false, out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kFpduTooLong);
}

TEST(FpduFrameTest, GatherMatchesEncodeForAllPads) {
  std::mt19937 rng(1);
  for (size_t len = 0; len < 64; ++len) {
    for (bool crc : {false, true}) {
      Bytes ulpdu = RandomBytes(rng, len);
      // Split into a 14-byte "header" and up to two payload pieces.
      const size_t a = std::min<size_t>(len, 14);
      const size_t b = a + (len - a) / 2;
      const ByteSpan parts[] = {ByteSpan(ulpdu).subspan(0, a), ByteSpan(ulpdu).subspan(a, b - a),
                                ByteSpan(ulpdu).subspan(b)};
      auto f = FrameFpdu(parts, crc);
      ASSERT_TRUE(f.ok());
      EXPECT_EQ(f->trailer().size(), PadFor(len) + 4);
      Bytes gathered(f->prefix().begin(), f->prefix().end());
      gathered.insert(gathered.end(), ulpdu.begin(), ulpdu.end());
      gathered.insert(gathered.end(), f->trailer().begin(), f->trailer().end());
      EXPECT_EQ(gathered, Encode(ulpdu, crc)) << len;
      if (crc) {
        EXPECT_EQ(f->crc, LoadCrcWire(gathered.data() + gathered.size() - 4));
      } else {
        EXPECT_EQ(f->crc, 0u);
      }
      for (size_t i = 0; i < PadFor(len); ++i) EXPECT_EQ(f->trailer()[i], 0);
    }
  }
}

TEST(FpduFrameTest, Limits) {
  Bytes big(40000);
  const ByteSpan two[] = {big, big};  // 80000 > 65535
  auto f = FrameFpdu(two, true);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), WireError::kFpduTooLong);

  const ByteSpan one[] = {ByteSpan(big).first(1443)};
  f = FrameFpdu(one, true, /*max_ulpdu=*/1442);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), WireError::kFpduTooLong);
  f = FrameFpdu(std::span<const ByteSpan>(one, 1), true, 1443);
  EXPECT_TRUE(f.ok());

  const ByteSpan max_parts[] = {ByteSpan(big), ByteSpan(big).first(kMaxUlpduLength - big.size())};
  f = FrameFpdu(max_parts, false);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(ToHex(f->prefix()), "ffff");
  EXPECT_EQ(f->trailer().size(), 7u);

  f = FrameFpdu(std::span<const ByteSpan>(), true);  // empty ULPDU is framable
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(ToHex(f->prefix()), "0000");
  EXPECT_EQ(ToHex(f->trailer()), "0000c74b6748");
}

// ---------------------------------------------------------------------------
// Pull-style receiver

TEST(FpduReceiverTest, StagesForDirectPlacement) {
  // A tagged segment: 14-byte DDP header + 100-byte payload, CRC on.
  Bytes ulpdu = Iota(114);
  Bytes wire = Encode(ulpdu, true);
  FpduReceiver rx(Config(true, kMinDdpSegmentLength));

  EXPECT_EQ(rx.stage(), Stage::kLength);
  EXPECT_EQ(rx.Needed(), 2u);
  EXPECT_FALSE(rx.length_known());
  EXPECT_TRUE(rx.at_fpdu_boundary());
  auto s = rx.Advance(ByteSpan(wire).first(1));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->consumed, 1u);
  EXPECT_EQ(rx.Needed(), 1u);
  EXPECT_FALSE(rx.at_fpdu_boundary());
  // Offering more than the stage needs takes only the stage's bytes.
  s = rx.Advance(ByteSpan(wire).subspan(1));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->consumed, 1u);
  EXPECT_EQ(rx.stage(), Stage::kUlpdu);
  EXPECT_EQ(rx.ulpdu_length(), 114u);
  EXPECT_EQ(rx.Needed(), 114u);

  // The engine reads the DDP header into its own buffer...
  Bytes hdr(wire.begin() + 2, wire.begin() + 16);
  s = rx.Advance(hdr);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->consumed, 14u);
  EXPECT_EQ(rx.ulpdu_offset(), 14u);
  EXPECT_EQ(rx.Needed(), 100u);
  // ...then "receives" the payload straight into its destination in two reads
  // and feeds those destination spans to the CRC.
  Bytes destination(100);
  std::copy(wire.begin() + 16, wire.begin() + 116, destination.begin());
  s = rx.Advance(ByteSpan(destination).first(60));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(rx.Needed(), 40u);
  s = rx.Advance(ByteSpan(destination).subspan(60));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->fpdu_complete);
  EXPECT_EQ(rx.stage(), Stage::kTrailer);
  EXPECT_EQ(rx.Needed(), 4u);  // no pad for 114

  s = rx.Advance(ByteSpan(wire).subspan(116));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->consumed, 4u);
  EXPECT_TRUE(s->fpdu_complete);
  EXPECT_EQ(rx.stage(), Stage::kLength);
  EXPECT_TRUE(rx.at_fpdu_boundary());
  EXPECT_EQ(rx.stream_position(), wire.size());
}

TEST(FpduReceiverTest, EmptyInputIsNoOp) {
  FpduReceiver rx(Config(true));
  auto s = rx.Advance(ByteSpan{});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->consumed, 0u);
  EXPECT_EQ(rx.stage(), Stage::kLength);
}

TEST(FpduReceiverTest, ErrorsAreSticky) {
  FpduReceiver rx(Config(true, 0, 100));
  Bytes wire = FromHex("0065");  // 101 > 100
  auto s = rx.Advance(wire);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), WireError::kFpduTooLong);
  EXPECT_EQ(rx.stage(), Stage::kFailed);
  EXPECT_EQ(rx.Needed(), 0u);
  EXPECT_TRUE(rx.failed());
  EXPECT_FALSE(rx.at_fpdu_boundary());
  s = rx.Advance(Encode(Iota(14), true));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), WireError::kFpduTooLong);
}

TEST(FpduReceiverTest, ZeroLengthUlpduGoesStraightToTrailer) {
  FpduReceiver rx(Config(true, 0));
  Bytes wire = Encode(Bytes{}, true);
  auto s = rx.Advance(wire);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(rx.stage(), Stage::kTrailer);
  EXPECT_EQ(rx.Needed(), 6u);  // 2 pad + CRC
  s = rx.Advance(ByteSpan(wire).subspan(2));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->fpdu_complete);
}

// ---------------------------------------------------------------------------
// Push-style parser

Recorder FeedAll(const FpduRxConfig& config, ByteSpan wire) {
  FpduStreamParser p(config);
  Recorder r;
  p.Feed(wire, r);
  return r;
}

TEST(FpduStreamParserTest, SingleFpduWithAndWithoutCrc) {
  for (bool crc : {false, true}) {
    Bytes ulpdu = Iota(14, 0x40);
    Recorder r = FeedAll(Config(crc, 14), Encode(ulpdu, crc));
    ASSERT_EQ(r.fpdus.size(), 1u);
    EXPECT_EQ(r.fpdus[0], ulpdu);
    EXPECT_TRUE(r.errors.empty());
  }
}

TEST(FpduStreamParserTest, TwoFpdusInOneChunk) {
  Bytes a = Iota(14), b = Iota(33, 0x80);
  Bytes wire = Encode(a, true);
  Bytes wb = Encode(b, true);
  wire.insert(wire.end(), wb.begin(), wb.end());
  Recorder r = FeedAll(Config(true, 14), wire);
  ASSERT_EQ(r.fpdus.size(), 2u);
  EXPECT_EQ(r.fpdus[0], a);
  EXPECT_EQ(r.fpdus[1], b);
  // Both were whole in the chunk: the views point into it (no copy).
  EXPECT_EQ(r.views[0], wire.data() + 2);
  EXPECT_EQ(r.views[1], wire.data() + FpduWireLength(14) + 2);
}

TEST(FpduStreamParserTest, ByteAtATime) {
  Bytes a = Iota(15), b = Iota(16, 7), c = Iota(17, 9);
  Bytes wire;
  for (const Bytes* u : {&a, &b, &c}) {
    Bytes e = Encode(*u, true);
    wire.insert(wire.end(), e.begin(), e.end());
  }
  FpduStreamParser p(Config(true, 14));
  Recorder r;
  for (uint8_t byte : wire) p.Feed(ByteSpan(&byte, 1), r);
  ASSERT_EQ(r.fpdus.size(), 3u);
  EXPECT_EQ(r.fpdus[0], a);
  EXPECT_EQ(r.fpdus[1], b);
  EXPECT_EQ(r.fpdus[2], c);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_FALSE(p.mid_fpdu());
}

TEST(FpduStreamParserTest, SplitUlpduIsCopiedOutOfTheChunk) {
  Bytes ulpdu = Iota(40);
  Bytes wire = Encode(ulpdu, true);
  FpduStreamParser p(Config(true, 14));
  Recorder r;
  // The whole ULPDU arrives in the first chunk, the CRC in the second: the
  // parser must not keep a view of the first chunk after Feed returns.
  Bytes first(wire.begin(), wire.end() - 3);
  p.Feed(first, r);
  EXPECT_TRUE(r.fpdus.empty());
  EXPECT_TRUE(p.mid_fpdu());
  std::fill(first.begin(), first.end(), 0xEE);
  p.Feed(ByteSpan(wire).last(3), r);
  ASSERT_EQ(r.fpdus.size(), 1u);
  EXPECT_EQ(r.fpdus[0], ulpdu);
}

TEST(FpduStreamParserTest, RandomSplitsManyFpdus) {
  std::mt19937 rng(2024);
  for (int round = 0; round < 40; ++round) {
    const bool crc = (round & 1) != 0;
    std::vector<Bytes> ulpdus;
    Bytes wire;
    for (int i = 0; i < 30; ++i) {
      ulpdus.push_back(RandomBytes(rng, rng() % 3 == 0 ? rng() % 3000 : rng() % 40));
      Bytes e = Encode(ulpdus.back(), crc);
      wire.insert(wire.end(), e.begin(), e.end());
    }
    FpduStreamParser p(Config(crc, 0));
    Recorder r;
    size_t pos = 0;
    while (pos < wire.size()) {
      const size_t n = std::min<size_t>(wire.size() - pos, rng() % 200);
      p.Feed(ByteSpan(wire).subspan(pos, n), r);
      pos += n;
    }
    EXPECT_TRUE(r.errors.empty());
    EXPECT_EQ(r.fpdus, ulpdus);
  }
}

TEST(FpduStreamParserTest, MaxSizeFpdu) {
  std::mt19937 rng(5);
  Bytes ulpdu = RandomBytes(rng, kMaxUlpduLength);
  Bytes wire = Encode(ulpdu, true);
  ASSERT_EQ(wire.size(), 2 + 65535 + 3 + 4u);
  FpduStreamParser p(Config(true, 14));
  Recorder r;
  p.Feed(ByteSpan(wire).first(30000), r);
  p.Feed(ByteSpan(wire).subspan(30000), r);
  ASSERT_EQ(r.fpdus.size(), 1u);
  EXPECT_EQ(r.fpdus[0], ulpdu);
}

// ---------------------------------------------------------------------------
// Malformed input

TEST(FpduMalformedTest, TruncatedStreamWaits) {
  Bytes wire = Encode(Iota(20), true);
  for (size_t cut = 0; cut < wire.size(); ++cut) {
    FpduStreamParser p(Config(true, 14));
    Recorder r;
    p.Feed(ByteSpan(wire).first(cut), r);
    EXPECT_TRUE(r.fpdus.empty()) << cut;
    EXPECT_TRUE(r.errors.empty()) << cut;
    EXPECT_EQ(p.mid_fpdu(), cut != 0);
    p.Feed(ByteSpan(wire).subspan(cut), r);
    EXPECT_EQ(r.fpdus.size(), 1u) << cut;
  }
}

TEST(FpduMalformedTest, LengthOverLimit) {
  Recorder r = FeedAll(Config(true, 14, 1442), Encode(Iota(1443), true));
  EXPECT_TRUE(r.fpdus.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kFpduTooLong);
  // At the limit is fine.
  r = FeedAll(Config(true, 14, 1442), Encode(Iota(1442), true));
  EXPECT_EQ(r.fpdus.size(), 1u);
  // The error comes from the 2 length bytes alone, before the ULPDU arrives.
  r = FeedAll(Config(true, 14, 1442), FromHex("05a3"));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kFpduTooLong);
}

TEST(FpduMalformedTest, LengthUnderMinimum) {
  Recorder r = FeedAll(Config(true, kMinDdpSegmentLength), Encode(Iota(13), true));
  EXPECT_TRUE(r.fpdus.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kFpduTooShort);
  r = FeedAll(Config(true, kMinDdpSegmentLength), Encode(Bytes{}, true));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kFpduTooShort);
  // The default configuration has the DDP minimum.
  EXPECT_EQ(FpduRxConfig{}.min_ulpdu, 14u);
}

TEST(FpduMalformedTest, BadCrc) {
  Bytes a = Iota(14), b = Iota(20);
  Bytes wire = Encode(a, true);
  Bytes wb = Encode(b, true);
  wb[5] ^= 0x01;  // corrupt the second FPDU's ULPDU
  wire.insert(wire.end(), wb.begin(), wb.end());
  Recorder r = FeedAll(Config(true, 14), wire);
  ASSERT_EQ(r.fpdus.size(), 1u);  // the first one is delivered
  EXPECT_EQ(r.fpdus[0], a);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kBadCrc);

  // Corrupting the CRC field itself, or the length field, is caught too.
  Bytes c = Encode(a, true);
  c.back() ^= 0x80;
  r = FeedAll(Config(true, 14), c);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kBadCrc);
}

TEST(FpduMalformedTest, CrcFieldIgnoredWhenCrcOff) {
  Bytes a = Iota(14);
  Bytes wire = Encode(a, true);  // a real CRC is fine too
  Bytes garbage = Encode(a, false);
  std::fill(garbage.end() - 4, garbage.end(), 0xA5);
  wire.insert(wire.end(), garbage.begin(), garbage.end());
  Recorder r = FeedAll(Config(false, 14), wire);
  ASSERT_EQ(r.fpdus.size(), 2u);
  EXPECT_TRUE(r.errors.empty());
}

TEST(FpduMalformedTest, NonZeroPadIsIgnoredButCrcCovered) {
  // ULPDU of 17 bytes -> 1 pad byte. A sender that put 0x5A there and
  // computed its CRC over it is accepted (PAD is ignored on receive)...
  Bytes ulpdu = Iota(17);
  Bytes wire = Encode(ulpdu, false);
  ASSERT_EQ(PadFor(17), 1u);
  wire[2 + 17] = 0x5A;
  StoreCrcWire(wire.data() + wire.size() - 4, Crc32c(ByteSpan(wire).first(wire.size() - 4)));
  for (bool crc : {false, true}) {
    Recorder r = FeedAll(Config(crc, 14), wire);
    ASSERT_EQ(r.fpdus.size(), 1u) << crc;
    EXPECT_EQ(r.fpdus[0], ulpdu);
  }
  // ...but a PAD byte changed after the CRC was computed is a CRC error.
  wire[2 + 17] = 0x5B;
  Recorder r = FeedAll(Config(true, 14), wire);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kBadCrc);
  EXPECT_EQ(FeedAll(Config(false, 14), wire).fpdus.size(), 1u);
}

TEST(FpduMalformedTest, OneErrorThenInputIgnored) {
  FpduStreamParser p(Config(true, 14));
  Recorder r;
  Bytes bad = Encode(Iota(14), true);
  bad[3] ^= 0xFF;
  Bytes good = Encode(Iota(14), true);
  p.Feed(bad, r);
  p.Feed(good, r);
  p.Feed(FromHex("ffff"), r);
  EXPECT_TRUE(r.fpdus.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kBadCrc);
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.error(), WireError::kBadCrc);
  EXPECT_FALSE(p.mid_fpdu());
}

TEST(FpduMalformedTest, ErrorAfterGoodFpdusInSameChunkKeepsOrder) {
  Bytes wire;
  for (int i = 0; i < 3; ++i) {
    Bytes e = Encode(Iota(14, static_cast<uint8_t>(i)), true);
    wire.insert(wire.end(), e.begin(), e.end());
  }
  Bytes too_long = FromHex("ffff");
  wire.insert(wire.end(), too_long.begin(), too_long.end());
  Recorder r = FeedAll(Config(true, 14, 1000), wire);
  EXPECT_EQ(r.fpdus.size(), 3u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kFpduTooLong);
}

}  // namespace
}  // namespace iwarpx::wire
