// Bundles (wire/dgram_bundle.h, docs/wire.md §3.6.1): a hand-written vector,
// round trips, and every way a record list can be wrong — a cut at every
// byte, lengths past the end, records shorter than a DDP header, trailing
// bytes, a single record, non-zero pad — each refused as a whole.
#include "wire/dgram_bundle.h"

#include <array>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;

// The two segments of dgram_test.cc: an RDMA Write of 8 bytes (22 bytes)
// and a Send of "hello" (23 bytes).
const std::vector<uint8_t> kWrite8 = FromHex("c140 12345678 0000000000001000 0001020304050607");
const std::vector<uint8_t> kSendHello =
    FromHex("4143 00000000 00000000 00000001 00000000 68656c6c6f");

// Written by hand from docs/wire.md §3.6.1 (flags C|A|Y|R|B); the CRC was
// computed with an independent bit-at-a-time CRC32c.
constexpr char kBundleHex[] =
    "6977 01 02 | dc00 0034 | 0040 00 00 | 00000011 | 00000022 | a1b2c3d4 | 01020304 |"
    " 00000005 | 00000009 | 00000000 |"
    " 0016 c140 12345678 0000000000001000 0001020304050607 |"
    " 0017 4143 00000000 00000000 00000001 00000000 68656c6c6f 000000 | 1c7d2459";

DgramHeader BundleHeader() {
  DgramHeader h;
  h.type = DgramType::kRdData;
  h.has_ack = true;
  h.syn = true;
  h.ack_request = true;
  h.bundle = true;
  h.credits = 0x40;
  h.dst_qpn = 0x11;
  h.src_qpn = 0x22;
  h.session = 0xa1b2c3d4;
  h.echo_session = 0x01020304;
  h.seq = 5;
  h.ack = 9;
  return h;
}

// A record list of segments of the given sizes (segment i filled with i + 1).
std::vector<uint8_t> Records(const std::vector<size_t>& sizes) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t n = sizes[i];
    out.push_back(static_cast<uint8_t>(n >> 8));
    out.push_back(static_cast<uint8_t>(n));
    out.insert(out.end(), n, static_cast<uint8_t>(i + 1));
    out.resize(out.size() + (BundleRecordSize(n) - kBundleLengthSize - n), 0);
  }
  return out;
}

TEST(DgramBundleTest, EncodesTheHandWrittenVector) {
  const std::array<ByteSpan, 2> segs{ByteSpan(kWrite8), ByteSpan(kSendHello)};
  std::array<uint8_t, 256> out{};
  const auto n = EncodeDgramBundle(BundleHeader(), segs, /*crc_on=*/true, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + *n), FromHex(kBundleHex));
}

TEST(DgramBundleTest, DecodesTheHandWrittenVectorAndWalksItsRecords) {
  const std::vector<uint8_t> bytes = FromHex(kBundleHex);
  const auto d = DecodeDgram(bytes, /*verify_crc=*/true);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->header, BundleHeader());
  EXPECT_TRUE(d->crc_checked);
  ASSERT_EQ(CountBundleRecords(d->ulpdu).value(), 2u);
  BundleReader r(d->ulpdu);
  ByteSpan s;
  ASSERT_TRUE(r.Next(&s));
  EXPECT_EQ(std::vector<uint8_t>(s.begin(), s.end()), kWrite8);
  ASSERT_TRUE(r.Next(&s));
  EXPECT_EQ(std::vector<uint8_t>(s.begin(), s.end()), kSendHello);
  EXPECT_FALSE(r.Next(&s));
}

TEST(DgramBundleTest, RoundTripsEverySegmentSizeModFour) {
  for (size_t a = 14; a < 22; ++a) {
    for (size_t b = 14; b < 22; ++b) {
      const std::vector<uint8_t> sa(a, 0xA5);
      const std::vector<uint8_t> sb(b, 0x5A);
      const std::vector<uint8_t> sc(a + b, 0x33);
      const std::array<ByteSpan, 3> segs{ByteSpan(sa), ByteSpan(sb), ByteSpan(sc)};
      std::vector<uint8_t> out(512);
      const auto n = EncodeDgramBundle(BundleHeader(), segs, true, out);
      ASSERT_TRUE(n.ok()) << a << " " << b;
      const auto d = DecodeDgram(ByteSpan(out.data(), *n), true);
      ASSERT_TRUE(d.ok()) << a << " " << b;
      EXPECT_EQ(d->ulpdu.size() % 4, 0u);
      BundleReader r(d->ulpdu);
      for (const ByteSpan want : segs) {
        ByteSpan got;
        ASSERT_TRUE(r.Next(&got));
        EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.end()),
                  std::vector<uint8_t>(want.begin(), want.end()));
      }
      ByteSpan none;
      EXPECT_FALSE(r.Next(&none));
    }
  }
}

