#include "wire/mpa_negotiate.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"
#include "wire/mpa.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;

constexpr char kReqKey[] = "4d504120 49442052 65712046 72616d65";
constexpr char kRepKey[] = "4d504120 49442052 65702046 72616d65";
constexpr MpaRtrMask kWrite = RtrBit(MpaRtr::kWrite);
constexpr MpaRtrMask kRead = RtrBit(MpaRtr::kRead);
constexpr MpaRtrMask kSend = RtrBit(MpaRtr::kSend);

std::vector<uint8_t> Frame(const char* key, const std::string& rest) {
  return FromHex(std::string(key) + " " + rest);
}

std::vector<uint8_t> Bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

std::string Str(ByteSpan b) {
  return {b.begin(), b.end()};
}

std::vector<uint8_t> Encode(const MpaFrame& f) {
  std::vector<uint8_t> out(MpaFrameSize(f));
  auto n = EncodeMpaFrame(f, out);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : ToString(n.error()));
  return out;
}

// The bytes-level exchange between two policies. The decoded frames view the
// byte vectors held here.
struct Exchange {
  std::vector<uint8_t> request_bytes;
  std::vector<uint8_t> reply_bytes;
  MpaFrame request;  // as decoded by the responder
  MpaFrame reply;    // as decoded by the initiator
  MpaResponse response;
  std::optional<Result<MpaOutcome, WireError>> initiator;

  Exchange(const MpaPolicy& init, const MpaPolicy& resp, ByteSpan init_pd = {},
           ByteSpan resp_pd = {}) {
    auto req = MakeMpaRequest(init, init_pd);
    EXPECT_TRUE(req.ok());
    if (!req.ok()) return;
    request_bytes = Encode(req.value());
    auto dreq = DecodeMpaFrame(request_bytes, MpaFrameKind::kRequest, MpaLimitsFor(resp));
    EXPECT_TRUE(dreq.ok());
    if (!dreq.ok()) return;
    EXPECT_EQ(dreq->consumed, request_bytes.size());
    request = dreq->frame;
    auto r = RespondToMpaRequest(resp, request, resp_pd);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return;
    response = r.value();
    reply_bytes = Encode(response.reply);
    auto drep = DecodeMpaFrame(reply_bytes, MpaFrameKind::kReply, MpaLimitsFor(init));
    EXPECT_TRUE(drep.ok());
    if (!drep.ok()) return;
    reply = drep->frame;
    initiator = ProcessMpaReply(init, reply);
  }

  bool Established() const { return response.accepted && initiator && initiator->ok(); }
  const MpaOutcome& Init() const { return initiator->value(); }
  const MpaOutcome& Resp() const { return response.outcome; }
  WireError InitError() const { return initiator->error(); }
};

// Decodes a hand-written Reply and runs the initiator on it.
Result<MpaOutcome, WireError> InitiatorGets(const MpaPolicy& policy, const std::string& reply_hex,
                                            std::vector<uint8_t>& storage) {
  storage = Frame(kRepKey, reply_hex);
  auto d = DecodeMpaFrame(storage, MpaFrameKind::kReply, MpaLimitsFor(policy));
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : ToString(d.error()));
  if (!d.ok()) return Err{d.error()};
  return ProcessMpaReply(policy, d->frame);
}

// Decodes a hand-written Request and runs the responder on it.
MpaResponse ResponderGets(const MpaPolicy& policy, const std::string& request_hex,
                          std::vector<uint8_t>& storage) {
  storage = Frame(kReqKey, request_hex);
  auto d = DecodeMpaFrame(storage, MpaFrameKind::kRequest, MpaLimitsFor(policy));
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : ToString(d.error()));
  if (!d.ok()) return {};
  auto r = RespondToMpaRequest(policy, d->frame, {});
  EXPECT_TRUE(r.ok());
  return r.ok() ? r.value() : MpaResponse{};
}

// ---- Parameter matrix: revision x CRC x markers, each side -----------------

using MatrixParam = std::tuple<int, int, bool, bool, bool, bool, bool>;

class MpaNegotiateMatrixTest : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(MpaNegotiateMatrixTest, BothSidesAgree) {
  const auto [init_rev, resp_rev, init_crc, resp_crc, init_m, resp_m, insert] = GetParam();
  MpaPolicy init;
  init.max_revision = static_cast<uint8_t>(init_rev);
  init.want_crc = init_crc;
  init.want_markers = init_m;
  init.insert_markers = insert;
  MpaPolicy resp = init;
  resp.max_revision = static_cast<uint8_t>(resp_rev);
  resp.want_crc = resp_crc;
  resp.want_markers = resp_m;

