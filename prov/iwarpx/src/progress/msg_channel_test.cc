// The engine, a listener and two channels over real loopback TCP (MPA) and
// SCTP (RFC 5043 session setup; usrsctp here, the kernel where it has SCTP):
// setup with private data, accept/reject, data in both directions, orderly
// and abrupt ends. Every loop is bounded (5 s of engine passes).
#include "progress/msg_channel.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/random.h"
#include "cm/sctp_cep.h"
#include "mem/stag_table.h"
#include "progress/engine.h"
#include "progress/msg_listener.h"
#include "progress/progress_thread.h"
#include "testing/qp_harness.h"
#include "transport/sctp.h"
#include "transport/tcp.h"
#include "wire/rdmap.h"
#include "wire/sctp_session_negotiate.h"
#include "wire/terminate.h"

namespace iwarpx::progress {
namespace {

ByteSpan Span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::string Str(ByteSpan b) {
  return {b.begin(), b.end()};
}

class Sink final : public ChannelSink {
 public:
  qp::test::RecordingSink rec;
  int qp_ready = 0;
  int connect_failed = 0;
  cm::CepError failure;
  std::string reject_data;
  std::vector<qp::RecvWr> early_recvs;  // posted in OnQpReady
  bool hold = false;                    // HoldRequests(true) in OnQpReady
  bool end_when_gone = false;           // EndWhenGoneWhileBlocked()

  void OnQpReady(qp::QueuePair& qp) override {
    ++qp_ready;
    for (const auto& wr : early_recvs) EXPECT_EQ(qp.PostRecv(wr), qp::QpStatus::kOk);
    if (hold) qp.HoldRequests(true);
  }
  bool EndWhenGoneWhileBlocked() override { return end_when_gone; }
  void OnConnectFailed(const cm::CepError& e, ByteSpan reject) override {
    ++connect_failed;
    failure = e;
    reject_data = Str(reject);
  }
  void OnSendComplete(uint64_t c) override { rec.OnSendComplete(c); }
  void OnRecvComplete(uint64_t c, size_t b, const qp::RecvInfo& i) override {
    rec.OnRecvComplete(c, b, i);
  }
  void OnRdmaComplete(uint64_t c, qp::WcOp op) override { rec.OnRdmaComplete(c, op); }
  void OnError(uint64_t c, qp::WcOp op, const qp::WcError& e) override { rec.OnError(c, op, e); }
  void OnEstablished() override { rec.OnEstablished(); }
  void OnTerminated(wire::TermCause cause, qp::TermOrigin origin) override {
    rec.OnTerminated(cause, origin);
  }
};

class Requests final : public ListenerSink {
 public:
  std::vector<MsgChannel*> requests;
  int gone = 0;
  void OnRequest(MsgChannel& ch) override { requests.push_back(&ch); }
  void OnRequestGone(MsgChannel& /*ch*/) override { ++gone; }
};

class MsgChannelTest : public ::testing::TestWithParam<Llp> {
 protected:
  void SetUp() override {
    config_.llp = GetParam();
    // usrsctp: a connect to a port no stack answers gives up after one
    // 200 ms INIT instead of the 7 s default.
    config_.sctp.max_init_attempts = 1;
    config_.sctp.max_init_timeout_ms = 200;
    auto e = Engine::Create(clock_);
    ASSERT_TRUE(e.ok());
    engine_ = std::move(e).value();
    auto l =
        MsgListener::Listen(*engine_, transport::SockAddr::Loopback4(), config_, 16, requests_);
    ASSERT_TRUE(l.ok());
    listener_ = std::move(l).value();
  }

  // Runs engine passes until `done` or 5 s.
  template <class Done>
  bool RunUntil(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::lock_guard<std::mutex> lock(engine_->mu());
      engine_->RunOnce(10);
    }
    return true;
  }

  std::unique_ptr<MsgChannel> Connect(const std::string& pd, Sink& sink) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto ch = MsgChannel::Connect(*engine_, stags_, config_, qp::QpConfig{},
                                  listener_->local_address(), {}, Span(pd), sink);
    EXPECT_TRUE(ch.ok());
    return ch.ok() ? std::move(ch).value() : nullptr;
  }

