#include "cm/cep.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fake_clock.h"
#include "testing/fake_connection.h"
#include "wire/mpa.h"
#include "wire/mpa_negotiate.h"

namespace iwarpx::cm {

// Readable state names in gtest messages.
void PrintTo(CepState s, std::ostream* os) {
  *os << ToString(s);
}

namespace {

using ::iwarpx::testing::FakeClock;
using ::iwarpx::testing::FakeConnection;
using ::iwarpx::testing::MakeFakeConnectionPair;
using transport::IoResult;
using transport::IoStatus;
using wire::MpaFrame;
using wire::MpaFrameKind;
using wire::MpaPolicy;
using wire::MpaRtr;
using wire::RtrBit;
using wire::WireError;

constexpr uint64_t kTenSeconds = 10 * kNsPerSecond;

ByteSpan Span(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string Str(ByteSpan b) {
  return {b.begin(), b.end()};
}

std::vector<uint8_t> Encode(const MpaFrame& f) {
  std::vector<uint8_t> out(wire::MpaFrameSize(f));
  auto n = wire::EncodeMpaFrame(f, out);
  EXPECT_TRUE(n.ok());
  return out;
}

std::vector<uint8_t> DefaultRequest(std::string_view pd = "req") {
  auto req = wire::MakeMpaRequest(MpaPolicy{}, Span(pd));
  EXPECT_TRUE(req.ok());
  return Encode(*req);
}

// Sends all of `bytes` on a fake end (the fake never blocks without a
// capacity limit; it may take them in several calls).
void SendAll(FakeConnection& c, ByteSpan bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const iovec v{const_cast<uint8_t*>(bytes.data() + done), bytes.size() - done};
    const IoResult r = c.SendV({&v, 1});
    ASSERT_TRUE(r.ok());
    done += r.bytes;
  }
}

// Everything pending on a fake end.
std::vector<uint8_t> RecvPending(FakeConnection& c) {
  std::vector<uint8_t> out(c.pending());
  size_t done = 0;
  while (done < out.size()) {
    const iovec v{out.data() + done, out.size() - done};
    const IoResult r = c.RecvV({&v, 1});
    EXPECT_TRUE(r.ok());
    if (!r.ok()) break;
    done += r.bytes;
  }
  return out;
}

using Decide = std::function<void(Cep&)>;

// Drives both CEPs as a progress engine would until both are terminal (bounded).
void Drive(Cep& ini, Cep& resp, const Decide& decide) {
  for (int round = 0; round < 20000; ++round) {
    if (IsTerminal(ini.state()) && IsTerminal(resp.state())) return;
    ini.OnWritable();
    ini.OnReadable();
    resp.OnReadable();
    resp.OnWritable();
    if (resp.state() == CepState::kRequestReceived && decide) decide(resp);
  }
  ADD_FAILURE() << "no end: initiator " << ToString(ini.state()) << ", responder "
                << ToString(resp.state());
}

Decide AcceptWith(std::string_view pd) {
  return [pd](Cep& c) {
    auto r = c.Accept(Span(pd));
    EXPECT_TRUE(r.ok());
  };
}

struct Fixture {
  explicit Fixture(size_t max_per_call = 0) {
    auto [a, b] = MakeFakeConnectionPair(max_per_call);
    ini_conn = std::move(a);
    resp_conn = std::move(b);
  }
  std::unique_ptr<Cep> Initiator(const MpaPolicy& policy = {}, std::string_view pd = "",
                                 const CepTimeouts& t = {}) {
    auto c = Cep::CreateInitiator(*ini_conn, clock, policy, Span(pd), t);
    EXPECT_TRUE(c.ok());
    return c.ok() ? std::move(c).value() : nullptr;
  }
  std::unique_ptr<Cep> Responder(const MpaPolicy& policy = {}, const CepTimeouts& t = {}) {
    auto c = Cep::CreateResponder(*resp_conn, clock, policy, t);
    EXPECT_TRUE(c.ok());
    return c.ok() ? std::move(c).value() : nullptr;
  }

