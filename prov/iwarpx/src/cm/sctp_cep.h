// SctpCep: the connection endpoint of iWARP over SCTP (RFC 5043; docs/wire.md
// §2.0 for what was checked against the RFC text): the
// DDP Stream Session Initiate / Accept / Reject exchange (PPID 17, one SCTP
// message each; wire/sctp_session.h) over an SctpConnection, in place of the
// MPA exchange that cm::Cep runs over TCP. The negotiation is the pure
// wire/sctp_session_negotiate.h; this class adds the I/O, timers, private data
// and the application's accept/reject decision.
//
// Same driving model, states, errors and timeouts as cm::Cep (cep.h: CepState,
// CepError, CepTimeouts, CepErrno), with message I/O instead of byte streams:
// * OnWritable()/OnReadable()/OnTimer() as for Cep (spurious calls are
//   harmless). On a doorbell connection (SctpConnection::doorbell()) the
//   caller waits for kReadable only and calls both OnReadable and OnWritable.
// * Initiator: kConnecting -> kSendingRequest (the Initiate is one SendMsg,
//   whole or not at all) -> kAwaitingReply (one message) -> kEstablished
//   (Accept), kRejected (Reject: peer_private_data() is the reason) or
//   kFailed.
// * Responder: kAwaitingRequest -> kRequestReceived (a decoded Initiate the
//   negotiation accepts; the application calls Accept(pd) / Reject(pd)) ->
//   kSendingReply -> kEstablished; kSendingReject -> kClosedAfterReject
//   (application reject, then ShutdownWrite) or kFailed (protocol reject:
//   the negotiation refused the Initiate; the Reject is sent first).
// * The association must come from an RFC 5043 peer: with the first message
//   received (setup message or early DDP segment), the peer's Adaptation
//   Layer Indication (SctpConnection::peer_adaptation_indication, known by
//   then) must be 1 (DDP, RFC 5043 §5.1). Missing or another value: kFailed,
//   kProtocol, kSctpNoDdpAdaptation, before anything of the message is used
//   (a responder sends no answer, as to a refused Initiate).
// * A received setup message is refused (kFailed, kProtocol) when its PPID is
//   not 17 (kSctpSessionBadFunction), when it is not a whole message
//   (end_of_message false: kSctpSessionBadLength), when it does not decode
//   (its WireError), or when its Function Code does not fit the state (an
//   Accept to a responder, a Terminate, ...: kSctpSessionBadFunction). A
//   refused Initiate gets no answer (as Cep treats a peer that does not speak
//   MPA).
// * Responder in kRequestReceived: wants_read() stays true and a read probes
//   the association: any message fails the setup (kMpaTrailingBytes: the
//   initiator must wait for the answer), its end or abort fails it as
//   kPeerClosed / kTransport, so a departed initiator is noticed before the
//   application decides (as Cep).
// * Once kEstablished, the association belongs to the QP; the SctpCep reads
//   nothing more. Unlike MPA there is no "initiator sends first" rule.
// * Initiator in kAwaitingReply: DDP segments that overtook the answer
//   (docs/wire.md §2.0 "DDP segments before the Accept"). The responder's QP
//   may send as soon as its Accept is sent, and SCTP orders only within a
//   stream: a Send on a stream other than 0 arrives before the Accept (stream
//   0) when the Accept's packet is lost or delayed. Such a message (PPID 16,
//   ordered, stream != 0) is kept, whole and in arrival order, in a queue
//   (pieces of a partial delivery joined; nothing is parsed or placed), and
//   the wait for the answer goes on. Once a valid Accept made the state
//   kEstablished, TakeEarlySegments() hands the queue to the QP, which
//   receives it before anything else from the association
//   (QueuePair::Create, qp/sctp_framing.h): every check of a DDP segment is
//   the QP's, as for later ones, and per-stream order is kept because
//   everything in the queue arrived before what the association still
//   holds. Refused (kFailed, nothing handed over), as no correct responder
//   produces them: a PPID-16 message on stream 0 (the Accept precedes
//   everything there) or unordered (only Read Responses go unordered, and
//   the initiator has sent no Read): kSctpSessionBadFunction; one longer
//   than wire::kMaxUlpduLength: kSctpSessionBadLength; a piece of a partial
//   delivery with another PPID, stream or unordered flag:
//   kSctpSessionBadFunction; the queue above kMaxEarlyBytes (payload plus
//   SctpMessageQueue::kOverheadPerMessage each): kTransport, ENOBUFS. A
//   Reject, a refused answer, a timeout or the association's end after such
//   messages end the setup as without them; the queue is dropped.
//
// Ownership and threads as Cep: borrows the connection and the clock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/result.h"
#include "cm/cep.h"
#include "transport/sctp.h"
#include "transport/sctp_message_queue.h"
#include "wire/error.h"
#include "wire/sctp_session.h"
#include "wire/sctp_session_negotiate.h"

