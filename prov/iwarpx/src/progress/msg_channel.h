// MsgChannel: one connected-mode iWARP connection as the engine drives it —
// a Connection, its setup endpoint while the connection is set up, then the
// QueuePair. Knows nothing of libfabric: it reports through a ChannelSink
// (the ofi endpoint implements it).
//
// LLPs (ChannelConfig::llp for Connect and MsgListener::Listen; an accepted
// connection brings its own): TCP runs MPA (cm::Cep) and the QP frames FPDUs;
// SCTP (RFC 5043) runs the DDP session setup (cm::SctpCep, the policy mapped
// by wire::FromMpaPolicy) and the QP puts one segment per message
// (qp/sctp_framing.h). The choice follows the connection:
// preserves_message_boundaries() means SCTP. A usrsctp association signals
// through a doorbell (transport/sctp.h "Readiness"): the channel then asks
// the poller for kReadable only, whatever it waits for, and treats a
// readable doorbell as writable too.
//
// Lifecycle (phase()):
//   kHandshake         the Cep runs MPA (initiator: connect, Request, Reply;
//                      responder: read the Request).
//   kAwaitingDecision  responder only: the Request arrived; the listener's
//                      owner was told (MsgListener) and must call Accept() or
//                      Reject(). No timer runs (the decision is the ULP's).
//   kRunning           the QueuePair exists (qp() not null) and owns the
//                      stream; the sink receives its completions.
//   kDone              setup failed, was rejected, or the QP reached kError;
//                      the channel no longer watches its descriptor.
// Reports (all with the engine lock held, from inside engine calls or from
// Accept/Connect):
//   OnQpReady(qp)       the QP was created, before it sends or reads anything:
//                       the owner posts the receives it queued before the
//                       connection existed.
//   OnEstablished()     (CompletionSink) the connection is usable; the
//                       initiator may read the peer's accept data from
//                       peer_private_data().
//   OnConnectFailed()   setup ended without a QP (initiator: rejected, timeout,
//                       refused, protocol error; responder after Accept: the
//                       Reply could not be sent).
//   OnTerminated() / OnError()  (CompletionSink) as the QP reports them.
//
// Hang-up while blocked: a QP that waits for a receive buffer, or holds the
// peer's requests (QueuePair::HoldRequests), reads nothing, so it would not
// see the end of the stream. While it wants neither to read nor to write the
// channel asks for kPeerHalfClosed (not on a doorbell); epoll reports
// EPOLLHUP/EPOLLERR whatever the interest. On any of them the sink decides
// (ChannelSink::EndWhenGoneWhileBlocked): end the QP at once (the RDM
// endpoint's connections: its RD session recovers or fails what was on it),
// or park: leave the engine (else it would wake forever) until AfterPost()
// (a new receive, the hold released) lets the QP read the end of the stream
// (FI_EP_MSG: what the peer sent before closing is still delivered).
//
// Ownership and threads: the channel owns its Connection, Cep and QP and
// borrows the Engine, the StagTable and the sink (all must outlive it). Every
// call needs the engine lock. Destroying a channel unregisters it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "base/bytes.h"
#include "base/result.h"
#include "cm/cep.h"
#include "mem/stag_table.h"
#include "progress/endpoint_stats.h"
#include "progress/engine.h"
#include "qp/completion_sink.h"
#include "qp/queue_pair.h"
#include "transport/sctp.h"
#include "transport/sock_addr.h"
#include "transport/tcp.h"
#include "transport/transport.h"
#include "wire/mpa_negotiate.h"

namespace iwarpx::progress {

class MsgChannel;

class ChannelSink : public qp::CompletionSink {
 public:
  virtual void OnQpReady(qp::QueuePair& qp) = 0;
  // Setup ended without a connection. For a rejected initiator
  // (error.wire_error == kMpaRejected) `reject_data` is the peer's reason.
  virtual void OnConnectFailed(const cm::CepError& error, ByteSpan reject_data) = 0;
  // The connection ended (hang-up, reset, the peer's close) while the QP
  // reads nothing (see "Hang-up while blocked"). True ends the QP at once
  // (QueuePair::LinkLost: OnTerminated, its work flushed in error); false
  // parks the channel until AfterPost() lets the QP read up to the end.
  [[nodiscard]] virtual bool EndWhenGoneWhileBlocked() { return false; }
};

// The responder's Request arrived (MsgListener implements it).
class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void OnRequest(MsgChannel& channel) = 0;
  // A channel not yet accepted ended (the initiator went away or timed out,
  // or a Reject completed).
  virtual void OnUnacceptedDone(MsgChannel& channel) = 0;
};

// Lower-layer protocol of a connected-mode channel.
enum class Llp : uint8_t { kTcp, kSctp };

const char* ToString(Llp llp);

struct ChannelConfig {
  wire::MpaPolicy policy;
  cm::CepTimeouts timeouts;
  uint32_t pd = 0;
  Llp llp = Llp::kTcp;  // of new connections (Connect, MsgListener::Listen)
  transport::SctpBackend sctp_backend = transport::SctpBackend::kAuto;
  transport::SctpOptions sctp;
  // SCTP: offer unordered Read Responses in session setup (both ends must;
  // wire/sctp_session_negotiate.h). FI_IWARPX_SCTP_UNORDERED.
  bool sctp_unordered_read_resp = true;
};

class MsgChannel final : public Pollable {
 public:
  enum class Phase : uint8_t { kHandshake, kAwaitingDecision, kRunning, kDone };

