// SctpCep over real usrsctp associations on 127.0.0.1 (the kernel has no
// SCTP here; the CEP only sees the SctpConnection interface).
#include "cm/sctp_cep.h"

#include <poll.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fake_clock.h"
#include "transport/poller.h"
#include "transport/sctp.h"

namespace iwarpx::cm {
namespace {

using ::iwarpx::testing::FakeClock;
using transport::IoStatus;
using transport::MessageInfo;
using transport::Poller;
using transport::SctpBackend;
using transport::SctpConnection;
using transport::SockAddr;
using wire::WireError;

constexpr int kTimeoutMs = 5000;

std::vector<uint8_t> Bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

// The listener's close is exposed to usrsctp 0.9.5's race only while a
// handshake completes during it (transport/usrsctp_stack.h "Quiet close"),
// and these tests end as soon as the CEPs have answered, often before the
// association is up. So the teardown waits (bounded) for the association
// and accepts it before anything closes.
struct Assoc {
  Assoc() = default;
  Assoc(Assoc&&) = default;
  Assoc& operator=(Assoc&&) = default;
  ~Assoc() {
    if (listener && client && !server) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (!server && std::chrono::steady_clock::now() < deadline) {
        auto s = listener->AcceptSctp();
        if (s.ok()) {
          server = std::move(s).value();
        } else {
          pollfd p{listener->fd(), POLLIN, 0};
          (void)::poll(&p, 1, 20);
        }
      }
    }
    listener.reset();
    server.reset();
    client.reset();
  }

  std::unique_ptr<transport::SctpListener> listener;
  std::unique_ptr<SctpConnection> client;  // still connecting
  std::unique_ptr<SctpConnection> server;
};

Assoc MakeAssoc(const transport::SctpOptions& client_options = {},
                const transport::SctpOptions& listener_options = {}) {
  Assoc a;
  auto l = transport::SctpListen(SctpBackend::kUsrsctp, SockAddr::Loopback4(), listener_options);
  EXPECT_TRUE(l.ok());
  if (!l.ok()) return a;
  a.listener = std::move(l).value();
  auto c =
      transport::SctpConnect(SctpBackend::kUsrsctp, a.listener->local_address(), client_options);
  EXPECT_TRUE(c.ok());
  if (!c.ok()) return a;
  a.client = std::move(c).value();
  return a;
}

// Drives both CEPs (and the accept) until `done` holds or time runs out.
template <class Done>
bool Drive(Assoc& a, SctpCep* client, SctpCep* server, Done done) {
  auto poller = Poller::Create();
  if (!poller.ok()) return false;
  if (a.client) (void)(*poller)->Add(a.client->fd(), Poller::kReadable, uint64_t{1});
  (void)(*poller)->Add(a.listener->fd(), Poller::kReadable, uint64_t{2});
  bool server_added = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!a.server) {
      auto s = a.listener->AcceptSctp();
      if (s.ok()) a.server = std::move(s).value();
    }
    if (a.server && !server_added) {
      (void)(*poller)->Add(a.server->fd(), Poller::kReadable, uint64_t{3});
      server_added = true;
    }
    if (client != nullptr) {
      client->OnWritable();
      client->OnReadable();
    }
    if (server != nullptr && a.server) {
      server->OnReadable();
      server->OnWritable();
    }
    if (done()) return true;
    transport::PollEvent ev[4];
    (void)(*poller)->Wait(20, ev);
  }
  return done();
}

