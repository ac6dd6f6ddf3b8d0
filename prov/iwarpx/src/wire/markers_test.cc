#include "wire/markers.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "testing/fpdu_recorder.h"
#include "testing/hex.h"
#include "wire/fpdu.h"

namespace iwarpx::wire {
namespace {

using iwarpx::testing::Bytes;
using iwarpx::testing::FromHex;
using iwarpx::testing::Iota;
using iwarpx::testing::ToHex;
using Recorder = iwarpx::testing::FpduRecorder;

// len | ULPDU | PAD, i.e. EncodeFpdu's output without the CRC field.
Bytes Body(ByteSpan ulpdu) {
  Bytes out(FpduWireLength(ulpdu.size()));
  EXPECT_TRUE(EncodeFpdu(ulpdu, false, out).ok());
  out.resize(out.size() - kFpduCrcSize);
  return out;
}

Bytes Mark(uint64_t pos, ByteSpan ulpdu, bool crc) {
  Bytes body = Body(ulpdu);
  Bytes out(MarkedFpduLength(pos, body.size() + kFpduCrcSize));
  auto r = InsertMarkers(pos, body, crc, out);
  EXPECT_TRUE(r.ok());
  if (r.ok()) {
    EXPECT_EQ(r.value(), out.size());
  }
  return out;
}

FpduRxConfig MarkedConfig(bool crc, uint64_t stream_offset = 0) {
  FpduRxConfig c;
  c.crc = crc;
  c.markers = true;
  c.stream_offset = stream_offset;
  c.min_ulpdu = 0;
  return c;
}

Recorder Parse(const FpduRxConfig& config, ByteSpan wire) {
  FpduStreamParser p(config);
  Recorder r;
  p.Feed(wire, r);
  return r;
}

// ---------------------------------------------------------------------------
// Placement arithmetic

TEST(MarkerCountTest, Basics) {
  EXPECT_EQ(BytesToNextMarker(0), 0u);
  EXPECT_EQ(BytesToNextMarker(4), 508u);
  EXPECT_EQ(BytesToNextMarker(508), 4u);
  EXPECT_EQ(BytesToNextMarker(512), 0u);
  EXPECT_EQ(BytesToNextMarker(uint64_t{1} << 40), 0u);

  EXPECT_EQ(MarkerCount(0, 20), 1u);  // marker at the FPDU start
  EXPECT_EQ(MarkerCount(4, 20), 0u);
  EXPECT_EQ(MarkerCount(492, 20), 0u);  // FPDU ends exactly at 512: next FPDU's marker
  EXPECT_EQ(MarkerCount(496, 20), 1u);  // marker before the CRC field
  EXPECT_EQ(MarkerCount(0, 508), 1u);   // 4 + 508 = 512: ends at the next marker
  EXPECT_EQ(MarkerCount(0, 509), 2u);
  EXPECT_EQ(MarkedFpduLength(0, 1460 - 12), 1460u);  // MULPDU 1442 at EMSS 1460
}

TEST(MarkerCountTest, MatchesByteWalk) {
  for (uint64_t pos = 0; pos < 1100; pos += 4) {
    for (size_t len = 4; len < 1800; len += 4) {
      // Walk the stream the slow way.
      size_t markers = 0, data = 0;
      uint64_t p = pos;
      while (data < len) {
        if (p % kMarkerInterval == 0) {
          ++markers;
          p += kMarkerSize;
        }
        ++data;
        ++p;
      }
      ASSERT_EQ(MarkerCount(pos, len), markers) << pos << " " << len;
    }
  }
}

TEST(MarkerCountTest, MulpduWithMarkersFitsEmssAtEveryPosition) {
  for (size_t emss : {536u, 1024u, 1220u, 1448u, 1460u, 1461u, 8960u, 9000u}) {
    const size_t mulpdu = MaxUlpduLength(emss, true);
    for (uint64_t pos = 0; pos < 1024; pos += 4) {
      EXPECT_LE(MarkedFpduLength(pos, FpduWireLength(mulpdu)), emss) << emss << " @" << pos;
    }
  }
}

// ---------------------------------------------------------------------------
// Known vectors (independent byte-walk model with a bit-serial CRC)

TEST(MarkersKnownVectorTest, MarkerAtFpduStart) {
  // Stream position 0: the first FPDU begins with a marker, FPDUPTR 0, and
  // the marker is covered by this FPDU's CRC.
  Bytes wire = Mark(0, Iota(14), true);
  EXPECT_EQ(ToHex(wire),
            "00000000"
            "000e"
            "000102030405060708090a0b0c0d"
            "772685f9");
  EXPECT_EQ(LoadCrcWire(wire.data() + 20), Crc32c(ByteSpan(wire).first(20)));
  // Same at 512, CRC off: CRC field zero.
  EXPECT_EQ(ToHex(Mark(512, Iota(14), false)),
            "00000000"
            "000e"
            "000102030405060708090a0b0c0d"
            "00000000");
}

TEST(MarkersKnownVectorTest, MarkerInsideUlpdu) {
  // FPDU at 504: 8 octets (len + 6 ULPDU octets) before the marker at 512,
  // which points back 8 octets.
  EXPECT_EQ(ToHex(Mark(504, Iota(14), true)),
            "000e"
            "000102030405"
            "00000008"
            "060708090a0b0c0d"
            "42f76c33");
}

TEST(MarkersKnownVectorTest, MarkerBetweenPadAndCrc) {
  // ULPDU of 13 octets + 1 PAD octet = 16-octet body at 496: the marker at 512
  // lands after PAD, before the CRC field, FPDUPTR 16, covered by the CRC.
  EXPECT_EQ(ToHex(Mark(496, Iota(13, 0x10), true)),
            "000d"
            "101112131415161718191a1b1c"
            "00"
            "00000010"
            "2134897f");
}

// ---------------------------------------------------------------------------
// Transmit errors

TEST(InsertMarkersTest, Errors) {
  Bytes body = Body(Iota(14));
  Bytes out(64);
  auto r = InsertMarkers(2, body, true, out);  // misaligned stream position
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kInvalidArgument);

