#include "wire/mpa.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;

constexpr char kReqKey[] = "4d504120 49442052 65712046 72616d65";
constexpr char kRepKey[] = "4d504120 49442052 65702046 72616d65";

std::vector<uint8_t> Frame(const char* key, const std::string& rest) {
  return FromHex(std::string(key) + " " + rest);
}

std::vector<uint8_t> Encode(const MpaFrame& f) {
  std::vector<uint8_t> out(MpaFrameSize(f));
  auto n = EncodeMpaFrame(f, out);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : ToString(n.error()));
  if (n.ok()) {
    EXPECT_EQ(n.value(), out.size());
  }
  return out;
}

std::vector<uint8_t> Bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

bool SameBytes(ByteSpan a, ByteSpan b) {
  return ToHex(a) == ToHex(b);
}

// ---- Known answers --------------------------------------------------------

TEST(MpaKeyTest, KeysAreTheRfcStrings) {
  EXPECT_EQ(ToHex(MpaKey(MpaFrameKind::kRequest)), ToHex(FromHex(kReqKey)));
  EXPECT_EQ(ToHex(MpaKey(MpaFrameKind::kReply)), ToHex(FromHex(kRepKey)));
}

TEST(MpaDecodeTest, V1RequestWithCrcNoPrivateData) {
  auto bytes = Frame(kReqKey, "40 01 0000");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  const MpaFrame& f = d->frame;
  EXPECT_EQ(d->consumed, 20u);
  EXPECT_EQ(f.kind, MpaFrameKind::kRequest);
  EXPECT_TRUE(f.crc);
  EXPECT_FALSE(f.markers);
  EXPECT_FALSE(f.reject);
  EXPECT_EQ(f.revision, 1);
  EXPECT_FALSE(f.ird_ord.has_value());
  EXPECT_TRUE(f.private_data.empty());
  EXPECT_EQ(ToHex(Encode(f)), ToHex(bytes));
}

TEST(MpaDecodeTest, V2RequestWithIrdOrdBlockAndUlpData) {
  // M=0 C=1 enhanced, rev 2, PD_Length 6 = block + "hi".
  // word0 8010: P2P, IRD 16. word1 c010: Write+Read RTR, ORD 16.
  auto bytes = Frame(kReqKey, "50 02 0006 | 8010 c010 | 6869");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  const MpaFrame& f = d->frame;
  EXPECT_EQ(d->consumed, 26u);
  EXPECT_EQ(f.revision, 2);
  EXPECT_TRUE(f.crc);
  ASSERT_TRUE(f.ird_ord.has_value());
  EXPECT_TRUE(f.ird_ord->p2p);
  EXPECT_EQ(f.ird_ord->ird, 16);
  EXPECT_EQ(f.ird_ord->ord, 16);
  EXPECT_EQ(f.ird_ord->rtr, RtrBit(MpaRtr::kWrite) | RtrBit(MpaRtr::kRead));
  EXPECT_EQ(ToHex(f.private_data), "6869");
  // The private data is a view into the input.
  EXPECT_EQ(f.private_data.data(), bytes.data() + 24);
  EXPECT_EQ(ToHex(Encode(f)), ToHex(bytes));
}

TEST(MpaDecodeTest, V2ReplyChoosingWrite) {
  // word0 8008: P2P, IRD 8. word1 8004: Write RTR, ORD 4.
  auto bytes = Frame(kRepKey, "10 02 0004 | 8008 8004");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kReply);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  const MpaFrame& f = d->frame;
  EXPECT_EQ(f.kind, MpaFrameKind::kReply);
  EXPECT_FALSE(f.crc);
  ASSERT_TRUE(f.ird_ord.has_value());
  EXPECT_EQ(*f.ird_ord,
            (MpaIrdOrd{.p2p = true, .ird = 8, .ord = 4, .rtr = RtrBit(MpaRtr::kWrite)}));
  EXPECT_TRUE(f.private_data.empty());
  EXPECT_EQ(ToHex(Encode(f)), ToHex(bytes));
}