TEST(SctpCepTest, EstablishesWithIrdOrdAndPrivateData) {
  Assoc a = MakeAssoc();
  ASSERT_TRUE(a.client);
  FakeClock clock;
  wire::SctpSessionPolicy ip;
  ip.ird = 8;
  ip.max_ird = 8;
  ip.ord = 4;
  const auto hello = Bytes("hello from the initiator");
  auto init = SctpCep::CreateInitiator(*a.client, clock, ip, hello);
  ASSERT_TRUE(init.ok());
  // Not set up yet: usrsctp may have finished the association by now, so the
  // Initiate may already be on its way (kSendingRequest / kAwaitingReply).
  const CepState first = (*init)->state();
  EXPECT_TRUE(first == CepState::kConnecting || first == CepState::kSendingRequest ||
              first == CepState::kAwaitingReply)
      << static_cast<int>(first);

  std::unique_ptr<SctpCep> resp;
  ASSERT_TRUE(Drive(a, init->get(), nullptr, [&] {
    if (a.server && !resp) {
      wire::SctpSessionPolicy rp;
      rp.ird = 2;
      rp.max_ird = 2;
      rp.ord = 16;
      auto r = SctpCep::CreateResponder(*a.server, clock, rp);
      EXPECT_TRUE(r.ok());
      if (r.ok()) resp = std::move(r).value();
    }
    if (resp) resp->OnReadable();
    return resp && resp->state() == CepState::kRequestReceived;
  }));
  EXPECT_EQ(std::string(resp->peer_private_data().begin(), resp->peer_private_data().end()),
            "hello from the initiator");
  EXPECT_FALSE(resp->deadline().has_value()) << "no timer while the application decides";
  EXPECT_EQ((*init)->state(), CepState::kAwaitingReply);

  const auto welcome = Bytes("welcome");
  auto st = resp->Accept(welcome);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(Drive(a, init->get(), resp.get(),
                    [&] {
                      return (*init)->state() == CepState::kEstablished &&
                             resp->state() == CepState::kEstablished;
                    }))
      << ToString((*init)->state()) << " / " << ToString(resp->state());
  const wire::MpaOutcome& io = *(*init)->outcome();
  const wire::MpaOutcome& ro = *resp->outcome();
  EXPECT_EQ(io.ord, 2);  // lowered to the responder's IRD
  EXPECT_EQ(ro.ord, 8);  // lowered to the initiator's IRD
  EXPECT_FALSE(io.crc);
  EXPECT_FALSE(io.send_rtr);
  EXPECT_EQ(std::string((*init)->peer_private_data().begin(), (*init)->peer_private_data().end()),
            "welcome");
  EXPECT_FALSE((*init)->deadline().has_value());
}

// Send with Immediate Data: offered by the initiator's policy and by the
// responder at Accept (as fi_accept of an endpoint with cq_data_size does),
// so both outcomes have it; a responder that does not offer gives none.
TEST(SctpCepTest, SendWithImmediateDataIsNegotiatedAtAccept) {
  for (const bool responder_offers : {true, false}) {
    SCOPED_TRACE(responder_offers ? "responder offers" : "responder does not offer");
    Assoc a = MakeAssoc();
    ASSERT_TRUE(a.client);
    FakeClock clock;
    wire::SctpSessionPolicy ip;
    ip.offer_send_imm = true;
    auto init = SctpCep::CreateInitiator(*a.client, clock, ip, {});
    ASSERT_TRUE(init.ok());
    std::unique_ptr<SctpCep> resp;
    ASSERT_TRUE(Drive(a, init->get(), nullptr, [&] {
      if (a.server && !resp) {
        auto r = SctpCep::CreateResponder(*a.server, clock, {});
        EXPECT_TRUE(r.ok());
        if (r.ok()) resp = std::move(r).value();
      }
      if (resp) resp->OnReadable();
      return resp && resp->state() == CepState::kRequestReceived;
    }));
    ASSERT_TRUE(resp->AcceptRequest({}, responder_offers).ok());
    ASSERT_TRUE(Drive(a, init->get(), resp.get(), [&] {
      return (*init)->state() == CepState::kEstablished && resp->state() == CepState::kEstablished;
    }));
    EXPECT_EQ((*init)->outcome()->send_imm, responder_offers);
    EXPECT_EQ(resp->outcome()->send_imm, responder_offers);
  }
}

