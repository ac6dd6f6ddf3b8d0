#include "progress/msg_channel.h"

#include <cerrno>
#include <utility>

#include "cm/sctp_cep.h"
#include "transport/poller.h"
#include "transport/tcp.h"
#include "wire/sctp_session_negotiate.h"

namespace iwarpx::progress {

using transport::Poller;

const char* ToString(Llp llp) {
  switch (llp) {
    case Llp::kTcp: return "tcp";
    case Llp::kSctp: return "sctp";
  }
  return "?";
}

namespace {

transport::SctpConnection* AsSctp(transport::Connection& conn) {
  return conn.preserves_message_boundaries() ? dynamic_cast<transport::SctpConnection*>(&conn)
                                             : nullptr;
}

// The setup endpoint for `conn`'s LLP: the initiator's with `private_data`
// when `initiator`, else the responder's. EINVAL when the setup refuses the
// policy or the private data.
Result<std::unique_ptr<cm::SetupEndpoint>, int> MakeSetup(transport::Connection& conn,
                                                          const Clock& clock,
                                                          const ChannelConfig& config,
                                                          bool initiator, ByteSpan private_data) {
  if (conn.preserves_message_boundaries()) {
    transport::SctpConnection* sctp = AsSctp(conn);
    if (sctp == nullptr) return Err{EPROTONOSUPPORT};
    wire::SctpSessionPolicy policy = wire::FromMpaPolicy(config.policy);
    policy.offer_unordered_read_resp = config.sctp_unordered_read_resp;
    auto c = initiator
                 ? cm::SctpCep::CreateInitiator(*sctp, clock, policy, private_data, config.timeouts)
                 : cm::SctpCep::CreateResponder(*sctp, clock, policy, config.timeouts);
    if (!c.ok()) return Err{EINVAL};
    return std::unique_ptr<cm::SetupEndpoint>(std::move(c).value());
  }
  auto c = initiator
               ? cm::Cep::CreateInitiator(conn, clock, config.policy, private_data, config.timeouts)
               : cm::Cep::CreateResponder(conn, clock, config.policy, config.timeouts);
  if (!c.ok()) return Err{EINVAL};
  return std::unique_ptr<cm::SetupEndpoint>(std::move(c).value());
}

}  // namespace

MsgChannel::MsgChannel(Engine& engine, mem::StagTable* stags, const ChannelConfig& config,
                       std::unique_ptr<transport::Connection> conn)
    : engine_(engine), stags_(stags), config_(config), conn_(std::move(conn)) {
  const transport::SctpConnection* sctp = AsSctp(*conn_);
  doorbell_ = sctp != nullptr && sctp->doorbell();
}

MsgChannel::~MsgChannel() {
  engine_.Remove(*this);
}

Result<std::unique_ptr<MsgChannel>, int> MsgChannel::Connect(
    Engine& engine, mem::StagTable& stags, const ChannelConfig& config,
    const qp::QpConfig& qp_config, const transport::SockAddr& peer,
    const transport::SockAddr& local, ByteSpan private_data, ChannelSink& sink) {
  if (config.llp == Llp::kSctp) {
    auto conn = transport::SctpConnect(config.sctp_backend, peer, config.sctp);
    if (!conn.ok()) return Err{conn.error().err != 0 ? conn.error().err : EIO};
    return StartInitiator(engine, stags, config, qp_config,
                          std::unique_ptr<transport::Connection>(std::move(conn).value()),
                          private_data, sink);
  }
  auto conn = transport::TcpConnection::Connect(peer, local);
  if (!conn.ok()) return Err{conn.error().err != 0 ? conn.error().err : EIO};
  return StartInitiator(engine, stags, config, qp_config, std::move(conn).value(), private_data,
                        sink);
}

Result<std::unique_ptr<MsgChannel>, int> MsgChannel::ConnectFrom(
    Engine& engine, mem::StagTable& stags, const ChannelConfig& config,
    const qp::QpConfig& qp_config, transport::TcpBoundSocket source,
    const transport::SockAddr& peer, ByteSpan private_data, ChannelSink& sink) {
  if (config.llp != Llp::kTcp) return Err{EPROTONOSUPPORT};
  auto conn = transport::TcpConnection::ConnectFrom(std::move(source), peer);
  if (!conn.ok()) return Err{conn.error().err != 0 ? conn.error().err : EIO};
  return StartInitiator(engine, stags, config, qp_config, std::move(conn).value(), private_data,
                        sink);
}

Result<std::unique_ptr<MsgChannel>, int> MsgChannel::StartInitiator(
    Engine& engine, mem::StagTable& stags, const ChannelConfig& config,
    const qp::QpConfig& qp_config, std::unique_ptr<transport::Connection> conn,
    ByteSpan private_data, ChannelSink& sink) {
  std::unique_ptr<MsgChannel> ch(new MsgChannel(engine, &stags, config, std::move(conn)));
  auto cep = MakeSetup(*ch->conn_, engine.clock(), config, true, private_data);
  if (!cep.ok()) return Err{cep.error()};
  ch->cep_ = std::move(cep).value();
  ch->qp_config_ = qp_config;
  ch->qp_config_.role = wire::MpaRole::kInitiator;
  ch->sink_ = &sink;
  if (const transport::Status s = engine.Add(*ch); !s.ok()) return Err{s.err};
  return ch;
}

Result<std::unique_ptr<MsgChannel>, int> MsgChannel::Respond(
    Engine& engine, const ChannelConfig& config, std::unique_ptr<transport::Connection> conn,
    RequestObserver& observer) {
  std::unique_ptr<MsgChannel> ch(new MsgChannel(engine, nullptr, config, std::move(conn)));
  auto cep = MakeSetup(*ch->conn_, engine.clock(), config, false, {});
  if (!cep.ok()) return Err{cep.error()};
  ch->cep_ = std::move(cep).value();
  ch->observer_ = &observer;
  if (const transport::Status s = engine.Add(*ch); !s.ok()) return Err{s.err};
  return ch;
}

int MsgChannel::Accept(ByteSpan private_data, mem::StagTable& stags, uint32_t pd,
                       const qp::QpConfig& qp_config, ChannelSink& sink, bool offer_send_imm) {
  if (phase_ != Phase::kAwaitingDecision) return EINVAL;
  auto r = cep_->AcceptRequest(private_data, offer_send_imm);
  if (!r.ok()) return EINVAL;
  stags_ = &stags;
  config_.pd = pd;
  qp_config_ = qp_config;
  qp_config_.role = wire::MpaRole::kResponder;
  sink_ = &sink;
  observer_ = nullptr;
  phase_ = Phase::kHandshake;
  AfterCep();
  engine_.Update(*this);
  return 0;
}

int MsgChannel::Reject(ByteSpan private_data) {
  if (phase_ != Phase::kAwaitingDecision) return EINVAL;
  auto r = cep_->Reject(private_data);
  if (!r.ok()) return EINVAL;
  phase_ = Phase::kHandshake;
  AfterCep();
  engine_.Update(*this);
  return 0;
}

void MsgChannel::Disconnect() {
  if (phase_ != Phase::kRunning || !qp_) return;
  qp_->Disconnect();
  if (qp_->state() == qp::QpState::kError && !qp_->wants_write()) Finish();
  engine_.Update(*this);
}

void MsgChannel::AfterPost() {
  if (parked_ && phase_ == Phase::kRunning) {
    parked_ = false;
    if (const transport::Status s = engine_.Add(*this); !s.ok()) {
      parked_ = true;
      return;
    }
    OnReady(Poller::kReadable | Poller::kHangup);
  }
  engine_.Update(*this);
}

ByteSpan MsgChannel::peer_private_data() const {
  return cep_ ? cep_->peer_private_data() : ByteSpan{};
}

const std::optional<wire::MpaOutcome>& MsgChannel::outcome() const {
  return cep_->outcome();
}

uint32_t MsgChannel::interest() const {
  uint32_t want = 0;
  switch (phase_) {
    case Phase::kHandshake:
    case Phase::kAwaitingDecision:
      want = (cep_->wants_read() ? Poller::kReadable : 0U) |
             (cep_->wants_write() ? Poller::kWritable : 0U);
      break;
    case Phase::kRunning:
      want = (qp_->wants_read() ? Poller::kReadable : 0U) |
             (qp_->wants_write() ? Poller::kWritable : 0U);
      // Blocked: still learn that the peer went ("Hang-up while blocked").
      if (want == 0 && !doorbell_) return Poller::kPeerHalfClosed;
      break;
    case Phase::kDone: return 0;
  }
  // A doorbell is always writable: wait for it to ring instead.
  if (doorbell_ && want != 0) return Poller::kReadable;
  return want;
}

std::optional<uint64_t> MsgChannel::deadline() const {
  if (phase_ == Phase::kHandshake) return cep_->deadline();
  return std::nullopt;
}

bool MsgChannel::has_pending_work() const {
  return phase_ == Phase::kRunning && qp_->wants_progress();
}

void MsgChannel::OnPendingWork() {
  if (phase_ != Phase::kRunning) return;
  qp_->OnReadable();
  if (qp_->state() == qp::QpState::kError && !qp_->wants_write()) Finish();
}

void MsgChannel::OnTimer() {
  if (phase_ != Phase::kHandshake) return;
  cep_->OnTimer();
  AfterCep();
}

void MsgChannel::OnReady(uint32_t events) {
  const bool failed = (events & (Poller::kError | Poller::kHangup | Poller::kPeerHalfClosed)) != 0;
  const bool readable = failed || (events & Poller::kReadable) != 0;
  // A rung doorbell may mean send space too: retry the blocked send.
  const bool writable = failed || (events & Poller::kWritable) != 0 || (doorbell_ && readable);
  switch (phase_) {
    case Phase::kHandshake:
    case Phase::kAwaitingDecision:
      if (writable) cep_->OnWritable();
      if (readable) cep_->OnReadable();
      AfterCep();
      return;
    case Phase::kRunning:
      if (writable && qp_->wants_write()) qp_->OnWritable();
      if (readable && qp_->wants_read()) qp_->OnReadable();
      if (failed && !qp_->wants_read() && !qp_->wants_write() && sink_ != nullptr &&
          sink_->EndWhenGoneWhileBlocked()) {
        qp_->LinkLost();
      }
      if (qp_->state() == qp::QpState::kError && !qp_->wants_write()) {
        Finish();
      } else if (failed && !qp_->wants_read() && !qp_->wants_write()) {
        parked_ = true;
        engine_.Remove(*this);
      }
      return;
    case Phase::kDone: return;
  }
}

bool MsgChannel::PollDirect() {
  if (phase_ != Phase::kRunning || !qp_->wants_read()) return false;
  const qp::RxStats& st = qp_->rx_stats();
  const uint64_t before = st.direct_bytes + st.staged_copies + st.fpdus;
  OnReady(Poller::kReadable);
  return st.direct_bytes + st.staged_copies + st.fpdus != before;
}

void MsgChannel::AfterCep() {
  switch (cep_->state()) {
    case cm::CepState::kRequestReceived:
      if (phase_ == Phase::kHandshake && observer_ != nullptr) {
        phase_ = Phase::kAwaitingDecision;
        observer_->OnRequest(*this);
      }
      return;
    case cm::CepState::kEstablished:
      if (phase_ == Phase::kHandshake) StartQp();
      return;
    case cm::CepState::kRejected:
    case cm::CepState::kClosedAfterReject:
    case cm::CepState::kFailed: {
      if (phase_ == Phase::kDone) return;
      Finish();
      if (sink_ != nullptr) {
        sink_->OnConnectFailed(cep_->error(), cep_->peer_private_data());
      } else if (observer_ != nullptr) {
        observer_->OnUnacceptedDone(*this);
      }
      return;
    }
    default: return;
  }
}

void MsgChannel::StartQp() {
  // SCTP: DDP segments that overtook the Accept go first (cm/sctp_cep.h).
  auto qp = qp::QueuePair::Create(*conn_, *stags_, config_.pd, *cep_->outcome(), qp_config_, *sink_,
                                  cep_->TakeEarlySegments());
  if (!qp.ok()) {
    Finish();
    cm::CepError e;
    e.kind = cm::CepErrorKind::kProtocol;
    e.wire_error = wire::WireError::kInvalidArgument;
    sink_->OnConnectFailed(e, {});
    return;
  }
  qp_ = std::move(qp).value();
  phase_ = Phase::kRunning;
  sink_->OnQpReady(*qp_);
  qp_->Start();
  // The peer's first FPDUs may already be waiting behind the Reply (or,
  // on SCTP, have been received before it): no new readiness comes for them.
  if (qp_->wants_read()) qp_->OnReadable();
  if (qp_->state() == qp::QpState::kError && !qp_->wants_write()) Finish();
}

void MsgChannel::Finish() {
  phase_ = Phase::kDone;
  engine_.Remove(*this);
}

void MsgChannel::CollectStats(EndpointStats* out) const {
  if (qp_ != nullptr) AddMpaQp(*qp_, out);
}

}  // namespace iwarpx::progress