TEST(MpaDecodeTest, IrdmaStyleReplyWithSendBitAndWrite) {
  // word0 c010: P2P | Send-RTR | IRD 16; word1 8010: Write-RTR | ORD 16.
  auto bytes = Frame(kRepKey, "50 02 0004 | c010 8010");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kReply);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  EXPECT_EQ(d->frame.ird_ord->rtr, RtrBit(MpaRtr::kSend) | RtrBit(MpaRtr::kWrite));
  EXPECT_EQ(ToHex(Encode(d->frame)), ToHex(bytes));
}

TEST(MpaDecodeTest, NoIrdOrdValue) {
  auto bytes = Frame(kReqKey, "10 02 0004 | bfff 3fff");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  EXPECT_TRUE(d->frame.ird_ord->p2p);
  EXPECT_EQ(d->frame.ird_ord->ird, kMpaNoIrdOrd);
  EXPECT_EQ(d->frame.ird_ord->ord, kMpaNoIrdOrd);
  EXPECT_EQ(d->frame.ird_ord->rtr, 0);
}

TEST(MpaDecodeTest, RejectReplyWithReason) {
  auto bytes = Frame(kRepKey, "20 01 0003 | 627965");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kReply);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  EXPECT_TRUE(d->frame.reject);
  EXPECT_EQ(std::string(d->frame.private_data.begin(), d->frame.private_data.end()), "bye");
  EXPECT_EQ(ToHex(Encode(d->frame)), ToHex(bytes));
}

TEST(MpaDecodeTest, MarkersFlag) {
  auto bytes = Frame(kReqKey, "c0 01 0001 | ab");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->frame.markers);
  EXPECT_TRUE(d->frame.crc);
}

TEST(MpaDecodeTest, Rev2WithoutEnhancedFlagHasNoBlock) {
  auto bytes = Frame(kReqKey, "00 02 0004 | 8010 c010");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->frame.ird_ord.has_value());
  EXPECT_EQ(d->frame.private_data.size(), 4u);
  EXPECT_EQ(ToHex(Encode(d->frame)), ToHex(bytes));
}

TEST(MpaDecodeTest, TrailingBytesAreLeftToTheCaller) {
  auto bytes = Frame(kReqKey, "00 01 0002 | 0102 | 00 06 c0ffee");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->consumed, 22u);
  EXPECT_EQ(ToHex(d->frame.private_data), "0102");
}

TEST(MpaDecodeTest, ExactSpanIsEnough) {
  // The frame at the start of a larger buffer, viewed through an exact span.
  std::vector<uint8_t> buffer = Frame(kRepKey, "00 01 0002 | aabb | ffff ffff");
  ByteSpan exact(buffer.data(), 22);
  auto d = DecodeMpaFrame(exact, MpaFrameKind::kReply);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->consumed, 22u);
  auto short_view = DecodeMpaFrame(exact.first(21), MpaFrameKind::kReply);
  ASSERT_FALSE(short_view.ok());
  EXPECT_EQ(short_view.error(), WireError::kTruncated);
}

TEST(MpaDecodeTest, PrivateDataOf256) {
  std::string rest = "00 01 0100";
  for (int i = 0; i < 256; ++i) rest += " 5a";
  auto bytes = Frame(kReqKey, rest);
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest,
                          MpaLimits{.max_private_data = kMpaLinuxPrivateDataLimit});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->frame.private_data.size(), 256u);
  EXPECT_EQ(d->consumed, 276u);
}

TEST(MpaDecodeTest, PrivateDataOf512IsTheRfcMaximum) {
  std::vector<uint8_t> bytes = Frame(kRepKey, "00 01 0200");
  bytes.resize(20 + 512, 0x11);
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kReply);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->frame.private_data.size(), 512u);
  EXPECT_EQ(ToHex(Encode(d->frame)), ToHex(bytes));
}