TEST(SctpCepTest, ApplicationRejectReachesTheInitiator) {
  Assoc a = MakeAssoc();
  ASSERT_TRUE(a.client);
  FakeClock clock;
  auto init = SctpCep::CreateInitiator(*a.client, clock, {}, {});
  ASSERT_TRUE(init.ok());
  std::unique_ptr<SctpCep> resp;
  ASSERT_TRUE(Drive(a, init->get(), nullptr, [&] {
    if (a.server && !resp) resp = std::move(SctpCep::CreateResponder(*a.server, clock, {})).value();
    if (resp) resp->OnReadable();
    return resp && resp->state() == CepState::kRequestReceived;
  }));
  const auto busy = Bytes("busy");
  ASSERT_TRUE(resp->Reject(busy).ok());
  ASSERT_TRUE(Drive(a, init->get(), resp.get(), [&] {
    return (*init)->state() == CepState::kRejected;
  })) << ToString((*init)->state());
  EXPECT_EQ(resp->state(), CepState::kClosedAfterReject);
  EXPECT_EQ((*init)->error().wire_error, WireError::kMpaRejected);
  EXPECT_EQ(CepErrno((*init)->error()), ECONNREFUSED);
  EXPECT_EQ(std::string((*init)->peer_private_data().begin(), (*init)->peer_private_data().end()),
            "busy");
}

// The responder refuses setup messages that are not a proper Initiate.
class SctpCepBadInputTest
    : public ::testing::TestWithParam<std::tuple<uint32_t, std::string, WireError>> {};

TEST_P(SctpCepBadInputTest, ResponderFailsWithoutAnswering) {
  const auto& [ppid, hex_bytes, expected] = GetParam();
  Assoc a = MakeAssoc();
  ASSERT_TRUE(a.client);
  FakeClock clock;
  // The "initiator" is the test itself: connect, then send the bad message.
  ASSERT_TRUE(Drive(a, nullptr, nullptr, [&] {
    (void)a.client->FinishConnect();
    return a.server != nullptr && a.client->connected();
  }));
  std::vector<uint8_t> bytes(hex_bytes.begin(), hex_bytes.end());
  const iovec v{bytes.data(), bytes.size()};
  MessageInfo info;
  info.ppid = ppid;
  ASSERT_TRUE(a.client->SendMsg({&v, 1}, info).ok());
  auto resp = SctpCep::CreateResponder(*a.server, clock, {});
  ASSERT_TRUE(resp.ok());
  ASSERT_TRUE(Drive(a, nullptr, resp->get(), [&] { return IsTerminal((*resp)->state()); }))
      << ToString((*resp)->state());
  EXPECT_EQ((*resp)->state(), CepState::kFailed);
  EXPECT_EQ((*resp)->error().kind, CepErrorKind::kProtocol);
  EXPECT_EQ((*resp)->error().wire_error, expected) << ToString((*resp)->error().wire_error);
  // Nothing was answered.
  char buf[64];
  const iovec b{buf, sizeof(buf)};
  EXPECT_EQ(a.client->RecvMsg({&b, 1}, info).status, IoStatus::kWouldBlock);
}

INSTANTIATE_TEST_SUITE_P(Refused, SctpCepBadInputTest,
                         ::testing::Values(
                             // A well-formed Initiate sent as a DDP segment (PPID 16).
                             std::make_tuple(16u, std::string("\x00\x01\x00\x00", 4),
                                             WireError::kSctpSessionBadFunction),
                             // An Accept where an Initiate is expected.
                             std::make_tuple(17u, std::string("\x00\x02\x00\x00", 4),
                                             WireError::kSctpSessionBadFunction),
                             // Unknown Function Code.
                             std::make_tuple(17u, std::string("\x00\x09\x00\x00", 4),
                                             WireError::kSctpSessionBadFunction),
                             // PD Length larger than the message.
                             std::make_tuple(17u,
                                             std::string("\x00\x01\x00\x05"
                                                         "ab",
                                                         6),
                                             WireError::kTruncated),
                             // Enhanced Initiate without its IRD/ORD block.
                             std::make_tuple(17u, std::string("\x00\x05\x00\x00", 4),
                                             WireError::kSctpSessionBadIrdOrd)));

