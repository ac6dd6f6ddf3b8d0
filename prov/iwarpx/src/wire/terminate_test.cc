#include "wire/terminate.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"
#include "wire/rdmap.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;

// Offending segments used as terminated headers.
const char kWriteSeg[] = "c1 40 00001234 0000000000001000 | deadbeef";  // 14 + 4
const char kSendInvSeg[] = "41 44 0000beef 00000000 00000002 00000000 | 00";
const char kReadReqSeg[] =
    "41 41 00000000 00000001 00000001 00000000 |"
    "00000abc 0000000000002000 00000100 00000def 0000000000003000";

std::vector<uint8_t> Cat(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  std::vector<uint8_t> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<uint8_t> RoundTrip(const TerminateHeader& t) {
  std::vector<uint8_t> out(kTerminateMaxBodySize);
  auto n = EncodeTerminate(t, out);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : ToString(n.error()));
  out.resize(n.ok() ? n.value() : 0);
  return out;
}

WireError DecodeError(const std::vector<uint8_t>& body) {
  auto t = DecodeTerminate(body);
  EXPECT_FALSE(t.ok()) << ToHex(body);
  return t.ok() ? WireError::kInvalidArgument : t.error();
}

// ------------------------------------------------------------------ decode --

TEST(TerminateDecodeTest, ControlWordOnly) {
  // tshark: iwarp_rdma.term_layer=RDMA term_etype_rdma=Remote Operation Error
  // term_errcode_rdma=Unexpected OpCode, hdrct m=0 d=0 r=0.
  const auto body = FromHex("02 06 00 00");
  auto t = DecodeTerminate(body);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->cause, term::kRdmapUnexpectedOpcode);
  EXPECT_FALSE(t->m);
  EXPECT_FALSE(t->d);
  EXPECT_FALSE(t->r);
  EXPECT_TRUE(t->ddp_header.empty());
  EXPECT_TRUE(t->rdmap_header.empty());
  EXPECT_EQ(t->size(), 4u);
  EXPECT_EQ(RoundTrip(t.value()), body);
}

TEST(TerminateDecodeTest, TaggedDdpHeaderLikeSiw) {
  // DDP / tagged / invalid STag; M and D; siw writes the payload length (4).
  const auto body = FromHex("11 00 c0 00 | 0004 | c1 40 00001234 0000000000001000");
  auto t = DecodeTerminate(body);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->cause, term::kDdpTaggedInvalidStag);
  EXPECT_TRUE(t->m);
  EXPECT_TRUE(t->d);
  EXPECT_FALSE(t->r);
  EXPECT_EQ(t->ddp_segment_length, 4u);
  EXPECT_EQ(ToHex(t->ddp_header), "c140000012340000000000001000");
  EXPECT_EQ(t->ddp_header.data(), body.data() + 6);
  EXPECT_EQ(RoundTrip(t.value()), body);
}

TEST(TerminateDecodeTest, UntaggedDdpHeader) {
  // DDP / untagged / invalid MSN range, terminated Send header.
  const auto body = FromHex("12 03 c0 00 | 0013 | 41 43 00000000 00000000 00000009 00000000");
  auto t = DecodeTerminate(body);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->cause, term::kDdpUntaggedMsnRange);
  EXPECT_EQ(t->ddp_header.size(), 18u);
  EXPECT_EQ(t->ddp_segment_length, 0x13u);
  EXPECT_EQ(RoundTrip(t.value()), body);
}

TEST(TerminateDecodeTest, ReadRequestWithRdmapHeader) {
  // RDMAP / remote protection / base-bounds, M D R, Read Request attached.
  const auto body = Cat(FromHex("01 01 e0 00 | 002e"), FromHex(kReadReqSeg));
  ASSERT_EQ(body.size(), 52u);
  auto t = DecodeTerminate(body);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->cause, term::kRdmapBaseBounds);
  EXPECT_TRUE(t->r);
  EXPECT_EQ(t->ddp_header.size(), 18u);
  ASSERT_EQ(t->rdmap_header.size(), 28u);
  auto rr = DecodeReadRequestBody(t->rdmap_header);
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(rr->sink_stag, 0xABCu);
  EXPECT_EQ(rr->source_to, 0x3000u);
  EXPECT_EQ(RoundTrip(t.value()), body);
}