// ---- Header-only step -----------------------------------------------------

TEST(MpaHeaderTest, ReturnsFrameLengthFromTwentyBytes) {
  auto bytes = Frame(kReqKey, "50 02 0006");
  auto h = DecodeMpaHeader(bytes, MpaFrameKind::kRequest);
  ASSERT_TRUE(h.ok()) << ToString(h.error());
  EXPECT_EQ(h->frame_length, 26u);
  EXPECT_EQ(h->pd_length, 6);
  EXPECT_EQ(h->revision, 2);
  EXPECT_EQ(h->flags, 0x50);
  // The whole frame is not there yet.
  auto f = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), WireError::kTruncated);
}

TEST(MpaHeaderTest, RefusesOversizedPrivateDataBeforeItArrives) {
  auto bytes = Frame(kReqKey, "00 01 0101");  // 257
  auto h = DecodeMpaHeader(bytes, MpaFrameKind::kRequest,
                           MpaLimits{.max_private_data = kMpaLinuxPrivateDataLimit});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), WireError::kMpaPrivateDataTooLong);
  // Within the RFC limit under the default policy.
  EXPECT_TRUE(DecodeMpaHeader(bytes, MpaFrameKind::kRequest).ok());
}

TEST(MpaHeaderTest, PolicyLimitAboveRfcMaximumActsAs512) {
  EXPECT_EQ(MpaPrivateDataLimit(MpaLimits{.max_private_data = 4096}), 512);
  auto bytes = Frame(kReqKey, "00 01 0201");  // 513
  auto h = DecodeMpaHeader(bytes, MpaFrameKind::kRequest, MpaLimits{.max_private_data = 4096});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), WireError::kMpaPrivateDataTooLong);
  auto ok = Frame(kReqKey, "00 01 0200");
  EXPECT_TRUE(
      DecodeMpaHeader(ok, MpaFrameKind::kRequest, MpaLimits{.max_private_data = 4096}).ok());
}

TEST(MpaHeaderTest, ZeroLimitAcceptsOnlyEmptyPrivateData) {
  MpaLimits zero{.max_private_data = 0};
  EXPECT_TRUE(DecodeMpaHeader(Frame(kReqKey, "00 01 0000"), MpaFrameKind::kRequest, zero).ok());
  auto h = DecodeMpaHeader(Frame(kReqKey, "00 01 0001"), MpaFrameKind::kRequest, zero);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), WireError::kMpaPrivateDataTooLong);
}

// ---- Malformed frames -----------------------------------------------------

TEST(MpaMalformedTest, TruncatedHeaderAtEveryLength) {
  auto bytes = Frame(kReqKey, "40 01 0000");
  for (size_t n = 0; n < kMpaHeaderSize; ++n) {
    ByteSpan view(bytes.data(), n);
    auto h = DecodeMpaHeader(view, MpaFrameKind::kRequest);
    ASSERT_FALSE(h.ok()) << n;
    EXPECT_EQ(h.error(), WireError::kTruncated) << n;
    auto f = DecodeMpaFrame(view, MpaFrameKind::kRequest);
    ASSERT_FALSE(f.ok()) << n;
    EXPECT_EQ(f.error(), WireError::kTruncated) << n;
  }
}

TEST(MpaMalformedTest, TruncatedPrivateDataAtEveryLength) {
  auto bytes = Frame(kReqKey, "50 02 0008 | 8010 c010 | 01020304");
  for (size_t n = kMpaHeaderSize; n < bytes.size(); ++n) {
    auto f = DecodeMpaFrame(ByteSpan(bytes.data(), n), MpaFrameKind::kRequest);
    ASSERT_FALSE(f.ok()) << n;
    EXPECT_EQ(f.error(), WireError::kTruncated) << n;
  }
  EXPECT_TRUE(DecodeMpaFrame(bytes, MpaFrameKind::kRequest).ok());
}