  FakeClock clock;
  std::unique_ptr<FakeConnection> ini_conn;
  std::unique_ptr<FakeConnection> resp_conn;
};

// --- complete handshakes ---------------------------------------------------

class CepHandshakeTest : public ::testing::TestWithParam<size_t> {};

TEST_P(CepHandshakeTest, V2WithCrcCompletesOverPartialIo) {
  Fixture f(GetParam());
  auto ini = f.Initiator({}, "hello from the initiator");
  auto resp = f.Responder();
  ASSERT_TRUE(ini && resp);
  EXPECT_EQ(ini->state(), CepState::kSendingRequest);
  EXPECT_TRUE(ini->wants_write());
  EXPECT_EQ(resp->state(), CepState::kAwaitingRequest);
  EXPECT_TRUE(resp->wants_read());

  std::string seen_at_decision;
  Drive(*ini, *resp, [&](Cep& c) {
    seen_at_decision = Str(c.peer_private_data());
    ASSERT_TRUE(c.outcome().has_value());
    EXPECT_FALSE(c.deadline().has_value());  // the application's decision is not timed
    auto r = c.Accept(Span("responder says hi"));
    ASSERT_TRUE(r.ok());
  });
  EXPECT_EQ(seen_at_decision, "hello from the initiator");

  ASSERT_EQ(ini->state(), CepState::kEstablished);
  ASSERT_EQ(resp->state(), CepState::kEstablished);
  EXPECT_EQ(Str(ini->peer_private_data()), "responder says hi");
  EXPECT_EQ(Str(resp->peer_private_data()), "hello from the initiator");
  const wire::MpaOutcome& i = *ini->outcome();
  const wire::MpaOutcome& r = *resp->outcome();
  EXPECT_EQ(i.role, wire::MpaRole::kInitiator);
  EXPECT_EQ(r.role, wire::MpaRole::kResponder);
  EXPECT_EQ(i.revision, 2);
  EXPECT_EQ(r.revision, 2);
  EXPECT_TRUE(i.enhanced && r.enhanced);
  EXPECT_TRUE(i.crc && r.crc);
  EXPECT_FALSE(i.markers_tx || i.markers_rx || r.markers_tx || r.markers_rx);
  EXPECT_TRUE(i.p2p && r.p2p);
  EXPECT_EQ(i.rtr, MpaRtr::kWrite);
  EXPECT_EQ(r.rtr, MpaRtr::kWrite);
  EXPECT_TRUE(i.send_rtr);
  EXPECT_TRUE(r.established_after_rtr);
  EXPECT_EQ(i.ord, 16);
  EXPECT_EQ(i.ird, 16);
  EXPECT_EQ(i.peer_ird, r.ird);
  EXPECT_EQ(i.peer_ord, r.ord);
  EXPECT_EQ(r.peer_ird, i.ird);
  EXPECT_EQ(r.peer_ord, i.ord);
  EXPECT_LE(i.ord, r.ird);
  EXPECT_LE(r.ord, i.ird);
  EXPECT_EQ(Str(i.peer_private_data), "responder says hi");
  EXPECT_EQ(Str(r.peer_private_data), "hello from the initiator");
  EXPECT_EQ(ini->error().kind, CepErrorKind::kNone);
  EXPECT_EQ(resp->error().kind, CepErrorKind::kNone);
  EXPECT_FALSE(ini->deadline().has_value());
  EXPECT_FALSE(resp->deadline().has_value());
  EXPECT_FALSE(ini->wants_read() || ini->wants_write());
  EXPECT_FALSE(resp->wants_read() || resp->wants_write());
  EXPECT_EQ(f.ini_conn->pending(), 0U);
  EXPECT_EQ(f.resp_conn->pending(), 0U);
}

INSTANTIATE_TEST_SUITE_P(MaxPerCall, CepHandshakeTest, ::testing::Values(1, 3, 7, 0));

TEST(CepTest, CompletesUnderSendBackpressure) {
  Fixture f;
  f.ini_conn->set_send_capacity(5);
  auto ini = f.Initiator({}, std::string(100, 'i'));
  auto resp = f.Responder();
  Drive(*ini, *resp, AcceptWith(std::string(200, 'r')));
  EXPECT_EQ(ini->state(), CepState::kEstablished);
  EXPECT_EQ(resp->state(), CepState::kEstablished);
  EXPECT_EQ(Str(ini->peer_private_data()), std::string(200, 'r'));
  EXPECT_EQ(Str(resp->peer_private_data()), std::string(100, 'i'));
}

TEST(CepTest, EmptyPrivateDataBothWays) {
  Fixture f(1);
  auto ini = f.Initiator();
  auto resp = f.Responder();
  Drive(*ini, *resp, AcceptWith(""));
  EXPECT_EQ(ini->state(), CepState::kEstablished);
  EXPECT_EQ(resp->state(), CepState::kEstablished);
  EXPECT_TRUE(ini->peer_private_data().empty());
  EXPECT_TRUE(resp->peer_private_data().empty());
}

// The iwarpx Send with Immediate Data extension: the responder's endpoint is
// known only at Accept, which may add the offer to its creation policy.
TEST(CepTest, SendImmOfferedAtAcceptIsNegotiated) {
  for (bool initiator_offers : {false, true}) {
    for (bool accept_offers : {false, true}) {
      SCOPED_TRACE(std::to_string(initiator_offers) + std::to_string(accept_offers));
      Fixture f(3);
      MpaPolicy ip;
      ip.offer_send_imm = initiator_offers;
      auto ini = f.Initiator(ip);
      auto resp = f.Responder();
      Drive(*ini, *resp, [accept_offers](Cep& c) {
        auto r = c.Accept({}, accept_offers);
        EXPECT_TRUE(r.ok());
      });
      ASSERT_EQ(ini->state(), CepState::kEstablished);
      ASSERT_EQ(resp->state(), CepState::kEstablished);
      const bool both = initiator_offers && accept_offers;
      EXPECT_EQ(ini->outcome()->send_imm, both);
      EXPECT_EQ(resp->outcome()->send_imm, both);
    }
  }
}

TEST(CepTest, RejectCarriesPrivateDataToInitiator) {
  Fixture f(3);
  auto ini = f.Initiator({}, "may I?");
  auto resp = f.Responder();
  Drive(*ini, *resp, [](Cep& c) {
    auto r = c.Reject(Span("no: server busy"));
    ASSERT_TRUE(r.ok());
  });
  EXPECT_EQ(resp->state(), CepState::kClosedAfterReject);
  EXPECT_EQ(resp->error().kind, CepErrorKind::kNone);
  EXPECT_FALSE(resp->outcome().has_value());
  ASSERT_EQ(ini->state(), CepState::kRejected);
  EXPECT_EQ(Str(ini->peer_private_data()), "no: server busy");
  EXPECT_EQ(ini->error().kind, CepErrorKind::kProtocol);
  EXPECT_EQ(ini->error().wire_error, WireError::kMpaRejected);
  EXPECT_FALSE(ini->error().terminate.has_value());
  EXPECT_EQ(CepErrno(ini->error()), ECONNREFUSED);
  EXPECT_FALSE(ini->outcome().has_value());
  // The responder half-closed after its reject Reply.
  uint8_t b = 0;
  const iovec v{&b, 1};
  EXPECT_EQ(f.ini_conn->RecvV({&v, 1}).status, IoStatus::kClosed);
}

TEST(CepTest, Rev1ResponderFallsBackToClientServer) {
  Fixture f(7);
  MpaPolicy rev1;
  rev1.max_revision = 1;
  auto ini = f.Initiator({}, "v2 here");
  auto resp = f.Responder(rev1);
  Drive(*ini, *resp, AcceptWith("v1 here"));
  ASSERT_EQ(ini->state(), CepState::kEstablished);
  ASSERT_EQ(resp->state(), CepState::kEstablished);
  for (const Cep* c : {ini.get(), resp.get()}) {
    EXPECT_EQ(c->outcome()->revision, 1);
    EXPECT_FALSE(c->outcome()->enhanced);
    EXPECT_FALSE(c->outcome()->p2p);
    EXPECT_TRUE(c->outcome()->crc);
    EXPECT_TRUE(c->outcome()->initiator_ulp_sends_first);
  }
  EXPECT_FALSE(ini->outcome()->send_rtr);
  EXPECT_TRUE(resp->outcome()->hold_tx_until_first_fpdu);
  EXPECT_FALSE(resp->outcome()->established_after_rtr);
  EXPECT_EQ(Str(ini->peer_private_data()), "v1 here");
  EXPECT_EQ(Str(resp->peer_private_data()), "v2 here");
}

TEST(CepTest, Rev1InitiatorWithoutCrc) {
  Fixture f(1);
  MpaPolicy rev1;
  rev1.max_revision = 1;
  rev1.want_crc = false;
  auto ini = f.Initiator(rev1, "old");
  auto resp = f.Responder();
  Drive(*ini, *resp, AcceptWith("new"));
  ASSERT_EQ(ini->state(), CepState::kEstablished);
  ASSERT_EQ(resp->state(), CepState::kEstablished);
  EXPECT_EQ(ini->outcome()->revision, 1);
  EXPECT_EQ(resp->outcome()->revision, 1);
  // The responder asks for CRC, so it is on both ways.
  EXPECT_TRUE(ini->outcome()->crc);
  EXPECT_TRUE(resp->outcome()->crc);
  EXPECT_EQ(Str(resp->peer_private_data()), "old");
}

// --- negotiation failures -------------------------------------------------

TEST(CepTest, NoCommonRtrResponderRejects) {
  Fixture f(3);
  MpaPolicy read_only;
  read_only.rtr_types = RtrBit(MpaRtr::kRead);
  MpaPolicy write_only;
  write_only.rtr_types = RtrBit(MpaRtr::kWrite);
  auto ini = f.Initiator(read_only, "pd");
  auto resp = f.Responder(write_only);
  bool asked = false;
  Drive(*ini, *resp, [&](Cep&) { asked = true; });
  EXPECT_FALSE(asked);  // a refused Request never reaches the application
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().kind, CepErrorKind::kProtocol);
  EXPECT_EQ(resp->error().wire_error, WireError::kMpaNoMatchingRtr);
  EXPECT_EQ(CepErrno(resp->error()), EPROTO);
  // A conforming initiator only sees R=1 (a protocol reject has no private data).
  ASSERT_EQ(ini->state(), CepState::kRejected);
  EXPECT_EQ(ini->error().wire_error, WireError::kMpaRejected);
  EXPECT_TRUE(ini->peer_private_data().empty());
}

TEST(CepTest, InitiatorRefusesUnofferedRtrAndNamesTerminate) {
  Fixture f(0);
  auto ini = f.Initiator();  // offers Write | Read
  ini->OnWritable();
  ASSERT_EQ(ini->state(), CepState::kAwaitingReply);
  RecvPending(*f.resp_conn);
  MpaFrame reply;
  reply.kind = MpaFrameKind::kReply;
  reply.crc = false;
  reply.revision = 2;
  reply.ird_ord = wire::MpaIrdOrd{.p2p = true, .ird = 16, .ord = 16, .rtr = RtrBit(MpaRtr::kSend)};
  SendAll(*f.resp_conn, Encode(reply));
  ini->OnReadable();
  ASSERT_EQ(ini->state(), CepState::kFailed);
  EXPECT_EQ(ini->error().wire_error, WireError::kMpaNoMatchingRtr);
  ASSERT_TRUE(ini->error().terminate.has_value());
  EXPECT_EQ(*ini->error().terminate, wire::term::kLlpNoMatchingRtr);
  EXPECT_TRUE(ini->error().terminate_crc);  // our Request asked for CRC
}

TEST(CepTest, MalformedReplyNamesNoTerminate) {
  Fixture f(0);
  auto ini = f.Initiator();
  ini->OnWritable();
  RecvPending(*f.resp_conn);
  SendAll(*f.resp_conn, DefaultRequest());  // a Request key where a Reply belongs
  ini->OnReadable();
  ASSERT_EQ(ini->state(), CepState::kFailed);
  EXPECT_EQ(ini->error().wire_error, WireError::kMpaBadKey);
  EXPECT_FALSE(ini->error().terminate.has_value());
}

TEST(CepTest, BadKeyRequestFailsAndSendsNothing) {
  Fixture f(0);
  auto resp = f.Responder();
  SendAll(*f.ini_conn, Span("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().wire_error, WireError::kMpaBadKey);
  EXPECT_EQ(f.ini_conn->pending(), 0U);
  uint8_t b = 0;
  const iovec v{&b, 1};
  EXPECT_EQ(f.ini_conn->RecvV({&v, 1}).status, IoStatus::kWouldBlock);  // not even closed
  // Only the 20-byte header was read.
  EXPECT_EQ(f.resp_conn->pending(), 27U - wire::kMpaHeaderSize);
}

TEST(CepTest, ResponderRefusesOversizedPdLengthBeforeTheData) {
  Fixture f(0);
  MpaPolicy small;
  small.max_private_data = 64;
  auto resp = f.Responder(small);
  std::vector<uint8_t> header = DefaultRequest();
  header.resize(wire::kMpaHeaderSize);
  StoreBe16(&header[18], 200);
  SendAll(*f.ini_conn, header);  // header only: the 200 bytes never come
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().wire_error, WireError::kMpaPrivateDataTooLong);
}

TEST(CepTest, InitiatorRefusesOversizedPdLengthBeforeTheData) {
  Fixture f(0);
  MpaPolicy linux_limit;
  linux_limit.max_private_data = wire::kMpaLinuxPrivateDataLimit;
  auto ini = f.Initiator(linux_limit);
  ini->OnWritable();
  RecvPending(*f.resp_conn);
  MpaFrame reply;
  reply.kind = MpaFrameKind::kReply;
  reply.crc = true;
  reply.revision = 2;
  reply.ird_ord = wire::MpaIrdOrd{.p2p = true, .ird = 16, .ord = 16, .rtr = RtrBit(MpaRtr::kWrite)};
  std::vector<uint8_t> header = Encode(reply);
  header.resize(wire::kMpaHeaderSize);
  StoreBe16(&header[18], 300);
  SendAll(*f.resp_conn, header);
  ini->OnReadable();
  ASSERT_EQ(ini->state(), CepState::kFailed);
  EXPECT_EQ(ini->error().wire_error, WireError::kMpaPrivateDataTooLong);
  EXPECT_FALSE(ini->error().terminate.has_value());
}

// --- the stream after the frame --------------------------------------------

class CepStreamTest : public ::testing::TestWithParam<size_t> {};

TEST_P(CepStreamTest, FirstFpduBytesStayInTheConnection) {
  Fixture f(GetParam());
  auto ini = f.Initiator({}, "abc");
  auto resp = f.Responder();
  for (int i = 0; i < 1000 && resp->state() != CepState::kRequestReceived; ++i) {
    ini->OnWritable();
    resp->OnReadable();
  }
  ASSERT_EQ(resp->state(), CepState::kRequestReceived);
  ASSERT_TRUE(resp->Accept(Span("xyz")).ok());
  for (int i = 0; i < 1000 && resp->state() != CepState::kEstablished; ++i) resp->OnWritable();
  ASSERT_EQ(resp->state(), CepState::kEstablished);
  // The responder's QP (a rev-1 peer could) sends right behind the Reply,
  // before the initiator has read any of it.
  const std::string fpdu(
      "\x00\x06"
      "FPDU!!",
      8);
  SendAll(*f.resp_conn, Span(fpdu));
  for (int i = 0; i < 1000 && ini->state() != CepState::kEstablished; ++i) ini->OnReadable();
  ASSERT_EQ(ini->state(), CepState::kEstablished);
  EXPECT_EQ(Str(ini->peer_private_data()), "xyz");
  ini->OnReadable();  // spurious: changes nothing, reads nothing
  EXPECT_EQ(f.ini_conn->pending(), fpdu.size());
  f.ini_conn->set_max_per_call(0);
  EXPECT_EQ(Str(RecvPending(*f.ini_conn)), fpdu);
}

INSTANTIATE_TEST_SUITE_P(MaxPerCall, CepStreamTest, ::testing::Values(1, 0));

TEST(CepTest, BytesBeforeTheReplyAreTrailingBytes) {
  Fixture f(0);
  auto resp = f.Responder();
  SendAll(*f.ini_conn, DefaultRequest("hi"));
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kRequestReceived);
  EXPECT_TRUE(resp->wants_read());
  resp->OnReadable();  // nothing there: still waiting for the application
  EXPECT_EQ(resp->state(), CepState::kRequestReceived);
  SendAll(*f.ini_conn, Span("x"));
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().wire_error, WireError::kMpaTrailingBytes);
}