  MonotonicClock clock_;
  ChannelConfig config_;
  mem::StagTable stags_{Random(7), 64};
  std::unique_ptr<Engine> engine_;
  Requests requests_;
  std::unique_ptr<MsgListener> listener_;
};

// Raw TCP peers and socket options: TCP only.
class MsgChannelTcpTest : public MsgChannelTest {
 protected:
  // A client connected and the server's channel accepted (taken from the
  // listener); then the client's Send of `msg`, run until the server's QP
  // has stopped reading (no receive, or its requests held).
  void ConnectAndBlockTheServer(Sink& client_sink, Sink& server_sink, const std::string& msg,
                                std::unique_ptr<MsgChannel>* client,
                                std::unique_ptr<MsgChannel>* server) {
    *client = Connect("", client_sink);
    ASSERT_TRUE(RunUntil([&] { return !requests_.requests.empty(); }));
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      *server = listener_->Take(requests_.requests[0]);
      requests_.requests.clear();
      ASSERT_EQ((*server)->Accept({}, stags_, 0, qp::QpConfig{}, server_sink), 0);
    }
    ASSERT_TRUE(RunUntil([&] { return client_sink.rec.established == 1; }));
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      qp::SendWr s;
      ASSERT_TRUE(s.sgl.Add(const_cast<char*>(msg.data()), msg.size()));
      ASSERT_EQ((*client)->qp()->PostSend(s), qp::QpStatus::kOk);
      (*client)->AfterPost();
    }
    ASSERT_TRUE(RunUntil(
        [&] { return server_sink.rec.established == 1 && !(*server)->qp()->wants_read(); }));
  }
};
// Raw SCTP peers: SCTP only.
class MsgChannelSctpTest : public MsgChannelTest {};

TEST_P(MsgChannelTest, ConnectAcceptExchangeAndDisconnect) {
  Sink client_sink;
  Sink server_sink;
  std::vector<uint8_t> server_buf(64);
  qp::RecvWr early;
  early.context = 77;
  ASSERT_TRUE(early.sgl.Add(server_buf.data(), server_buf.size()));
  server_sink.early_recvs.push_back(early);

  auto client = Connect("hello", client_sink);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(RunUntil([&] { return !requests_.requests.empty(); }));
  MsgChannel* req = requests_.requests[0];
  EXPECT_EQ(Str(req->peer_private_data()), "hello");
  std::unique_ptr<MsgChannel> server;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    server = listener_->Take(req);
    ASSERT_NE(server, nullptr);
    EXPECT_EQ(server->Accept(Span(std::string("welcome")), stags_, 0, qp::QpConfig{}, server_sink),
              0);
  }
  ASSERT_TRUE(RunUntil([&] { return client_sink.rec.established == 1; }));
  EXPECT_EQ(Str(client->peer_private_data()), "welcome");
  {
    // Both channels yield when idle exactly when usrsctp feeds them (engine.h).
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto backend = transport::ResolveSctpBackend(config_.sctp_backend);
    const bool usrsctp =
        GetParam() == Llp::kSctp && backend.ok() && *backend == transport::SctpBackend::kUsrsctp;
    EXPECT_EQ(engine_->idle_yielders(), usrsctp ? 2U : 0U);
  }
  // The client may send at once (RTR): the server's early receive takes it.
  const std::string msg = "ping over the engine";
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    qp::SendWr s;
    s.context = 5;
    ASSERT_TRUE(s.sgl.Add(const_cast<char*>(msg.data()), msg.size()));
    ASSERT_EQ(client->qp()->PostSend(s), qp::QpStatus::kOk);
    engine_->Update(*client);
  }
  ASSERT_TRUE(RunUntil([&] {
    return server_sink.rec.Count(qp::test::Completion::Kind::kRecv) == 1 &&
           client_sink.rec.Count(qp::test::Completion::Kind::kSend) == 1;
  }));
  EXPECT_EQ(server_sink.rec.established, 1);
  EXPECT_EQ(
      std::string(server_buf.begin(), server_buf.begin() + static_cast<std::ptrdiff_t>(msg.size())),
      msg);
  EXPECT_EQ(server_sink.rec.completions.back().context, 77U);

  // Orderly close from the client: the server sees the connection end.
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    client->Disconnect();
  }
  ASSERT_TRUE(RunUntil([&] { return server_sink.rec.terminated == 1; }));
  EXPECT_EQ(server_sink.rec.term_origin, qp::TermOrigin::kConnectionLost);
  ASSERT_TRUE(RunUntil([&] { return client->phase() == MsgChannel::Phase::kDone; }));
}

