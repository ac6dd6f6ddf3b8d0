#include "wire/sctp_session_negotiate.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::ToHex;

std::vector<uint8_t> Bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

// Encodes `m` and decodes it again, as the peer sees it.
std::vector<uint8_t> OnTheWire(const SctpSessionMessage& m) {
  std::vector<uint8_t> out(SctpSessionMessageSize(m));
  auto n = EncodeSctpSessionMessage(m, out);
  EXPECT_TRUE(n.ok());
  return out;
}

SctpSessionPolicy Policy(uint16_t ird, uint16_t ord, uint16_t min_ord = 0) {
  SctpSessionPolicy p;
  p.ird = ird;
  p.max_ird = ird;
  p.ord = ord;
  p.min_ord = min_ord;
  return p;
}

void ExpectNoMpaRules(const MpaOutcome& o) {
  EXPECT_FALSE(o.crc);
  EXPECT_FALSE(o.markers_tx);
  EXPECT_FALSE(o.markers_rx);
  EXPECT_FALSE(o.p2p);
  EXPECT_FALSE(o.send_rtr);
  EXPECT_FALSE(o.initiator_ulp_sends_first);
  EXPECT_FALSE(o.hold_tx_until_first_fpdu);
  EXPECT_FALSE(o.established_after_rtr);
}

TEST(SctpNegotiateTest, EnhancedExchangeOverTheWire) {
  const auto init_pd = Bytes("hello");
  const auto accept_pd = Bytes("welcome");
  const SctpSessionPolicy initiator = Policy(/*ird=*/8, /*ord=*/4);
  const SctpSessionPolicy responder = Policy(/*ird=*/2, /*ord=*/16);

  auto initiate = MakeSctpInitiate(initiator, init_pd);
  ASSERT_TRUE(initiate.ok()) << ToString(initiate.error());
  EXPECT_EQ(initiate->function, SctpSessionFunction::kInitiate);
  ASSERT_TRUE(initiate->ird_ord.has_value());
  EXPECT_EQ(initiate->ird_ord->ird, 8);
  EXPECT_EQ(initiate->ird_ord->ord, 4);

  const auto wire1 = OnTheWire(*initiate);
  auto got_initiate = DecodeSctpSessionMessage(wire1);
  ASSERT_TRUE(got_initiate.ok());
  auto response = RespondToSctpInitiate(responder, *got_initiate, accept_pd);
  ASSERT_TRUE(response.ok()) << ToString(response.error());
  ASSERT_TRUE(response->accepted) << ToString(response->reason);
  EXPECT_EQ(response->answer.function, SctpSessionFunction::kAccept);
  ASSERT_TRUE(response->answer.ird_ord.has_value());
  // The responder lowers its ORD to the initiator's IRD (16 -> 8) and keeps
  // its IRD at 2 (it cannot raise it to the initiator's ORD 4).
  EXPECT_EQ(response->outcome.ord, 8);
  EXPECT_EQ(response->outcome.ird, 2);
  EXPECT_EQ(ToHex(response->outcome.peer_private_data), ToHex(init_pd));
  ExpectNoMpaRules(response->outcome);

  const auto wire2 = OnTheWire(response->answer);
  auto got_accept = DecodeSctpSessionMessage(wire2);
  ASSERT_TRUE(got_accept.ok());
  auto outcome = ProcessSctpAnswer(initiator, *got_accept);
  ASSERT_TRUE(outcome.ok()) << ToString(outcome.error());
  // The initiator lowers its ORD to the responder's IRD (4 -> 2).
  EXPECT_EQ(outcome->ord, 2);
  EXPECT_LE(outcome->ord, response->outcome.ird);
  EXPECT_LE(response->outcome.ord, outcome->ird);
  EXPECT_EQ(ToHex(outcome->peer_private_data), ToHex(accept_pd));
  ExpectNoMpaRules(*outcome);
}