  Bytes short_body = body;
  short_body.pop_back();
  r = InsertMarkers(0, short_body, true, out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kInvalidArgument);
  r = InsertMarkers(0, FromHex("00"), true, out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kInvalidArgument);

  Bytes tiny(23, 0xEE);  // needs 24 at position 0
  r = InsertMarkers(0, body, true, tiny);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kNoSpace);
  EXPECT_TRUE(std::all_of(tiny.begin(), tiny.end(), [](uint8_t b) { return b == 0xEE; }));

  // A maximum ULPDU at position 0 would need FPDUPTR 66048 for its last marker.
  Bytes big_body = Body(Bytes(kMaxUlpduLength));
  Bytes big_out(MarkedFpduLength(0, big_body.size() + 4));
  r = InsertMarkers(0, big_body, true, big_out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kInvalidArgument);
}

TEST(MarkerInserterTest, TracksPosition) {
  MarkerInserter tx;
  Bytes body = Body(Iota(100));
  Bytes out(tx.MarkedSize(body.size()));
  auto r = tx.Insert(body, true, out);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 4 + 2 + 100 + 2 + 4u);
  EXPECT_EQ(tx.position(), r.value());
  Bytes small(3);
  EXPECT_FALSE(tx.Insert(body, true, small).ok());
  EXPECT_EQ(tx.position(), r.value());  // unchanged on error
}

// ---------------------------------------------------------------------------
// Receive: stripping and validation

TEST(MarkerReceiveTest, KnownVectorsParse) {
  struct Case {
    uint64_t pos;
    Bytes ulpdu;
  };
  for (const Case& c :
       {Case{0, Iota(14)}, Case{504, Iota(14)}, Case{496, Iota(13, 0x10)}, Case{512, Iota(14)}}) {
    for (bool crc : {false, true}) {
      Recorder r = Parse(MarkedConfig(crc, c.pos), Mark(c.pos, c.ulpdu, crc));
      EXPECT_TRUE(r.errors.empty()) << c.pos;
      ASSERT_EQ(r.fpdus.size(), 1u) << c.pos;
      EXPECT_EQ(r.fpdus[0], c.ulpdu);
    }
  }
}

TEST(MarkerReceiveTest, PullCoreStopsAtMarkers) {
  // FPDU at 504 with a 14-byte ULPDU: the marker at 512 splits the ULPDU.
  Bytes wire = Mark(504, Iota(14), true);
  FpduReceiver rx(MarkedConfig(true, 504));
  EXPECT_EQ(rx.stage(), FpduReceiver::Stage::kLength);
  ASSERT_TRUE(rx.Advance(wire).ok());  // takes the 2 length bytes
  EXPECT_EQ(rx.stage(), FpduReceiver::Stage::kUlpdu);
  EXPECT_EQ(rx.Needed(), 6u);  // up to the marker, not the whole ULPDU
  auto s = rx.Advance(ByteSpan(wire).subspan(2));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->consumed, 6u);
  EXPECT_EQ(rx.stage(), FpduReceiver::Stage::kMarker);
  EXPECT_EQ(rx.Needed(), 4u);
  EXPECT_EQ(rx.ulpdu_offset(), 6u);
  s = rx.Advance(ByteSpan(wire).subspan(8));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->consumed, 4u);
  EXPECT_EQ(rx.stage(), FpduReceiver::Stage::kUlpdu);
  EXPECT_EQ(rx.Needed(), 8u);
  s = rx.Advance(ByteSpan(wire).subspan(12));
  ASSERT_TRUE(s.ok());
  s = rx.Advance(ByteSpan(wire).subspan(20));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->fpdu_complete);
  EXPECT_EQ(rx.stream_position(), 504 + wire.size());
}