TEST(TerminateDecodeTest, SiwRFlagWithoutRdmapHeaderIsAccepted) {
  // siw: remote protection on a Send with Invalidate sets M|D|R but attaches
  // only the 18-byte DDP header.
  const auto body = FromHex("01 09 e0 00 | 0001 | 41 44 0000beef 00000000 00000002 00000000");
  auto t = DecodeTerminate(body);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->cause, term::kRdmapCannotInvalidateProt);
  EXPECT_TRUE(t->r);
  EXPECT_TRUE(t->rdmap_header.empty());
  EXPECT_EQ(RoundTrip(t.value()), body);
  // Not for a tagged header, and not without D.
  EXPECT_EQ(DecodeError(FromHex("01 00 e0 00 | 0000 | c1 40 00001234 0000000000001000")),
            WireError::kTerminateMissingFlags);
  EXPECT_EQ(DecodeError(FromHex("01 00 20 00")), WireError::kTerminateMissingFlags);
}

TEST(TerminateDecodeTest, LenientCombinations) {
  // D without M: header present, length not valid.
  auto t = DecodeTerminate(FromHex("11 01 40 00 | ffff | c1 40 00001234 0000000000001000"));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->m);
  EXPECT_TRUE(t->d);
  EXPECT_EQ(t->ddp_segment_length, 0xFFFFu);
  // R without D: the 28 bytes follow the control word directly.
  const auto r_only = Cat(FromHex("01 01 20 00"), std::vector<uint8_t>(28, 0x5A));
  t = DecodeTerminate(r_only);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rdmap_header.size(), 28u);
  EXPECT_EQ(RoundTrip(t.value()), r_only);
  // The terminated DDP header is not validated (bad DV, reserved opcode).
  t = DecodeTerminate(FromHex("11 04 c0 00 | 0000 | c0 4f 00001234 0000000000001000"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->cause, term::kDdpTaggedBadVersion);
}

TEST(TerminateDecodeTest, CausesAreChecked) {
  // Every cause IsKnownTermCause() accepts decodes; a sample of others fail.
  for (int layer = 0; layer < 16; ++layer) {
    for (int etype = 0; etype < 16; ++etype) {
      for (int code = 0; code < 256; ++code) {
        const TermCause c{static_cast<uint8_t>(layer), static_cast<uint8_t>(etype),
                          static_cast<uint8_t>(code)};
        const std::vector<uint8_t> body = {static_cast<uint8_t>(layer << 4 | etype),
                                           static_cast<uint8_t>(code), 0, 0};
        auto t = DecodeTerminate(body);
        const bool want = IsKnownTermCause(c);
        ASSERT_EQ(t.ok(), want) << layer << "/" << etype << "/" << code;
        if (!want) {
          ASSERT_EQ(t.error(), WireError::kTerminateBadCause);
        }
      }
    }
  }
  EXPECT_TRUE(DecodeTerminate(FromHex("00 ff 00 00")).ok());  // siw: catastrophic, 0xFF
  EXPECT_EQ(DecodeError(FromHex("10 05 00 00")), WireError::kTerminateBadCause);
  EXPECT_EQ(DecodeError(FromHex("30 00 00 00")), WireError::kTerminateBadCause);
  EXPECT_EQ(DecodeError(FromHex("03 00 00 00")), WireError::kTerminateBadCause);
  EXPECT_EQ(DecodeError(FromHex("21 01 00 00")), WireError::kTerminateBadCause);
}

TEST(TerminateDecodeTest, ReservedBits) {
  for (uint8_t bit = 1; bit < 0x20; bit = static_cast<uint8_t>(bit << 1)) {
    EXPECT_EQ(DecodeError({0x02, 0x06, bit, 0x00}), WireError::kRdmapReservedBits);
  }
  for (int bit = 0; bit < 8; ++bit) {
    EXPECT_EQ(DecodeError({0x02, 0x06, 0x00, static_cast<uint8_t>(1 << bit)}),
              WireError::kRdmapReservedBits);
  }
}