namespace iwarpx::cm {

class SctpCep final : public SetupEndpoint {
 public:
  // kInvalidArgument for a zero timeout or an invalid policy;
  // kSctpSessionPrivateDataTooLong if `private_data` does not fit.
  static Result<std::unique_ptr<SctpCep>, wire::WireError> CreateInitiator(
      transport::SctpConnection& conn, const Clock& clock, const wire::SctpSessionPolicy& policy,
      ByteSpan private_data, const CepTimeouts& timeouts = {});
  static Result<std::unique_ptr<SctpCep>, wire::WireError> CreateResponder(
      transport::SctpConnection& conn, const Clock& clock, const wire::SctpSessionPolicy& policy,
      const CepTimeouts& timeouts = {});

  ~SctpCep() override = default;
  SctpCep(const SctpCep&) = delete;
  SctpCep& operator=(const SctpCep&) = delete;

  void OnWritable() override;
  void OnReadable() override;
  void OnTimer() override;

  // Responder, kRequestReceived only; as Cep::Accept / Cep::Reject.
  // `offer_send_imm`: the Accept also offers Send with Immediate Data (used
  // when the Initiate offered it too), added to the policy's own offer.
  Result<CepState, wire::WireError> Accept(ByteSpan private_data, bool offer_send_imm = false);
  Result<CepState, wire::WireError> AcceptRequest(ByteSpan private_data,
                                                  bool offer_send_imm) override {
    return Accept(private_data, offer_send_imm);
  }
  Result<CepState, wire::WireError> Reject(ByteSpan private_data) override;

  [[nodiscard]] wire::MpaRole role() const { return role_; }
  [[nodiscard]] CepState state() const override { return state_; }
  [[nodiscard]] const std::optional<wire::MpaOutcome>& outcome() const override { return outcome_; }
  [[nodiscard]] ByteSpan peer_private_data() const override { return peer_private_data_; }
  [[nodiscard]] const CepError& error() const override { return error_; }
  [[nodiscard]] bool wants_read() const override;
  [[nodiscard]] bool wants_write() const override;
  [[nodiscard]] std::optional<uint64_t> deadline() const override { return deadline_; }
  // Initiator, kEstablished: the DDP segments received before the Accept
  // (see above), moved out; empty otherwise and on every later call.
  transport::SctpMessageQueue TakeEarlySegments() override;

  // Bound on the DDP segments kept before the Accept (bytes(), see above):
  // the usrsctp association's receive buffer here (1 MiB), the data SCTP
  // itself would hold for a reader that does not read.
  static constexpr size_t kMaxEarlyBytes = size_t{1} << 20;

 private:
  SctpCep(transport::SctpConnection& conn, const Clock& clock,
          const wire::SctpSessionPolicy& policy, const CepTimeouts& timeouts, wire::MpaRole role);

  void Run();
  void Step();
  // Sends tx_buf_ as one PPID-17 message: true when sent; false when it
  // would block or failed (then the state is kFailed).
  bool SendPending();
  // Receives one whole PPID-17 message into rx_buf_ and decodes it; nullopt
  // when nothing arrived yet or on failure (then the state is kFailed).
  // In kAwaitingReply, DDP segments before it go to early_.
  std::optional<wire::SctpSessionMessage> ReceiveMessage();
  // The peer's Adaptation Layer Indication is DDP's, checked once a message
  // arrived (see above); false when not (then kFailed).
  bool PeerSpeaksDdp();
  // Starts keeping a DDP segment whose first piece (`piece`, `info`) was
  // read; false when refused (then kFailed).
  bool KeepEarly(const transport::MessageInfo& info, ByteSpan piece);
  // Receives more of the open early segment: true when it ended, false when
  // nothing more is there yet or on failure (then kFailed).
  bool ContinueEarly();
  // The checks of the early segment so far; false when refused.
  bool CheckEarly();
  Result<size_t, wire::WireError> Encode(const wire::SctpSessionMessage& m);
  void Enter(CepState s);
  void FailProtocol(wire::WireError e);
  void FailIo(const transport::IoResult& r);

  transport::SctpConnection& conn_;
  const Clock& clock_;
  const wire::SctpSessionPolicy policy_;
  const CepTimeouts timeouts_;
  const wire::MpaRole role_;
  CepState state_ = CepState::kFailed;
  std::optional<uint64_t> deadline_;
  std::optional<wire::MpaOutcome> outcome_;
  CepError error_;
  ByteSpan peer_private_data_;
  wire::SctpSessionMessage initiate_;  // responder: views rx_buf_
  std::optional<wire::WireError> reject_reason_;
  transport::SctpMessageQueue early_;  // initiator: DDP segments before the answer

  std::array<uint8_t, wire::kSctpSessionMaxMessageSize> tx_buf_{};
  size_t tx_len_ = 0;
  // One byte more than the largest message, so an oversized one shows.
  std::array<uint8_t, wire::kSctpSessionMaxMessageSize + 1> rx_buf_{};
};

}  // namespace iwarpx::cm
