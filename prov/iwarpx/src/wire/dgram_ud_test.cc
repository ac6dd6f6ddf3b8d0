#include "wire/dgram_ud.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "testing/hex.h"
#include "wire/rdmap.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;

// The hand-written UD vector of dgram_test.cc (docs/wire.md; CRC from an
// independent bit-at-a-time CRC32c): dst 7, src 3, Send MSN 1, "hello".
constexpr char kUdSendHex[] =
    "6977 01 01 | 8000 0017 | 0000 00 00 | 00000007 | 00000003 | 00000000 | 00000000 |"
    " 00000000 | 00000000 | 00000000 |"
    " 4143 00000000 00000000 00000001 00000000 68656c6c6f | 00 | 504b5bd8";

std::vector<uint8_t> Payload(size_t n) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(0xA0 + i * 7);
  return p;
}

// The datagram the generic encoders make for the same message.
std::vector<uint8_t> GenericEncode(const UdSendFields& f, ByteSpan payload, bool crc_on) {
  SendParams sp;
  sp.solicited_event = f.solicited;
  sp.msn = f.msn;
  std::array<uint8_t, kDdpUntaggedHeaderSize> ddp{};
  const auto n = EncodeSendHeader(sp, ddp);
  EXPECT_TRUE(n.ok());
  DgramHeader h;
  h.type = DgramType::kUdData;
  h.dst_qpn = f.dst_qpn;
  h.src_qpn = f.src_qpn;
  const ByteSpan parts[2] = {ByteSpan(ddp.data(), n.ok() ? *n : 0), payload};
  std::vector<uint8_t> out(kDgramMaxSize);
  const auto size = EncodeDgram(h, parts, crc_on, out);
  EXPECT_TRUE(size.ok());
  out.resize(size.ok() ? *size : 0);
  return out;
}

std::vector<uint8_t> FastEncode(const UdSendFields& f, std::span<const ByteSpan> parts,
                                bool crc_on) {
  std::vector<uint8_t> out(kDgramMaxSize);
  const auto size = EncodeUdSend(f, parts, crc_on, out);
  EXPECT_TRUE(size.ok());
  out.resize(size.ok() ? *size : 0);
  return out;
}

// Both decoders give the same answer for `bytes`.
void ExpectSameAnswer(const std::vector<uint8_t>& bytes, bool verify) {
  const ByteSpan in(bytes);
  const auto fast = DecodeUdSend(in, verify);
  const auto generic = DecodeUdSendGeneric(in, verify);
  ASSERT_EQ(fast.has_value(), generic.has_value());
  if (!fast) return;
  EXPECT_EQ(fast->fields, generic->fields);
  EXPECT_EQ(fast->payload.data(), generic->payload.data());
  EXPECT_EQ(fast->payload.size(), generic->payload.size());
  EXPECT_EQ(fast->crc_present, generic->crc_present);
  EXPECT_EQ(fast->crc_checked, generic->crc_checked);
}

TEST(DgramUdTest, DecodesTheHandWrittenVector) {
  const std::vector<uint8_t> v = FromHex(kUdSendHex);
  const auto d = DecodeUdSend(v, /*verify_crc=*/true);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->fields, (UdSendFields{7, 3, 1, false}));
  EXPECT_TRUE(d->crc_present);
  EXPECT_TRUE(d->crc_checked);
  ASSERT_EQ(d->payload.size(), 5u);
  EXPECT_EQ(std::memcmp(d->payload.data(), "hello", 5), 0);
  EXPECT_EQ(d->payload.data(), v.data() + kUdSendHeaderSize);
}

TEST(DgramUdTest, EncodesTheHandWrittenVector) {
  const ByteSpan hello(reinterpret_cast<const uint8_t*>("hello"), 5);
  EXPECT_EQ(FastEncode({7, 3, 1, false}, std::span(&hello, 1), true), FromHex(kUdSendHex));
}