TEST(CepTest, InitiatorGoneWhileApplicationDecides) {
  Fixture f(0);
  auto resp = f.Responder();
  SendAll(*f.ini_conn, DefaultRequest());
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kRequestReceived);
  f.ini_conn->Close();
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().kind, CepErrorKind::kPeerClosed);
  EXPECT_EQ(CepErrno(resp->error()), ECONNRESET);
}

// --- peer close and reset --------------------------------------------------

TEST(CepTest, PeerClosesMidRequest) {
  Fixture f(0);
  auto resp = f.Responder();
  const std::vector<uint8_t> req = DefaultRequest("some data");
  SendAll(*f.ini_conn, ByteSpan(req).first(10));
  resp->OnReadable();
  EXPECT_EQ(resp->state(), CepState::kAwaitingRequest);
  f.ini_conn->Close();
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().kind, CepErrorKind::kPeerClosed);
}

TEST(CepTest, PeerClosesMidRequestPrivateData) {
  Fixture f(0);
  auto resp = f.Responder();
  const std::vector<uint8_t> req = DefaultRequest("some data");
  SendAll(*f.ini_conn, ByteSpan(req).first(req.size() - 2));
  f.ini_conn->Close();
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().kind, CepErrorKind::kPeerClosed);
}

TEST(CepTest, PeerClosesMidReply) {
  Fixture f(0);
  auto ini = f.Initiator({}, "q");
  ini->OnWritable();
  ASSERT_EQ(ini->state(), CepState::kAwaitingReply);
  const std::vector<uint8_t> req = RecvPending(*f.resp_conn);
  auto decoded = wire::DecodeMpaFrame(req, MpaFrameKind::kRequest);
  ASSERT_TRUE(decoded.ok());
  auto response = wire::RespondToMpaRequest(MpaPolicy{}, decoded->frame, Span("answer"));
  ASSERT_TRUE(response.ok());
  const std::vector<uint8_t> reply = Encode(response->reply);
  SendAll(*f.resp_conn, ByteSpan(reply).first(25));
  ini->OnReadable();
  EXPECT_EQ(ini->state(), CepState::kAwaitingReply);
  f.resp_conn->Close();
  ini->OnReadable();
  ASSERT_EQ(ini->state(), CepState::kFailed);
  EXPECT_EQ(ini->error().kind, CepErrorKind::kPeerClosed);
}