TEST(TerminateDecodeTest, FlagsMustMatchContent) {
  EXPECT_EQ(DecodeError({}), WireError::kTruncated);
  EXPECT_EQ(DecodeError(FromHex("02 06 00")), WireError::kTruncated);
  // M without D.
  EXPECT_EQ(DecodeError(FromHex("02 06 80 00")), WireError::kTerminateMissingFlags);
  EXPECT_EQ(DecodeError(FromHex("02 06 80 00 | 0000 | c1 40 00001234 0000000000001000")),
            WireError::kTerminateMissingFlags);
  // D without the length, without the header, with a short header.
  EXPECT_EQ(DecodeError(FromHex("11 00 c0 00")), WireError::kTerminateMissingFlags);
  EXPECT_EQ(DecodeError(FromHex("11 00 c0 00 | 00")), WireError::kTerminateMissingFlags);
  EXPECT_EQ(DecodeError(FromHex("11 00 c0 00 | 0000")), WireError::kTerminateMissingFlags);
  EXPECT_EQ(DecodeError(FromHex("11 00 c0 00 | 0000 | c1 40 00001234 00000000000010")),
            WireError::kTerminateMissingFlags);
  // An untagged header needs 18 bytes, not 14.
  EXPECT_EQ(DecodeError(FromHex("12 01 c0 00 | 0000 | 41 43 00000000 00000000 00000001")),
            WireError::kTerminateMissingFlags);
  // R with 27 / 29 bytes.
  const auto dr = FromHex("01 01 e0 00 | 002e | 41 41 00000000 00000001 00000001 00000000");
  EXPECT_EQ(DecodeError(Cat(dr, std::vector<uint8_t>(27))), WireError::kTerminateMissingFlags);
  EXPECT_EQ(DecodeError(Cat(dr, std::vector<uint8_t>(29))), WireError::kTerminateMissingFlags);
  EXPECT_TRUE(DecodeTerminate(Cat(dr, std::vector<uint8_t>(28))).ok());
  // Bytes beyond what the flags announce.
  EXPECT_EQ(DecodeError(FromHex("02 06 00 00 | 00")), WireError::kTerminateMissingFlags);
  EXPECT_EQ(DecodeError(FromHex("11 00 c0 00 | 0000 | c1 40 00001234 0000000000001000 | 00")),
            WireError::kTerminateMissingFlags);
  // A Read Request's body without R (siw never sends this; it would be ambiguous).
  EXPECT_EQ(DecodeError(Cat(FromHex("02 07 c0 00 | 002e"), FromHex(kReadReqSeg))),
            WireError::kTerminateMissingFlags);
}

// ------------------------------------------------------------------ encode --

TEST(TerminateEncodeTest, RefusesWhatTheDecoderRefuses) {
  std::vector<uint8_t> out(64);
  const auto write = FromHex(kWriteSeg);
  TerminateHeader t;
  t.cause = TermCause{3, 0, 0};
  EXPECT_EQ(EncodeTerminate(t, out).error(), WireError::kInvalidArgument);
  t.cause = TermCause{0x10, 0, 0};  // does not fit 4 bits
  EXPECT_EQ(EncodeTerminate(t, out).error(), WireError::kInvalidArgument);
  t.cause = term::kDdpTaggedInvalidStag;
  t.m = true;  // M without D
  EXPECT_EQ(EncodeTerminate(t, out).error(), WireError::kInvalidArgument);
  t.d = true;  // D without a header
  EXPECT_EQ(EncodeTerminate(t, out).error(), WireError::kInvalidArgument);
  t.ddp_header = ByteSpan(write).first(18);  // T=1 header must be 14 bytes
  EXPECT_EQ(EncodeTerminate(t, out).error(), WireError::kInvalidArgument);
  t.ddp_header = ByteSpan(write).first(14);
  EXPECT_EQ(EncodeTerminate(t, out).value(), 20u);
  t.r = true;  // R without 28 bytes after a tagged header
  EXPECT_EQ(EncodeTerminate(t, out).error(), WireError::kInvalidArgument);
  t.rdmap_header = ByteSpan(write).first(10);
  EXPECT_EQ(EncodeTerminate(t, out).error(), WireError::kInvalidArgument);
  TerminateHeader u;
  u.cause = term::kRdmapOpUnspecified;
  u.ddp_segment_length = 4;  // a length without D
  EXPECT_EQ(EncodeTerminate(u, out).error(), WireError::kInvalidArgument);
  u.ddp_segment_length = 0;
  u.ddp_header = ByteSpan(write).first(14);  // a header without D
  EXPECT_EQ(EncodeTerminate(u, out).error(), WireError::kInvalidArgument);
  u.ddp_header = {};
  std::vector<uint8_t> small(3);
  EXPECT_EQ(EncodeTerminate(u, small).error(), WireError::kNoSpace);
}

