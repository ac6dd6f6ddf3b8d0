#include "wire/dgram.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "testing/hex.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;

// DDP segments used as ULPDUs (RFC 5041 §4.2/§4.3, RFC 5040 §4.1).
// Untagged Send, L=1, QN 0, MSN 1, MO 0, payload "hello" (23 bytes, pad 1).
const std::vector<uint8_t> kSendHello =
    FromHex("4143 00000000 00000000 00000001 00000000 68656c6c6f");
// Tagged RDMA Write, L=1, STag 0x12345678, TO 0x1000, 8 payload bytes (22 bytes, pad 2).
const std::vector<uint8_t> kWrite8 = FromHex("c140 12345678 0000000000001000 0001020304050607");

// The vectors below were written by hand from docs/wire.md; their CRCs were
// computed with an independent bit-at-a-time CRC32c (not base/crc32c).
constexpr char kUdSendHex[] =
    "6977 01 01 | 8000 0017 | 0000 00 00 | 00000007 | 00000003 | 00000000 | 00000000 |"
    " 00000000 | 00000000 | 00000000 |"
    " 4143 00000000 00000000 00000001 00000000 68656c6c6f | 00 | 504b5bd8";
constexpr char kRdWriteHex[] =
    "6977 01 02 | f800 0016 | 0040 00 00 | 00000011 | 00000022 | a1b2c3d4 | 01020304 |"
    " 00000005 | 00000009 | 00000005 |"
    " c140 12345678 0000000000001000 0001020304050607 | 0000 | 77defcce";
constexpr char kRdAckHex[] =
    "6977 01 03 | e000 0000 | 0020 00 00 | 00000022 | 00000011 | 01020304 | a1b2c3d4 |"
    " 00000007 | 00000006 | 80000001 | 30cd7bcd";
constexpr char kResetNoCrcHex[] =
    "6977 01 04 | 0000 0000 | 0000 01 00 | 00000011 | 00000022 | 01020304 | deadbeef |"
    " 00000000 | 00000000 | 00000000 | 00000000";
constexpr char kProbeHex[] =
    "6977 01 04 | 9000 0000 | 0000 02 00 | 00000022 | 00000011 | a1b2c3d4 | 00000000 |"
    " 0000000a | 00000000 | 00000000 | a0d155fa";

DgramHeader UdHeader() {
  DgramHeader h;
  h.type = DgramType::kUdData;
  h.dst_qpn = 7;
  h.src_qpn = 3;
  return h;
}

DgramHeader RdWriteHeader() {
  DgramHeader h;
  h.type = DgramType::kRdData;
  h.has_ack = true;
  h.has_sack = true;
  h.syn = true;
  h.ack_request = true;
  h.credits = 64;
  h.dst_qpn = 0x11;
  h.src_qpn = 0x22;
  h.session = 0xA1B2C3D4;
  h.echo_session = 0x01020304;
  h.seq = 5;
  h.ack = 9;
  h.sack = 0x5;
  return h;
}

DgramHeader RdAckHeader() {
  DgramHeader h;
  h.type = DgramType::kRdAck;
  h.has_ack = true;
  h.has_sack = true;
  h.credits = 32;
  h.dst_qpn = 0x22;
  h.src_qpn = 0x11;
  h.session = 0x01020304;
  h.echo_session = 0xA1B2C3D4;
  h.seq = 7;
  h.ack = 6;
  h.sack = 0x80000001;
  return h;
}

DgramHeader ResetHeader() {
  DgramHeader h;
  h.type = DgramType::kRdControl;
  h.ctrl_op = DgramControlOp::kReset;
  h.dst_qpn = 0x11;
  h.src_qpn = 0x22;
  h.session = 0x01020304;
  h.echo_session = 0xDEADBEEF;
  return h;
}

DgramHeader ProbeHeader() {
  DgramHeader h;
  h.type = DgramType::kRdControl;
  h.ctrl_op = DgramControlOp::kProbe;
  h.syn = true;
  h.dst_qpn = 0x22;
  h.src_qpn = 0x11;
  h.session = 0xA1B2C3D4;
  h.seq = 10;
  return h;
}

std::vector<uint8_t> Encode(const DgramHeader& h, ByteSpan ulpdu, bool crc_on) {
  std::vector<uint8_t> out(kDgramMaxSize);
  const std::array<ByteSpan, 1> parts{ulpdu};
  const auto n = EncodeDgram(h, parts, crc_on, out);
  EXPECT_TRUE(n.ok()) << ToString(n.error());
  out.resize(n.ok() ? n.value() : 0);
  return out;
}