TEST(CepTest, ResetFailsBothSidesWithTheErrno) {
  Fixture f(1);
  auto ini = f.Initiator({}, "abcdefgh");
  auto resp = f.Responder();
  ini->OnWritable();
  resp->OnReadable();
  ASSERT_EQ(ini->state(), CepState::kAwaitingReply);
  f.ini_conn->Reset();
  ini->OnReadable();
  resp->OnReadable();
  ASSERT_EQ(ini->state(), CepState::kFailed);
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(ini->error().kind, CepErrorKind::kTransport);
  EXPECT_EQ(ini->error().sys_errno, ECONNRESET);
  EXPECT_EQ(resp->error().sys_errno, ECONNRESET);
  EXPECT_EQ(CepErrno(resp->error()), ECONNRESET);
}

// --- timers ----------------------------------------------------------------

TEST(CepTest, RequestTimeoutFiresAtTenSecondsNotBefore) {
  Fixture f(0);
  const uint64_t t0 = f.clock.NowNs();
  auto resp = f.Responder();
  ASSERT_EQ(resp->deadline(), t0 + kTenSeconds);
  SendAll(*f.ini_conn, ByteSpan(DefaultRequest()).first(5));  // a trickle does not re-arm
  resp->OnReadable();
  f.clock.Advance(kTenSeconds - 1);
  resp->OnTimer();
  EXPECT_EQ(resp->state(), CepState::kAwaitingRequest);
  f.clock.Advance(1);
  resp->OnTimer();
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().kind, CepErrorKind::kTimeout);
  EXPECT_EQ(CepErrno(resp->error()), ETIMEDOUT);
  EXPECT_FALSE(resp->deadline().has_value());
}