// Cut the list after every byte: only cuts at a record boundary with at
// least two records before them are bundles.
TEST(DgramBundleTest, ACutIsABundleOnlyAtARecordBoundary) {
  const std::vector<size_t> sizes{14, 15, 16, 17, 40};
  const std::vector<uint8_t> all = Records(sizes);
  std::vector<size_t> ends;
  size_t at = 0;
  for (const size_t s : sizes) ends.push_back(at += BundleRecordSize(s));
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    size_t whole = 0;
    bool boundary = cut == 0;
    for (const size_t e : ends) {
      if (e <= cut) ++whole;
      if (e == cut) boundary = true;
    }
    const auto c = CountBundleRecords(ByteSpan(all.data(), cut));
    if (boundary && whole >= kBundleMinRecords) {
      ASSERT_TRUE(c.ok()) << cut;
      EXPECT_EQ(*c, whole);
    } else {
      ASSERT_FALSE(c.ok()) << cut;
      EXPECT_EQ(c.error(), WireError::kDgramBadBundle);
    }
  }
}

TEST(DgramBundleTest, LengthsPastTheEndAreRefused) {
  std::vector<uint8_t> v = Records({20, 20});
  ASSERT_TRUE(CountBundleRecords(v).ok());
  // 20 bytes take a 24-byte record; 21 and 22 would fit it too (their pad
  // is the old one), 23 on need more bytes than are left.
  for (const size_t len : {23u, 24u, 25u, 100u, 0xFFFFu}) {
    std::vector<uint8_t> bad = v;
    const size_t second = BundleRecordSize(20);
    bad[second] = static_cast<uint8_t>(len >> 8);
    bad[second + 1] = static_cast<uint8_t>(len);
    EXPECT_EQ(CountBundleRecords(bad).error(), WireError::kDgramBadBundle) << len;
  }
  // The first record claiming more than the whole list.
  for (const size_t len : {47u, 48u, 100u, 0xFFFFu}) {
    std::vector<uint8_t> bad_first = v;
    bad_first[0] = static_cast<uint8_t>(len >> 8);
    bad_first[1] = static_cast<uint8_t>(len);
    EXPECT_EQ(CountBundleRecords(bad_first).error(), WireError::kDgramBadBundle) << len;
  }
}

TEST(DgramBundleTest, RecordsShorterThanADdpHeaderAreRefused) {
  for (size_t len = 0; len < kDgramMinDdpSegment; ++len) {
    // The record is well formed in every other way.
    std::vector<uint8_t> v = Records({len, 20});
    EXPECT_EQ(CountBundleRecords(v).error(), WireError::kDgramBadBundle) << len;
    v = Records({20, len});
    EXPECT_EQ(CountBundleRecords(v).error(), WireError::kDgramBadBundle) << len;
  }
  EXPECT_TRUE(CountBundleRecords(Records({14, 14})).ok());
}

TEST(DgramBundleTest, TrailingBytesAreRefused) {
  for (size_t extra = 1; extra <= 8; ++extra) {
    std::vector<uint8_t> v = Records({16, 16});
    v.resize(v.size() + extra, 0);
    EXPECT_EQ(CountBundleRecords(v).error(), WireError::kDgramBadBundle) << extra;
  }
}

TEST(DgramBundleTest, OneRecordAndNonZeroPadAreRefused) {
  EXPECT_EQ(CountBundleRecords(Records({20})).error(), WireError::kDgramBadBundle);
  EXPECT_EQ(CountBundleRecords({}).error(), WireError::kDgramBadBundle);
  std::vector<uint8_t> v = Records({15, 15});  // one pad byte after each
  ASSERT_TRUE(CountBundleRecords(v).ok());
  v[kBundleLengthSize + 15] = 1;
  EXPECT_EQ(CountBundleRecords(v).error(), WireError::kDgramBadBundle);
}