TEST(MpaMalformedTest, ReplyKeyWhereRequestExpected) {
  auto f = DecodeMpaFrame(Frame(kRepKey, "40 01 0000"), MpaFrameKind::kRequest);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), WireError::kMpaBadKey);
}

TEST(MpaMalformedTest, RequestKeyWhereReplyExpected) {
  auto f = DecodeMpaFrame(Frame(kReqKey, "40 01 0000"), MpaFrameKind::kReply);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), WireError::kMpaBadKey);
}

TEST(MpaMalformedTest, AnyKeyByteChanged) {
  auto good = Frame(kReqKey, "40 01 0000");
  for (size_t i = 0; i < kMpaKeySize; ++i) {
    auto bad = good;
    bad[i] ^= 0x20;  // e.g. case change
    auto f = DecodeMpaFrame(bad, MpaFrameKind::kRequest);
    ASSERT_FALSE(f.ok()) << i;
    EXPECT_EQ(f.error(), WireError::kMpaBadKey) << i;
  }
}

TEST(MpaMalformedTest, UnknownRevisions) {
  for (int rev : {0, 3, 4, 0x7f, 0xff}) {
    auto bytes = Frame(kReqKey, "00 00 0000");
    bytes[17] = static_cast<uint8_t>(rev);
    auto f = DecodeMpaHeader(bytes, MpaFrameKind::kRequest);
    ASSERT_FALSE(f.ok()) << rev;
    EXPECT_EQ(f.error(), WireError::kMpaBadRevision) << rev;
  }
}

TEST(MpaMalformedTest, ReservedBitsRev1) {
  for (int bit : {0x01, 0x02, 0x04, 0x08, 0x10}) {
    auto bytes = Frame(kReqKey, "00 01 0004 | 00000000");
    bytes[16] = static_cast<uint8_t>(bit);
    auto f = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
    ASSERT_FALSE(f.ok()) << bit;
    EXPECT_EQ(f.error(), WireError::kMpaReservedBits) << bit;
  }
}

TEST(MpaMalformedTest, ReservedBitsRev2) {
  // 0x01 is the iwarpx Send-with-Immediate-Data flag (MpaSendImmTest below).
  for (int bit : {0x02, 0x04, 0x08}) {
    auto bytes = Frame(kRepKey, "10 02 0004 | 00000000");
    bytes[16] = static_cast<uint8_t>(0x10 | bit);
    auto f = DecodeMpaFrame(bytes, MpaFrameKind::kReply);
    ASSERT_FALSE(f.ok()) << bit;
    EXPECT_EQ(f.error(), WireError::kMpaReservedBits) << bit;
  }
}

// ---- iwarpx extension: Send with Immediate Data (flag 0x01, rev 2) ---------

TEST(MpaSendImmTest, Rev2RequestAndReplyDecodeTheFlag) {
  for (MpaFrameKind kind : {MpaFrameKind::kRequest, MpaFrameKind::kReply}) {
    auto bytes = Frame(kind == MpaFrameKind::kRequest ? kReqKey : kRepKey, "51 02 0004 | 80108010");
    auto d = DecodeMpaFrame(bytes, kind);
    ASSERT_TRUE(d.ok()) << ToString(d.error());
    EXPECT_TRUE(d->frame.send_imm);
    EXPECT_TRUE(d->frame.crc);
    ASSERT_TRUE(d->frame.ird_ord.has_value());
    EXPECT_TRUE(SameBytes(Encode(d->frame), bytes));
  }
}

TEST(MpaSendImmTest, Rev2WithoutEnhancedFlagDecodesTheFlag) {
  auto bytes = Frame(kReqKey, "41 02 0000");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  EXPECT_TRUE(d->frame.send_imm);
  EXPECT_FALSE(d->frame.ird_ord.has_value());
  EXPECT_TRUE(SameBytes(Encode(d->frame), bytes));
}