TEST(CepTest, ReplyTimeoutFiresAtTenSecondsNotBefore) {
  Fixture f(0);
  const uint64_t t0 = f.clock.NowNs();
  auto ini = f.Initiator();
  f.clock.Advance(kNsPerSecond);
  ini->OnWritable();
  ASSERT_EQ(ini->state(), CepState::kAwaitingReply);
  EXPECT_EQ(ini->deadline(), t0 + kTenSeconds);  // armed at creation
  f.clock.Set(t0 + kTenSeconds - 1);
  ini->OnTimer();
  ini->OnReadable();
  EXPECT_EQ(ini->state(), CepState::kAwaitingReply);
  f.clock.Set(t0 + kTenSeconds);
  ini->OnTimer();
  ASSERT_EQ(ini->state(), CepState::kFailed);
  EXPECT_EQ(ini->error().kind, CepErrorKind::kTimeout);
}

TEST(CepTest, ConfiguredTimeoutsAndNoTimerDuringTheDecision) {
  Fixture f(0);
  const CepTimeouts t{.request_ns = 3 * kNsPerSecond, .reply_ns = 2 * kNsPerSecond};
  auto resp = f.Responder({}, t);
  EXPECT_EQ(resp->deadline(), f.clock.NowNs() + 3 * kNsPerSecond);
  SendAll(*f.ini_conn, DefaultRequest());
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kRequestReceived);
  EXPECT_FALSE(resp->deadline().has_value());
  f.clock.Advance(3600 * kNsPerSecond);
  resp->OnTimer();
  EXPECT_EQ(resp->state(), CepState::kRequestReceived);
  // A peer that reads nothing: the Reply cannot leave; the reply timer runs.
  f.resp_conn->set_send_capacity(4);
  const uint64_t accepted_at = f.clock.NowNs();
  auto r = resp->Accept(Span("data"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, CepState::kSendingReply);
  EXPECT_EQ(resp->deadline(), accepted_at + 2 * kNsPerSecond);
  resp->OnWritable();
  f.clock.Advance(2 * kNsPerSecond - 1);
  resp->OnTimer();
  EXPECT_EQ(resp->state(), CepState::kSendingReply);
  f.clock.Advance(1);
  resp->OnTimer();
  ASSERT_EQ(resp->state(), CepState::kFailed);
  EXPECT_EQ(resp->error().kind, CepErrorKind::kTimeout);
}

