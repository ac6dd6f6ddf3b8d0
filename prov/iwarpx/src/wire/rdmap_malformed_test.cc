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