  const auto init_pd = Bytes("hello from the initiator");
  const auto resp_pd = Bytes("and from the responder");
  Exchange x(init, resp, init_pd, resp_pd);
  ASSERT_TRUE(x.initiator.has_value());

  if (init_m && !insert) {
    EXPECT_FALSE(x.response.accepted);
    EXPECT_EQ(x.response.reason, WireError::kMpaMarkersRefused);
    EXPECT_TRUE(x.reply.reject);
    EXPECT_EQ(x.InitError(), WireError::kMpaRejected);
    return;
  }
  ASSERT_TRUE(x.response.accepted) << ToString(x.response.reason);
  if (resp_m && !insert) {
    ASSERT_FALSE(x.initiator->ok());
    EXPECT_EQ(x.InitError(), WireError::kMpaMarkersRefused);
    return;
  }
  ASSERT_TRUE(x.Established()) << ToString(x.InitError());
  const MpaOutcome& i = x.Init();
  const MpaOutcome& r = x.Resp();
  const uint8_t rev = static_cast<uint8_t>(std::min(init_rev, resp_rev));

  EXPECT_EQ(x.reply.revision, rev);
  EXPECT_EQ(i.revision, rev);
  EXPECT_EQ(r.revision, rev);
  EXPECT_EQ(i.role, MpaRole::kInitiator);
  EXPECT_EQ(r.role, MpaRole::kResponder);
  EXPECT_EQ(i.crc, init_crc || resp_crc);
  EXPECT_EQ(r.crc, init_crc || resp_crc);
  EXPECT_EQ(i.markers_rx, init_m);
  EXPECT_EQ(i.markers_tx, resp_m);
  EXPECT_EQ(r.markers_rx, resp_m);
  EXPECT_EQ(r.markers_tx, init_m);
  EXPECT_EQ(Str(i.peer_private_data), "and from the responder");
  EXPECT_EQ(Str(r.peer_private_data), "hello from the initiator");
  EXPECT_EQ(i.ird, 16);
  EXPECT_EQ(i.ord, 16);
  EXPECT_EQ(r.ird, 16);
  EXPECT_EQ(r.ord, 16);

  const bool v2 = rev == 2;
  EXPECT_EQ(i.enhanced, v2);
  EXPECT_EQ(r.enhanced, v2);
  EXPECT_EQ(x.reply.ird_ord.has_value(), v2);
  EXPECT_EQ(i.p2p, v2);
  EXPECT_EQ(r.p2p, v2);
  EXPECT_EQ(i.rtr, v2 ? MpaRtr::kWrite : MpaRtr::kNone);
  EXPECT_EQ(r.rtr, i.rtr);
  EXPECT_EQ(i.send_rtr, v2);
  EXPECT_FALSE(r.send_rtr);
  EXPECT_EQ(i.initiator_ulp_sends_first, !v2);
  EXPECT_EQ(r.initiator_ulp_sends_first, !v2);
  EXPECT_FALSE(i.hold_tx_until_first_fpdu);
  EXPECT_TRUE(r.hold_tx_until_first_fpdu);
  EXPECT_FALSE(i.established_after_rtr);
  EXPECT_EQ(r.established_after_rtr, v2);
  EXPECT_EQ(i.peer_ird, v2 ? 16 : kMpaNoIrdOrd);
  EXPECT_EQ(r.peer_ord, v2 ? 16 : kMpaNoIrdOrd);
}

INSTANTIATE_TEST_SUITE_P(MpaRevCrcMarkers, MpaNegotiateMatrixTest,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Values(1, 2),
                                            ::testing::Bool(), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool(), ::testing::Bool()));

// ---- Known answers -----------------------------------------------------------

TEST(MpaNegotiateTest, DefaultRequestAndReplyBytes) {
  MpaPolicy policy;  // rev 2, CRC, P2P offering Write+Read, IRD/ORD 16
  const auto pd = Bytes("hi");
  Exchange x(policy, policy, pd);
  EXPECT_EQ(ToHex(x.request_bytes), ToHex(Frame(kReqKey, "50 02 0006 | 8010 c010 | 6869")));
  EXPECT_EQ(ToHex(x.reply_bytes), ToHex(Frame(kRepKey, "50 02 0004 | 8010 8010")));
  ASSERT_TRUE(x.Established());
}