TEST(SctpNegotiateTest, InsufficientIrdIsAProtocolReject) {
  // The responder needs ORD >= 2, the initiator can take only one Read.
  const SctpSessionPolicy initiator = Policy(/*ird=*/1, /*ord=*/4);
  const SctpSessionPolicy responder = Policy(/*ird=*/4, /*ord=*/4, /*min_ord=*/2);
  auto initiate = MakeSctpInitiate(initiator, {});
  ASSERT_TRUE(initiate.ok());
  auto response = RespondToSctpInitiate(responder, *initiate, {});
  ASSERT_TRUE(response.ok());
  EXPECT_FALSE(response->accepted);
  EXPECT_EQ(response->reason, WireError::kMpaInsufficientIrd);
  EXPECT_EQ(response->answer.function, SctpSessionFunction::kReject);
  EXPECT_FALSE(response->answer.ird_ord.has_value());
  auto outcome = ProcessSctpAnswer(initiator, response->answer);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error(), WireError::kMpaRejected);
}

TEST(SctpNegotiateTest, AcceptWhoseOrdExceedsOurIrdFails) {
  const SctpSessionPolicy initiator = Policy(/*ird=*/2, /*ord=*/2);
  SctpSessionMessage accept;
  accept.function = SctpSessionFunction::kAccept;
  accept.ird_ord = SctpIrdOrd{.ird = 2, .ord = 9};
  auto outcome = ProcessSctpAnswer(initiator, accept);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error(), WireError::kMpaInsufficientIrd);
}

TEST(SctpNegotiateTest, PlainPeerFallsBackToLocalValues) {
  SctpSessionPolicy plain = Policy(4, 4);
  plain.enhanced = false;
  const SctpSessionPolicy enhanced = Policy(8, 8);
  auto initiate = MakeSctpInitiate(enhanced, {});
  ASSERT_TRUE(initiate.ok());
  auto response = RespondToSctpInitiate(plain, *initiate, {});
  ASSERT_TRUE(response.ok());
  ASSERT_TRUE(response->accepted);
  EXPECT_FALSE(response->answer.ird_ord.has_value()) << "a plain responder sends a plain Accept";
  auto outcome = ProcessSctpAnswer(enhanced, response->answer);
  ASSERT_TRUE(outcome.ok()) << ToString(outcome.error());
  EXPECT_FALSE(outcome->enhanced);
  EXPECT_EQ(outcome->ird, 8);
  EXPECT_EQ(outcome->ord, 8);

  auto plain_initiate = MakeSctpInitiate(plain, {});
  ASSERT_TRUE(plain_initiate.ok());
  EXPECT_FALSE(plain_initiate->ird_ord.has_value());
}

TEST(SctpNegotiateTest, ApplicationRejectCarriesItsReason) {
  SctpSessionMessage reject;
  reject.function = SctpSessionFunction::kReject;
  const auto why = Bytes("busy");
  reject.private_data = why;
  auto outcome = ProcessSctpAnswer(Policy(4, 4), reject);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error(), WireError::kMpaRejected);
}

TEST(SctpNegotiateTest, MessagesOutOfPlaceAreRefused) {
  SctpSessionMessage m;
  for (auto f : {SctpSessionFunction::kAccept, SctpSessionFunction::kReject,
                 SctpSessionFunction::kTerminate}) {
    m.function = f;
    auto r = RespondToSctpInitiate(Policy(4, 4), m, {});
    ASSERT_FALSE(r.ok()) << ToString(f);
    EXPECT_EQ(r.error(), WireError::kInvalidArgument);
  }
  for (auto f : {SctpSessionFunction::kInitiate, SctpSessionFunction::kTerminate}) {
    m.function = f;
    auto r = ProcessSctpAnswer(Policy(4, 4), m);
    ASSERT_FALSE(r.ok()) << ToString(f);
    EXPECT_EQ(r.error(), WireError::kInvalidArgument);
  }
}

TEST(SctpNegotiateTest, PrivateDataLimits) {
  const std::vector<uint8_t> pd(kSctpSessionMaxPrivateData - kSctpSessionIrdOrdSize + 1);
  auto too_long = MakeSctpInitiate(Policy(4, 4), pd);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error(), WireError::kSctpSessionPrivateDataTooLong);
  auto fits = MakeSctpInitiate(Policy(4, 4), ByteSpan(pd.data(), pd.size() - 1));
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(SctpSessionMessageSize(*fits), kSctpSessionMaxMessageSize);
}

// Send with Immediate Data: MPA's rule on the session messages' flag, over
// the wire both ways, for every combination of offers and message kinds.
struct SendImmCase {
  bool initiator_offers;
  bool responder_offers;
  bool initiator_enhanced;
  bool responder_enhanced;
};