// --- API misuse and creation -----------------------------------------------

TEST(CepTest, AcceptAndRejectOnlyInRequestReceived) {
  Fixture f(0);
  auto ini = f.Initiator();
  auto resp = f.Responder();
  ASSERT_FALSE(ini->Accept({}).ok());
  EXPECT_EQ(ini->Accept({}).error(), WireError::kInvalidArgument);
  EXPECT_EQ(resp->Accept({}).error(), WireError::kInvalidArgument);
  EXPECT_EQ(resp->Reject({}).error(), WireError::kInvalidArgument);
  ini->OnWritable();
  resp->OnReadable();
  ASSERT_EQ(resp->state(), CepState::kRequestReceived);
  const std::string too_long(wire::kMpaMaxPrivateData, 'x');
  auto r = resp->Accept(Span(too_long));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), WireError::kMpaPrivateDataTooLong);
  EXPECT_EQ(resp->Reject(Span(too_long)).error(), WireError::kMpaPrivateDataTooLong);
  EXPECT_EQ(resp->state(), CepState::kRequestReceived);
  auto ok = resp->Accept(Span("fits"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, CepState::kEstablished);
  EXPECT_EQ(resp->Accept({}).error(), WireError::kInvalidArgument);
  ini->OnReadable();
  EXPECT_EQ(ini->state(), CepState::kEstablished);
}