TEST(MpaNegotiateTest, Rev1RequestBytes) {
  MpaPolicy policy;
  policy.max_revision = 1;
  policy.want_crc = false;
  policy.want_markers = true;
  policy.insert_markers = true;
  auto req = MakeMpaRequest(policy, {});
  ASSERT_TRUE(req.ok());
  EXPECT_EQ(ToHex(Encode(req.value())), ToHex(Frame(kReqKey, "80 01 0000")));
}

// ---- iwarpx extension: Send with Immediate Data ------------------------------

MpaPolicy SendImmPolicy() {
  MpaPolicy p;
  p.offer_send_imm = true;
  return p;
}

TEST(MpaSendImmTest, BothOfferIsNegotiatedWithTheBitInBothFrames) {
  Exchange x(SendImmPolicy(), SendImmPolicy());
  ASSERT_TRUE(x.Established());
  EXPECT_EQ(ToHex(x.request_bytes), ToHex(Frame(kReqKey, "51 02 0004 | 8010 c010")));
  EXPECT_EQ(ToHex(x.reply_bytes), ToHex(Frame(kRepKey, "51 02 0004 | 8010 8010")));
  EXPECT_TRUE(x.Init().send_imm);
  EXPECT_TRUE(x.Resp().send_imm);
}

TEST(MpaSendImmTest, DefaultPoliciesNeverSetTheBit) {
  Exchange x(MpaPolicy{}, MpaPolicy{});
  ASSERT_TRUE(x.Established());
  EXPECT_EQ(x.request_bytes[16] & kMpaFlagSendImm, 0);
  EXPECT_EQ(x.reply_bytes[16] & kMpaFlagSendImm, 0);
  EXPECT_FALSE(x.Init().send_imm);
  EXPECT_FALSE(x.Resp().send_imm);
}

TEST(MpaSendImmTest, OnlyTheInitiatorOffers) {
  Exchange x(SendImmPolicy(), MpaPolicy{});
  ASSERT_TRUE(x.Established());
  EXPECT_TRUE(x.request.send_imm);
  EXPECT_FALSE(x.reply.send_imm);
  EXPECT_FALSE(x.Init().send_imm);
  EXPECT_FALSE(x.Resp().send_imm);
}

TEST(MpaSendImmTest, OnlyTheResponderOffers) {
  Exchange x(MpaPolicy{}, SendImmPolicy());
  ASSERT_TRUE(x.Established());
  EXPECT_FALSE(x.request.send_imm);
  EXPECT_FALSE(x.reply.send_imm);
  EXPECT_FALSE(x.Init().send_imm);
  EXPECT_FALSE(x.Resp().send_imm);
}

TEST(MpaSendImmTest, StandardPeerIgnoringTheBitLeavesItOff) {
  // A standard responder answers the Request as if the reserved bit were zero.
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(SendImmPolicy(), "50 02 0004 | 8010 8010", storage);
  ASSERT_TRUE(r.ok()) << ToString(r.error());
  EXPECT_FALSE(r->send_imm);
}

TEST(MpaSendImmTest, UnaskedBitInReplyIsIgnored) {
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(MpaPolicy{}, "51 02 0004 | 8010 8010", storage);
  ASSERT_TRUE(r.ok()) << ToString(r.error());
  EXPECT_FALSE(r->send_imm);
}

TEST(MpaSendImmTest, Rev1FallbackHasNoSendImm) {
  MpaPolicy resp = SendImmPolicy();
  resp.max_revision = 1;
  Exchange x(SendImmPolicy(), resp);
  ASSERT_TRUE(x.Established());
  EXPECT_FALSE(x.reply.send_imm);
  EXPECT_FALSE(x.Init().send_imm);
  EXPECT_FALSE(x.Resp().send_imm);
  MpaPolicy rev1 = SendImmPolicy();
  rev1.max_revision = 1;
  auto req = MakeMpaRequest(rev1, {});
  ASSERT_TRUE(req.ok());
  EXPECT_FALSE(req->send_imm);
}

TEST(MpaSendImmTest, RejectReplyNeverCarriesTheBit) {
  MpaPolicy resp = SendImmPolicy();
  resp.p2p = true;
  resp.rtr_types = kSend;  // the Request offers Write+Read: no common RTR
  std::vector<uint8_t> storage;
  MpaResponse r = ResponderGets(resp, "51 02 0004 | 8010 c010", storage);
  ASSERT_FALSE(r.accepted);
  EXPECT_FALSE(r.reply.send_imm);
  EXPECT_FALSE(r.outcome.send_imm);
}

// ---- IRD / ORD -----------------------------------------------------------------