// Recomputes the CRC field after a test edits bytes, so that the decoder
// reaches the check under test instead of stopping at kBadCrc.
void FixCrc(std::vector<uint8_t>& d) {
  const size_t at = d.size() - kDgramCrcSize;
  const bool crc_on = (LoadBe16(d.data() + 4) & kDgramFlagCrc) != 0;
  StoreCrcWire(d.data() + at, crc_on ? Crc32c(ByteSpan(d.data(), at)) : 0);
}

WireError DecodeError(const std::vector<uint8_t>& d, bool verify_crc = true) {
  const auto r = DecodeDgram(d, verify_crc);
  EXPECT_FALSE(r.ok()) << ToHex(d);
  return r.ok() ? WireError{} : r.error();
}

// Writes a datagram field by field, independently of the encoder and without
// its checks, so that tests can build what the encoder refuses to.
std::vector<uint8_t> Build(const DgramHeader& h, const std::vector<uint8_t>& ulpdu, bool crc_on) {
  std::array<uint8_t, kDgramHeaderSize> hdr{};
  uint8_t* p = hdr.data();
  StoreBe16(p, kDgramMagic);
  p[2] = kDgramVersion;
  p[3] = static_cast<uint8_t>(h.type);
  const unsigned flags = (crc_on ? 0x8000u : 0u) | (h.has_ack ? 0x4000u : 0u) |
                         (h.has_sack ? 0x2000u : 0u) | (h.syn ? 0x1000u : 0u) |
                         (h.ack_request ? 0x0800u : 0u);
  StoreBe16(p + 4, static_cast<uint16_t>(flags));
  StoreBe16(p + 6, static_cast<uint16_t>(ulpdu.size()));
  StoreBe16(p + 8, h.credits);
  p[10] = static_cast<uint8_t>(h.ctrl_op);
  StoreBe32(p + 12, h.dst_qpn);
  StoreBe32(p + 16, h.src_qpn);
  StoreBe32(p + 20, h.session);
  StoreBe32(p + 24, h.echo_session);
  StoreBe32(p + 28, h.seq);
  StoreBe32(p + 32, h.ack);
  StoreBe32(p + 36, h.sack);
  std::vector<uint8_t> d(hdr.begin(), hdr.end());
  d.reserve(kDgramHeaderSize + ulpdu.size() + kDgramMaxTrailerSize);
  for (uint8_t byte : ulpdu) d.push_back(byte);
  d.resize(d.size() + (4 - ulpdu.size() % 4) % 4 + kDgramCrcSize, 0);
  FixCrc(d);
  return d;
}

// Encodes a valid datagram, edits it and fixes its CRC.
template <class Edit>
std::vector<uint8_t> Edited(const DgramHeader& h, ByteSpan ulpdu, Edit edit) {
  std::vector<uint8_t> d = Encode(h, ulpdu, /*crc_on=*/true);
  edit(d);
  FixCrc(d);
  return d;
}

// ---------------------------------------------------------------------------
// Known answers.

struct Vector {
  const char* name;
  DgramHeader header;
  std::vector<uint8_t> ulpdu;
  bool crc_on;
  const char* hex;
};

std::vector<Vector> Vectors() {
  return {
      {"ud_send", UdHeader(), kSendHello, true, kUdSendHex},
      {"rd_write", RdWriteHeader(), kWrite8, true, kRdWriteHex},
      {"rd_ack", RdAckHeader(), {}, true, kRdAckHex},
      {"rd_reset_nocrc", ResetHeader(), {}, false, kResetNoCrcHex},
      {"rd_probe", ProbeHeader(), {}, true, kProbeHex},
  };
}

TEST(DgramTest, EncodeMatchesKnownAnswers) {
  for (const Vector& v : Vectors()) {
    SCOPED_TRACE(v.name);
    EXPECT_EQ(ToHex(Encode(v.header, v.ulpdu, v.crc_on)), ToHex(FromHex(v.hex)));
    EXPECT_EQ(ToHex(Build(v.header, v.ulpdu, v.crc_on)), ToHex(FromHex(v.hex)));
  }
}