TEST_P(MsgChannelTest, RejectCarriesPrivateDataToTheInitiator) {
  Sink client_sink;
  auto client = Connect("may I", client_sink);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(RunUntil([&] { return !requests_.requests.empty(); }));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    EXPECT_EQ(requests_.requests[0]->Reject(Span(std::string("no thanks"))), 0);
  }
  ASSERT_TRUE(RunUntil([&] { return client_sink.connect_failed == 1; }));
  EXPECT_EQ(client_sink.failure.wire_error, wire::WireError::kMpaRejected);
  EXPECT_EQ(client_sink.reject_data, "no thanks");
  // The listener destroys the rejected channel by itself.
  ASSERT_TRUE(RunUntil([&] { return listener_->channels() == 0; }));
  EXPECT_EQ(requests_.gone, 1);
}

TEST_P(MsgChannelTest, ConnectToAClosedPortFails) {
  Sink sink;
  transport::SockAddr dead = listener_->local_address();
  listener_.reset();  // nobody listens there any more
  std::unique_ptr<MsgChannel> ch;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto r = MsgChannel::Connect(*engine_, stags_, config_, qp::QpConfig{}, dead, {},
                                 Span(std::string()), sink);
    if (!r.ok()) {
      EXPECT_EQ(r.error(), ECONNREFUSED);
      return;
    }
    ch = std::move(r).value();
  }
  ASSERT_TRUE(RunUntil([&] { return sink.connect_failed == 1; }));
  EXPECT_EQ(sink.failure.kind, cm::CepErrorKind::kTransport);
  if (GetParam() == Llp::kSctp && sink.failure.sys_errno == ETIMEDOUT) {
    // usrsctp: the listener was the stack's last user, so no stack answers
    // at that UDP port any more (no ABORT): the INIT limit ends it.
    return;
  }
  EXPECT_EQ(sink.failure.sys_errno, ECONNREFUSED);
}

TEST_P(MsgChannelTest, InitiatorLeavingBeforeTheDecisionIsReported) {
  Sink client_sink;
  auto client = Connect("bye soon", client_sink);
  ASSERT_TRUE(RunUntil([&] { return !requests_.requests.empty(); }));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    client.reset();
  }
  ASSERT_TRUE(RunUntil([&] { return requests_.gone == 1 && listener_->channels() == 0; }))
      << requests_.gone << " " << listener_->channels();
}

TEST_P(MsgChannelTcpTest, MpaTimeoutFailsASilentPeer) {
  // A raw TCP client that never sends a Request: the responder's timer fires.
  config_.timeouts.request_ns = 100 * kNsPerMs;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    listener_.reset();
    auto l =
        MsgListener::Listen(*engine_, transport::SockAddr::Loopback4(), config_, 16, requests_);
    ASSERT_TRUE(l.ok());
    listener_ = std::move(l).value();
  }
  auto raw = transport::TcpConnection::Connect(listener_->local_address());
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(RunUntil([&] { return listener_->channels() == 1; }));
  ASSERT_TRUE(RunUntil([&] { return listener_->channels() == 0; }));
  EXPECT_TRUE(requests_.requests.empty());  // never reported: no Request arrived
}