TEST(MpaIrdOrdTest, ResponderLowersItsOrdToInitiatorIrd) {
  MpaPolicy init;
  init.ird = init.max_ird = 4;
  MpaPolicy resp;
  Exchange x(init, resp);
  ASSERT_TRUE(x.Established());
  EXPECT_EQ(x.reply.ird_ord->ord, 4);
  EXPECT_EQ(x.Resp().ord, 4);
  EXPECT_EQ(x.Resp().peer_ird, 4);
  EXPECT_EQ(x.Init().ird, 4);
  EXPECT_EQ(x.Init().peer_ord, 4);
}

TEST(MpaIrdOrdTest, ResponderRaisesItsIrdUpToMax) {
  MpaPolicy init;
  init.ord = 32;
  MpaPolicy resp;
  resp.ird = 8;
  resp.max_ird = 64;
  Exchange x(init, resp);
  ASSERT_TRUE(x.Established());
  EXPECT_EQ(x.reply.ird_ord->ird, 32);
  EXPECT_EQ(x.Resp().ird, 32);
  EXPECT_EQ(x.Init().ord, 32);
}

TEST(MpaIrdOrdTest, InitiatorLowersItsOrdWhenResponderCannotRaiseEnough) {
  MpaPolicy init;
  init.ord = 32;
  MpaPolicy resp;
  resp.ird = 8;
  resp.max_ird = 16;
  Exchange x(init, resp);
  ASSERT_TRUE(x.Established());
  EXPECT_EQ(x.reply.ird_ord->ird, 16);
  EXPECT_EQ(x.Init().ord, 16);
  EXPECT_EQ(x.Resp().ird, 16);
}

TEST(MpaIrdOrdTest, InitiatorInsufficientIrdBelowMinOrd) {
  MpaPolicy init;
  init.ord = 32;
  init.min_ord = 20;
  MpaPolicy resp;
  resp.ird = 8;
  resp.max_ird = 16;
  Exchange x(init, resp);
  ASSERT_TRUE(x.response.accepted);
  ASSERT_FALSE(x.initiator->ok());
  EXPECT_EQ(x.InitError(), WireError::kMpaInsufficientIrd);
  EXPECT_EQ(TerminateCauseFor(x.InitError()), term::kLlpInsufficientIrd);
}

TEST(MpaIrdOrdTest, ResponderRejectsWhenItsOrdWouldFallBelowMin) {
  MpaPolicy init;
  init.ird = init.max_ird = 4;
  MpaPolicy resp;
  resp.ord = 8;
  resp.min_ord = 8;
  Exchange x(init, resp);
  EXPECT_FALSE(x.response.accepted);
  EXPECT_EQ(x.response.reason, WireError::kMpaInsufficientIrd);
  EXPECT_TRUE(x.reply.reject);
  // A v2 reject still carries the IRD/ORD block (no P2P, no RTR).
  EXPECT_EQ(ToHex(x.reply_bytes), ToHex(Frame(kRepKey, "70 02 0004 | 0010 0008")));
  EXPECT_EQ(x.InitError(), WireError::kMpaRejected);
}

TEST(MpaIrdOrdTest, ReplyOrdAboveWhatInitiatorCanHold) {
  MpaPolicy init;
  init.ird = init.max_ird = 4;
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(init, "50 02 0004 | 8004 8008", storage);  // responder ORD 8 > our IRD 4
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaInsufficientIrd);
}

TEST(MpaIrdOrdTest, InitiatorRaisesIrdForReplyOrdWithinMax) {
  MpaPolicy init;
  init.ird = 4;
  init.max_ird = 8;
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(init, "50 02 0004 | 8010 8008", storage);
  ASSERT_TRUE(r.ok()) << ToString(r.error());
  EXPECT_EQ(r->ird, 8);
  EXPECT_EQ(r->ord, 16);
}

TEST(MpaIrdOrdTest, NoValueInRequestImposesNothing) {
  MpaPolicy resp;
  resp.ird = 2;
  resp.ord = 6;
  std::vector<uint8_t> storage;
  // P2P, IRD none; Write RTR, ORD none.
  MpaResponse r = ResponderGets(resp, "50 02 0004 | bfff bfff", storage);
  ASSERT_TRUE(r.accepted) << ToString(r.reason);
  EXPECT_EQ(r.outcome.ird, 2);
  EXPECT_EQ(r.outcome.ord, 6);
  EXPECT_EQ(r.outcome.peer_ird, kMpaNoIrdOrd);
  EXPECT_EQ(r.outcome.peer_ord, kMpaNoIrdOrd);
  EXPECT_EQ(r.outcome.rtr, MpaRtr::kWrite);
  EXPECT_EQ(r.reply.ird_ord, (MpaIrdOrd{.p2p = true, .ird = 2, .ord = 6, .rtr = kWrite}));
}