TEST(DgramTest, DecodeMatchesKnownAnswers) {
  for (const Vector& v : Vectors()) {
    SCOPED_TRACE(v.name);
    const std::vector<uint8_t> bytes = FromHex(v.hex);
    const auto d = DecodeDgram(bytes, /*verify_crc=*/true);
    ASSERT_TRUE(d.ok()) << ToString(d.error());
    EXPECT_EQ(d->header, v.header);
    EXPECT_EQ(ToHex(d->ulpdu), ToHex(v.ulpdu));
    EXPECT_EQ(d->crc_present, v.crc_on);
    EXPECT_EQ(d->crc_checked, v.crc_on);
    if (!v.ulpdu.empty()) {
      EXPECT_EQ(d->ulpdu.data(), bytes.data() + kDgramHeaderSize);
    }
  }
}

TEST(DgramTest, FramingMatchesEncodeForEverySplitAndPad) {
  std::vector<uint8_t> ulpdu = kSendHello;
  for (size_t extra = 0; extra < 4; ++extra) {  // pads 1, 0, 3, 2
    for (bool crc_on : {false, true}) {
      const std::vector<uint8_t> whole = Encode(UdHeader(), ulpdu, crc_on);
      for (size_t cut = 0; cut <= ulpdu.size(); cut += 3) {
        const ByteSpan all(ulpdu);
        const std::array<ByteSpan, 3> parts{all.first(cut), ByteSpan{}, all.subspan(cut)};
        const auto f = FrameDgram(UdHeader(), parts, crc_on);
        ASSERT_TRUE(f.ok());
        std::vector<uint8_t> gathered(f->header.begin(), f->header.end());
        gathered.insert(gathered.end(), ulpdu.begin(), ulpdu.end());
        const ByteSpan trailer = f->TrailerBytes();
        gathered.insert(gathered.end(), trailer.begin(), trailer.end());
        EXPECT_EQ(f->datagram_size, gathered.size());
        EXPECT_EQ(ToHex(gathered), ToHex(whole)) << "cut " << cut << " crc " << crc_on;
      }
    }
    ulpdu.push_back(static_cast<uint8_t>(0xA0 + extra));
  }
}

TEST(DgramTest, RoundTripsEveryTypeWithAndWithoutCrc) {
  DgramHeader rd_plain = RdWriteHeader();
  rd_plain.has_ack = rd_plain.has_sack = rd_plain.syn = rd_plain.ack_request = false;
  rd_plain.credits = 0;
  rd_plain.echo_session = rd_plain.ack = rd_plain.sack = 0;
  DgramHeader ack_no_sack = RdAckHeader();
  ack_no_sack.has_sack = false;
  ack_no_sack.sack = 0;
  DgramHeader ack_opening = RdAckHeader();
  ack_opening.syn = true;
  DgramHeader probe_with_ack = ProbeHeader();
  probe_with_ack.has_ack = true;
  probe_with_ack.echo_session = 0x55;
  probe_with_ack.ack = 0xFFFFFFFF;
  probe_with_ack.credits = 0;

  const std::vector<std::pair<DgramHeader, std::vector<uint8_t>>> cases = {
      {UdHeader(), kSendHello}, {UdHeader(), kWrite8}, {RdWriteHeader(), kWrite8},
      {rd_plain, kSendHello},   {RdAckHeader(), {}},   {ack_no_sack, {}},
      {ResetHeader(), {}},      {ProbeHeader(), {}},   {probe_with_ack, {}},
      {ack_opening, {}},
  };
  for (bool crc_on : {false, true}) {
    for (const auto& [h, ulpdu] : cases) {
      const std::vector<uint8_t> bytes = Encode(h, ulpdu, crc_on);
      ASSERT_EQ(bytes.size(), DgramSize(ulpdu.size()));
      const auto d = DecodeDgram(bytes, /*verify_crc=*/true);
      ASSERT_TRUE(d.ok()) << ToString(d.error()) << " " << ToHex(bytes);
      EXPECT_EQ(d->header, h);
      EXPECT_EQ(ToHex(d->ulpdu), ToHex(ulpdu));
      EXPECT_EQ(d->crc_present, crc_on);
      const std::array<ByteSpan, 1> parts{d->ulpdu};
      std::vector<uint8_t> again(bytes.size());
      ASSERT_TRUE(EncodeDgram(d->header, parts, d->crc_present, again).ok());
      EXPECT_EQ(again, bytes);
    }
  }
}

// ---------------------------------------------------------------------------
// Sizes.

