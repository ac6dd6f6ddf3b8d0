// Malformed segments: every check ParseSegment() makes returns its own error,
// and those errors map to the RFC's Terminate causes.
#include <cstdint>
#include <initializer_list>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"
#include "wire/rdmap.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;

std::vector<uint8_t> Cat(std::initializer_list<ByteSpan> parts) {
  std::vector<uint8_t> out;
  for (ByteSpan p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

WireError ParseError(const std::vector<uint8_t>& bytes) {
  auto seg = ParseSegment(bytes);
  EXPECT_FALSE(seg.ok()) << ToHex(bytes);
  return seg.ok() ? WireError::kInvalidArgument : seg.error();
}

// A valid untagged header for `op` as hex pieces that tests then break.
std::vector<uint8_t> Untagged(uint8_t ctrl, uint8_t rdmap, uint32_t rsvd, uint32_t qn, uint32_t msn,
                              uint32_t mo, ByteSpan rest = {}) {
  DdpHeader h;
  h.tagged = false;
  h.last = (ctrl & kDdpFlagLast) != 0;
  h.rsvd_ulp0 = rdmap;
  h.rsvd_ulp1_4 = rsvd;
  h.qn = qn;
  h.msn = msn;
  h.mo = mo;
  auto bytes = EncodeDdpHeader(h);
  bytes.bytes[0] = ctrl;
  return Cat({bytes.view(), rest});
}

const std::vector<uint8_t> kRrBody(28, 0);

TEST(RdmapMalformedTest, Truncated) {
  EXPECT_EQ(ParseError({}), WireError::kTruncated);
  EXPECT_EQ(ParseError({0x41}), WireError::kTruncated);
  EXPECT_EQ(ParseError(FromHex("c1 40 00001234 00000000000010")), WireError::kTruncated);
  EXPECT_EQ(ParseError(FromHex("41 43 00000000 00000000 00000001 000000")), WireError::kTruncated);
}

TEST(RdmapMalformedTest, DdpVersionAndReservedBits) {
  EXPECT_EQ(ParseError(FromHex("c0 40 00001234 0000000000001000")),
            WireError::kDdpTaggedBadVersion);
  EXPECT_EQ(ParseError(FromHex("c3 40 00001234 0000000000001000")),
            WireError::kDdpTaggedBadVersion);
  EXPECT_EQ(ParseError(Untagged(0x42, 0x43, 0, 0, 1, 0)), WireError::kDdpUntaggedBadVersion);
  EXPECT_EQ(ParseError(Untagged(0x40, 0x43, 0, 0, 1, 0)), WireError::kDdpUntaggedBadVersion);
  for (int bit : {0x04, 0x08, 0x10, 0x20}) {
    EXPECT_EQ(ParseError(Untagged(static_cast<uint8_t>(0x41 | bit), 0x43, 0, 0, 1, 0)),
              WireError::kDdpReservedBits);
  }
}

TEST(RdmapMalformedTest, RdmapVersionReservedAndOpcode) {
  EXPECT_EQ(ParseError(Untagged(0x41, 0x03, 0, 0, 1, 0)), WireError::kRdmapBadVersion);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x83, 0, 0, 1, 0)), WireError::kRdmapBadVersion);
  EXPECT_EQ(ParseError(Untagged(0x41, 0xC3, 0, 0, 1, 0)), WireError::kRdmapBadVersion);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x53, 0, 0, 1, 0)), WireError::kRdmapReservedBits);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x63, 0, 0, 1, 0)), WireError::kRdmapReservedBits);
  for (uint8_t op = 0x0C; op <= 0x0F; ++op) {
    EXPECT_EQ(ParseError(Untagged(0x41, static_cast<uint8_t>(0x40 | op), 0, 0, 1, 0)),
              WireError::kRdmapBadOpcode);
    EXPECT_EQ(ParseError(Cat({FromHex("c1"), std::vector<uint8_t>{static_cast<uint8_t>(0x40 | op)},
                              FromHex("00000001 0000000000000000")})),
              WireError::kRdmapBadOpcode);
  }
}

TEST(RdmapMalformedTest, TaggedFlagWrongForOpcode) {
  // Untagged Write / Read Response, tagged Send / Read Request / Terminate.
  EXPECT_EQ(ParseError(Untagged(0x41, 0x40, 0, 0, 1, 0)), WireError::kRdmapBadHeaderForOpcode);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x42, 0, 0, 1, 0)), WireError::kRdmapBadHeaderForOpcode);
  for (int op : {0x41, 0x43, 0x47, 0x48, 0x4A, 0x4B}) {
    EXPECT_EQ(ParseError(Cat({FromHex("c1"), std::vector<uint8_t>{static_cast<uint8_t>(op)},
                              FromHex("00000001 0000000000000000"), kRrBody})),
              WireError::kRdmapBadHeaderForOpcode);
  }
}

