#include "wire/sctp_session.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;

std::vector<uint8_t> Encode(const SctpSessionMessage& m) {
  std::vector<uint8_t> out(SctpSessionMessageSize(m));
  auto n = EncodeSctpSessionMessage(m, out);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : ToString(n.error()));
  if (n.ok()) {
    EXPECT_EQ(n.value(), out.size());
  }
  return out;
}

WireError DecodeError(const std::string& hex, const SctpSessionLimits& limits = {}) {
  const auto bytes = FromHex(hex);
  auto d = DecodeSctpSessionMessage(bytes, limits);
  EXPECT_FALSE(d.ok()) << hex;
  return d.ok() ? WireError::kInvalidArgument : d.error();
}

// ---- Known answers --------------------------------------------------------

TEST(SctpSessionDecodeTest, PlainInitiateWithPrivateData) {
  const auto bytes = FromHex("0001 0003 616263");
  auto d = DecodeSctpSessionMessage(bytes);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  EXPECT_EQ(d->function, SctpSessionFunction::kInitiate);
  EXPECT_FALSE(d->ird_ord.has_value());
  EXPECT_EQ(ToHex(d->private_data), ToHex(FromHex("616263")));
  // The private data is a view into the input, not a copy.
  EXPECT_EQ(d->private_data.data(), bytes.data() + 4);
}

TEST(SctpSessionDecodeTest, EnhancedAcceptCarriesIrdOrd) {
  const auto bytes = FromHex("0006 0006 0010 0008 7879");
  auto d = DecodeSctpSessionMessage(bytes);
  ASSERT_TRUE(d.ok()) << ToString(d.error());
  EXPECT_EQ(d->function, SctpSessionFunction::kAccept);
  ASSERT_TRUE(d->ird_ord.has_value());
  EXPECT_EQ(d->ird_ord->ird, 16);
  EXPECT_EQ(d->ird_ord->ord, 8);
  EXPECT_EQ(ToHex(d->private_data), ToHex(FromHex("7879")));
}

TEST(SctpSessionDecodeTest, EveryFunctionCode) {
  struct Case {
    const char* hex;
    SctpSessionFunction f;
    bool enhanced;
  };
  const Case cases[] = {
      {"0001 0000", SctpSessionFunction::kInitiate, false},
      {"0002 0000", SctpSessionFunction::kAccept, false},
      {"0003 0000", SctpSessionFunction::kReject, false},
      {"0004 0000", SctpSessionFunction::kTerminate, false},
      {"0005 0004 3fff 3fff", SctpSessionFunction::kInitiate, true},
      {"0006 0004 0000 0000", SctpSessionFunction::kAccept, true},
  };
  for (const Case& c : cases) {
    const auto bytes = FromHex(c.hex);
    auto d = DecodeSctpSessionMessage(bytes);
    ASSERT_TRUE(d.ok()) << c.hex << ": " << ToString(d.error());
    EXPECT_EQ(d->function, c.f) << c.hex;
    EXPECT_EQ(d->ird_ord.has_value(), c.enhanced) << c.hex;
    EXPECT_TRUE(d->private_data.empty()) << c.hex;
  }
}

TEST(SctpSessionEncodeTest, KnownBytes) {
  const auto reason = FromHex("6e6f");
  SctpSessionMessage reject{
      .function = SctpSessionFunction::kReject, .ird_ord = std::nullopt, .private_data = reason};
  EXPECT_EQ(ToHex(Encode(reject)), ToHex(FromHex("0003 0002 6e6f")));

  SctpSessionMessage init{.function = SctpSessionFunction::kInitiate,
                          .ird_ord = SctpIrdOrd{.ird = 0x3FFF, .ord = 1},
                          .private_data = {}};
  EXPECT_EQ(ToHex(Encode(init)), ToHex(FromHex("0005 0004 3fff 0001")));
}

// ---- Round trips ----------------------------------------------------------