TEST_P(MsgChannelTcpTest, HangUpWhileWaitingForAReceiveParksInsteadOfSpinning) {
  Sink client_sink;
  Sink server_sink;  // posts no receive: the Send blocks the server's QP
  std::unique_ptr<MsgChannel> client;
  std::unique_ptr<MsgChannel> server;
  ConnectAndBlockTheServer(client_sink, server_sink, "nobody is ready for this", &client, &server);
  if (HasFatalFailure()) return;
  // The client resets the connection (SO_LINGER 0): the server's socket
  // reports EPOLLHUP|EPOLLERR although it asked for nothing.
  const linger hard{1, 0};
  ASSERT_EQ(setsockopt(client->fd(), SOL_SOCKET, SO_LINGER, &hard, sizeof(hard)), 0);
  const size_t before = engine_->registered();
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    client.reset();
  }
  ASSERT_TRUE(RunUntil([&] { return engine_->registered() == before - 2; }))
      << "the server channel should have left the engine";
  EXPECT_EQ(server_sink.rec.terminated, 0);
  // A receive lets the QP read on: it sees the reset and ends the connection.
  std::vector<uint8_t> buf(64);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    qp::RecvWr r;
    ASSERT_TRUE(r.sgl.Add(buf.data(), buf.size()));
    ASSERT_EQ(server->qp()->PostRecv(r), qp::QpStatus::kOk);
    server->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return server_sink.rec.terminated == 1; }));
  EXPECT_EQ(server_sink.rec.completions.size(), 1U);  // the receive: data or flushed
}

// The peer goes while our QP holds its requests (the RDM endpoint's
// connection before the peer's SWITCH): nothing is read, yet the end is
// seen, by the peer's reset or by its orderly close (a FIN, which epoll
// reports only when asked: kPeerHalfClosed). A sink that ends such a
// connection gets OnTerminated and its receive flushed; one that does not
// has the channel parked, and releasing the hold reads the Send, then the
// end.
TEST_P(MsgChannelTcpTest, PeerGoneWhileRequestsAreHeldIsSeen) {
  for (const bool reset : {true, false}) {
    for (const bool end : {true, false}) {
      SCOPED_TRACE(std::string(reset ? "reset" : "close") + (end ? ", ends" : ", parks"));
      Sink client_sink;
      Sink server_sink;
      std::vector<uint8_t> buf(64);
      qp::RecvWr r;
      ASSERT_TRUE(r.sgl.Add(buf.data(), buf.size()));
      server_sink.early_recvs.push_back(r);
      server_sink.hold = true;
      server_sink.end_when_gone = end;
      const std::string msg = "held until a SWITCH that never comes";
      std::unique_ptr<MsgChannel> client;
      std::unique_ptr<MsgChannel> server;
      ConnectAndBlockTheServer(client_sink, server_sink, msg, &client, &server);
      if (HasFatalFailure()) return;
      if (reset) {
        const linger hard{1, 0};
        ASSERT_EQ(setsockopt(client->fd(), SOL_SOCKET, SO_LINGER, &hard, sizeof(hard)), 0);
      }
      const size_t before = engine_->registered();
      {
        std::lock_guard<std::mutex> lock(engine_->mu());
        client.reset();
      }
      if (end) {
        ASSERT_TRUE(RunUntil([&] { return server_sink.rec.terminated == 1; }))
            << "the end of a held connection was not seen";
        EXPECT_EQ(server_sink.rec.term_origin, qp::TermOrigin::kConnectionLost);
        ASSERT_EQ(server_sink.rec.completions.size(), 1U);
        EXPECT_EQ(server_sink.rec.completions[0].kind, qp::test::Completion::Kind::kError)
            << "the held Send must not be delivered";
        ASSERT_TRUE(RunUntil([&] { return engine_->registered() == before - 2; }));
        continue;
      }
      ASSERT_TRUE(RunUntil([&] { return engine_->registered() == before - 2; }))
          << "the server channel should have left the engine";
      EXPECT_EQ(server_sink.rec.terminated, 0);
      {
        std::lock_guard<std::mutex> lock(engine_->mu());
        server->qp()->HoldRequests(false);
        server->AfterPost();
      }
      ASSERT_TRUE(RunUntil([&] { return server_sink.rec.terminated == 1; }));
      ASSERT_EQ(server_sink.rec.completions.size(), 1U);
      if (!reset) {  // a reset may discard the Send; an orderly close keeps it
        EXPECT_EQ(server_sink.rec.completions[0].kind, qp::test::Completion::Kind::kRecv);
        EXPECT_EQ(server_sink.rec.completions[0].bytes, msg.size());
      }
    }
  }
}