TEST(RdmapMalformedTest, QueueNumberWrongForOpcode) {
  EXPECT_EQ(ParseError(Untagged(0x41, 0x43, 0, 1, 1, 0)), WireError::kDdpBadQueueNumber);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x43, 0, 4, 1, 0)), WireError::kDdpBadQueueNumber);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x44, 0, 2, 1, 0)), WireError::kDdpBadQueueNumber);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x41, 0, 0, 1, 0, kRrBody)), WireError::kDdpBadQueueNumber);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x47, 0, 0, 1, 0, FromHex("02ff0000"))),
            WireError::kDdpBadQueueNumber);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x48, 0, 1, 1, 0, FromHex("0000000000000000"))),
            WireError::kDdpBadQueueNumber);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x4A, 0, 3, 1, 0, std::vector<uint8_t>(52))),
            WireError::kDdpBadQueueNumber);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x4B, 0, 1, 1, 0, std::vector<uint8_t>(12))),
            WireError::kDdpBadQueueNumber);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x43, 0, 0xFFFFFFFF, 1, 0)), WireError::kDdpBadQueueNumber);
}

TEST(RdmapMalformedTest, SingleSegmentOpcodesNeedLastAndZeroOffset) {
  struct Case {
    uint8_t rdmap;
    uint32_t qn;
    size_t body;
  };
  for (const Case& c : {Case{0x41, 1, 28}, Case{0x47, 2, 4}, Case{0x48, 0, 8}, Case{0x49, 0, 8},
                        Case{0x4A, 1, 52}, Case{0x4B, 3, 12}}) {
    SCOPED_TRACE(c.rdmap);
    const std::vector<uint8_t> body(c.body, 0);
    EXPECT_EQ(ParseError(Untagged(0x41, c.rdmap, 0, c.qn, 1, 8, body)),
              WireError::kDdpBadMessageOffset);
    EXPECT_EQ(ParseError(Untagged(0x01, c.rdmap, 0, c.qn, 1, 0, body)),
              WireError::kRdmapBadHeaderForOpcode);
  }
  // The Send family may be segmented.
  EXPECT_TRUE(ParseSegment(Untagged(0x01, 0x43, 0, 0, 1, 4096, FromHex("00"))).ok());
}

TEST(RdmapMalformedTest, InvalidateStagOnlyOnSendWithInvalidate) {
  EXPECT_TRUE(ParseSegment(Untagged(0x41, 0x44, 0xBEEF, 0, 1, 0)).ok());
  EXPECT_TRUE(ParseSegment(Untagged(0x41, 0x46, 0xBEEF, 0, 1, 0)).ok());
  EXPECT_EQ(ParseError(Untagged(0x41, 0x43, 0xBEEF, 0, 1, 0)), WireError::kRdmapBadHeaderForOpcode);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x45, 0x01000000, 0, 1, 0)),
            WireError::kRdmapBadHeaderForOpcode);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x41, 1, 1, 1, 0, kRrBody)),
            WireError::kRdmapBadHeaderForOpcode);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x47, 1, 2, 1, 0, FromHex("02ff0000"))),
            WireError::kRdmapBadHeaderForOpcode);
  EXPECT_EQ(ParseError(Untagged(0x41, 0x4B, 1, 3, 1, 0, std::vector<uint8_t>(12))),
            WireError::kRdmapBadHeaderForOpcode);
}

// iwarpx Send with Immediate Data: RsvdULP[1..4] == kSendImmFollows on the
// last segment of a Send / Send with SE, accepted only with the option.
WireError ParseErrorWith(const std::vector<uint8_t>& bytes, const ParseOptions& options) {
  auto seg = ParseSegment(bytes, options);
  EXPECT_FALSE(seg.ok()) << ToHex(bytes);
  return seg.ok() ? WireError::kInvalidArgument : seg.error();
}