TEST(DgramUdTest, EncodesTheGenericBytesForEverySizeAndFlag) {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5},
                         size_t{7}, size_t{8}, size_t{9}, size_t{64}, size_t{255}, size_t{1000}}) {
    const std::vector<uint8_t> payload = Payload(n);
    for (const bool crc : {true, false}) {
      for (const bool se : {false, true}) {
        const UdSendFields f{0x01020304, 0xA0B0C0D0, 0xFFFFFFFF - static_cast<uint32_t>(n), se};
        const std::vector<uint8_t> generic = GenericEncode(f, payload, crc);
        // The payload split in three at different points gives the same bytes.
        const size_t a = n / 3;
        const size_t b = n - n / 4;
        const ByteSpan parts[3] = {ByteSpan(payload).first(a), ByteSpan(payload).subspan(a, b - a),
                                   ByteSpan(payload).subspan(b)};
        EXPECT_EQ(FastEncode(f, parts, crc), generic) << n << " crc " << crc << " se " << se;
        const auto d = DecodeUdSend(generic, true);
        ASSERT_TRUE(d.has_value()) << n;
        EXPECT_EQ(d->fields, f);
        EXPECT_EQ(d->crc_present, crc);
        EXPECT_EQ(d->crc_checked, crc);
        ASSERT_EQ(d->payload.size(), n);
        EXPECT_TRUE(std::equal(payload.begin(), payload.end(), d->payload.begin()));
        ExpectSameAnswer(generic, true);
        ExpectSameAnswer(generic, false);
      }
    }
  }
}

TEST(DgramUdTest, RefusesTooLargeAndTooSmallOutput) {
  const std::vector<uint8_t> big(kUdSendMaxPayload + 1);
  const ByteSpan part(big);
  std::vector<uint8_t> out(kDgramMaxSize);
  auto r = EncodeUdSend({}, std::span(&part, 1), true, out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kInvalidArgument);
  // The largest payload fits exactly in the largest datagram.
  const ByteSpan max_part = part.first(kUdSendMaxPayload);
  r = EncodeUdSend({}, std::span(&max_part, 1), true, out);
  ASSERT_TRUE(r.ok());
  EXPECT_LE(*r, kDgramMaxSize);
  EXPECT_TRUE(DecodeUdSend(ByteSpan(out).first(*r), true).has_value());
  // One byte short of the datagram: kNoSpace, nothing written.
  std::vector<uint8_t> small(UdSendSize(8) - 1, 0xEE);
  const std::vector<uint8_t> p8 = Payload(8);
  const ByteSpan p(p8);
  r = EncodeUdSend({}, std::span(&p, 1), true, small);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kNoSpace);
  for (const uint8_t b : small) EXPECT_EQ(b, 0xEE);
}

TEST(DgramUdTest, TruncatedAtEveryByteIsRefused) {
  const std::vector<uint8_t> p = Payload(9);
  const ByteSpan part(p);
  const std::vector<uint8_t> whole = FastEncode({5, 6, 7, false}, std::span(&part, 1), true);
  for (size_t n = 0; n < whole.size(); ++n) {
    const std::vector<uint8_t> cut(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(DecodeUdSend(cut, true).has_value()) << n;
    EXPECT_FALSE(DecodeUdSend(cut, false).has_value()) << n;
    ExpectSameAnswer(cut, true);
  }
  // One byte more is refused too (the length field no longer matches).
  std::vector<uint8_t> longer = whole;
  longer.push_back(0);
  EXPECT_FALSE(DecodeUdSend(longer, true).has_value());
}

TEST(DgramUdTest, EveryBitFlipAgreesWithTheGenericDecoders) {
  const std::vector<uint8_t> p = Payload(6);
  const ByteSpan part(p);
  for (const bool crc : {true, false}) {
    const std::vector<uint8_t> good = FastEncode({1, 2, 3, true}, std::span(&part, 1), crc);
    for (size_t i = 0; i < good.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<uint8_t> bad = good;
        bad[i] ^= static_cast<uint8_t>(1u << bit);
        ExpectSameAnswer(bad, true);
        ExpectSameAnswer(bad, false);
        // With the CRC on and checked, no single flip gets through, except
        // clearing C itself (the CRC is then not looked at, docs/wire.md §3.4).
        const bool clears_c = i == 4 && bit == 7;
        if (crc && !clears_c) {
          EXPECT_FALSE(DecodeUdSend(bad, true).has_value()) << i << "/" << bit;
        }
      }
    }
  }
}

TEST(DgramUdTest, BadVersionMagicTypeAndCrcAreRefused) {
  const std::vector<uint8_t> good = FromHex(kUdSendHex);
  std::vector<uint8_t> v = good;
  v[2] = 2;  // version
  EXPECT_FALSE(DecodeUdSend(v, true).has_value());
  EXPECT_EQ(DecodeDgram(v, true).error(), WireError::kDgramBadVersion);
  v = good;
  v[0] = 0x70;  // magic
  EXPECT_FALSE(DecodeUdSend(v, true).has_value());
  v = good;
  v[44 + 17] ^= 1;  // payload byte: wrong CRC
  EXPECT_FALSE(DecodeUdSend(v, true).has_value());
  EXPECT_EQ(DecodeDgram(v, true).error(), WireError::kBadCrc);
  // Not verified: accepted as the generic decoder does, crc_checked false.
  const auto unverified = DecodeUdSend(v, false);
  ASSERT_TRUE(unverified.has_value());
  EXPECT_TRUE(unverified->crc_present);
  EXPECT_FALSE(unverified->crc_checked);
}