TEST(MpaIrdOrdTest, NoValueInReplyImposesNothing) {
  MpaPolicy init;
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(init, "50 02 0004 | bfff bfff", storage);
  ASSERT_TRUE(r.ok()) << ToString(r.error());
  EXPECT_EQ(r->ird, 16);
  EXPECT_EQ(r->ord, 16);
  EXPECT_EQ(r->rtr, MpaRtr::kWrite);
}

TEST(MpaIrdOrdTest, ZeroIrdFromResponderMeansNoReads) {
  MpaPolicy init;
  MpaPolicy resp;
  resp.ird = resp.max_ird = 0;
  Exchange x(init, resp);
  ASSERT_TRUE(x.Established());
  EXPECT_EQ(x.Init().ord, 0);
  EXPECT_EQ(x.Init().rtr, MpaRtr::kWrite);
}

// ---- RTR selection -------------------------------------------------------------

TEST(MpaRtrTest, PreferenceOrder) {
  EXPECT_EQ(MpaPreferredRtr(kMpaRtrAll), MpaRtr::kWrite);
  EXPECT_EQ(MpaPreferredRtr(kRead | kSend), MpaRtr::kRead);
  EXPECT_EQ(MpaPreferredRtr(kSend), MpaRtr::kSend);
  EXPECT_EQ(MpaPreferredRtr(0), MpaRtr::kNone);
}

TEST(MpaRtrTest, ResponderPicksExactlyOneCommonType) {
  struct Case {
    MpaRtrMask offered, accepted;
    MpaRtr chosen;
  };
  for (const Case& c :
       {Case{kMpaRtrAll, kMpaRtrAll, MpaRtr::kWrite},
        Case{kMpaRtrAll, kRead | kSend, MpaRtr::kRead},
        Case{kRead | kSend, kMpaRtrAll, MpaRtr::kRead}, Case{kSend, kSend | kWrite, MpaRtr::kSend},
        Case{kWrite, kWrite, MpaRtr::kWrite}}) {
    MpaPolicy init;
    init.rtr_types = c.offered;
    MpaPolicy resp;
    resp.rtr_types = c.accepted;
    Exchange x(init, resp);
    ASSERT_TRUE(x.Established()) << int{c.offered} << "/" << int{c.accepted};
    EXPECT_EQ(x.request.ird_ord->rtr, c.offered);
    EXPECT_EQ(x.reply.ird_ord->rtr, RtrBit(c.chosen));
    EXPECT_EQ(x.Resp().rtr, c.chosen);
    EXPECT_EQ(x.Init().rtr, c.chosen);
  }
}

TEST(MpaRtrTest, NoCommonTypeIsRejected) {
  MpaPolicy init;
  init.rtr_types = kSend;
  MpaPolicy resp;  // Write + Read
  Exchange x(init, resp);
  EXPECT_FALSE(x.response.accepted);
  EXPECT_EQ(x.response.reason, WireError::kMpaNoMatchingRtr);
  EXPECT_EQ(TerminateCauseFor(x.response.reason), term::kLlpNoMatchingRtr);
  EXPECT_TRUE(x.reply.reject);
  EXPECT_EQ(x.InitError(), WireError::kMpaRejected);
}

TEST(MpaRtrTest, InitiatorWithZeroOrdDoesNotOfferRead) {
  MpaPolicy init;
  init.ord = 0;
  EXPECT_EQ(MpaOfferedRtr(init), kWrite);
  MpaPolicy resp;
  resp.rtr_types = kRead;
  Exchange x(init, resp);
  EXPECT_EQ(x.request.ird_ord->rtr, kWrite);
  EXPECT_FALSE(x.response.accepted);
  EXPECT_EQ(x.response.reason, WireError::kMpaNoMatchingRtr);

  init.rtr_types = kRead;  // nothing left to offer
  auto req = MakeMpaRequest(init, {});
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.error(), WireError::kInvalidArgument);
}