TEST(RdmapSendImmTest, FlagAcceptedOnlyWhenNegotiatedOnLastSendSegment) {
  const ParseOptions on{.accept_send_imm = true};
  const std::vector<uint8_t> payload = FromHex("aabbcc");
  for (uint8_t op : {uint8_t{0x43}, uint8_t{0x45}}) {
    SCOPED_TRACE(op);
    const auto last = Untagged(0x41, op, kSendImmFollows, 0, 7, 0, payload);
    // Not negotiated: refused exactly as any other reserved value.
    EXPECT_EQ(ParseError(last), WireError::kRdmapBadHeaderForOpcode);
    auto seg = ParseSegment(last, on);
    ASSERT_TRUE(seg.ok()) << ToString(seg.error());
    EXPECT_TRUE(seg->send_imm_follows());
    EXPECT_EQ(seg->ddp.rsvd_ulp1_4, kSendImmFollows);
    EXPECT_EQ(seg->payload.size(), 3u);
    // Re-encodes to the identical bytes.
    std::vector<uint8_t> out(18);
    ASSERT_EQ(EncodeSegmentHeader(*seg, out).value(), 18u);
    EXPECT_EQ(out, std::vector<uint8_t>(last.begin(), last.begin() + 18));
    // On a segment that is not the last one: refused.
    EXPECT_EQ(ParseErrorWith(Untagged(0x01, op, kSendImmFollows, 0, 7, 0, payload), on),
              WireError::kRdmapBadHeaderForOpcode);
    // Any other non-zero value: refused.
    for (uint32_t v : {2u, 0x100u, 0x80000001u, 0xFFFFFFFFu}) {
      EXPECT_EQ(ParseErrorWith(Untagged(0x41, op, v, 0, 7, 0, payload), on),
                WireError::kRdmapBadHeaderForOpcode)
          << v;
    }
    // A plain last segment is no announcement.
    auto plain = ParseSegment(Untagged(0x41, op, 0, 0, 7, 0, payload), on);
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE(plain->send_imm_follows());
  }
}

TEST(RdmapSendImmTest, OtherOpcodesStillRefuseTheValue) {
  const ParseOptions on{.accept_send_imm = true};
  EXPECT_EQ(ParseErrorWith(Untagged(0x41, 0x41, 1, 1, 1, 0, kRrBody), on),
            WireError::kRdmapBadHeaderForOpcode);
  EXPECT_EQ(ParseErrorWith(Untagged(0x41, 0x48, 1, 0, 1, 0, std::vector<uint8_t>(8)), on),
            WireError::kRdmapBadHeaderForOpcode);
  EXPECT_EQ(ParseErrorWith(Untagged(0x41, 0x4B, 1, 3, 1, 0, std::vector<uint8_t>(12)), on),
            WireError::kRdmapBadHeaderForOpcode);
  // With Invalidate the field is the STag: 1 is just STag 1, no announcement.
  auto inval = ParseSegment(Untagged(0x41, 0x44, 1, 0, 1, 0), on);
  ASSERT_TRUE(inval.ok());
  EXPECT_FALSE(inval->send_imm_follows());
}

TEST(RdmapSendImmTest, EncodeSendHeaderWritesTheFlag) {
  std::vector<uint8_t> out(18);
  SendParams p;
  p.msn = 9;
  p.imm_follows = true;
  ASSERT_EQ(EncodeSendHeader(p, out).value(), 18u);
  EXPECT_EQ(ToHex(out), ToHex(FromHex("41 43 00000001 00000000 00000009 00000000")));
  p.last = false;
  EXPECT_EQ(EncodeSendHeader(p, out).error(), WireError::kInvalidArgument);
  p.last = true;
  p.invalidate = true;
  EXPECT_EQ(EncodeSendHeader(p, out).error(), WireError::kInvalidArgument);
}

TEST(RdmapMalformedTest, BodyLengthWrongForOpcode) {
  struct Case {
    uint8_t rdmap;
    uint32_t qn;
    size_t body;
  };
  for (const Case& c : {Case{0x41, 1, 28}, Case{0x48, 0, 8}, Case{0x49, 0, 8}, Case{0x4A, 1, 52},
                        Case{0x4B, 3, 12}}) {
    SCOPED_TRACE(c.rdmap);
    EXPECT_TRUE(
        ParseSegment(Untagged(0x41, c.rdmap, 0, c.qn, 1, 0, std::vector<uint8_t>(c.body, 0))).ok());
    EXPECT_EQ(
        ParseError(Untagged(0x41, c.rdmap, 0, c.qn, 1, 0, std::vector<uint8_t>(c.body - 1, 0))),
        WireError::kRdmapBadLength);
    EXPECT_EQ(
        ParseError(Untagged(0x41, c.rdmap, 0, c.qn, 1, 0, std::vector<uint8_t>(c.body + 1, 0))),
        WireError::kRdmapBadLength);
    EXPECT_EQ(ParseError(Untagged(0x41, c.rdmap, 0, c.qn, 1, 0)), WireError::kRdmapBadLength);
  }
  EXPECT_EQ(ParseError(Untagged(0x41, 0x47, 0, 2, 1, 0, FromHex("02ff00"))),
            WireError::kRdmapBadLength);
  // Terminate: 4..52 body bytes (control word + length + 18 + 28).
  EXPECT_TRUE(ParseSegment(Untagged(0x41, 0x47, 0, 2, 1, 0, std::vector<uint8_t>(52))).ok());
  EXPECT_EQ(ParseError(Untagged(0x41, 0x47, 0, 2, 1, 0, std::vector<uint8_t>(53))),
            WireError::kRdmapBadLength);
}