TEST(MarkerReceiveTest, CorruptedFpduPtr) {
  for (bool crc : {false, true}) {
    for (uint64_t pos : {0u, 504u, 496u}) {
      Bytes ulpdu = pos == 496 ? Iota(13, 0x10) : Iota(14);
      Bytes wire = Mark(pos, ulpdu, crc);
      const size_t at = static_cast<size_t>(BytesToNextMarker(pos));  // marker offset
      wire[at + 3] = static_cast<uint8_t>(wire[at + 3] + 4);          // FPDUPTR off by 4
      Recorder r = Parse(MarkedConfig(crc, pos), wire);
      EXPECT_TRUE(r.fpdus.empty());
      ASSERT_EQ(r.errors.size(), 1u);
      EXPECT_EQ(r.errors[0], WireError::kBadMarker) << pos << " crc=" << crc;
    }
  }
}

TEST(MarkerReceiveTest, MissingMarkerIsDetected) {
  // A sender that forgot the marker: the receiver reads ULPDU_Length bytes as
  // a marker at position 0 and rejects them.
  Bytes plain(FpduWireLength(14));
  ASSERT_TRUE(EncodeFpdu(Iota(14, 1), true, plain).ok());
  Recorder r = Parse(MarkedConfig(true), plain);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kBadMarker);
}

TEST(MarkerReceiveTest, ReservedBitsStrictAndLenient) {
  Bytes wire = Mark(0, Iota(14), false);
  wire[1] = 0x01;  // Reserved != 0
  FpduRxConfig strict = MarkedConfig(false);
  strict.strict_marker_reserved = true;
  Recorder r = Parse(strict, wire);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kBadMarker);

  r = Parse(MarkedConfig(false), wire);  // the default follows RFC 5044: ignored
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.fpdus.size(), 1u);
}

TEST(MarkerReceiveTest, FpduPtrLowBitsAreIgnored) {
  Bytes wire = Mark(504, Iota(14), false);
  wire[8 + 3] |= 0x03;  // FPDUPTR 8 -> 11
  Recorder r = Parse(MarkedConfig(false, 504), wire);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.fpdus.size(), 1u);
}

TEST(MarkerReceiveTest, MarkerBytesAreCrcCovered) {
  // With CRC on, flipping a (lenient-accepted) reserved bit changes the CRC.
  Bytes wire = Mark(0, Iota(14), true);
  wire[0] = 0x80;
  FpduRxConfig lenient = MarkedConfig(true);
  lenient.strict_marker_reserved = false;
  Recorder r = Parse(lenient, wire);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], WireError::kBadCrc);
}

TEST(MarkerRoundTripTest, ManyFpdusRandomSizesRandomSplits) {
  std::mt19937 rng(777);
  for (int round = 0; round < 30; ++round) {
    const bool crc = (round % 2) == 0;
    const uint64_t start = 4u * (rng() % 300);  // any 4-aligned starting position
    MarkerInserter tx(start);
    std::vector<Bytes> ulpdus;
    Bytes wire;
    for (int i = 0; i < 60; ++i) {
      const size_t len = rng() % 4 == 0 ? rng() % 1442 : rng() % 64;
      Bytes u(len);
      for (auto& b : u) b = static_cast<uint8_t>(rng());
      Bytes body = Body(u);
      const size_t before = wire.size();
      wire.resize(before + tx.MarkedSize(body.size()));
      auto r = tx.Insert(body, crc, MutableByteSpan(wire).subspan(before));
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(before + r.value(), wire.size());
      ulpdus.push_back(std::move(u));
    }
    EXPECT_EQ(tx.position(), start + wire.size());
    // Every 512th octet of the stream is a marker.
    for (uint64_t p = (start + 511) / 512 * 512; p < start + wire.size(); p += 512) {
      EXPECT_EQ(wire[p - start], 0);
      EXPECT_EQ(wire[p - start + 1], 0);
    }

    FpduStreamParser parser(MarkedConfig(crc, start));
    Recorder rec;
    size_t pos = 0;
    while (pos < wire.size()) {
      const size_t n = std::min<size_t>(wire.size() - pos, 1 + rng() % 700);
      parser.Feed(ByteSpan(wire).subspan(pos, n), rec);
      pos += n;
    }
    EXPECT_TRUE(rec.errors.empty());
    EXPECT_EQ(rec.fpdus, ulpdus);
    EXPECT_FALSE(parser.mid_fpdu());
  }
}

TEST(MarkerRoundTripTest, ByteAtATime) {
  MarkerInserter tx;
  std::vector<Bytes> ulpdus;
  Bytes wire;
  for (size_t len : {14u, 600u, 13u, 1000u, 0u, 1442u, 509u}) {
    Bytes u = Iota(len, static_cast<uint8_t>(len));
    Bytes body = Body(u);
    const size_t before = wire.size();
    wire.resize(before + tx.MarkedSize(body.size()));
    ASSERT_TRUE(tx.Insert(body, true, MutableByteSpan(wire).subspan(before)).ok());
    ulpdus.push_back(u);
  }
  FpduStreamParser parser(MarkedConfig(true));
  Recorder rec;
  for (uint8_t b : wire) parser.Feed(ByteSpan(&b, 1), rec);
  EXPECT_TRUE(rec.errors.empty());
  EXPECT_EQ(rec.fpdus, ulpdus);
}

}  // namespace
}  // namespace iwarpx::wire