TEST(MpaRtrTest, ResponderSkipsReadWithoutReadSlots) {
  MpaPolicy resp;
  std::vector<uint8_t> storage;
  // Peer offers Read + Send with ORD 0: the zero-length Read has no ORD slot.
  MpaResponse r = ResponderGets(resp, "50 02 0004 | c010 4000", storage);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.reason, WireError::kMpaNoMatchingRtr);
  resp.rtr_types = kRead;
  r = ResponderGets(resp, "50 02 0004 | c010 4000", storage);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.reason, WireError::kMpaNoMatchingRtr);
  resp.rtr_types = kRead | kSend;
  r = ResponderGets(resp, "50 02 0004 | c010 4000", storage);
  ASSERT_TRUE(r.accepted);
  EXPECT_EQ(r.outcome.rtr, MpaRtr::kSend);
  // Our IRD of 0 rules Read out as well.
  resp.rtr_types = kRead;
  resp.ird = resp.max_ird = 0;
  r = ResponderGets(resp, "50 02 0004 | 8010 4010", storage);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.reason, WireError::kMpaNoMatchingRtr);
}

TEST(MpaRtrTest, IrdmaStyleReplyWithExtraSendBit) {
  MpaPolicy init;  // offers Write + Read
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(init, "50 02 0004 | c010 8010", storage);
  ASSERT_TRUE(r.ok()) << ToString(r.error());
  EXPECT_EQ(r->rtr, MpaRtr::kWrite);
  r = InitiatorGets(init, "50 02 0004 | c010 4010", storage);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rtr, MpaRtr::kRead);
  init.rtr_types = kMpaRtrAll;  // Send ranks last even when we offered it
  r = InitiatorGets(init, "50 02 0004 | c010 8010", storage);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rtr, MpaRtr::kWrite);
}

TEST(MpaRtrTest, ReplyP2pWithoutUsableType) {
  MpaPolicy init;  // offers Write + Read
  std::vector<uint8_t> storage;
  for (const char* hex : {"50 02 0004 | 8010 0010",     // no RTR bit
                          "50 02 0004 | c010 0010"}) {  // Send only, not offered
    auto r = InitiatorGets(init, hex, storage);
    ASSERT_FALSE(r.ok()) << hex;
    EXPECT_EQ(r.error(), WireError::kMpaNoMatchingRtr) << hex;
  }
}

TEST(MpaRtrTest, ReplyP2pWhenNotRequested) {
  MpaPolicy init;
  init.p2p = false;
  auto req = MakeMpaRequest(init, {});
  ASSERT_TRUE(req.ok());
  EXPECT_EQ(req->ird_ord, (MpaIrdOrd{.p2p = false, .ird = 16, .ord = 16, .rtr = 0}));
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(init, "50 02 0004 | 8010 8010", storage);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaNoMatchingRtr);
}

TEST(MpaRtrTest, ResponderWithoutP2pFallsBackToClientServer) {
  MpaPolicy init;
  MpaPolicy resp;
  resp.p2p = false;
  Exchange x(init, resp);
  ASSERT_TRUE(x.Established());
  EXPECT_FALSE(x.reply.ird_ord->p2p);
  EXPECT_EQ(x.reply.ird_ord->rtr, 0);
  EXPECT_FALSE(x.Init().p2p);
  EXPECT_EQ(x.Init().rtr, MpaRtr::kNone);
  EXPECT_FALSE(x.Init().send_rtr);
  EXPECT_TRUE(x.Init().initiator_ulp_sends_first);
  EXPECT_TRUE(x.Resp().hold_tx_until_first_fpdu);
  EXPECT_FALSE(x.Resp().established_after_rtr);
}

TEST(MpaRtrTest, RtrBitsWithoutP2pAreIgnored) {
  MpaPolicy resp;
  std::vector<uint8_t> storage;
  MpaResponse r = ResponderGets(resp, "50 02 0004 | 4010 c010", storage);
  ASSERT_TRUE(r.accepted);
  EXPECT_FALSE(r.outcome.p2p);
  EXPECT_EQ(r.outcome.rtr, MpaRtr::kNone);
}

// ---- Reject, revisions, CRC, limits ------------------------------------------

TEST(MpaRejectTest, UlpRejectWithPrivateData) {
  MpaPolicy init;
  MpaPolicy resp;
  auto req = MakeMpaRequest(init, {});
  ASSERT_TRUE(req.ok());
  const auto reason = Bytes("go away");
  auto rej = MakeMpaRejectReply(resp, req.value(), reason);
  ASSERT_TRUE(rej.ok());
  auto bytes = Encode(rej.value());
  EXPECT_EQ(ToHex(bytes), ToHex(Frame(kRepKey, "70 02 000b | 0010 0010 | 676f2061776179")));
  auto d = DecodeMpaFrame(bytes, MpaFrameKind::kReply);
  ASSERT_TRUE(d.ok());
  auto r = ProcessMpaReply(init, d->frame);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaRejected);
  EXPECT_EQ(Str(d->frame.private_data), "go away");
}