// The decoder refuses the whole datagram for any bad record (the CRC is
// right: it is the records that are wrong), and B where it is not allowed.
TEST(DgramBundleTest, DecoderRefusesBadRecordsAndBOutsideRdData) {
  std::vector<uint8_t> records = Records({16, 16});
  records[1] = 13;  // shorter than a DDP header
  DgramHeader h = BundleHeader();
  std::vector<uint8_t> out(256);
  // EncodeDgram refuses to frame it, so build it with a valid list and patch.
  const std::vector<uint8_t> good = Records({16, 16});
  const ByteSpan rec(good);
  const auto n = EncodeDgram(h, std::span<const ByteSpan>(&rec, 1), false, out);
  ASSERT_TRUE(n.ok());
  out.resize(*n);
  ASSERT_TRUE(DecodeDgram(out, true).ok());
  out[kDgramHeaderSize + 1] = 40;  // past the end of the list
  EXPECT_EQ(DecodeDgram(out, true).error(), WireError::kDgramBadBundle);
  EXPECT_EQ(EncodeDgram(h, std::span<const ByteSpan>(&rec, 1), false, MutableByteSpan{}).error(),
            WireError::kNoSpace);
  const ByteSpan bad(records);
  EXPECT_EQ(EncodeDgram(h, std::span<const ByteSpan>(&bad, 1), false, out).error(),
            WireError::kInvalidArgument);
  // Records split over two parts are refused by the encoders.
  const std::array<ByteSpan, 2> split{rec.first(10), rec.subspan(10)};
  EXPECT_EQ(FrameDgram(h, split, true).error(), WireError::kInvalidArgument);

  // B on an ack: reserved.
  std::vector<uint8_t> ack = FromHex(
      "6977 01 03 | 4000 0000 | 0020 00 00 | 00000022 | 00000011 | 01020304 | a1b2c3d4 |"
      " 00000007 | 00000006 | 00000000 | 00000000");
  ASSERT_TRUE(DecodeDgram(ack, true).ok());
  ack[4] |= kDgramFlagBundle >> 8;
  EXPECT_EQ(DecodeDgram(ack, true).error(), WireError::kDgramReservedBits);
  DgramHeader ud;
  ud.type = DgramType::kUdData;
  ud.bundle = true;
  EXPECT_EQ(EncodeDgram(ud, std::span<const ByteSpan>(&rec, 1), false, out).error(),
            WireError::kInvalidArgument);
}

// A bundle is never received in place.
TEST(DgramBundleTest, SplitDecodeRefusesABundle) {
  const std::vector<uint8_t> bytes = FromHex(kBundleHex);
  const ByteSpan all(bytes);
  const auto d = DecodeDgramSplit(all.first(kDgramHeaderSize + 16),
                                  all.subspan(kDgramHeaderSize + 16, 52 - 16),
                                  all.subspan(kDgramHeaderSize + 52), true);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(), WireError::kDgramBadBundle);
}

TEST(DgramBundleTest, EncoderRefusesFewerThanTwoOrShortSegments) {
  std::vector<uint8_t> out(256);
  const std::vector<uint8_t> s20(20, 1), s13(13, 1);
  const std::array<ByteSpan, 1> one{ByteSpan(s20)};
  EXPECT_EQ(EncodeDgramBundle(BundleHeader(), one, true, out).error(), WireError::kInvalidArgument);
  const std::array<ByteSpan, 2> shorter{ByteSpan(s20), ByteSpan(s13)};
  EXPECT_EQ(EncodeDgramBundle(BundleHeader(), shorter, true, out).error(),
            WireError::kInvalidArgument);
  const std::array<ByteSpan, 2> two{ByteSpan(s20), ByteSpan(s20)};
  EXPECT_EQ(EncodeDgramBundle(BundleHeader(), two, true, MutableByteSpan(out.data(), 50)).error(),
            WireError::kNoSpace);
  DgramHeader ack = BundleHeader();
  ack.type = DgramType::kRdAck;
  EXPECT_EQ(EncodeDgramBundle(ack, two, true, out).error(), WireError::kInvalidArgument);
}

}  // namespace
}  // namespace iwarpx::wire