TEST(DgramUdTest, CrcFieldIgnoredWithCClear) {
  const std::vector<uint8_t> p = Payload(8);
  const ByteSpan part(p);
  std::vector<uint8_t> v = FastEncode({1, 2, 3, false}, std::span(&part, 1), false);
  v[v.size() - 1] = 0x5A;  // garbage in the CRC field
  const auto d = DecodeUdSend(v, true);
  ASSERT_TRUE(d.has_value());
  EXPECT_FALSE(d->crc_present);
  EXPECT_FALSE(d->crc_checked);
  ExpectSameAnswer(v, true);
}

// Re-signs a modified datagram so only the field rule can refuse it.
void Resign(std::vector<uint8_t>& v) {
  const size_t body = v.size() - kDgramCrcSize;
  StoreCrcWire(v.data() + body, Crc32c(ByteSpan(v).first(body)));
}

TEST(DgramUdTest, OtherQueueNumbersOpcodesAndFieldsFallBack) {
  const std::vector<uint8_t> p = Payload(4);
  const ByteSpan part(p);
  const std::vector<uint8_t> good = FastEncode({1, 2, 3, false}, std::span(&part, 1), true);
  struct Case {
    const char* what;
    size_t offset;
    uint8_t value;
  };
  const Case cases[] = {
      {"QN 1 (Read Request queue)", kDgramHeaderSize + 9, 1},
      {"Send with Invalidate", kDgramHeaderSize + 1, 0x44},
      {"Immediate Data opcode", kDgramHeaderSize + 1, 0x48},
      {"RDMAP version 2", kDgramHeaderSize + 1, 0x83},
      {"DDP L clear", kDgramHeaderSize, 0x01},
      {"DDP tagged", kDgramHeaderSize, 0xC1},
      {"DDP reserved bit", kDgramHeaderSize, 0x45},
      {"invalidate STag set", kDgramHeaderSize + 5, 1},
      {"MO 1", kDgramHeaderSize + 17, 1},
      {"RD data type", 3, 2},
      {"A flag", 4, 0xC0},
      {"credits", 9, 1},
      {"reserved byte", 11, 1},
      {"session", 23, 1},
      {"sack", 39, 1},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> v = good;
    v[c.offset] = c.value;
    Resign(v);
    EXPECT_FALSE(DecodeUdSend(v, true).has_value()) << c.what;
    EXPECT_FALSE(DecodeUdSendGeneric(v, true).has_value()) << c.what;
  }
  // QN 1 is refused by the RDMAP parser with its own reason.
  std::vector<uint8_t> qn = good;
  qn[kDgramHeaderSize + 9] = 1;
  Resign(qn);
  const auto d = DecodeDgram(qn, true);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(ParseSegment(d->ulpdu).error(), WireError::kDdpBadQueueNumber);
}

TEST(DgramUdTest, NonZeroPadIsRefused) {
  const std::vector<uint8_t> p = Payload(5);  // 23-byte ULPDU: one pad byte
  const ByteSpan part(p);
  std::vector<uint8_t> v = FastEncode({1, 2, 3, false}, std::span(&part, 1), true);
  v[kDgramHeaderSize + 23] = 1;
  Resign(v);
  EXPECT_FALSE(DecodeUdSend(v, true).has_value());
  EXPECT_EQ(DecodeDgram(v, true).error(), WireError::kDgramReservedBits);
}

TEST(DgramUdTest, UlpduOfSeventeenBytesIsRefused) {
  // 17 and 18 bytes of ULPDU give the same datagram size (pad 3 and 2).
  std::vector<uint8_t> v = FastEncode({1, 2, 3, false}, {}, true);
  ASSERT_EQ(v.size(), UdSendSize(0));
  StoreBe16(v.data() + 6, 17);
  Resign(v);
  EXPECT_FALSE(DecodeUdSend(v, true).has_value());
  ExpectSameAnswer(v, true);
}

}  // namespace
}  // namespace iwarpx::wire