TEST(MpaRejectTest, RejectToRev1Request) {
  MpaPolicy resp;
  std::vector<uint8_t> storage = Frame(kReqKey, "00 01 0000");
  auto d = DecodeMpaFrame(storage, MpaFrameKind::kRequest);
  ASSERT_TRUE(d.ok());
  const auto reason = Bytes("no");
  auto rej = MakeMpaRejectReply(resp, d->frame, reason);
  ASSERT_TRUE(rej.ok());
  EXPECT_EQ(ToHex(Encode(rej.value())), ToHex(Frame(kRepKey, "60 01 0002 | 6e6f")));
}

TEST(MpaRejectTest, RejectReasonTooLong) {
  MpaPolicy resp;
  resp.max_private_data = kMpaLinuxPrivateDataLimit;
  auto req = MakeMpaRequest(MpaPolicy{}, {});
  ASSERT_TRUE(req.ok());
  std::vector<uint8_t> reason(253, 'x');  // + 4-byte block = 257
  auto rej = MakeMpaRejectReply(resp, req.value(), reason);
  ASSERT_FALSE(rej.ok());
  EXPECT_EQ(rej.error(), WireError::kMpaPrivateDataTooLong);
  reason.resize(252);
  EXPECT_TRUE(MakeMpaRejectReply(resp, req.value(), reason).ok());
}

TEST(MpaRevisionTest, Rev1InitiatorToRev2Responder) {
  MpaPolicy resp;  // rev 2
  std::vector<uint8_t> storage;
  // [MS-SMBD]-style rev-1 request: 8 bytes of private data (IRD 16, ORD 16 as u32).
  MpaResponse r = ResponderGets(resp, "40 01 0008 | 00000010 00000010", storage);
  ASSERT_TRUE(r.accepted) << ToString(r.reason);
  EXPECT_EQ(r.reply.revision, 1);
  EXPECT_FALSE(r.reply.ird_ord.has_value());
  EXPECT_FALSE(r.outcome.enhanced);
  EXPECT_EQ(r.outcome.peer_private_data.size(), 8u);
  EXPECT_EQ(r.outcome.peer_ird, kMpaNoIrdOrd);
  EXPECT_EQ(r.outcome.ird, resp.ird);
  EXPECT_TRUE(r.outcome.initiator_ulp_sends_first);
  EXPECT_EQ(ToHex(Encode(r.reply)), ToHex(Frame(kRepKey, "40 01 0000")));
}

TEST(MpaRevisionTest, Rev2InitiatorToRev1Responder) {
  MpaPolicy init;
  MpaPolicy resp;
  resp.max_revision = 1;
  const auto pd = Bytes("ulp");
  Exchange x(init, resp, pd);
  ASSERT_TRUE(x.Established());
  // The rev-1 responder's ULP sees only the ULP data, not the IRD/ORD block.
  EXPECT_EQ(Str(x.Resp().peer_private_data), "ulp");
  EXPECT_EQ(x.reply.revision, 1);
  EXPECT_EQ(x.Init().revision, 1);
  EXPECT_FALSE(x.Init().p2p);
  EXPECT_TRUE(x.Init().initiator_ulp_sends_first);
}

TEST(MpaRevisionTest, Rev2InitiatorAcceptsPlainRev1Reply) {
  MpaPolicy init;
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(init, "00 01 0000", storage);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->revision, 1);
  EXPECT_TRUE(r->crc);  // we asked
  EXPECT_EQ(r->rtr, MpaRtr::kNone);
}

TEST(MpaRevisionTest, ReplyRevisionAboveRequest) {
  MpaPolicy init;
  init.max_revision = 1;
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(init, "50 02 0004 | 8010 8010", storage);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaBadRevision);
}

TEST(MpaRevisionTest, Rev2ReplyWithoutIrdOrdBlock) {
  MpaPolicy init;
  std::vector<uint8_t> storage;
  auto r = InitiatorGets(init, "40 02 0000", storage);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaBadIrdOrd);
}

TEST(MpaRevisionTest, Rev2RequestWithoutEnhancedFlag) {
  MpaPolicy resp;
  std::vector<uint8_t> storage;
  MpaResponse r = ResponderGets(resp, "40 02 0000", storage);
  ASSERT_TRUE(r.accepted);
  EXPECT_EQ(r.reply.revision, 2);
  EXPECT_FALSE(r.reply.ird_ord.has_value());
  EXPECT_FALSE(r.outcome.enhanced);
}