TEST(SctpCepTest, InitiatorTimesOutWithoutAnswer) {
  Assoc a = MakeAssoc();
  ASSERT_TRUE(a.client);
  FakeClock clock;
  CepTimeouts t;
  t.reply_ns = 3 * kNsPerSecond;
  auto init = SctpCep::CreateInitiator(*a.client, clock, {}, {}, t);
  ASSERT_TRUE(init.ok());
  ASSERT_TRUE(
      Drive(a, init->get(), nullptr, [&] { return (*init)->state() == CepState::kAwaitingReply; }));
  clock.Advance(3 * kNsPerSecond - 1);
  (*init)->OnTimer();
  EXPECT_EQ((*init)->state(), CepState::kAwaitingReply);
  clock.Advance(1);
  (*init)->OnTimer();
  EXPECT_EQ((*init)->state(), CepState::kFailed);
  EXPECT_EQ((*init)->error().kind, CepErrorKind::kTimeout);
}

TEST(SctpCepTest, AcceptAndRejectOnlyInRequestReceived) {
  Assoc a = MakeAssoc();
  ASSERT_TRUE(a.client);
  FakeClock clock;
  auto init = SctpCep::CreateInitiator(*a.client, clock, {}, {});
  ASSERT_TRUE(init.ok());
  EXPECT_EQ((*init)->Accept({}).error(), WireError::kInvalidArgument);
  EXPECT_EQ((*init)->Reject({}).error(), WireError::kInvalidArgument);
  const std::vector<uint8_t> big(wire::kSctpSessionMaxPrivateData);
  EXPECT_EQ(SctpCep::CreateInitiator(*a.client, clock, {}, big).error(),
            WireError::kSctpSessionPrivateDataTooLong);
}

// While the application decides, the responder still watches the
// association: a message from the initiator (it must wait for the answer) or
// its departure fails the setup.
TEST(SctpCepTest, ResponderNoticesTrailingMessageOrDepartureBeforeDeciding) {
  for (const bool depart : {false, true}) {
    Assoc a = MakeAssoc();
    ASSERT_TRUE(a.client);
    FakeClock clock;
    auto created = SctpCep::CreateInitiator(*a.client, clock, {}, {});
    ASSERT_TRUE(created.ok());
    std::unique_ptr<SctpCep> init = std::move(created).value();
    std::unique_ptr<SctpCep> resp;
    ASSERT_TRUE(Drive(a, init.get(), nullptr, [&] {
      if (a.server && !resp)
        resp = std::move(SctpCep::CreateResponder(*a.server, clock, {})).value();
      if (resp) resp->OnReadable();
      return resp && resp->state() == CepState::kRequestReceived &&
             init->state() == CepState::kAwaitingReply;
    }));
    EXPECT_TRUE(resp->wants_read());
    if (depart) {
      init.reset();
      a.client.reset();  // usrsctp_close: the association ends
    } else {
      MessageInfo info;
      info.ppid = 16;
      uint8_t byte = 1;
      const iovec v{&byte, 1};
      ASSERT_TRUE(a.client->SendMsg({&v, 1}, info).ok());
    }
    ASSERT_TRUE(Drive(a, nullptr, resp.get(), [&] { return resp->state() == CepState::kFailed; }))
        << ToString(resp->state());
    if (depart) {
      EXPECT_TRUE(resp->error().kind == CepErrorKind::kPeerClosed ||
                  resp->error().kind == CepErrorKind::kTransport);
    } else {
      EXPECT_EQ(resp->error().kind, CepErrorKind::kProtocol);
      EXPECT_EQ(resp->error().wire_error, WireError::kMpaTrailingBytes);
    }
  }
}