  // Starts a non-blocking connect to `peer` (from `local` when valid; TCP
  // only, an SCTP association picks its own source) and the MPA Request
  // (SCTP: the session Initiate) with `private_data`. Errors: errno (connect
  // failed at once, EINVAL for private data or a policy the setup refuses).
  static Result<std::unique_ptr<MsgChannel>, int> Connect(Engine& engine, mem::StagTable& stags,
                                                          const ChannelConfig& config,
                                                          const qp::QpConfig& qp_config,
                                                          const transport::SockAddr& peer,
                                                          const transport::SockAddr& local,
                                                          ByteSpan private_data, ChannelSink& sink);
  // The same from a reserved TCP address (consumed; closed on failure).
  // EAFNOSUPPORT when `source` is not of the peer's family; EPROTONOSUPPORT
  // when config.llp is SCTP.
  static Result<std::unique_ptr<MsgChannel>, int> ConnectFrom(
      Engine& engine, mem::StagTable& stags, const ChannelConfig& config,
      const qp::QpConfig& qp_config, transport::TcpBoundSocket source,
      const transport::SockAddr& peer, ByteSpan private_data, ChannelSink& sink);
  // Responder over an accepted connection; reports to `observer` until
  // Accept() hands it a sink.
  // The memory table and protection domain come with Accept() (the
  // application picks the domain when it accepts).
  static Result<std::unique_ptr<MsgChannel>, int> Respond(
      Engine& engine, const ChannelConfig& config, std::unique_ptr<transport::Connection> conn,
      RequestObserver& observer);
  ~MsgChannel() override;

  // kAwaitingDecision only (else EINVAL); EINVAL also for private data too
  // long. Accept: the reply goes out; the QP (qp_config, on `stags` in
  // protection domain `pd`) starts once it is sent, reporting to `sink`. Reject: the reject Reply
  // carries `private_data`, then the channel ends (OnUnacceptedDone).
  // `offer_send_imm`: see cm::Cep::Accept.
  int Accept(ByteSpan private_data, mem::StagTable& stags, uint32_t pd,
             const qp::QpConfig& qp_config, ChannelSink& sink, bool offer_send_imm = false);
  int Reject(ByteSpan private_data);

  // Orderly close (fi_shutdown): the QP flushes and half-closes. No effect
  // before kRunning or after kDone.
  void Disconnect();
  // The owner posted work to qp(): re-reads interest and, if the channel had
  // parked its descriptor (see below), drives the QP once.
  void AfterPost();

  [[nodiscard]] Phase phase() const { return phase_; }
  [[nodiscard]] qp::QueuePair* qp() { return qp_.get(); }
  // Terminates sent and received (nothing before the QP exists).
  void CollectStats(EndpointStats* out) const;
  // The peer's private data: the Request's on a responder, the Reply's on an
  // initiator (accept or reject); valid until the channel is destroyed.
  [[nodiscard]] ByteSpan peer_private_data() const;
  [[nodiscard]] const std::optional<wire::MpaOutcome>& outcome() const;
  [[nodiscard]] transport::SockAddr local_address() const { return conn_->local_address(); }
  [[nodiscard]] transport::SockAddr peer_address() const { return conn_->peer_address(); }
  // transport::Connection::unacknowledged_bytes of the connection.
  [[nodiscard]] size_t unacknowledged_bytes() const { return conn_->unacknowledged_bytes(); }
  [[nodiscard]] const cm::CepError& setup_error() const { return cep_->error(); }

  // Pollable.
  [[nodiscard]] int fd() const override { return conn_->fd(); }
  [[nodiscard]] uint32_t interest() const override;
  void OnReady(uint32_t events) override;
  // Running QP waiting for input: one non-blocking read pass (Engine's hot
  // descriptor); true if it took any bytes.
  bool PollDirect() override;
  // A doorbell connection (usrsctp): its input comes from usrsctp's threads
  // of this process, so an idle busy poll yields the CPU (engine.h).
  [[nodiscard]] bool yields_when_idle() const override { return doorbell_; }
  [[nodiscard]] std::optional<uint64_t> deadline() const override;
  void OnTimer() override;
  // The QP holds staged input or stopped on its receive budget.
  [[nodiscard]] bool has_pending_work() const override;
  void OnPendingWork() override;

 private:
  MsgChannel(Engine& engine, mem::StagTable* stags, const ChannelConfig& config,
             std::unique_ptr<transport::Connection> conn);
  // The initiator over a connection that is connecting.
  static Result<std::unique_ptr<MsgChannel>, int> StartInitiator(
      Engine& engine, mem::StagTable& stags, const ChannelConfig& config,
      const qp::QpConfig& qp_config, std::unique_ptr<transport::Connection> conn,
      ByteSpan private_data, ChannelSink& sink);
  // Acts on the Cep's state after it ran.
  void AfterCep();
  void StartQp();
  void Finish();

  Engine& engine_;
  mem::StagTable* stags_;  // set by Connect or Accept
  ChannelConfig config_;
  std::unique_ptr<transport::Connection> conn_;
  bool doorbell_ = false;  // conn_ signals everything as readable (usrsctp)
  std::unique_ptr<cm::SetupEndpoint> cep_;
  std::unique_ptr<qp::QueuePair> qp_;
  qp::QpConfig qp_config_;
  ChannelSink* sink_ = nullptr;
  RequestObserver* observer_ = nullptr;
  Phase phase_ = Phase::kHandshake;
  bool parked_ = false;  // removed from the engine after a hang-up (see above)
};

}  // namespace iwarpx::progress