TEST(TerminateEncodeTest, WholeSegmentRoundTrip) {
  const auto offending = FromHex(kWriteSeg);
  const TerminateHeader t = MakeTerminate(term::kDdpTaggedBaseBounds, offending);
  std::vector<uint8_t> out(kDdpUntaggedHeaderSize + kTerminateMaxBodySize);
  auto n = EncodeTerminateSegment(1, t, out);
  ASSERT_TRUE(n.ok());
  out.resize(n.value());
  EXPECT_EQ(ToHex(out),
            "414700000000000000020000000100000000"  // DDP: QN 2, MSN 1, MO 0, L 1
            "1101c000"                              // DDP / tagged / base-bounds, M D
            "0012"                                  // segment length 18
            "c140000012340000000000001000");        // the terminated header
  auto seg = ParseSegment(out);
  ASSERT_TRUE(seg.ok());
  const auto* view = std::get_if<TerminateBodyView>(&seg->body);
  ASSERT_NE(view, nullptr);
  auto back = DecodeTerminate(view->bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->cause, term::kDdpTaggedBaseBounds);
  EXPECT_EQ(back->ddp_segment_length, 18u);
  std::vector<uint8_t> small(20);
  EXPECT_EQ(EncodeTerminateSegment(1, t, small).error(), WireError::kNoSpace);
}

// -------------------------------------------------------------------- make --

TEST(TerminateMakeTest, DdpErrorCarriesTheDdpHeader) {
  const auto offending = FromHex(kWriteSeg);
  const TerminateHeader t = MakeTerminate(term::kDdpTaggedInvalidStag, offending);
  EXPECT_TRUE(t.m);
  EXPECT_TRUE(t.d);
  EXPECT_FALSE(t.r);
  EXPECT_EQ(t.ddp_segment_length, 18u);
  EXPECT_EQ(t.ddp_header.size(), 14u);
  EXPECT_EQ(ToHex(RoundTrip(t)), "1100c0000012c140000012340000000000001000");
}

TEST(TerminateMakeTest, RdmapErrorOnReadRequestCarriesBothHeaders) {
  const auto offending = FromHex(kReadReqSeg);
  const TerminateHeader t = MakeTerminate(term::kRdmapAccessRights, offending);
  EXPECT_TRUE(t.m && t.d && t.r);
  EXPECT_EQ(t.ddp_header.size(), 18u);
  EXPECT_EQ(t.rdmap_header.size(), 28u);
  EXPECT_EQ(t.size(), 52u);
  EXPECT_TRUE(DecodeTerminate(RoundTrip(t)).ok());
  // A DDP-layer error on the same Read Request carries only the DDP header.
  const TerminateHeader d = MakeTerminate(term::kDdpUntaggedMsnRange, offending);
  EXPECT_TRUE(d.d);
  EXPECT_FALSE(d.r);
  // RDMAP error on a Send: DDP header only (no RDMAP header exists).
  const auto send = FromHex(kSendInvSeg);
  const TerminateHeader s = MakeTerminate(term::kRdmapCannotInvalidateOp, send);
  EXPECT_TRUE(s.d);
  EXPECT_FALSE(s.r);
  EXPECT_EQ(s.ddp_header.size(), 18u);
}

TEST(TerminateMakeTest, NoHeadersWhenTheLayoutIsUnknown) {
  const auto offending = FromHex(kWriteSeg);
  for (TermCause c : {term::kDdpTaggedBadVersion, term::kDdpUntaggedBadVersion,
                      term::kRdmapBadVersion, term::kRdmapLocalCatastrophic,
                      term::kDdpLocalCatastrophic, term::kLlpCrcError, term::kLlpStreamLost}) {
    const TerminateHeader t = MakeTerminate(c, offending);
    EXPECT_FALSE(t.m || t.d || t.r);
    EXPECT_EQ(t.size(), 4u);
    EXPECT_EQ(RoundTrip(t).size(), 4u);
  }
  // Too few bytes for the offending header: nothing attached.
  const TerminateHeader t =
      MakeTerminate(term::kDdpTaggedInvalidStag, ByteSpan(offending).first(13));
  EXPECT_FALSE(t.d);
  EXPECT_FALSE(MakeTerminate(term::kRdmapOpUnspecified).d);
}

TEST(TerminateMakeTest, SegmentLengthIsClamped) {
  const auto offending = FromHex(kWriteSeg);
  EXPECT_EQ(MakeTerminate(term::kDdpTaggedToWrap, offending, 70000).ddp_segment_length, 0xFFFFu);
  EXPECT_EQ(
      MakeTerminate(term::kDdpTaggedToWrap, ByteSpan(offending).first(14), 1000).ddp_segment_length,
      1000u);
}

}  // namespace
}  // namespace iwarpx::wire
