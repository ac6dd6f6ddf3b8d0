// fi_rx_addr arithmetic: what libfabric's own fi_rx_addr() builds splits
// back into (entry, index) for every allowed width, and the widths and AV
// sizes that cannot be honoured are named.
#include "ofi/rx_addr.h"

#include <gtest/gtest.h>
#include <rdma/fi_endpoint.h>

namespace iwarpx::ofi {
namespace {

TEST(RxAddrTest, SplitsWhatFiRxAddrBuilds) {
  for (int bits = 1; bits <= kMaxRxCtxBits; ++bits) {
    const uint32_t top = (1u << bits) - 1;
    for (const uint32_t index : {0u, 1u, top / 2, top}) {
      for (const fi_addr_t entry : {fi_addr_t{0}, fi_addr_t{5}, fi_addr_t{123456789}}) {
        const RxAddr r = SplitRxAddr(fi_rx_addr(entry, static_cast<int>(index), bits), bits);
        EXPECT_EQ(r.entry, entry) << bits << " " << index;
        EXPECT_EQ(r.rx_index, index) << bits << " " << entry;
      }
    }
  }
  // Without bits an fi_addr is the entry itself, even FI_ADDR_NOTAVAIL.
  EXPECT_EQ(SplitRxAddr(42, 0).entry, 42u);
  EXPECT_EQ(SplitRxAddr(42, 0).rx_index, 0u);
  EXPECT_EQ(SplitRxAddr(FI_ADDR_NOTAVAIL, 0).entry, FI_ADDR_NOTAVAIL);
}

TEST(RxAddrTest, WidthsThatDoNotFitAreNamed) {
  EXPECT_EQ(RxCtxBitsProblem(0, 0), nullptr);
  EXPECT_EQ(RxCtxBitsProblem(2, 1024), nullptr);
  EXPECT_EQ(RxCtxBitsProblem(kMaxRxCtxBits, size_t{1} << 47), nullptr);
  EXPECT_NE(RxCtxBitsProblem(kMaxRxCtxBits + 1, 0), nullptr);
  EXPECT_NE(RxCtxBitsProblem(64, 0), nullptr);
  EXPECT_NE(RxCtxBitsProblem(-1, 0), nullptr);
  EXPECT_NE(RxCtxBitsProblem(kMaxRxCtxBits, size_t{1} << 48), nullptr);
  EXPECT_NE(RxCtxBitsProblem(1, size_t{1} << 63), nullptr);
}

}  // namespace
}  // namespace iwarpx::ofi