// fi_connect then fi_shutdown at once: the responder still sees the
// connection established (the RTR came first), then ended.
TEST_P(MsgChannelTest, InitiatorClosingRightAfterEstablishedIsSeenInOrder) {
  Sink client_sink;
  Sink server_sink;
  auto client = Connect("", client_sink);
  ASSERT_TRUE(RunUntil([&] { return !requests_.requests.empty(); }));
  std::unique_ptr<MsgChannel> server;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    server = listener_->Take(requests_.requests[0]);
    ASSERT_EQ(server->Accept({}, stags_, 0, qp::QpConfig{}, server_sink), 0);
  }
  ASSERT_TRUE(RunUntil([&] { return client_sink.rec.established == 1; }));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    client->Disconnect();
  }
  ASSERT_TRUE(RunUntil([&] { return server_sink.rec.terminated == 1; }));
  EXPECT_EQ(server_sink.rec.established, 1);
}

TEST_P(MsgChannelTest, ProgressThreadDrivesTheHandshakeAlone) {
  // With a progress thread nobody else runs engine passes: the connection
  // still comes up and data still flows (FI_PROGRESS_AUTO).
  auto thread = ProgressThread::Start(*engine_, /*bind=*/true);
  Sink client_sink;
  Sink server_sink;
  auto client = Connect("auto", client_sink);
  ASSERT_NE(client, nullptr);
  const auto until = [&](auto done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(engine_->mu());
        if (done()) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  };
  ASSERT_TRUE(until([&] { return !requests_.requests.empty(); }));
  std::unique_ptr<MsgChannel> server;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    server = listener_->Take(requests_.requests[0]);
    ASSERT_NE(server, nullptr);
    ASSERT_EQ(server->Accept({}, stags_, 0, qp::QpConfig{}, server_sink), 0);
  }
  ASSERT_TRUE(
      until([&] { return client_sink.rec.established == 1 && server_sink.rec.established == 1; }));
  EXPECT_GT(thread->passes(), 0U);
  thread.reset();  // stops before the channels go away
}