TEST(DgramTest, SizesAndLimits) {
  static_assert(DgramPadLength(0) == 0 && DgramPadLength(1) == 3 && DgramPadLength(2) == 2 &&
                DgramPadLength(3) == 1 && DgramPadLength(4) == 0);
  static_assert(DgramSize(0) == 44 && DgramSize(14) == 60 && DgramSize(18) == 62 + 2);
  static_assert(kDgramMaxUlpdu == 65460 && DgramSize(kDgramMaxUlpdu) == 65504);
  static_assert(DgramSize(kDgramMaxUlpdu + 1) > kDgramMaxSize);
  static_assert(DgramMaxUlpduLength(1472) == 1428 && DgramSize(1428) == 1472);
  static_assert(DgramMaxUlpduLength(1471) == 1424 && DgramMaxUlpduLength(43) == 0 &&
                DgramMaxUlpduLength(44) == 0 && DgramMaxUlpduLength(48) == 4);
  static_assert(DgramMaxUlpduLength(1u << 20) == kDgramMaxUlpdu);
}

TEST(DgramTest, EncodesAndDecodesLargestUlpdu) {
  std::vector<uint8_t> big(kDgramMaxUlpdu, 0x5A);
  big[0] = 0xC1;  // tagged, L=1
  const std::vector<uint8_t> bytes = Encode(UdHeader(), big, true);
  ASSERT_EQ(bytes.size(), 65504u);
  EXPECT_TRUE(DecodeDgram(bytes, true).ok());

  big.push_back(0);
  std::vector<uint8_t> out(kDgramMaxSize + 8);
  const std::array<ByteSpan, 1> parts{ByteSpan(big)};
  const auto r = EncodeDgram(UdHeader(), parts, true, out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kInvalidArgument);
  EXPECT_EQ(FrameDgram(UdHeader(), parts, true).error(), WireError::kInvalidArgument);
}

TEST(DgramTest, EncodesAUlpduBuiltInPlace) {
  std::vector<uint8_t> out(128, 0xEE);
  std::copy(kSendHello.begin(), kSendHello.end(), out.begin() + kDgramHeaderSize);
  const std::array<ByteSpan, 1> parts{ByteSpan(out).subspan(kDgramHeaderSize, kSendHello.size())};
  const auto n = EncodeDgram(UdHeader(), parts, true, out);
  ASSERT_TRUE(n.ok());
  out.resize(n.value());
  EXPECT_EQ(ToHex(out), ToHex(FromHex(kUdSendHex)));
}

