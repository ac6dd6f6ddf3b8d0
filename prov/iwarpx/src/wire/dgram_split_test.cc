// DecodeDgramSplit: a datagram received in place (head ‖ placed ‖ tail)
// decodes exactly like the same bytes in one buffer, and every piece that does
// not have the in-place shape is refused.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "base/bytes.h"
#include "base/random.h"
#include "wire/dgram.h"

namespace iwarpx::wire {
namespace {

constexpr size_t kHead = kDgramHeaderSize + kDgramMinDdpSegment;  // the port's head piece

DgramHeader RdData() {
  DgramHeader h;
  h.type = DgramType::kRdData;
  h.has_ack = true;
  h.echo_session = 9;
  h.credits = 64;
  h.ack = 4;
  h.dst_qpn = 0x22;
  h.src_qpn = 0x11;
  h.session = 0xA1B2C3D4;
  h.seq = 77;
  return h;
}

std::vector<uint8_t> Encode(const DgramHeader& h, const std::vector<uint8_t>& ulpdu, bool crc) {
  std::vector<uint8_t> out(kDgramMaxSize);
  const ByteSpan parts[1] = {ByteSpan(ulpdu)};
  const auto n = EncodeDgram(h, parts, crc, out);
  EXPECT_TRUE(n.ok());
  out.resize(n.ok() ? *n : 0);
  return out;
}

// A Read Response segment of `payload` bytes: tagged DDP header, then data.
std::vector<uint8_t> ReadResponse(size_t payload, uint64_t seed) {
  std::vector<uint8_t> u(kDgramMinDdpSegment + payload);
  u[0] = 0x80;  // T
  u[1] = 0x42;  // RDMAP version 1, Read Response
  StoreBe32(&u[2], 0x12345678);
  StoreBe64(&u[6], 0x1000);
  Random rng(seed);
  for (size_t i = kDgramMinDdpSegment; i < u.size(); ++i) u[i] = static_cast<uint8_t>(rng.Next32());
  return u;
}

struct Pieces {
  ByteSpan head, placed, tail;
};

Pieces Cut(const std::vector<uint8_t>& d, size_t payload) {
  const size_t tail = DgramPadLength(kDgramMinDdpSegment + payload) + kDgramCrcSize;
  return {ByteSpan(d).first(kHead), ByteSpan(d).subspan(kHead, payload),
          ByteSpan(d).subspan(d.size() - tail)};
}

TEST(DgramSplitTest, AgreesWithTheWholeDecodeForEveryPadAndCrcSetting) {
  for (const bool crc : {true, false}) {
    for (const size_t payload : {1UL, 2UL, 3UL, 4UL, 5UL, 1000UL, 65446UL}) {
      const std::vector<uint8_t> d = Encode(RdData(), ReadResponse(payload, payload), crc);
      const Pieces p = Cut(d, payload);
      const auto whole = DecodeDgram(d, true);
      const auto split = DecodeDgramSplit(p.head, p.placed, p.tail, true);
      ASSERT_TRUE(whole.ok() && split.ok()) << payload;
      EXPECT_EQ(split->header, whole->header);
      EXPECT_EQ(split->crc_present, crc);
      EXPECT_EQ(split->crc_checked, crc);
      EXPECT_EQ(split->ulpdu.data(), p.head.data() + kDgramHeaderSize);
      EXPECT_EQ(split->ulpdu.size(), kDgramMinDdpSegment);
      EXPECT_EQ(split->ulpdu_placed.data(), p.placed.data());
      EXPECT_EQ(split->ulpdu_placed.size(), payload);
      EXPECT_TRUE(whole->ulpdu_placed.empty());
    }
  }
}

TEST(DgramSplitTest, CrcCoversThePlacedBytesAndThePad) {
  const size_t payload = 4097;  // pad 1
  std::vector<uint8_t> d = Encode(RdData(), ReadResponse(payload, 1), true);
  for (const size_t at : {size_t{20}, kHead - 1, kHead, kHead + payload - 1}) {
    std::vector<uint8_t> bad = d;
    bad[at] ^= 0x10;
    const Pieces p = Cut(bad, payload);
    const auto r = DecodeDgramSplit(p.head, p.placed, p.tail, true);
    ASSERT_FALSE(r.ok()) << at;
    EXPECT_EQ(r.error(), WireError::kBadCrc) << at;
    EXPECT_TRUE(DecodeDgramSplit(p.head, p.placed, p.tail, false).ok()) << at;
  }
  std::vector<uint8_t> pad = d;
  pad[pad.size() - kDgramCrcSize - 1] = 1;  // the pad byte, CRC now wrong too
  Pieces p = Cut(pad, payload);
  EXPECT_EQ(DecodeDgramSplit(p.head, p.placed, p.tail, true).error(), WireError::kBadCrc);
  EXPECT_EQ(DecodeDgramSplit(p.head, p.placed, p.tail, false).error(),
            WireError::kDgramReservedBits);
}

TEST(DgramSplitTest, RefusesPiecesWithoutTheInPlaceShape) {
  const size_t payload = 600;
  const std::vector<uint8_t> d = Encode(RdData(), ReadResponse(payload, 2), true);
  const Pieces p = Cut(d, payload);
  // Nothing placed: not an in-place receive.
  EXPECT_EQ(
      DecodeDgramSplit(ByteSpan(d).first(kHead), {}, ByteSpan(d).subspan(kHead), true).error(),
      WireError::kDgramBadLength);
  // ULPDU bytes in the tail, or pad/CRC in the placed piece.
  EXPECT_EQ(DecodeDgramSplit(p.head, p.placed.first(payload - 1),
                             ByteSpan(d).subspan(kHead + payload - 1), true)
                .error(),
            WireError::kDgramBadLength);
  EXPECT_EQ(DecodeDgramSplit(p.head, ByteSpan(d).subspan(kHead, payload + 2),
                             ByteSpan(d).subspan(kHead + payload + 2), true)
                .error(),
            WireError::kDgramBadLength);
  // A head shorter than the datagram header.
  EXPECT_EQ(
      DecodeDgramSplit(ByteSpan(d).first(30), ByteSpan(d).subspan(30, payload + 24), p.tail, true)
          .error(),
      WireError::kDgramBadLength);
  // Magic and version are still checked first.
  std::vector<uint8_t> magic = d;
  magic[0] = 0;
  const Pieces m = Cut(magic, payload);
  EXPECT_EQ(DecodeDgramSplit(m.head, m.placed, m.tail, true).error(), WireError::kDgramBadMagic);
}

TEST(DgramSplitTest, RefusesUdData) {
  DgramHeader h;
  h.type = DgramType::kUdData;
  h.dst_qpn = 7;
  h.src_qpn = 3;
  std::vector<uint8_t> u = ReadResponse(100, 3);
  u[0] = 0xC0;  // T and L: one whole tagged message
  const std::vector<uint8_t> d = Encode(h, u, true);
  const Pieces p = Cut(d, 100);
  ASSERT_TRUE(DecodeDgram(d, true).ok());
  EXPECT_EQ(DecodeDgramSplit(p.head, p.placed, p.tail, true).error(), WireError::kDgramBadSegment);
}

}  // namespace
}  // namespace iwarpx::wire
