// RD sequence-number helpers of wire/dgram.h: RFC 1982 serial arithmetic with
// SERIAL_BITS = 32, windows and SACK coverage, all checked across the wrap.
#include <cstdint>

#include <gtest/gtest.h>

#include "wire/dgram.h"

namespace iwarpx::wire {
namespace {

TEST(DgramSeqTest, OrdersAcrossTheWrap) {
  static_assert(SeqLt(0xFFFFFFFFu, 0) && SeqGt(0, 0xFFFFFFFFu));
  static_assert(SeqLt(0xFFFFFFF0u, 5) && !SeqLt(5, 0xFFFFFFF0u));
  static_assert(SeqLt(0, 0x7FFFFFFFu) && !SeqLt(0x7FFFFFFFu, 0));
  static_assert(SeqLt(0x7FFFFFFFu, 0x80000000u) && SeqLt(0x80000001u, 0));
  static_assert(!SeqLt(7, 7) && SeqLe(7, 7) && SeqGe(7, 7) && !SeqGt(7, 7));
  // Exactly 2^31 apart: unordered both ways (RFC 1982 §3.2).
  static_assert(!SeqLt(0, 0x80000000u) && !SeqLt(0x80000000u, 0));
  static_assert(!SeqLt(0x40000000u, 0xC0000000u) && !SeqGt(0x40000000u, 0xC0000000u));
  static_assert(SeqDiff(0xFFFFFFFEu, 2) == 4 && SeqDiff(2, 0xFFFFFFFEu) == -4);
  static_assert(SeqLe(0xFFFFFFFEu, 1) && SeqGe(1, 0xFFFFFFFEu));
  for (uint32_t base : {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFF0u, 0xFFFFFFFFu}) {
    for (uint32_t k = 1; k < 40; ++k) {
      EXPECT_TRUE(SeqLt(base, base + k)) << base << "+" << k;
      EXPECT_TRUE(SeqGt(base + k, base));
      EXPECT_EQ(SeqDiff(base, base + k), static_cast<int32_t>(k));
    }
  }
}

TEST(DgramSeqTest, WindowAndSackAtTheWrap) {
  static_assert(SeqInWindow(0xFFFFFFFFu, 0xFFFFFFFEu, 4) && SeqInWindow(1, 0xFFFFFFFEu, 4));
  static_assert(!SeqInWindow(2, 0xFFFFFFFEu, 4) && !SeqInWindow(0xFFFFFFFDu, 0xFFFFFFFEu, 4));
  static_assert(!SeqInWindow(5, 5, 0));  // a closed window admits nothing
  // ack 0xFFFFFFFF: everything before it is acked; sack bit 0 = seq 0, bit 31 = seq 31.
  constexpr uint32_t kAck = 0xFFFFFFFFu;
  static_assert(DgramAcks(kAck, false, 0, 0xFFFFFFFEu) && !DgramAcks(kAck, false, 0, kAck));
  static_assert(DgramAcks(kAck, true, 0x80000001u, 0) && DgramAcks(kAck, true, 0x80000001u, 31));
  static_assert(!DgramAcks(kAck, true, 0x80000001u, 1) && !DgramAcks(kAck, true, ~0u, kAck));
  static_assert(!DgramAcks(kAck, true, ~0u, 32));     // beyond the bitmap
  static_assert(!DgramAcks(kAck, false, ~0u, 0));     // bitmap not valid without S
  static_assert(DgramAcks(0, true, 0, 0xFFFFFFFFu));  // before ack across the wrap
}

}  // namespace
}  // namespace iwarpx::wire