TEST(DgramTest, EncodeReportsNoSpaceAndWritesNothingPastTheEnd) {
  const size_t need = DgramSize(kSendHello.size());
  std::vector<uint8_t> out(need + 4, 0xEE);
  const std::array<ByteSpan, 1> parts{ByteSpan(kSendHello)};
  const auto r = EncodeDgram(UdHeader(), parts, true, MutableByteSpan(out).first(need - 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kNoSpace);
  EXPECT_TRUE(EncodeDgram(UdHeader(), parts, true, MutableByteSpan(out).first(need)).ok());
  for (size_t i = need; i < out.size(); ++i) EXPECT_EQ(out[i], 0xEE);
}

// ---------------------------------------------------------------------------
// Malformed datagrams, one class per test.

TEST(DgramTest, RejectsTruncatedHeader) {
  EXPECT_EQ(DecodeError({}), WireError::kTruncated);
  EXPECT_EQ(DecodeError({0x69}), WireError::kTruncated);
  EXPECT_EQ(DecodeError({0x69, 0x77}), WireError::kTruncated);
  EXPECT_EQ(DecodeError({0x69, 0x77, 0x01}), WireError::kTruncated);
  EXPECT_EQ(DecodeError({0x69, 0x77, 0x02}), WireError::kDgramBadVersion);
  const std::vector<uint8_t> ack = FromHex(kRdAckHex);
  for (size_t n = 4; n < kDgramMinSize; ++n) {
    EXPECT_EQ(DecodeError(std::vector<uint8_t>(ack.begin(), ack.begin() + static_cast<long>(n))),
              WireError::kTruncated)
        << n;
  }
  // A datagram cut anywhere after the header no longer matches its length.
  const std::vector<uint8_t> ud = FromHex(kUdSendHex);
  for (size_t n = kDgramMinSize; n < ud.size(); ++n) {
    EXPECT_EQ(DecodeError(std::vector<uint8_t>(ud.begin(), ud.begin() + static_cast<long>(n))),
              WireError::kDgramBadLength)
        << n;
  }
}

TEST(DgramTest, RejectsBadMagic) {
  std::vector<uint8_t> d = FromHex(kUdSendHex);
  d[0] = 0x77;
  d[1] = 0x69;  // byte-swapped magic
  EXPECT_EQ(DecodeError(d), WireError::kDgramBadMagic);
  // Stray traffic: a DNS query header is rejected on its first two bytes.
  EXPECT_EQ(DecodeError(FromHex("1234 0100 0001 0000 0000 0000")), WireError::kDgramBadMagic);
  EXPECT_EQ(DecodeError({0x00, 0x00}), WireError::kDgramBadMagic);
}

TEST(DgramTest, RejectsUnknownVersion) {
  for (int version : {0, 2, 255}) {
    std::vector<uint8_t> d = FromHex(kRdAckHex);
    d[2] = static_cast<uint8_t>(version);
    FixCrc(d);
    EXPECT_EQ(DecodeError(d), WireError::kDgramBadVersion) << version;
    d.resize(4);  // version is checked before the header length
    EXPECT_EQ(DecodeError(d), WireError::kDgramBadVersion);
  }
}

TEST(DgramTest, RejectsUnknownType) {
  for (int type : {0, 5, 0x80, 255}) {
    const auto d = Edited(RdAckHeader(), {}, [&](auto& b) { b[3] = static_cast<uint8_t>(type); });
    EXPECT_EQ(DecodeError(d), WireError::kDgramReservedBits) << type;
  }
}

TEST(DgramTest, RejectsReservedFlagBitsAndReservedByte) {
  for (unsigned bit = 0; bit < 10; ++bit) {
    const auto d = Edited(RdWriteHeader(), kWrite8, [&](auto& b) {
      StoreBe16(b.data() + 4, static_cast<uint16_t>(LoadBe16(b.data() + 4) | (1u << bit)));
    });
    EXPECT_EQ(DecodeError(d), WireError::kDgramReservedBits) << bit;
  }
  // Bit 10 is B (docs/wire.md §3.6.1): one plain DDP segment is not a record
  // list, so the datagram is refused as a bad bundle (it was a reserved bit:
  // a receiver from before bundles refuses it as kDgramReservedBits).
  const auto bundled = Edited(RdWriteHeader(), kWrite8, [&](auto& bytes) {
    StoreBe16(bytes.data() + 4,
              static_cast<uint16_t>(LoadBe16(bytes.data() + 4) | kDgramFlagBundle));
  });
  EXPECT_EQ(DecodeError(bundled), WireError::kDgramBadBundle);
  const auto d = Edited(RdWriteHeader(), kWrite8, [](auto& b) { b[11] = 1; });
  EXPECT_EQ(DecodeError(d), WireError::kDgramReservedBits);
}

TEST(DgramTest, RejectsControlOpOutsideControlAndUnknownOps) {
  EXPECT_EQ(DecodeError(Edited(RdAckHeader(), {}, [](auto& b) { b[10] = 1; })),
            WireError::kDgramReservedBits);
  EXPECT_EQ(DecodeError(Edited(UdHeader(), kSendHello, [](auto& b) { b[10] = 2; })),
            WireError::kDgramReservedBits);
  for (int op : {0, 3, 255}) {
    EXPECT_EQ(
        DecodeError(Edited(ProbeHeader(), {}, [&](auto& b) { b[10] = static_cast<uint8_t>(op); })),
        WireError::kDgramReservedBits)
        << op;
  }
}

TEST(DgramTest, RejectsFieldsTheTypeDoesNotUse) {
  // UD data: every RD field must be zero (flags other than C too).
  for (size_t off : {8u, 20u, 24u, 28u, 32u, 36u}) {
    const auto d = Edited(UdHeader(), kSendHello, [&](auto& b) { b[off + 1] = 1; });
    EXPECT_EQ(DecodeError(d), WireError::kDgramReservedBits) << off;
  }
  for (uint16_t flag : {kDgramFlagAck, kDgramFlagSack, kDgramFlagSyn, kDgramFlagAckRequest}) {
    const auto d = Edited(UdHeader(), kSendHello,
                          [&](auto& b) { b[4] = static_cast<uint8_t>(b[4] | (flag >> 8)); });
    EXPECT_EQ(DecodeError(d), WireError::kDgramReservedBits) << flag;
  }
  // RD data without A: ack, echo, credits and sack must be zero.
  DgramHeader plain = RdWriteHeader();
  plain.has_ack = plain.has_sack = false;
  plain.credits = 0;
  plain.echo_session = plain.ack = plain.sack = 0;
  for (size_t off : {8u, 24u, 32u, 36u}) {
    const auto d = Edited(plain, kWrite8, [&](auto& b) { b[off + 1] = 1; });
    EXPECT_EQ(DecodeError(d), WireError::kDgramReservedBits) << off;
  }
  // S without A; A with echo_session 0; sack bits without S.
  EXPECT_EQ(DecodeError(Edited(plain, kWrite8, [](auto& b) { b[4] |= 0x20; })),
            WireError::kDgramReservedBits);
  EXPECT_EQ(DecodeError(Edited(RdWriteHeader(), kWrite8, [](auto& b) { StoreBe32(&b[24], 0); })),
            WireError::kDgramReservedBits);
  DgramHeader ack_only_a = RdAckHeader();
  ack_only_a.has_sack = false;
  ack_only_a.sack = 0;
  EXPECT_EQ(DecodeError(Edited(ack_only_a, {}, [](auto& b) { b[39] = 1; })),
            WireError::kDgramReservedBits);
}

TEST(DgramTest, RejectsRdRuleViolations) {
  // Session 0 on every RD type.
  EXPECT_EQ(DecodeError(Edited(RdWriteHeader(), kWrite8, [](auto& b) { StoreBe32(&b[20], 0); })),
            WireError::kDgramReservedBits);
  EXPECT_EQ(DecodeError(Edited(RdAckHeader(), {}, [](auto& b) { StoreBe32(&b[20], 0); })),
            WireError::kDgramReservedBits);
  EXPECT_EQ(DecodeError(Edited(ResetHeader(), {}, [](auto& b) { StoreBe32(&b[20], 0); })),
            WireError::kDgramReservedBits);
  // Ack datagram without A; with R. (Y is allowed: an opening stream's acks carry it.)
  EXPECT_EQ(DecodeError(Edited(RdAckHeader(), {}, [](auto& b) { b[4] &= 0x80; })),
            WireError::kDgramReservedBits);
  EXPECT_TRUE(DecodeDgram(Edited(RdAckHeader(), {}, [](auto& b) { b[4] |= 0x10; }), true).ok());
  EXPECT_EQ(DecodeError(Edited(RdAckHeader(), {}, [](auto& b) { b[4] |= 0x08; })),
            WireError::kDgramReservedBits);
  // RESET: echo_session required; no A, no Y, no seq.
  EXPECT_EQ(DecodeError(Edited(ResetHeader(), {}, [](auto& b) { StoreBe32(&b[24], 0); })),
            WireError::kDgramReservedBits);
  EXPECT_EQ(DecodeError(Edited(ResetHeader(), {}, [](auto& b) { b[4] |= 0x40; })),
            WireError::kDgramReservedBits);
  EXPECT_EQ(DecodeError(Edited(ResetHeader(), {}, [](auto& b) { b[4] |= 0x10; })),
            WireError::kDgramReservedBits);
  EXPECT_EQ(DecodeError(Edited(ResetHeader(), {}, [](auto& b) { b[31] = 1; })),
            WireError::kDgramReservedBits);
  // PROBE with R (the probe itself requests the ack).
  EXPECT_EQ(DecodeError(Edited(ProbeHeader(), {}, [](auto& b) { b[4] |= 0x08; })),
            WireError::kDgramReservedBits);
}

TEST(DgramTest, RejectsUlpduLengthInconsistentWithDatagramSize) {
  const std::vector<uint8_t> good = FromHex(kUdSendHex);  // ulpdu_length 23
  // 24 is not among them: it frames to the same size as 23 (pad 0 instead of 1),
  // so 23 data bytes + 1 zero pad byte are indistinguishable from 24 data bytes.
  for (int claimed : {25, 27, 28, 100, 65535}) {  // longer than present
    std::vector<uint8_t> d = good;
    StoreBe16(&d[6], static_cast<uint16_t>(claimed));
    FixCrc(d);
    EXPECT_EQ(DecodeError(d), WireError::kDgramBadLength) << claimed;
  }
  for (int claimed : {0, 14, 18, 19, 20}) {  // shorter: bytes left over
    std::vector<uint8_t> d = good;
    StoreBe16(&d[6], static_cast<uint16_t>(claimed));
    FixCrc(d);
    EXPECT_EQ(DecodeError(d), WireError::kDgramBadLength) << claimed;
  }
  // 21 and 22 frame to the same size as 23 but leave ULPDU bytes in the pad.
  for (int claimed : {21, 22}) {
    std::vector<uint8_t> d = good;
    StoreBe16(&d[6], static_cast<uint16_t>(claimed));
    FixCrc(d);
    EXPECT_EQ(DecodeError(d), WireError::kDgramReservedBits) << claimed;  // non-zero "pad"
  }
  // Extra bytes after the CRC.
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_EQ(DecodeError(longer), WireError::kDgramBadLength);
}

TEST(DgramTest, RejectsUlpduLengthTheTypeDoesNotAllow) {
  // Ack-only and control datagrams with a (well-framed) ULPDU.
  for (const DgramHeader& h : {RdAckHeader(), ResetHeader(), ProbeHeader()}) {
    EXPECT_EQ(DecodeError(Build(h, FromHex("c1400000"), true)), WireError::kDgramBadLength)
        << static_cast<int>(h.type);
  }
  // Data datagrams without a ULPDU or shorter than a DDP header.
  for (const DgramHeader& h : {UdHeader(), RdWriteHeader()}) {
    const std::vector<uint8_t> short_ulpdu(kWrite8.begin(), kWrite8.begin() + 13);
    EXPECT_EQ(DecodeError(Build(h, short_ulpdu, true)), WireError::kDgramBadLength);
    EXPECT_EQ(DecodeError(Build(h, {}, true)), WireError::kDgramBadLength);
  }
}

TEST(DgramTest, RejectsNonZeroPad) {
  for (bool crc_on : {true, false}) {
    std::vector<uint8_t> d = Encode(UdHeader(), kSendHello, crc_on);
    d[kDgramHeaderSize + kSendHello.size()] = 0x01;
    FixCrc(d);
    EXPECT_EQ(DecodeError(d), WireError::kDgramReservedBits) << crc_on;
  }
}

TEST(DgramTest, RejectsOversize) {
  std::vector<uint8_t> d(kDgramMaxSize + 1, 0);
  StoreBe16(&d[0], kDgramMagic);
  d[2] = kDgramVersion;
  d[3] = 1;
  StoreBe16(&d[6], 65460);
  EXPECT_EQ(DecodeError(d), WireError::kDgramBadLength);
  d.resize(70000);
  EXPECT_EQ(DecodeError(d), WireError::kDgramBadLength);
  // Largest ulpdu_length values cannot fit any datagram.
  d.resize(kDgramMaxSize);
  for (int claimed : {65461, 65463, 65535}) {
    StoreBe16(&d[6], static_cast<uint16_t>(claimed));
    EXPECT_EQ(DecodeError(d), WireError::kDgramBadLength);
  }
}

TEST(DgramTest, DetectsBadCrcAnywhere) {
  const std::vector<uint8_t> good = FromHex(kRdWriteHex);
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> d = good;
    d[i] ^= 0x01;
    // Magic, version and length come first; the CRC is checked before the
    // per-type rules, so any other corruption is reported as a CRC error.
    // ulpdu_length 22 ^ 1 = 23 frames to the same size, so only byte 6 is a
    // length error.
    const WireError want = i < 2    ? WireError::kDgramBadMagic
                           : i == 2 ? WireError::kDgramBadVersion
                           : i == 6 ? WireError::kDgramBadLength
                                    : WireError::kBadCrc;
    EXPECT_EQ(DecodeError(d), want) << i;
  }
  std::vector<uint8_t> d = good;
  d[kDgramHeaderSize + 3] ^= 0x80;  // payload bit
  EXPECT_EQ(DecodeError(d), WireError::kBadCrc);
  // The big-endian image of the right CRC is wrong (WIRE.md §2.3).
  d = good;
  StoreBe32(&d[d.size() - 4], LoadCrcWire(&d[d.size() - 4]));
  EXPECT_EQ(DecodeError(d), WireError::kBadCrc);
  // Without verification the same datagram is accepted, but not marked checked.
  const auto r = DecodeDgram(d, /*verify_crc=*/false);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->crc_present);
  EXPECT_FALSE(r->crc_checked);
}

