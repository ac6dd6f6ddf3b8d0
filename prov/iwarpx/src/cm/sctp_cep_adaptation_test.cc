// SctpCep and the peer's Adaptation Layer Indication (sctp_cep.h: the
// association must come from an RFC 5043 peer, code point 1). Runs over
// testing::FakeSctpConnection, whose ends advertise 1 unless told otherwise;
// sctp_cep_test.cc has the same over real usrsctp associations.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "cm/sctp_cep.h"
#include "testing/fake_clock.h"
#include "testing/fake_sctp_connection.h"
#include "wire/sctp_session.h"

namespace iwarpx::cm {
namespace {

using ::iwarpx::testing::FakeClock;
using ::iwarpx::testing::FakeSctpConnection;
using transport::MessageInfo;
using wire::WireError;

struct Pair {
  std::unique_ptr<FakeSctpConnection> a;  // initiator's end
  std::unique_ptr<FakeSctpConnection> b;  // responder's end
  FakeClock clock;
  std::unique_ptr<SctpCep> init;
  std::unique_ptr<SctpCep> resp;

  // `initiator_sends` / `responder_sends`: what each end advertises.
  Pair(std::optional<uint32_t> initiator_sends, std::optional<uint32_t> responder_sends) {
    auto [x, y] = ::iwarpx::testing::MakeFakeSctpPair();
    a = std::move(x);
    b = std::move(y);
    a->set_adaptation_indication(initiator_sends);
    b->set_adaptation_indication(responder_sends);
    init = std::move(SctpCep::CreateInitiator(*a, clock, {}, {})).value();
    resp = std::move(SctpCep::CreateResponder(*b, clock, {})).value();
  }
  void Drive() {
    for (int i = 0; i < 4; ++i) {
      init->OnWritable();
      init->OnReadable();
      resp->OnWritable();
      resp->OnReadable();
    }
  }
};

void ExpectNoDdpAdaptation(const SctpCep& cep) {
  EXPECT_EQ(cep.state(), CepState::kFailed) << ToString(cep.state());
  EXPECT_EQ(cep.error().kind, CepErrorKind::kProtocol);
  EXPECT_EQ(cep.error().wire_error, WireError::kSctpNoDdpAdaptation)
      << ToString(cep.error().wire_error);
  EXPECT_EQ(CepErrno(cep.error()), EPROTO);
}

TEST(SctpCepAdaptationTest, BothEndsSendingDdpEstablish) {
  Pair p(wire::kSctpAdaptationCodeDdp, wire::kSctpAdaptationCodeDdp);
  p.Drive();
  ASSERT_EQ(p.resp->state(), CepState::kRequestReceived);
  ASSERT_TRUE(p.resp->Accept({}).ok());
  p.init->OnReadable();
  EXPECT_EQ(p.init->state(), CepState::kEstablished);
  EXPECT_EQ(p.resp->state(), CepState::kEstablished);
}

// The responder refuses an initiator that is not an RFC 5043 peer before
// the Initiate is used: no answer, nothing for the application to decide.
TEST(SctpCepAdaptationTest, ResponderFailsAnInitiatorWithoutTheDdpIndication) {
  for (const std::optional<uint32_t> sent :
       {std::optional<uint32_t>{}, std::optional<uint32_t>{0}, std::optional<uint32_t>{2}}) {
    SCOPED_TRACE(sent ? static_cast<int64_t>(*sent) : -1);
    Pair p(sent, wire::kSctpAdaptationCodeDdp);
    p.Drive();
    ExpectNoDdpAdaptation(*p.resp);
    EXPECT_TRUE(p.resp->peer_private_data().empty());
    EXPECT_TRUE(p.b->sent().empty()) << "no answer";
    EXPECT_EQ(p.init->state(), CepState::kAwaitingReply);
    p.clock.Advance(CepTimeouts{}.reply_ns);
    p.init->OnTimer();
    EXPECT_EQ(p.init->state(), CepState::kFailed);
    EXPECT_EQ(p.init->error().kind, CepErrorKind::kTimeout);
  }
}

// The initiator refuses a responder that is not an RFC 5043 peer, whatever
// its answer.
TEST(SctpCepAdaptationTest, InitiatorFailsAResponderWithoutTheDdpIndication) {
  for (const std::optional<uint32_t> sent :
       {std::optional<uint32_t>{}, std::optional<uint32_t>{2}}) {
    SCOPED_TRACE(sent ? static_cast<int64_t>(*sent) : -1);
    {
      SCOPED_TRACE("accept");
      Pair p(wire::kSctpAdaptationCodeDdp, sent);
      p.Drive();
      ASSERT_EQ(p.resp->state(), CepState::kRequestReceived);
      ASSERT_TRUE(p.resp->Accept({}).ok());
      p.init->OnReadable();
      ExpectNoDdpAdaptation(*p.init);
      EXPECT_FALSE(p.init->outcome().has_value());
      EXPECT_TRUE(p.init->TakeEarlySegments().empty());
    }
    {
      SCOPED_TRACE("reject");
      Pair p(wire::kSctpAdaptationCodeDdp, sent);
      p.Drive();
      ASSERT_TRUE(p.resp->Reject({}).ok());
      p.init->OnReadable();
      ExpectNoDdpAdaptation(*p.init);
    }
    {
      SCOPED_TRACE("a DDP segment first");
      Pair p(wire::kSctpAdaptationCodeDdp, sent);
      p.Drive();
      const std::vector<uint8_t> seg(20, 0x5a);
      MessageInfo info;
      info.ppid = wire::kSctpPpidDdpSegment;
      info.stream = 2;
      p.a->Inject(seg, info);
      p.init->OnReadable();
      ExpectNoDdpAdaptation(*p.init);
      EXPECT_TRUE(p.init->TakeEarlySegments().empty());
    }
  }
}

}  // namespace
}  // namespace iwarpx::cm