TEST(MpaSendImmTest, DefaultFramesDoNotCarryTheFlag) {
  auto d = DecodeMpaFrame(Frame(kReqKey, "50 02 0004 | 80108010"), MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->frame.send_imm);
  MpaFrame f;
  f.revision = 2;
  f.crc = true;
  EXPECT_EQ(Encode(f)[16], 0x40);
}

TEST(MpaSendImmTest, EncoderRefusesTheFlagInRev1) {
  MpaFrame f;
  f.revision = 1;
  f.send_imm = true;
  std::array<uint8_t, kMpaMaxFrameSize> out{};
  auto n = EncodeMpaFrame(f, out);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error(), WireError::kInvalidArgument);
}

TEST(MpaSendImmTest, OtherReservedBitsStillRefusedNextToIt) {
  auto bytes = Frame(kReqKey, "53 02 0004 | 80108010");
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(), WireError::kMpaReservedBits);
}

TEST(MpaMalformedTest, RejectFlagInRequest) {
  auto f = DecodeMpaFrame(Frame(kReqKey, "20 01 0000"), MpaFrameKind::kRequest);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), WireError::kMpaRejectInRequest);
}

TEST(MpaMalformedTest, PrivateDataOverRfcLimit) {
  std::vector<uint8_t> bytes = Frame(kReqKey, "00 01 0201");
  bytes.resize(20 + 513, 0);
  auto f = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), WireError::kMpaPrivateDataTooLong);
  auto max = DecodeMpaFrame(Frame(kReqKey, "00 01 ffff"), MpaFrameKind::kRequest);
  ASSERT_FALSE(max.ok());
  EXPECT_EQ(max.error(), WireError::kMpaPrivateDataTooLong);
}

TEST(MpaMalformedTest, EnhancedWithoutRoomForIrdOrd) {
  for (int pd = 0; pd < 4; ++pd) {
    std::vector<uint8_t> bytes = Frame(kReqKey, "10 02 0000");
    bytes[19] = static_cast<uint8_t>(pd);
    bytes.resize(20 + static_cast<size_t>(pd), 0);
    auto f = DecodeMpaFrame(bytes, MpaFrameKind::kRequest);
    ASSERT_FALSE(f.ok()) << pd;
    EXPECT_EQ(f.error(), WireError::kMpaBadIrdOrd) << pd;
  }
}

TEST(MpaMalformedTest, ErrorsMapToInvalidRequestReplyTerminate) {
  for (WireError e : {WireError::kMpaBadKey, WireError::kMpaBadRevision,
                      WireError::kMpaReservedBits, WireError::kMpaRejectInRequest,
                      WireError::kMpaPrivateDataTooLong, WireError::kMpaBadIrdOrd}) {
    EXPECT_EQ(TerminateCauseFor(e), term::kLlpInvalidReqRep) << ToString(e);
  }
}

// ---- Encoder ---------------------------------------------------------------

MpaFrame V2Request(ByteSpan pd) {
  MpaFrame f;
  f.kind = MpaFrameKind::kRequest;
  f.crc = true;
  f.revision = 2;
  f.ird_ord = MpaIrdOrd{
      .p2p = true, .ird = 16, .ord = 16, .rtr = RtrBit(MpaRtr::kWrite) | RtrBit(MpaRtr::kRead)};
  f.private_data = pd;
  return f;
}

TEST(MpaEncodeTest, V2RequestKnownAnswer) {
  auto pd = Bytes("hi");
  EXPECT_EQ(ToHex(Encode(V2Request(pd))), ToHex(Frame(kReqKey, "50 02 0006 | 8010 c010 | 6869")));
}

TEST(MpaEncodeTest, AllFlagsAndRtrBits) {
  MpaFrame f;
  f.kind = MpaFrameKind::kReply;
  f.markers = true;
  f.crc = true;
  f.reject = true;
  f.revision = 2;
  f.ird_ord = MpaIrdOrd{.p2p = true, .ird = 0x3ffe, .ord = 1, .rtr = kMpaRtrAll};
  EXPECT_EQ(ToHex(Encode(f)), ToHex(Frame(kRepKey, "f0 02 0004 | fffe c001")));
}