TEST(DgramTest, CrcOffIgnoresTheField) {
  std::vector<uint8_t> d = Encode(RdWriteHeader(), kWrite8, /*crc_on=*/false);
  EXPECT_EQ(ToHex(ByteSpan(d).last(4)), "00000000");
  StoreBe32(&d[d.size() - 4], 0xDEADBEEF);
  const auto r = DecodeDgram(d, /*verify_crc=*/true);
  ASSERT_TRUE(r.ok()) << ToString(r.error());
  EXPECT_FALSE(r->crc_present);
  EXPECT_FALSE(r->crc_checked);
  EXPECT_EQ(r->header, RdWriteHeader());
}

TEST(DgramTest, UdCarriesOnlyWholeDdpMessages) {
  // Untagged, L=0: a first segment of a longer message.
  std::vector<uint8_t> seg = kSendHello;
  seg[0] = 0x01;
  std::vector<uint8_t> d = Edited(UdHeader(), kSendHello, [&](auto& b) { b[40] = 0x01; });
  EXPECT_EQ(DecodeError(d), WireError::kDgramBadSegment);
  // Untagged, L=1 but MO != 0: the last segment of a longer message.
  d = Edited(UdHeader(), kSendHello, [&](auto& b) { b[40 + 17] = 0x10; });
  EXPECT_EQ(DecodeError(d), WireError::kDgramBadSegment);
  // Tagged, L=0.
  d = Edited(UdHeader(), kWrite8, [&](auto& b) { b[40] = 0x81; });
  EXPECT_EQ(DecodeError(d), WireError::kDgramBadSegment);
  // Untagged but too short to hold MO.
  d = Build(UdHeader(), FromHex("4143 00000000 00000000 00000001 0000"), true);
  EXPECT_EQ(DecodeError(d), WireError::kDgramBadSegment);
  // RD data may carry any segment: DDP segmentation is how RD sends > 64 KiB.
  std::vector<uint8_t> rd = Encode(RdWriteHeader(), kWrite8, true);
  rd[40] = 0x81;
  FixCrc(rd);
  EXPECT_TRUE(DecodeDgram(rd, true).ok());
  // The encoder refuses the same, also when the DDP header is split across parts.
  const std::array<ByteSpan, 3> parts{ByteSpan(seg).first(1), ByteSpan(seg).subspan(1, 15),
                                      ByteSpan(seg).subspan(16)};
  EXPECT_EQ(FrameDgram(UdHeader(), parts, true).error(), WireError::kInvalidArgument);
  seg[0] = 0x41;
  seg[17] = 0x01;  // MO split across parts 2 and 3
  EXPECT_EQ(FrameDgram(UdHeader(), parts, true).error(), WireError::kInvalidArgument);
  seg[17] = 0x00;
  EXPECT_TRUE(FrameDgram(UdHeader(), parts, true).ok());
}