// A raw SCTP initiator sets the session up by hand (cm::SctpCep), then sends
// what no iwarpx peer sends: the server's QP answers each with a Terminate
// (PPID 16, stream 0) carrying the cause and ends the connection; nothing
// crashes and nothing is delivered.
TEST_P(MsgChannelSctpTest, BadMessagesAfterSetupEndInTerminate) {
  struct Case {
    const char* name;
    uint32_t ppid;
    size_t size;
    wire::TermCause cause;
  };
  const Case cases[] = {
      {"session control PPID after setup", 17, 8, wire::term::kLlpInvalidReqRep},
      {"unknown PPID", 99, 40, wire::term::kLlpInvalidReqRep},
      {"shorter than a DDP header", 16, 10, wire::term::kLlpMarkerMismatch},
      {"longer than any ULPDU", 16, 70000, wire::term::kLlpMarkerMismatch},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t before = requests_.requests.size();
    auto raw =
        transport::SctpConnect(config_.sctp_backend, listener_->local_address(), config_.sctp);
    ASSERT_TRUE(raw.ok());
    std::unique_ptr<transport::SctpConnection> conn = std::move(raw).value();
    auto created = cm::SctpCep::CreateInitiator(*conn, clock_, wire::FromMpaPolicy(config_.policy),
                                                {}, config_.timeouts);
    ASSERT_TRUE(created.ok());
    std::unique_ptr<cm::SctpCep> cep = std::move(created).value();
    auto drive = [&] {
      cep->OnWritable();
      cep->OnReadable();
    };
    ASSERT_TRUE(RunUntil([&] {
      drive();
      return requests_.requests.size() > before;
    }));
    Sink server_sink;
    std::vector<uint8_t> buf(64);
    qp::RecvWr early;
    ASSERT_TRUE(early.sgl.Add(buf.data(), buf.size()));
    server_sink.early_recvs.push_back(early);
    std::unique_ptr<MsgChannel> server;
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      server = listener_->Take(requests_.requests.back());
      ASSERT_NE(server, nullptr);
      ASSERT_EQ(server->Accept({}, stags_, 0, qp::QpConfig{}, server_sink), 0);
    }
    ASSERT_TRUE(RunUntil([&] {
      drive();
      return cep->state() == cm::CepState::kEstablished;
    })) << cm::ToString(cep->state());
    std::vector<uint8_t> bad(c.size, 0x42);
    transport::MessageInfo info;
    info.ppid = c.ppid;
    const iovec v{bad.data(), bad.size()};
    ASSERT_TRUE(conn->SendMsg({&v, 1}, info).ok());
    ASSERT_TRUE(RunUntil([&] { return server_sink.rec.terminated == 1; }));
    EXPECT_EQ(server_sink.rec.term_origin, qp::TermOrigin::kSent);
    EXPECT_EQ(server_sink.rec.term_cause, c.cause);
    EXPECT_EQ(server_sink.rec.Count(qp::test::Completion::Kind::kRecv), 0U);
    // The raw peer receives the Terminate as one PPID-16 message on stream 0.
    std::vector<uint8_t> got(256);
    transport::MessageInfo got_info;
    transport::IoResult r = transport::IoResult::WouldBlock();
    ASSERT_TRUE(RunUntil([&] {
      const iovec g{got.data(), got.size()};
      r = conn->RecvMsg({&g, 1}, got_info);
      return r.status != transport::IoStatus::kWouldBlock;
    }));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(got_info.ppid, 16U);
    EXPECT_EQ(got_info.stream, 0U);
    auto seg = wire::ParseSegment(ByteSpan(got.data(), r.bytes));
    ASSERT_TRUE(seg.ok());
    ASSERT_EQ(seg->opcode, wire::RdmapOpcode::kTerminate);
    auto th = wire::DecodeTerminate(std::get<wire::TerminateBodyView>(seg->body).bytes);
    ASSERT_TRUE(th.ok());
    EXPECT_EQ(th->cause, c.cause);
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      server.reset();
    }
  }
}

