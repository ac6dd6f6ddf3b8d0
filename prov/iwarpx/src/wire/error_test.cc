#include "wire/error.h"

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
       e <= static_cast<int>(WireError::kDgramBadSegment); ++e) {
    EXPECT_NE(std::string(ToString(static_cast<WireError>(e))), "unknown wire error") << e;
    EXPECT_TRUE(IsKnownTermCause(TerminateCauseFor(static_cast<WireError>(e)))) << e;
  }
}

}  // namespace
}  // namespace iwarpx::wire