TEST(MpaEncodeTest, NoSpaceAtEveryShortSize) {
  auto pd = Bytes("abc");
  MpaFrame f = V2Request(pd);
  const size_t size = MpaFrameSize(f);
  EXPECT_EQ(size, 27u);
  for (size_t n = 0; n < size; ++n) {
    std::vector<uint8_t> out(n);
    auto r = EncodeMpaFrame(f, out);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error(), WireError::kNoSpace) << n;
  }
}

TEST(MpaEncodeTest, InvalidFields) {
  std::array<uint8_t, kMpaMaxFrameSize> out{};
  auto expect_invalid = [&](const MpaFrame& f) {
    auto r = EncodeMpaFrame(f, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), WireError::kInvalidArgument);
  };
  MpaFrame f = V2Request({});
  f.revision = 0;
  expect_invalid(f);
  f.revision = 3;
  expect_invalid(f);
  f.revision = 1;  // IRD/ORD block needs rev 2
  expect_invalid(f);
  f = V2Request({});
  f.reject = true;  // R in a Request
  expect_invalid(f);
  f = V2Request({});
  f.ird_ord->ird = 0x4000;
  expect_invalid(f);
  f = V2Request({});
  f.ird_ord->ord = 0xffff;
  expect_invalid(f);
  f = V2Request({});
  f.ird_ord->rtr = 0x08;
  expect_invalid(f);
}

TEST(MpaEncodeTest, PrivateDataLimitCountsTheBlock) {
  std::vector<uint8_t> pd(509, 0);
  std::array<uint8_t, kMpaMaxFrameSize + 16> out{};
  auto r = EncodeMpaFrame(V2Request(pd), out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaPrivateDataTooLong);
  pd.resize(508);
  auto ok = EncodeMpaFrame(V2Request(pd), out);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), kMpaMaxFrameSize);
}

// ---- Round trips -------------------------------------------------------------

class MpaRoundTripTest : public ::testing::TestWithParam<int> {};

TEST_P(MpaRoundTripTest, EncodeDecodeEncode) {
  static const std::vector<uint8_t> kPd = Bytes("private data of the ULP");
  const int i = GetParam();
  MpaFrame f;
  f.kind = (i & 1) ? MpaFrameKind::kReply : MpaFrameKind::kRequest;
  f.markers = (i & 2) != 0;
  f.crc = (i & 4) != 0;
  f.reject = f.kind == MpaFrameKind::kReply && (i & 8) != 0;
  f.revision = (i & 16) ? 2 : 1;
  if (f.revision == 2 && (i & 32)) {
    f.ird_ord = MpaIrdOrd{.p2p = (i & 64) != 0,
                          .ird = static_cast<uint16_t>(i * 37 % 0x4000),
                          .ord = static_cast<uint16_t>(i * 101 % 0x4000),
                          .rtr = static_cast<MpaRtrMask>(i % 8)};
  }
  if (i & 128) f.private_data = kPd;

  auto bytes = Encode(f);
  auto d = DecodeMpaFrame(bytes, f.kind);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  const MpaFrame& g = d->frame;
  EXPECT_EQ(d->consumed, bytes.size());
  EXPECT_EQ(g.kind, f.kind);
  EXPECT_EQ(g.markers, f.markers);
  EXPECT_EQ(g.crc, f.crc);
  EXPECT_EQ(g.reject, f.reject);
  EXPECT_EQ(g.revision, f.revision);
  EXPECT_EQ(g.ird_ord, f.ird_ord);
  EXPECT_TRUE(SameBytes(g.private_data, f.private_data));
  EXPECT_EQ(ToHex(Encode(g)), ToHex(bytes));
}

INSTANTIATE_TEST_SUITE_P(MpaAllFields, MpaRoundTripTest, ::testing::Range(0, 256));

}  // namespace
}  // namespace iwarpx::wire