// Issue 8 item 2 over a real association: Read Responses travel on the
// stream of their sink STag (qp/sctp_framing.h, "Streams"), arrive intact and
// complete in post order.
TEST_P(MsgChannelSctpTest, ReadResponsesUseTheStreamsOfTheirSinkStags) {
  Sink client_sink;
  Sink server_sink;
  auto client = Connect("", client_sink);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(RunUntil([&] { return !requests_.requests.empty(); }));
  std::unique_ptr<MsgChannel> server;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    server = listener_->Take(requests_.requests[0]);
    ASSERT_NE(server, nullptr);
    ASSERT_EQ(server->Accept({}, stags_, 0, qp::QpConfig{}, server_sink), 0);
  }
  ASSERT_TRUE(
      RunUntil([&] { return client_sink.rec.established == 1 && server->qp() != nullptr; }));
  constexpr size_t kReads = 4;
  constexpr size_t kLen = size_t{96} * 1024;
  std::vector<uint8_t> src(kReads * kLen);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  auto reg = [&](uint8_t* host, size_t len, uint32_t access) {
    mem::RegionSpec spec;
    spec.host = host;
    spec.length = len;
    spec.access = access;
    auto r = stags_.Register(spec);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : 0U;
  };
  const uint32_t src_stag = reg(src.data(), src.size(), mem::kRemoteRead);
  std::vector<std::vector<uint8_t>> sinks(kReads, std::vector<uint8_t>(kLen, 0));
  std::vector<uint32_t> sink_stags;
  sink_stags.reserve(kReads);
  for (auto& s : sinks) sink_stags.push_back(reg(s.data(), s.size(), mem::kLocalWrite));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    for (size_t i = 0; i < kReads; ++i) {
      qp::ReadWr rd;
      rd.context = i;
      rd.local_stag = sink_stags[i];
      rd.length = static_cast<uint32_t>(kLen);
      rd.remote_stag = src_stag;
      rd.remote_to = i * kLen;
      ASSERT_EQ(client->qp()->PostRead(rd), qp::QpStatus::kOk);
    }
    engine_->Update(*client);
  }
  ASSERT_TRUE(
      RunUntil([&] { return client_sink.rec.Count(qp::test::Completion::Kind::kRdma) == kReads; }));
  std::lock_guard<std::mutex> lock(engine_->mu());
  for (size_t i = 0; i < kReads; ++i) {
    EXPECT_EQ(client_sink.rec.completions[i].context, i);
    EXPECT_TRUE(std::equal(sinks[i].begin(), sinks[i].end(),
                           src.begin() + static_cast<std::ptrdiff_t>(i * kLen)))
        << i;
  }
  const qp::SctpFraming* out = server->qp()->sctp_framing();
  const qp::SctpFraming* in = client->qp()->sctp_framing();
  ASSERT_NE(out, nullptr);
  ASSERT_NE(in, nullptr);
  const uint16_t n = out->tx_streams();
  ASSERT_GT(n, 1U);
  // Every Read Response segment on its sink STag's stream, none on stream 0.
  uint64_t off_zero = 0;
  for (uint16_t s = 1; s < n; ++s) off_zero += out->messages_sent_on(s);
  EXPECT_EQ(out->messages_sent_on(0), 0U);
  EXPECT_EQ(off_zero, out->messages_sent());
  EXPECT_GE(off_zero, kReads * (kLen / 65536));
  for (uint32_t stag : sink_stags) {
    const uint16_t s = qp::SctpFraming::ReadResponseStream(stag, n);
    EXPECT_NE(s, 0U);
    EXPECT_GT(out->messages_sent_on(s), 0U) << s;
    EXPECT_EQ(in->messages_received_on(s), out->messages_sent_on(s)) << s;
  }
  EXPECT_EQ(client_sink.rec.terminated + server_sink.rec.terminated, 0);
}

