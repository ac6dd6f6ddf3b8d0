#include "wire/rdmap_atomic.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;

TEST(AtomicOpTest, NumberingFollowsRfc7306) {
  EXPECT_EQ(static_cast<int>(AtomicOp::kFetchAdd), 0);
  EXPECT_EQ(static_cast<int>(AtomicOp::kSwap), 1);
  EXPECT_EQ(static_cast<int>(AtomicOp::kCmpSwap), 2);
  EXPECT_STREQ(ToString(AtomicOp::kFetchAdd), "FetchAdd");
  EXPECT_STREQ(ToString(AtomicOp::kSwap), "Swap");
  EXPECT_STREQ(ToString(AtomicOp::kCmpSwap), "CmpSwap");
  EXPECT_STREQ(ToString(static_cast<AtomicOp>(9)), "unknown AtomicOp");
}

TEST(AtomicRequestTest, FetchAddKnownAnswer) {
  // tshark: iwarp_rdma.atomic.opcode=0 (FetchAdd) request_identifier=0x01020304
  // remote_stag=0xaabbccdd remote_tagged_offset=0x1000, add_data=1,
  // add_mask=0, compare_data=0, compare_mask=0.
  const auto bytes = FromHex(
      "00000000 01020304 aabbccdd 0000000000001000"
      "0000000000000001 0000000000000000 0000000000000000 0000000000000000");
  ASSERT_EQ(bytes.size(), kAtomicRequestBodySize);
  auto b = DecodeAtomicRequestBody(bytes);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->op, AtomicOp::kFetchAdd);
  EXPECT_EQ(b->request_id, 0x01020304u);
  EXPECT_EQ(b->remote_stag, 0xAABBCCDDu);
  EXPECT_EQ(b->remote_to, 0x1000u);
  EXPECT_EQ(b->add_or_swap_data, 1u);
  std::vector<uint8_t> out(52);
  ASSERT_EQ(EncodeAtomicRequestBody(b.value(), out).value(), 52u);
  EXPECT_EQ(out, bytes);
}

TEST(AtomicRequestTest, SwapKnownAnswer) {
  const auto bytes = FromHex(
      "00000001 00000009 00000010 0000000000000008"
      "cafef00dcafef00d ffffffffffffffff 0000000000000000 0000000000000000");
  auto b = DecodeAtomicRequestBody(bytes);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->op, AtomicOp::kSwap);
  EXPECT_EQ(b->add_or_swap_data, 0xCAFEF00DCAFEF00Du);
  EXPECT_EQ(b->add_or_swap_mask, 0xFFFFFFFFFFFFFFFFu);
}

TEST(AtomicRequestTest, UnknownOpAndReservedBits) {
  auto bytes = std::vector<uint8_t>(kAtomicRequestBodySize, 0);
  for (uint8_t op = 3; op <= 15; ++op) {
    bytes[3] = op;
    EXPECT_EQ(DecodeAtomicRequestBody(bytes).error(), WireError::kAtomicBadOp) << int{op};
  }
  for (int bit = 4; bit < 32; ++bit) {
    bytes.assign(kAtomicRequestBodySize, 0);
    const uint32_t word = uint32_t{1} << bit;
    StoreBe32(bytes.data(), word);
    EXPECT_EQ(DecodeAtomicRequestBody(bytes).error(), WireError::kRdmapReservedBits) << bit;
  }
}

TEST(AtomicRequestTest, WrongLength) {
  EXPECT_EQ(DecodeAtomicRequestBody(std::vector<uint8_t>(51)).error(), WireError::kRdmapBadLength);
  EXPECT_EQ(DecodeAtomicRequestBody(std::vector<uint8_t>(53)).error(), WireError::kRdmapBadLength);
  EXPECT_EQ(DecodeAtomicRequestBody({}).error(), WireError::kRdmapBadLength);
}

TEST(AtomicRequestTest, EncoderChecks) {
  std::vector<uint8_t> out(51);
  EXPECT_EQ(EncodeAtomicRequestBody({}, out).error(), WireError::kNoSpace);
  out.resize(52);
  AtomicRequestBody b;
  b.op = static_cast<AtomicOp>(3);
  EXPECT_EQ(EncodeAtomicRequestBody(b, out).error(), WireError::kInvalidArgument);
}

TEST(AtomicRequestTest, RandomRoundTrips) {
  std::mt19937_64 rng(7306);
  std::vector<uint8_t> out(52);
  for (int i = 0; i < 1000; ++i) {
    const AtomicRequestBody b{static_cast<AtomicOp>(rng() % 3),
                              static_cast<uint32_t>(rng()),
                              static_cast<uint32_t>(rng()),
                              rng(),
                              rng(),
                              rng(),
                              rng(),
                              rng()};
    ASSERT_TRUE(EncodeAtomicRequestBody(b, out).ok());
    auto back = DecodeAtomicRequestBody(out);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value(), b);
  }
}

TEST(AtomicResponseTest, KnownAnswerAndRoundTrip) {
  // tshark: iwarp_rdma.atomic.original_request_identifier=0x01020304,
  // original_remote_data_value=0x1122334455667788.
  const auto bytes = FromHex("01020304 1122334455667788");
  auto b = DecodeAtomicResponseBody(bytes);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value(), (AtomicResponseBody{0x01020304, 0x1122334455667788u}));
  EXPECT_EQ(ToHex(EncodeAtomicResponseBody(b.value())), "010203041122334455667788");
  EXPECT_EQ(DecodeAtomicResponseBody(std::vector<uint8_t>(11)).error(), WireError::kRdmapBadLength);
  EXPECT_EQ(DecodeAtomicResponseBody(std::vector<uint8_t>(13)).error(), WireError::kRdmapBadLength);

  std::mt19937_64 rng(12);
  for (int i = 0; i < 500; ++i) {
    const AtomicResponseBody r{static_cast<uint32_t>(rng()), rng()};
    EXPECT_EQ(DecodeAtomicResponseBody(EncodeAtomicResponseBody(r)).value(), r);
  }
}

TEST(AtomicImmediateDataTest, EightOpaqueBytes) {
  const auto bytes = FromHex("8000000000000001");
  EXPECT_EQ(DecodeImmediateDataBody(bytes).value().data, 0x8000000000000001u);
  EXPECT_EQ(ToHex(EncodeImmediateDataBody({0x8000000000000001u})), "8000000000000001");
  EXPECT_EQ(DecodeImmediateDataBody(std::vector<uint8_t>(7)).error(), WireError::kRdmapBadLength);
  EXPECT_EQ(DecodeImmediateDataBody(std::vector<uint8_t>(9)).error(), WireError::kRdmapBadLength);
}

}  // namespace
}  // namespace iwarpx::wire