TEST(SctpSessionRoundTripTest, AllFunctionsAndSizes) {
  std::vector<uint8_t> pd(kSctpSessionMaxPrivateData);
  for (size_t i = 0; i < pd.size(); ++i) pd[i] = static_cast<uint8_t>(i * 7 + 1);
  for (auto f : {SctpSessionFunction::kInitiate, SctpSessionFunction::kAccept,
                 SctpSessionFunction::kReject, SctpSessionFunction::kTerminate}) {
    const bool can_enhance =
        f == SctpSessionFunction::kInitiate || f == SctpSessionFunction::kAccept;
    for (bool enhanced : {false, true}) {
      if (enhanced && !can_enhance) continue;
      const size_t max_pd = kSctpSessionMaxPrivateData - (enhanced ? kSctpSessionIrdOrdSize : 0);
      for (size_t n : {size_t{0}, size_t{1}, size_t{255}, max_pd}) {
        SctpSessionMessage m{
            .function = f, .ird_ord = std::nullopt, .private_data = ByteSpan(pd.data(), n)};
        if (enhanced) m.ird_ord = SctpIrdOrd{.ird = 7, .ord = 0x1234};
        const auto bytes = Encode(m);
        auto d = DecodeSctpSessionMessage(bytes);
        ASSERT_TRUE(d.ok()) << ToString(f) << " " << n << ": " << ToString(d.error());
        EXPECT_EQ(d->function, f);
        EXPECT_EQ(d->ird_ord, m.ird_ord);
        EXPECT_EQ(ToHex(d->private_data), ToHex(m.private_data));
        EXPECT_EQ(ToHex(Encode(*d)), ToHex(bytes));
      }
    }
  }
}

// ---- Malformed input: each refused with its error --------------------------

TEST(SctpSessionMalformedTest, Truncated) {
  EXPECT_EQ(DecodeError(""), WireError::kTruncated);
  EXPECT_EQ(DecodeError("00"), WireError::kTruncated);
  EXPECT_EQ(DecodeError("0001 00"), WireError::kTruncated);
  EXPECT_EQ(DecodeError("0001 0003 6162"), WireError::kTruncated);
  EXPECT_EQ(DecodeError("0005 0006 0001 0001 61"), WireError::kTruncated);
}

TEST(SctpSessionMalformedTest, TrailingBytes) {
  EXPECT_EQ(DecodeError("0001 0000 00"), WireError::kSctpSessionBadLength);
  EXPECT_EQ(DecodeError("0003 0001 6162"), WireError::kSctpSessionBadLength);
}

TEST(SctpSessionMalformedTest, UnknownFunctionCodes) {
  for (const char* hex :
       {"0000 0000", "0007 0000", "00ff 0000", "0101 0000", "ffff 0000", "8001 0000"}) {
    EXPECT_EQ(DecodeError(hex), WireError::kSctpSessionBadFunction) << hex;
  }
}

TEST(SctpSessionMalformedTest, PrivateDataTooLong) {
  std::string hex = "0001 0201 " + std::string(size_t{2} * 513, 'a');
  EXPECT_EQ(DecodeError(hex), WireError::kSctpSessionPrivateDataTooLong);
  // A too-large PD Length is refused from the header alone.
  EXPECT_EQ(DecodeError("0001 ffff"), WireError::kSctpSessionPrivateDataTooLong);
  // Under a policy limit of 256, 257 bytes are too many.
  hex = "0002 0101 " + std::string(size_t{2} * 257, 'b');
  EXPECT_EQ(DecodeError(hex, {.max_private_data = 256}), WireError::kSctpSessionPrivateDataTooLong);
}

TEST(SctpSessionMalformedTest, EnhancedWithoutIrdOrdBlock) {
  EXPECT_EQ(DecodeError("0005 0000"), WireError::kSctpSessionBadIrdOrd);
  EXPECT_EQ(DecodeError("0006 0003 000000"), WireError::kSctpSessionBadIrdOrd);
}

TEST(SctpSessionMalformedTest, ReservedIrdOrdBits) {
  // Word0 bit 15 is the Send with Immediate Data flag and word1 bit 15 the
  // unordered Read Responses flag (below); bit 14 of both stays reserved.
  for (const char* hex : {"0005 0004 c000 0000", "0005 0004 4000 0000", "0006 0004 0000 4000",
                          "0006 0004 0001 4001", "0006 0004 8001 c001"}) {
    EXPECT_EQ(DecodeError(hex), WireError::kSctpSessionReservedBits) << hex;
  }
}