TEST(CepTest, CreateRefusesBadArguments) {
  Fixture f(0);
  MpaPolicy bad;
  bad.max_revision = 3;
  EXPECT_EQ(Cep::CreateInitiator(*f.ini_conn, f.clock, bad, {}).error(),
            WireError::kInvalidArgument);
  EXPECT_EQ(Cep::CreateResponder(*f.resp_conn, f.clock, bad).error(), WireError::kInvalidArgument);
  MpaPolicy small;
  small.max_private_data = 64;
  const std::string pd(61, 'p');  // 61 + the 4-byte IRD/ORD block > 64
  EXPECT_EQ(Cep::CreateInitiator(*f.ini_conn, f.clock, small, Span(pd)).error(),
            WireError::kMpaPrivateDataTooLong);
  EXPECT_EQ(Cep::CreateResponder(*f.resp_conn, f.clock, {},
                                 CepTimeouts{.request_ns = 0, .reply_ns = kTenSeconds})
                .error(),
            WireError::kInvalidArgument);
  EXPECT_EQ(f.ini_conn->pending() + f.resp_conn->pending(), 0U);
}

TEST(CepTest, StateNames) {
  EXPECT_STREQ(ToString(CepState::kAwaitingReply), "awaiting-reply");
  EXPECT_STREQ(ToString(CepState::kClosedAfterReject), "closed-after-reject");
  EXPECT_TRUE(IsTerminal(CepState::kRejected));
  EXPECT_FALSE(IsTerminal(CepState::kRequestReceived));
  EXPECT_EQ(CepErrno(CepError{}), 0);
}

}  // namespace
}  // namespace iwarpx::cm