TEST(SctpNegotiateTest, SendImmOnlyWhenBothOfferInEnhancedMessages) {
  for (const bool io : {false, true}) {
    for (const bool ro : {false, true}) {
      for (const bool ie : {false, true}) {
        for (const bool re : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "initiator offers " << io << " enhanced " << ie
                                            << ", responder offers " << ro << " enhanced " << re);
          SctpSessionPolicy ip = Policy(4, 4);
          ip.offer_send_imm = io;
          ip.enhanced = ie;
          SctpSessionPolicy rp = Policy(4, 4);
          rp.offer_send_imm = ro;
          rp.enhanced = re;
          auto initiate = MakeSctpInitiate(ip, {});
          ASSERT_TRUE(initiate.ok());
          const auto w1 = OnTheWire(*initiate);
          // The flag is on the wire iff offered in an enhanced Initiate.
          ASSERT_EQ(w1.size() >= 6 && (w1[4] & 0x80) != 0, io && ie);
          auto got1 = DecodeSctpSessionMessage(w1);
          ASSERT_TRUE(got1.ok());
          EXPECT_EQ(got1->send_imm, io && ie);
          auto response = RespondToSctpInitiate(rp, *got1, {});
          ASSERT_TRUE(response.ok());
          ASSERT_TRUE(response->accepted);
          const bool both = io && ro && ie && re;
          EXPECT_EQ(response->outcome.send_imm, both);
          const auto w2 = OnTheWire(response->answer);
          auto got2 = DecodeSctpSessionMessage(w2);
          ASSERT_TRUE(got2.ok());
          EXPECT_EQ(got2->send_imm, both);
          auto outcome = ProcessSctpAnswer(ip, *got2);
          ASSERT_TRUE(outcome.ok());
          EXPECT_EQ(outcome->send_imm, both);
          if (!io) {
            // A peer that does not ask sends what it sent before the extension.
            SctpSessionPolicy old = ip;
            old.offer_send_imm = false;
            EXPECT_EQ(ToHex(OnTheWire(*MakeSctpInitiate(old, {}))), ToHex(w1));
          }
        }
      }
    }
  }
}

TEST(SctpNegotiateTest, SendImmOfferIsNotAnsweredByAReject) {
  SctpSessionPolicy ip = Policy(/*ird=*/1, /*ord=*/4);
  ip.offer_send_imm = true;
  SctpSessionPolicy rp = Policy(4, 4, /*min_ord=*/2);  // refuses: the initiator's IRD is 1
  rp.offer_send_imm = true;
  auto initiate = MakeSctpInitiate(ip, {});
  ASSERT_TRUE(initiate.ok());
  auto response = RespondToSctpInitiate(rp, *initiate, {});
  ASSERT_TRUE(response.ok());
  ASSERT_FALSE(response->accepted);
  EXPECT_EQ(response->answer.function, SctpSessionFunction::kReject);
  EXPECT_FALSE(response->answer.send_imm);
  EXPECT_FALSE(response->answer.ird_ord.has_value());
  EXPECT_TRUE(DecodeSctpSessionMessage(OnTheWire(response->answer)).ok());
}

TEST(SctpNegotiateTest, UnorderedReadResponsesOnlyWhenBothOfferInEnhancedMessages) {
  for (const bool io : {false, true}) {
    for (const bool ro : {false, true}) {
      for (const bool ie : {false, true}) {
        for (const bool re : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "initiator offers " << io << " enhanced " << ie
                                            << ", responder offers " << ro << " enhanced " << re);
          SctpSessionPolicy ip = Policy(4, 4);
          ip.offer_unordered_read_resp = io;
          ip.enhanced = ie;
          SctpSessionPolicy rp = Policy(4, 4);
          rp.offer_unordered_read_resp = ro;
          rp.enhanced = re;
          auto initiate = MakeSctpInitiate(ip, {});
          ASSERT_TRUE(initiate.ok());
          const auto w1 = OnTheWire(*initiate);
          // The flag is on the wire (ORD word, bit 15) iff offered in an
          // enhanced Initiate.
          ASSERT_EQ(w1.size() >= 8 && (w1[6] & 0x80) != 0, io && ie);
          auto got1 = DecodeSctpSessionMessage(w1);
          ASSERT_TRUE(got1.ok());
          EXPECT_EQ(got1->unordered_read_resp, io && ie);
          auto response = RespondToSctpInitiate(rp, *got1, {});
          ASSERT_TRUE(response.ok());
          ASSERT_TRUE(response->accepted);
          const bool both = io && ro && ie && re;
          EXPECT_EQ(response->outcome.sctp_unordered_read_resp, both);
          const auto w2 = OnTheWire(response->answer);
          auto got2 = DecodeSctpSessionMessage(w2);
          ASSERT_TRUE(got2.ok());
          EXPECT_EQ(got2->unordered_read_resp, both);
          auto outcome = ProcessSctpAnswer(ip, *got2);
          ASSERT_TRUE(outcome.ok());
          EXPECT_EQ(outcome->sctp_unordered_read_resp, both);
          EXPECT_FALSE(outcome->send_imm);
          if (!io) {
            // A peer that does not offer sends the standard bytes.
            SctpSessionPolicy old = ip;
            old.offer_unordered_read_resp = false;
            EXPECT_EQ(ToHex(OnTheWire(*MakeSctpInitiate(old, {}))), ToHex(w1));
          }
        }
      }
    }
  }
}