// Issue 8 item 2, unordered: with both ends offering it (the default), Read
// Responses go with SCTP unordered delivery on their sink STag's stream and
// the requester places them as they come: Reads into disjoint and
// overlapping ranges of two sinks (an overlapping Read waits for the one it
// overlaps) end with the bytes of the last Read covering each byte,
// completions in post order. With the client not offering it (0 =
// FI_IWARPX_SCTP_UNORDERED=0) nothing goes unordered and the result is the
// same.
TEST_P(MsgChannelSctpTest, ReadResponsesGoUnorderedWhenBothEndsOfferIt) {
  for (const bool client_offers : {true, false}) {
    SCOPED_TRACE(client_offers ? "both offer" : "client does not offer");
    config_.sctp_unordered_read_resp = client_offers;
    Sink client_sink;
    Sink server_sink;
    auto client = Connect("", client_sink);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(RunUntil([&] { return !requests_.requests.empty(); }));
    std::unique_ptr<MsgChannel> server;
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      server = listener_->Take(requests_.requests[0]);
      requests_.requests.clear();
      ASSERT_NE(server, nullptr);
      ASSERT_EQ(server->Accept({}, stags_, 0, qp::QpConfig{}, server_sink), 0);
    }
    ASSERT_TRUE(
        RunUntil([&] { return client_sink.rec.established == 1 && server->qp() != nullptr; }));
    EXPECT_EQ(client->qp()->mpa().sctp_unordered_read_resp, client_offers);
    EXPECT_EQ(server->qp()->mpa().sctp_unordered_read_resp, client_offers);
    constexpr size_t kSrc = size_t{512} * 1024;
    constexpr size_t kSink = size_t{192} * 1024;
    std::vector<uint8_t> src(kSrc);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
    auto reg = [&](uint8_t* host, size_t len, uint32_t access) {
      mem::RegionSpec spec;
      spec.host = host;
      spec.length = len;
      spec.access = access;
      auto r = stags_.Register(spec);
      EXPECT_TRUE(r.ok());
      return r.ok() ? *r : 0U;
    };
    const uint32_t src_stag = reg(src.data(), src.size(), mem::kRemoteRead);
    std::vector<std::vector<uint8_t>> sinks(2, std::vector<uint8_t>(kSink, 0));
    std::vector<std::vector<uint8_t>> want = sinks;
    std::vector<uint32_t> sink_stags;
    sink_stags.reserve(sinks.size());
    for (auto& s : sinks) sink_stags.push_back(reg(s.data(), s.size(), mem::kLocalWrite));
    // (sink, at, length, source offset): disjoint, then overlapping ranges.
    struct R {
      size_t sink, at, len, from;
    };
    constexpr size_t kKi = 1024;
    const std::vector<R> reads = {
        {0, 0, 64 * kKi, 0},         {0, 64 * kKi, 64 * kKi, 100000},
        {1, 0, 96 * kKi, 200000},    {0, 32 * kKi, 64 * kKi, 300000},  // overlaps 0 and 1
        {1, 50 * kKi, 8 * kKi, 7},   {1, 0, 192 * kKi, 250000},        // overlaps 2 and 4
        {0, 128 * kKi, 64 * kKi, 1}, {0, 100, 1000, 400000},           // overlaps 3
    };
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      for (size_t i = 0; i < reads.size(); ++i) {
        const R& r = reads[i];
        std::memcpy(want[r.sink].data() + r.at, src.data() + r.from, r.len);
        qp::ReadWr rd;
        rd.context = i;
        rd.local_stag = sink_stags[r.sink];
        rd.local_to = r.at;
        rd.length = static_cast<uint32_t>(r.len);
        rd.remote_stag = src_stag;
        rd.remote_to = r.from;
        ASSERT_EQ(client->qp()->PostRead(rd), qp::QpStatus::kOk);
      }
      engine_->Update(*client);
    }
    ASSERT_TRUE(RunUntil(
        [&] { return client_sink.rec.Count(qp::test::Completion::Kind::kRdma) == reads.size(); }));
    std::lock_guard<std::mutex> lock(engine_->mu());
    for (size_t i = 0; i < reads.size(); ++i) EXPECT_EQ(client_sink.rec.completions[i].context, i);
    EXPECT_TRUE(sinks == want);
    const qp::SctpFraming* out = server->qp()->sctp_framing();
    const qp::SctpFraming* in = client->qp()->sctp_framing();
    ASSERT_NE(out, nullptr);
    ASSERT_NE(in, nullptr);
    // Every Read Response segment off stream 0; unordered iff negotiated.
    EXPECT_EQ(out->messages_sent_on(0), 0U);
    EXPECT_GT(out->messages_sent(), reads.size());
    EXPECT_EQ(out->unordered_sent(), client_offers ? out->messages_sent() : 0U);
    EXPECT_EQ(in->unordered_received(), out->unordered_sent());
    EXPECT_EQ(in->unordered_sent(), 0U);
    EXPECT_EQ(client_sink.rec.terminated + server_sink.rec.terminated, 0);
    for (uint32_t s : sink_stags) (void)stags_.Deregister(s);
    (void)stags_.Deregister(src_stag);
  }
}

std::string LlpName(const ::testing::TestParamInfo<Llp>& info) {
  return ToString(info.param);
}

INSTANTIATE_TEST_SUITE_P(Llps, MsgChannelTest, ::testing::Values(Llp::kTcp, Llp::kSctp), LlpName);
INSTANTIATE_TEST_SUITE_P(Tcp, MsgChannelTcpTest, ::testing::Values(Llp::kTcp), LlpName);
INSTANTIATE_TEST_SUITE_P(Sctp, MsgChannelSctpTest, ::testing::Values(Llp::kSctp), LlpName);

}  // namespace
}  // namespace iwarpx::progress