TEST(DgramTest, EncoderRejectsWhatTheDecoderRejects) {
  std::vector<uint8_t> out(256);
  const std::array<ByteSpan, 1> data{ByteSpan(kWrite8)};
  const std::span<const ByteSpan> none;
  auto bad = [&](const DgramHeader& h, std::span<const ByteSpan> parts) {
    const auto r = EncodeDgram(h, parts, true, out);
    return !r.ok() && r.error() == WireError::kInvalidArgument;
  };
  DgramHeader h = UdHeader();
  h.seq = 1;
  EXPECT_TRUE(bad(h, data));
  h = UdHeader();
  h.ctrl_op = DgramControlOp::kProbe;
  EXPECT_TRUE(bad(h, data));
  h = UdHeader();
  h.type = static_cast<DgramType>(9);
  EXPECT_TRUE(bad(h, data));
  EXPECT_TRUE(bad(UdHeader(), none));  // data without a ULPDU
  h = RdWriteHeader();
  h.session = 0;
  EXPECT_TRUE(bad(h, data));
  h = RdWriteHeader();
  h.has_ack = false;
  EXPECT_TRUE(bad(h, data));              // S without A, ack fields without A
  EXPECT_TRUE(bad(RdAckHeader(), data));  // ack-only with a ULPDU
  h = RdAckHeader();
  h.has_ack = false;
  h.has_sack = false;
  h.sack = h.ack = h.credits = 0;
  h.echo_session = 0;
  EXPECT_TRUE(bad(h, none));
  h = ResetHeader();
  h.ctrl_op = static_cast<DgramControlOp>(7);
  EXPECT_TRUE(bad(h, none));
  h = ResetHeader();
  h.ctrl_op = DgramControlOp::kNone;
  EXPECT_TRUE(bad(h, none));
  h = ResetHeader();
  h.echo_session = 0;
  EXPECT_TRUE(bad(h, none));
  h = ProbeHeader();
  h.ack_request = true;
  EXPECT_TRUE(bad(h, none));
}

}  // namespace
}  // namespace iwarpx::wire
