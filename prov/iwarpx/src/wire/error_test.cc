#include "wire/error.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace iwarpx::wire {
namespace {

TEST(TermCauseTable, RfcCausesAreKnown) {
  // One sample of every row of the RFC 5040/5041/5044/6581 table (WIRE.md §4.5).
  for (TermCause c :
       {term::kRdmapInvalidStag, term::kRdmapToWrap, term::kRdmapProtUnspecified,
        term::kRdmapBadVersion, term::kRdmapCannotInvalidateOp, term::kRdmapOpUnspecified,
        term::kDdpLocalCatastrophic, term::kDdpTaggedBadVersion, term::kDdpUntaggedInvalidQn,
        term::kDdpUntaggedBadVersion, term::kLlpStreamLost, term::kLlpCrcError,
        term::kLlpNoMatchingRtr}) {
    EXPECT_TRUE(IsKnownTermCause(c)) << int{c.layer} << "/" << int{c.etype} << "/" << int{c.code};
  }
  // RDMAP local catastrophic takes any code (IANA 0x0/0x0/ALL; siw sends 0xFF).
  EXPECT_TRUE(IsKnownTermCause({0, 0, 0xFF}));
}

TEST(TermCauseTable, OthersAreUnknown) {
  EXPECT_FALSE(IsKnownTermCause({0, 1, 0x05}));  // protection codes stop at 0x04 (+0x09, 0xFF)
  EXPECT_FALSE(IsKnownTermCause({0, 2, 0x04}));  // operation codes start at 0x05
  EXPECT_FALSE(IsKnownTermCause({0, 3, 0x00}));  // no RDMAP etype 3
  EXPECT_FALSE(IsKnownTermCause({1, 1, 0x05}));
  EXPECT_FALSE(IsKnownTermCause({1, 2, 0x00}));
  EXPECT_FALSE(IsKnownTermCause({1, 2, 0x07}));
  EXPECT_FALSE(IsKnownTermCause({2, 0, 0x00}));
  EXPECT_FALSE(IsKnownTermCause({2, 0, 0x08}));
  EXPECT_FALSE(IsKnownTermCause({2, 1, 0x01}));
  EXPECT_FALSE(IsKnownTermCause({3, 0, 0x00}));  // no layer 3
}

TEST(WireErrorNames, EveryErrorHasAName) {
  for (int e = static_cast<int>(WireError::kTruncated);
       e <= static_cast<int>(WireError::kSctpNoDdpAdaptation); ++e) {
    EXPECT_NE(std::string(ToString(static_cast<WireError>(e))), "unknown wire error") << e;
    EXPECT_TRUE(IsKnownTermCause(TerminateCauseFor(static_cast<WireError>(e)))) << e;
  }
}

TEST(TermCauseText, EveryKnownCauseHasItsOwnText) {
  std::set<std::string> texts;
  int known = 0;
  for (int layer = 0; layer < 4; ++layer) {
    for (int etype = 0; etype < 16; ++etype) {
      for (int code = 0; code < 256; ++code) {
        const TermCause c{static_cast<uint8_t>(layer), static_cast<uint8_t>(etype),
                          static_cast<uint8_t>(code)};
        const std::string t = ToString(c);
        EXPECT_FALSE(t.empty());
        if (IsKnownTermCause(c) && !(layer == 0 && etype == 0)) {
          EXPECT_EQ(t.find("unknown"), std::string::npos) << layer << "/" << etype << "/" << code;
          texts.insert(t);
          ++known;
        }
      }
    }
  }
  EXPECT_EQ(static_cast<int>(texts.size()), known);  // no two causes share a text
  EXPECT_STREQ(ToString(term::kDdpTaggedBaseBounds), "DDP tagged buffer: base or bounds violation");
  EXPECT_STREQ(ToString(term::kRdmapLocalCatastrophic), "RDMAP local catastrophic error");
}

}  // namespace
}  // namespace iwarpx::wire