// The peer's Adaptation Layer Indication over real associations (the fake's
// version: sctp_cep_adaptation_test.cc): an end that sends none, or another
// code point, is not an RFC 5043 peer and fails the setup at the other end.
TEST(SctpCepUsrsctpAdaptationTest, ResponderFailsAnInitiatorWithoutTheDdpIndication) {
  for (const std::optional<uint32_t> sent :
       {std::optional<uint32_t>{}, std::optional<uint32_t>{2}}) {
    SCOPED_TRACE(sent ? static_cast<int64_t>(*sent) : -1);
    transport::SctpOptions not_ddp;
    not_ddp.adaptation_indication = sent;
    Assoc a = MakeAssoc(not_ddp);
    ASSERT_TRUE(a.client);
    FakeClock clock;
    auto init = SctpCep::CreateInitiator(*a.client, clock, {}, {});
    ASSERT_TRUE(init.ok());
    std::unique_ptr<SctpCep> resp;
    ASSERT_TRUE(Drive(a, init->get(), resp.get(), [&] {
      if (a.server && !resp)
        resp = std::move(SctpCep::CreateResponder(*a.server, clock, {})).value();
      if (resp) resp->OnReadable();
      return resp && IsTerminal(resp->state());
    }));
    EXPECT_EQ(resp->state(), CepState::kFailed) << ToString(resp->state());
    EXPECT_EQ(resp->error().kind, CepErrorKind::kProtocol);
    EXPECT_EQ(resp->error().wire_error, WireError::kSctpNoDdpAdaptation)
        << ToString(resp->error().wire_error);
    EXPECT_EQ(a.server->peer_adaptation_indication(), sent);
    EXPECT_EQ((*init)->state(), CepState::kAwaitingReply) << "no answer";
  }
}

TEST(SctpCepUsrsctpAdaptationTest, InitiatorFailsAResponderWithoutTheDdpIndication) {
  for (const std::optional<uint32_t> sent :
       {std::optional<uint32_t>{}, std::optional<uint32_t>{2}}) {
    SCOPED_TRACE(sent ? static_cast<int64_t>(*sent) : -1);
    transport::SctpOptions not_ddp;
    not_ddp.adaptation_indication = sent;
    Assoc a = MakeAssoc({}, not_ddp);
    ASSERT_TRUE(a.client);
    FakeClock clock;
    auto init = SctpCep::CreateInitiator(*a.client, clock, {}, {});
    ASSERT_TRUE(init.ok());
    std::unique_ptr<SctpCep> resp;
    ASSERT_TRUE(Drive(a, init->get(), nullptr, [&] {
      if (a.server && !resp)
        resp = std::move(SctpCep::CreateResponder(*a.server, clock, {})).value();
      if (resp) {
        resp->OnReadable();
        if (resp->state() == CepState::kRequestReceived) {
          EXPECT_TRUE(resp->Accept({}).ok());
        }
        resp->OnWritable();
      }
      return IsTerminal((*init)->state());
    }));
    EXPECT_EQ(resp->state(), CepState::kEstablished) << "the responder's peer speaks DDP";
    EXPECT_EQ((*init)->state(), CepState::kFailed) << ToString((*init)->state());
    EXPECT_EQ((*init)->error().kind, CepErrorKind::kProtocol);
    EXPECT_EQ((*init)->error().wire_error, WireError::kSctpNoDdpAdaptation)
        << ToString((*init)->error().wire_error);
    EXPECT_EQ(a.client->peer_adaptation_indication(), sent);
  }
}

TEST(SctpCepUsrsctpAdaptationTest, BothEndsLearnTheDdpIndication) {
  Assoc a = MakeAssoc();
  ASSERT_TRUE(a.client);
  FakeClock clock;
  auto init = SctpCep::CreateInitiator(*a.client, clock, {}, {});
  ASSERT_TRUE(init.ok());
  std::unique_ptr<SctpCep> resp;
  ASSERT_TRUE(Drive(a, init->get(), nullptr, [&] {
    if (a.server && !resp) resp = std::move(SctpCep::CreateResponder(*a.server, clock, {})).value();
    if (resp) {
      resp->OnReadable();
      if (resp->state() == CepState::kRequestReceived) {
        EXPECT_TRUE(resp->Accept({}).ok());
      }
      resp->OnWritable();
    }
    return IsTerminal((*init)->state());
  }));
  EXPECT_EQ((*init)->state(), CepState::kEstablished);
  EXPECT_EQ(a.client->peer_adaptation_indication(), wire::kSctpAdaptationCodeDdp);
  EXPECT_EQ(a.server->peer_adaptation_indication(), wire::kSctpAdaptationCodeDdp);
}

}  // namespace
}  // namespace iwarpx::cm