TEST(MpaCrcTest, StrictPolicyRefusesPeerCrc) {
  MpaPolicy strict;
  strict.want_crc = false;
  strict.accept_peer_crc = false;
  MpaPolicy peer;  // wants CRC
  Exchange as_responder(peer, strict);
  EXPECT_FALSE(as_responder.response.accepted);
  EXPECT_EQ(as_responder.response.reason, WireError::kMpaCrcRefused);
  EXPECT_FALSE(as_responder.reply.crc);

  std::vector<uint8_t> storage;
  auto r = InitiatorGets(strict, "50 02 0004 | 8010 8010", storage);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaCrcRefused);

  peer.want_crc = false;
  Exchange both_off(peer, strict);
  ASSERT_TRUE(both_off.Established());
  EXPECT_FALSE(both_off.Init().crc);
}

TEST(MpaPolicyTest, InvalidPolicies) {
  auto invalid = [](void (*mutate)(MpaPolicy&)) {
    MpaPolicy p;
    mutate(p);
    return !IsValidMpaPolicy(p);
  };
  EXPECT_TRUE(IsValidMpaPolicy(MpaPolicy{}));
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.max_revision = 0; }));
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.max_revision = 3; }));
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.ird = 17; }));  // above max_ird
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.min_ord = 17; }));
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.ord = p.max_ird = kMpaNoIrdOrd; }));
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.rtr_types = 0x8; }));
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.rtr_types = 0; }));
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.accept_peer_crc = false; }));  // with want_crc
  EXPECT_TRUE(invalid([](MpaPolicy& p) { p.max_private_data = 3; }));
  EXPECT_FALSE(invalid([](MpaPolicy& p) {
    p.max_private_data = 0;
    p.max_revision = 1;
  }));
  EXPECT_FALSE(invalid([](MpaPolicy& p) {
    p.p2p = false;
    p.rtr_types = 0;
  }));

  MpaPolicy bad;
  bad.max_revision = 7;
  auto req = MakeMpaRequest(bad, {});
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.error(), WireError::kInvalidArgument);
  auto good_req = MakeMpaRequest(MpaPolicy{}, {});
  ASSERT_TRUE(good_req.ok());
  auto resp = RespondToMpaRequest(bad, good_req.value(), {});
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.error(), WireError::kInvalidArgument);
  MpaFrame reply;
  reply.kind = MpaFrameKind::kReply;
  auto out = ProcessMpaReply(bad, reply);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), WireError::kInvalidArgument);
  // Frames of the wrong kind are caller errors too.
  auto wrong = RespondToMpaRequest(MpaPolicy{}, reply, {});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error(), WireError::kInvalidArgument);
}

TEST(MpaLimitTest, RequestPrivateDataCountsTheBlock) {
  MpaPolicy linux_like;
  linux_like.max_private_data = kMpaLinuxPrivateDataLimit;
  std::vector<uint8_t> pd(253, 1);
  auto req = MakeMpaRequest(linux_like, pd);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.error(), WireError::kMpaPrivateDataTooLong);
  pd.resize(252);
  EXPECT_TRUE(MakeMpaRequest(linux_like, pd).ok());
  linux_like.max_revision = 1;  // no block: the full 256
  pd.resize(256);
  EXPECT_TRUE(MakeMpaRequest(linux_like, pd).ok());
}

TEST(MpaLimitTest, ReplyPrivateDataTooLongIsALocalError) {
  MpaPolicy resp;
  resp.max_private_data = 64;
  auto req = MakeMpaRequest(MpaPolicy{}, {});
  ASSERT_TRUE(req.ok());
  std::vector<uint8_t> pd(61, 0);
  auto r = RespondToMpaRequest(resp, req.value(), pd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaPrivateDataTooLong);
  pd.resize(60);
  EXPECT_TRUE(RespondToMpaRequest(resp, req.value(), pd).ok());
}

TEST(MpaLimitTest, ResponderDecodeRefusesOversizedRequest) {
  MpaPolicy init;  // 512
  std::vector<uint8_t> pd(300, 7);
  auto req = MakeMpaRequest(init, pd);
  ASSERT_TRUE(req.ok());
  auto bytes = Encode(req.value());
  MpaPolicy resp;
  resp.max_private_data = kMpaLinuxPrivateDataLimit;
  auto h = DecodeMpaHeader(ByteSpan(bytes).first(kMpaHeaderSize), MpaFrameKind::kRequest,
                           MpaLimitsFor(resp));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), WireError::kMpaPrivateDataTooLong);
}

}  // namespace
}  // namespace iwarpx::wire