TEST(SctpSessionMalformedTest, ErrorsMapToInvalidRequestReply) {
  for (WireError e : {WireError::kSctpSessionBadFunction, WireError::kSctpSessionBadLength,
                      WireError::kSctpSessionPrivateDataTooLong, WireError::kSctpSessionBadIrdOrd,
                      WireError::kSctpSessionReservedBits}) {
    EXPECT_EQ(TerminateCauseFor(e), term::kLlpInvalidReqRep) << ToString(e);
  }
}

// ---- Send with Immediate Data (iwarpx extension) ---------------------------

TEST(SctpSessionSendImmTest, FlagInTheIrdWordDecodesAndReencodes) {
  for (const char* hex : {"0005 0006 8010 0008 6869", "0006 0004 bfff 3fff"}) {
    const auto bytes = FromHex(hex);
    auto d = DecodeSctpSessionMessage(bytes);
    ASSERT_TRUE(d.ok()) << hex << ": " << ToString(d.error());
    EXPECT_TRUE(d->send_imm) << hex;
    ASSERT_TRUE(d->ird_ord.has_value());
    EXPECT_LE(d->ird_ord->ird, kSctpSessionIrdOrdMask) << "the flag is not part of the IRD";
    EXPECT_EQ(ToHex(Encode(*d)), ToHex(bytes)) << hex;
  }
  const auto initiate = FromHex("0005 0006 8010 0008 6869");  // the decoded message views it
  auto d = DecodeSctpSessionMessage(initiate);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->function, SctpSessionFunction::kInitiate);
  EXPECT_EQ(d->ird_ord->ird, 16);
  EXPECT_EQ(d->ird_ord->ord, 8);
  EXPECT_EQ(ToHex(d->private_data), ToHex(FromHex("6869")));
}

TEST(SctpSessionSendImmTest, WithoutTheFlagTheBytesAreUnchanged) {
  const SctpSessionMessage m{.function = SctpSessionFunction::kInitiate,
                             .ird_ord = SctpIrdOrd{.ird = 16, .ord = 8},
                             .send_imm = false,
                             .private_data = {}};
  EXPECT_EQ(ToHex(Encode(m)), ToHex(FromHex("0005 0004 0010 0008")));
  const auto unflagged = FromHex("0005 0004 0010 0008");
  auto d = DecodeSctpSessionMessage(unflagged);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->send_imm);
  // A plain message has no block, hence no place for the flag.
  const auto plain_bytes = FromHex("0001 0004 8010 0008");
  auto plain = DecodeSctpSessionMessage(plain_bytes);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->send_imm);
  EXPECT_FALSE(plain->ird_ord.has_value());
}

TEST(SctpSessionSendImmTest, EncoderRefusesTheFlagWithoutTheBlock) {
  std::vector<uint8_t> out(kSctpSessionMaxMessageSize);
  for (SctpSessionFunction f : {SctpSessionFunction::kInitiate, SctpSessionFunction::kAccept,
                                SctpSessionFunction::kReject, SctpSessionFunction::kTerminate}) {
    const SctpSessionMessage m{
        .function = f, .ird_ord = std::nullopt, .send_imm = true, .private_data = {}};
    auto n = EncodeSctpSessionMessage(m, out);
    ASSERT_FALSE(n.ok()) << ToString(f);
    EXPECT_EQ(n.error(), WireError::kInvalidArgument) << ToString(f);
  }
}

TEST(SctpSessionSendImmTest, EveryTruncationOfAFlaggedMessageIsRefused) {
  const auto bytes = FromHex("0006 0007 8004 0004 616263");
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto d = DecodeSctpSessionMessage(ByteSpan(bytes.data(), n));
    ASSERT_FALSE(d.ok()) << n;
    EXPECT_EQ(d.error(), WireError::kTruncated) << n;
  }
}

// ---- Unordered Read Responses (iwarpx extension) --------------------------