TEST(RdmapMalformedTest, AtomicBodyErrorsSurfaceThroughParseSegment) {
  auto body = std::vector<uint8_t>(52, 0);
  body[3] = 0x03;  // AtomicOp 3: reserved
  EXPECT_EQ(ParseError(Untagged(0x41, 0x4A, 0, 1, 1, 0, body)), WireError::kAtomicBadOp);
  body[3] = 0x10;  // reserved bit next to AtomicOp
  EXPECT_EQ(ParseError(Untagged(0x41, 0x4A, 0, 1, 1, 0, body)), WireError::kRdmapReservedBits);
}

TEST(RdmapMalformedTest, TaggedOffsetWrap) {
  const auto max_to = FromHex("c1 40 00001234 ffffffffffffffff");
  EXPECT_TRUE(ParseSegment(max_to).ok());                        // 0 bytes
  EXPECT_TRUE(ParseSegment(Cat({max_to, FromHex("aa")})).ok());  // the last byte of 2^64
  EXPECT_EQ(ParseError(Cat({max_to, FromHex("aabb")})), WireError::kDdpToWrap);
  const auto rresp = FromHex("c1 42 00001234 fffffffffffffffd");
  EXPECT_TRUE(ParseSegment(Cat({rresp, FromHex("aabbcc")})).ok());
  EXPECT_EQ(ParseError(Cat({rresp, FromHex("aabbccdd")})), WireError::kDdpToWrap);
}

TEST(RdmapTermCauseTest, DecodeErrorsMapToRfcCauses) {
  EXPECT_EQ(TerminateCauseFor(WireError::kDdpTaggedBadVersion), term::kDdpTaggedBadVersion);
  EXPECT_EQ(TerminateCauseFor(WireError::kDdpTaggedBadVersion), (TermCause{1, 1, 0x04}));
  EXPECT_EQ(TerminateCauseFor(WireError::kDdpUntaggedBadVersion), (TermCause{1, 2, 0x06}));
  EXPECT_EQ(TerminateCauseFor(WireError::kDdpBadQueueNumber), (TermCause{1, 2, 0x01}));
  EXPECT_EQ(TerminateCauseFor(WireError::kDdpBadMessageOffset), (TermCause{1, 2, 0x04}));
  EXPECT_EQ(TerminateCauseFor(WireError::kDdpToWrap), (TermCause{1, 1, 0x03}));
  EXPECT_EQ(TerminateCauseFor(WireError::kRdmapBadVersion), (TermCause{0, 2, 0x05}));
  EXPECT_EQ(TerminateCauseFor(WireError::kRdmapBadOpcode), (TermCause{0, 2, 0x06}));
  // No dedicated RFC code: RDMAP / remote operation / unspecified.
  for (WireError e :
       {WireError::kTruncated, WireError::kDdpReservedBits, WireError::kRdmapReservedBits,
        WireError::kRdmapBadHeaderForOpcode, WireError::kRdmapBadLength, WireError::kAtomicBadOp}) {
    EXPECT_EQ(TerminateCauseFor(e), (TermCause{0, 2, 0xFF})) << ToString(e);
  }
  for (WireError e : {WireError::kDdpTaggedBadVersion, WireError::kDdpUntaggedBadVersion,
                      WireError::kDdpBadQueueNumber, WireError::kDdpBadMessageOffset,
                      WireError::kDdpToWrap, WireError::kRdmapBadVersion,
                      WireError::kRdmapBadOpcode, WireError::kRdmapBadHeaderForOpcode}) {
    EXPECT_TRUE(IsKnownTermCause(TerminateCauseFor(e))) << ToString(e);
  }
}

}  // namespace
}  // namespace iwarpx::wire