TEST(SctpNegotiateTest, UnorderedAcceptIsIgnoredWhenNotOffered) {
  // An Accept that sets the flag although our Initiate did not: not used.
  SctpSessionPolicy ip = Policy(4, 4);
  SctpSessionMessage accept{.function = SctpSessionFunction::kAccept,
                            .ird_ord = SctpIrdOrd{.ird = 4, .ord = 4},
                            .unordered_read_resp = true,
                            .private_data = {}};
  auto outcome = ProcessSctpAnswer(ip, accept);
  ASSERT_TRUE(outcome.ok());
  EXPECT_FALSE(outcome->sctp_unordered_read_resp);
  ip.offer_unordered_read_resp = true;
  outcome = ProcessSctpAnswer(ip, accept);
  ASSERT_TRUE(outcome.ok());
  EXPECT_TRUE(outcome->sctp_unordered_read_resp);
}

TEST(SctpNegotiateTest, UnorderedOfferIsNotAnsweredByAReject) {
  SctpSessionPolicy ip = Policy(/*ird=*/1, /*ord=*/4);
  ip.offer_unordered_read_resp = true;
  SctpSessionPolicy rp = Policy(4, 4, /*min_ord=*/2);
  rp.offer_unordered_read_resp = true;
  auto initiate = MakeSctpInitiate(ip, {});
  ASSERT_TRUE(initiate.ok());
  auto response = RespondToSctpInitiate(rp, *initiate, {});
  ASSERT_TRUE(response.ok());
  ASSERT_FALSE(response->accepted);
  EXPECT_FALSE(response->answer.unordered_read_resp);
  EXPECT_FALSE(response->outcome.sctp_unordered_read_resp);
  EXPECT_TRUE(DecodeSctpSessionMessage(OnTheWire(response->answer)).ok());
}

TEST(SctpNegotiateTest, PolicyCarriesTheSendImmOffer) {
  MpaPolicy m;
  m.max_revision = kMpaRevision2;
  m.offer_send_imm = true;
  EXPECT_TRUE(FromMpaPolicy(m).offer_send_imm);
  EXPECT_TRUE(ToMpaPolicy(FromMpaPolicy(m)).offer_send_imm);
  m.offer_send_imm = false;
  EXPECT_FALSE(FromMpaPolicy(m).offer_send_imm);
}

TEST(SctpNegotiateTest, PolicyFromMpaPolicy) {
  MpaPolicy m;
  m.max_revision = kMpaRevision2;
  m.ird = 3;
  m.max_ird = 9;
  m.ord = 5;
  m.min_ord = 2;
  m.max_private_data = 1024;  // MPA allows more than a session message carries
  const SctpSessionPolicy p = FromMpaPolicy(m);
  EXPECT_TRUE(p.enhanced);
  EXPECT_EQ(p.ird, 3);
  EXPECT_EQ(p.max_ird, 9);
  EXPECT_EQ(p.ord, 5);
  EXPECT_EQ(p.min_ord, 2);
  EXPECT_EQ(p.max_private_data, kSctpSessionMaxPrivateData);
  m.max_revision = kMpaRevision1;
  m.max_private_data = 100;
  const SctpSessionPolicy q = FromMpaPolicy(m);
  EXPECT_FALSE(q.enhanced);
  EXPECT_EQ(q.max_private_data, 100);
}

}  // namespace
}  // namespace iwarpx::wire