TEST(SctpSessionUnorderedTest, FlagInTheOrdWordDecodesAndReencodes) {
  for (const char* hex :
       {"0005 0006 0010 8008 6869", "0006 0004 bfff bfff", "0006 0004 0001 8000"}) {
    const auto bytes = FromHex(hex);
    auto d = DecodeSctpSessionMessage(bytes);
    ASSERT_TRUE(d.ok()) << hex << ": " << ToString(d.error());
    EXPECT_TRUE(d->unordered_read_resp) << hex;
    ASSERT_TRUE(d->ird_ord.has_value());
    EXPECT_LE(d->ird_ord->ord, kSctpSessionIrdOrdMask) << "the flag is not part of the ORD";
    EXPECT_EQ(ToHex(Encode(*d)), ToHex(bytes)) << hex;
  }
  const auto initiate = FromHex("0005 0006 0010 8008 6869");
  auto d = DecodeSctpSessionMessage(initiate);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->send_imm);
  EXPECT_EQ(d->ird_ord->ird, 16);
  EXPECT_EQ(d->ird_ord->ord, 8);
  // Without the flag: the standard bytes, flag false.
  const auto plain = FromHex("0005 0004 0010 0008");
  auto p = DecodeSctpSessionMessage(plain);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->unordered_read_resp);
  const SctpSessionMessage m{.function = SctpSessionFunction::kInitiate,
                             .ird_ord = SctpIrdOrd{.ird = 16, .ord = 8},
                             .unordered_read_resp = true,
                             .private_data = {}};
  EXPECT_EQ(ToHex(Encode(m)), ToHex(FromHex("0005 0004 0010 8008")));
}

TEST(SctpSessionUnorderedTest, EncoderRefusesTheFlagWithoutTheBlock) {
  std::vector<uint8_t> out(kSctpSessionMaxMessageSize);
  for (SctpSessionFunction f : {SctpSessionFunction::kInitiate, SctpSessionFunction::kAccept,
                                SctpSessionFunction::kReject, SctpSessionFunction::kTerminate}) {
    const SctpSessionMessage m{
        .function = f, .ird_ord = std::nullopt, .unordered_read_resp = true, .private_data = {}};
    auto n = EncodeSctpSessionMessage(m, out);
    ASSERT_FALSE(n.ok()) << ToString(f);
    EXPECT_EQ(n.error(), WireError::kInvalidArgument) << ToString(f);
  }
}

// ---- Encoder refusals -----------------------------------------------------

TEST(SctpSessionEncodeTest, RefusesWhatTheFormatCannotCarry) {
  std::vector<uint8_t> out(kSctpSessionMaxMessageSize + 16);
  SctpSessionMessage m{
      .function = SctpSessionFunction::kReject, .ird_ord = SctpIrdOrd{}, .private_data = {}};
  EXPECT_EQ(EncodeSctpSessionMessage(m, out).error(), WireError::kInvalidArgument);
  m.function = SctpSessionFunction::kTerminate;
  EXPECT_EQ(EncodeSctpSessionMessage(m, out).error(), WireError::kInvalidArgument);
  m.function = SctpSessionFunction::kInitiate;
  m.ird_ord = SctpIrdOrd{.ird = 0x4000, .ord = 0};
  EXPECT_EQ(EncodeSctpSessionMessage(m, out).error(), WireError::kInvalidArgument);
  m.ird_ord = SctpIrdOrd{.ird = 0, .ord = 0x4000};
  EXPECT_EQ(EncodeSctpSessionMessage(m, out).error(), WireError::kInvalidArgument);

  std::vector<uint8_t> pd(kSctpSessionMaxPrivateData - 3);
  m.private_data = pd;  // 509 + 4-byte block = 513
  m.ird_ord = SctpIrdOrd{};
  EXPECT_EQ(EncodeSctpSessionMessage(m, out).error(), WireError::kSctpSessionPrivateDataTooLong);

  m.ird_ord.reset();
  m.private_data = ByteSpan(pd.data(), 10);
  std::vector<uint8_t> small(13);
  EXPECT_EQ(EncodeSctpSessionMessage(m, small).error(), WireError::kNoSpace);
}

}  // namespace
}  // namespace iwarpx::wire
