// Cep: the connection endpoint that runs the MPA connection-setup exchange
// (RFC 5044 §7.1, RFC 6581; shared/WIRE.md §1) over one stream Connection,
// before the queue pair takes the stream over in FPDU mode. The frame codec
// and the negotiation are the pure wire/mpa.h and wire/mpa_negotiate.h; this
// class adds the I/O, partial reads and writes, timers, private data and the
// application's accept/reject decision.
//
// Driving (the progress engine, or a test):
// * Non-blocking state machine, no threads, no allocation after Create*().
//   The caller calls OnWritable()/OnReadable() when the connection's
//   descriptor is ready (calling them spuriously is harmless: an I/O attempt
//   that would block changes nothing), OnTimer() when deadline() has passed,
//   and Accept()/Reject() once the responder reached kRequestReceived. Poller
//   interest follows wants_read()/wants_write(). After each call, state()
//   tells what happened; the terminal states are kEstablished, kRejected,
//   kClosedAfterReject and kFailed.
// * One handler per source state (as Linux siw's CEP). Once a call moves the
//   CEP into a state that sends or reads, the CEP tries that I/O at once, so
//   a handshake progresses as far as the socket allows in one call.
//
// Ownership and threads: the Cep borrows the Connection and the Clock; both
// must outlive it. The Cep never closes the connection: the owner destroys it
// when the CEP fails, or hands it to the QP once kEstablished. The only
// connection-level action the CEP takes on its own is ShutdownWrite() after a
// reject Reply has been sent completely (the RFC's "the responder closes").
// One thread at a time (the engine's domain lock serialises); not copyable or
// movable (spans it returns point into it).
//
// Roles and states (-> marks a transition; every non-terminal state also goes
// to kFailed on timeout, peer close/reset or a transport error):
//   Initiator, over a connecting or connected Connection:
//     kConnecting      FinishConnect() on writability      -> kSendingRequest
//     kSendingRequest  Request written (partial writes ok) -> kAwaitingReply
//     kAwaitingReply   Reply read: the 20-byte header, then exactly PD_Length
//                      more bytes, never beyond the frame (the peer's first
//                      FPDU may follow at once and stays in the socket).
//                      Accepted -> kEstablished (outcome(): the QP now sends
//                      the RTR if outcome()->send_rtr); R=1 -> kRejected
//                      (peer_private_data(): the peer's reason); malformed or
//                      unacceptable -> kFailed.
//   Responder, over an accepted Connection:
//     kAwaitingRequest Request read as above -> kRequestReceived, or, if the
//                      negotiation refuses it (RespondToMpaRequest: bad RTR,
//                      markers, insufficient IRD...), -> kSendingReject with the
//                      protocol reject Reply -> kFailed(kProtocol, reason).
//                      A Request that does not even decode (bad key, revision,
//                      reserved bits, PD_Length over the policy limit, R set)
//                      gets no Reply: the peer does not speak MPA, nothing is
//                      sent, -> kFailed at once (as siw drops such a peer).
//     kRequestReceived the application sees peer_private_data() and the
//                      negotiated outcome() and decides (libfabric FI_CONNREQ):
//                      Accept(pd) -> kSendingReply; Reject(pd) -> kSendingReject.
//                      No timer runs here: the decision is the application's.
//     kSendingReply    Reply written -> kEstablished (outcome(); with
//                      established_after_rtr the QP reports FI_CONNECTED only
//                      once the initiator's RTR arrives).
//     kSendingReject   reject Reply written, ShutdownWrite() -> kClosedAfterReject
//                      (application reject) or kFailed (protocol reject).
//   The initiator must send nothing between its Request and our Reply
//   (kMpaTrailingBytes). The CEP reads exactly one frame, so it sees such bytes
//   only while it is still in charge of the stream: in kRequestReceived and
//   kSendingReply it probes the socket on readability, and any byte (or end of
//   stream) there fails the CEP (kMpaTrailingBytes / kPeerClosed). Once the
//   Reply is completely sent the stream belongs to the QP, which checks the
//   first FPDU.
//
// Timers (CepTimeouts, defaults 10 s as siw's MPAREQ/MPAREP timers):
//   Initiator: reply_ns from Create to a complete Reply (connect, Request and
//   Reply together). Responder: request_ns from Create to a complete Request;
//   reply_ns from Accept/Reject (or the protocol reject) to the Reply's last
//   byte written. deadline() is the absolute Clock time (ns) at which
//   OnTimer() fails the CEP with kTimeout; empty when no timer runs. The
//   deadline is only checked by OnTimer() (the engine's timer wheel calls it).
//
// Bounds: each frame read is at most wire::kMpaMaxFrameSize bytes and is
// refused from its header if PD_Length exceeds the policy's max_private_data,
// before any private data is read.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/result.h"
#include "transport/sctp_message_queue.h"
#include "transport/transport.h"
#include "wire/error.h"
#include "wire/mpa.h"
#include "wire/mpa_negotiate.h"

namespace iwarpx::cm {

enum class CepState : uint8_t {
  kConnecting,
  kSendingRequest,
  kAwaitingReply,
  kAwaitingRequest,
  kRequestReceived,
  kSendingReply,
  kSendingReject,
  kEstablished,
  kRejected,
  kClosedAfterReject,
  kFailed,
};

// True for the states no input changes any more.
bool IsTerminal(CepState s);
// A stable name for logs and test messages.
const char* ToString(CepState s);

enum class CepErrorKind : uint8_t {
  kNone,
  kProtocol,    // wire_error: the peer's frame or its negotiation failed
                // (kMpaRejected: the initiator was rejected, state kRejected)
  kPeerClosed,  // orderly end of stream before the exchange completed
  kTransport,   // the connection failed; sys_errno (ECONNRESET, ECONNREFUSED, ...)
  kTimeout,     // the running MPA timer expired
};

struct CepError {
  CepErrorKind kind = CepErrorKind::kNone;
  wire::WireError wire_error = wire::WireError::kInvalidArgument;  // kProtocol only
  int sys_errno = 0;                                               // kTransport only
  // Initiator only: the Reply was a valid MPA Reply but its negotiation failed
  // (ProcessMpaReply: no matching RTR, insufficient IRD, markers/CRC
  // refused...). The stream is then in FPDU mode and the QP sends this
  // Terminate (TerminateCauseFor(wire_error)) before closing; terminate_crc
  // says whether that FPDU carries a CRC (C of Request | C of Reply).
  std::optional<wire::TermCause> terminate;
  bool terminate_crc = false;
};

// A positive errno for the libfabric layer: kTransport -> sys_errno,
// kTimeout -> ETIMEDOUT, kPeerClosed -> ECONNRESET, kProtocol -> EPROTO, but
// ECONNREFUSED for kMpaRejected; 0 for kNone.
int CepErrno(const CepError& e);

struct CepTimeouts {
  uint64_t request_ns = 10 * kNsPerSecond;  // siw MPAREQ_TIMEOUT
  uint64_t reply_ns = 10 * kNsPerSecond;    // siw MPAREP_TIMEOUT
};

// What the progress engine drives while a connected-mode connection is set
// up, whatever the LLP: Cep (MPA over a byte stream) and SctpCep (RFC 5043
// session setup over SCTP, sctp_cep.h) implement it with the same states,
// errors and driving rules (the file comment above; sctp_cep.h for the
// message differences).
class SetupEndpoint {
 public:
  virtual ~SetupEndpoint() = default;
  SetupEndpoint() = default;
  SetupEndpoint(const SetupEndpoint&) = delete;
  SetupEndpoint& operator=(const SetupEndpoint&) = delete;

  virtual void OnWritable() = 0;
  virtual void OnReadable() = 0;
  virtual void OnTimer() = 0;
  // The responder's decision (Cep::Accept / Reject). `offer_send_imm` is the
  // MPA Send with Immediate Data offer; SCTP session setup has no such
  // extension and ignores it.
  virtual Result<CepState, wire::WireError> AcceptRequest(ByteSpan private_data,
                                                          bool offer_send_imm) = 0;
  virtual Result<CepState, wire::WireError> Reject(ByteSpan private_data) = 0;

  [[nodiscard]] virtual CepState state() const = 0;
  [[nodiscard]] virtual const std::optional<wire::MpaOutcome>& outcome() const = 0;
  [[nodiscard]] virtual ByteSpan peer_private_data() const = 0;
  [[nodiscard]] virtual const CepError& error() const = 0;
  [[nodiscard]] virtual bool wants_read() const = 0;
  [[nodiscard]] virtual bool wants_write() const = 0;
  [[nodiscard]] virtual std::optional<uint64_t> deadline() const = 0;
  // Once kEstablished: messages that arrived before the answer and that the
  // QP must receive before anything else from the connection, moved out
  // (SctpCep: DDP segments that overtook the Accept, sctp_cep.h). Empty for
  // MPA, whose byte stream keeps everything behind the Reply.
  virtual transport::SctpMessageQueue TakeEarlySegments() { return {}; }
};

class Cep final : public SetupEndpoint {
 public:
  // Errors (nothing is created): kInvalidArgument for a policy that
  // IsValidMpaPolicy() refuses or a zero timeout; kMpaPrivateDataTooLong if
  // `private_data` does not fit the policy limit with the IRD/ORD block.
  // `private_data` is copied; the Request is encoded here.
  static Result<std::unique_ptr<Cep>, wire::WireError> CreateInitiator(
      transport::Connection& conn, const Clock& clock, const wire::MpaPolicy& policy,
      ByteSpan private_data, const CepTimeouts& timeouts = {});
  static Result<std::unique_ptr<Cep>, wire::WireError> CreateResponder(
      transport::Connection& conn, const Clock& clock, const wire::MpaPolicy& policy,
      const CepTimeouts& timeouts = {});

  ~Cep() override = default;
  Cep(const Cep&) = delete;
  Cep& operator=(const Cep&) = delete;

  // Readiness and time inputs; no-ops in states that do not use them.
  void OnWritable() override;
  void OnReadable() override;
  void OnTimer() override;

  // Responder, kRequestReceived only. Encodes and starts sending the accepting
  // Reply (returns the state after that first write: kSendingReply,
  // kEstablished or kFailed) / the reject Reply carrying `private_data`
  // (kSendingReject, kClosedAfterReject or kFailed). `private_data` is used
  // only during the call. Errors leave the CEP unchanged: kInvalidArgument
  // (wrong role or state), kMpaPrivateDataTooLong (does not fit the policy).
  // `offer_send_imm`: the accepting Reply also offers the iwarpx Send with
  // Immediate Data extension (mpa_negotiate.h) even if the policy given at
  // creation does not (the accepting endpoint is known only now).
  Result<CepState, wire::WireError> Accept(ByteSpan private_data, bool offer_send_imm = false);
  Result<CepState, wire::WireError> AcceptRequest(ByteSpan private_data,
                                                  bool offer_send_imm) override {
    return Accept(private_data, offer_send_imm);
  }
  Result<CepState, wire::WireError> Reject(ByteSpan private_data) override;

  [[nodiscard]] wire::MpaRole role() const { return role_; }
  [[nodiscard]] CepState state() const override { return state_; }
  // The negotiated parameters: set in kEstablished and, for the responder, from
  // kRequestReceived on (what an Accept would give). Its peer_private_data
  // views this Cep.
  [[nodiscard]] const std::optional<wire::MpaOutcome>& outcome() const override { return outcome_; }
  // The peer's ULP private data (IRD/ORD block excluded), a view into this
  // Cep valid for its lifetime: responder from kRequestReceived on, initiator
  // in kEstablished and kRejected; empty otherwise.
  [[nodiscard]] ByteSpan peer_private_data() const override { return peer_private_data_; }
  [[nodiscard]] const CepError& error() const override { return error_; }
  [[nodiscard]] bool wants_read() const override;
  [[nodiscard]] bool wants_write() const override;
  [[nodiscard]] std::optional<uint64_t> deadline() const override { return deadline_; }

 private:
  enum class Event : uint8_t { kWritable, kReadable };

  Cep(transport::Connection& conn, const Clock& clock, const wire::MpaPolicy& policy,
      const CepTimeouts& timeouts, wire::MpaRole role);

  // Runs the handler of the current state, then keeps going while a
  // transition lands in a state that has I/O to try.
  void Run(Event ev);
  void Dispatch(Event ev);

  // One handler per source state.
  void HandleConnecting(Event ev);
  void HandleSendingRequest(Event ev);
  void HandleAwaitingReply(Event ev);
  void HandleAwaitingRequest(Event ev);
  void HandleRequestReceived(Event ev);
  void HandleSendingReply(Event ev);
  void HandleSendingReject(Event ev);

  enum class Io : uint8_t { kDone, kPending, kFailed };
  // Writes the rest of tx_buf_; kFailed has already moved to kFailed.
  Io Flush();
  // Reads the rest of the current frame (header, then private data) into
  // rx_buf_; kFailed has already moved to kFailed.
  Io FillFrame(wire::MpaFrameKind kind);
  // In kRequestReceived/kSendingReply: any byte or end of stream is an error.
  void ProbeForTrailingBytes();

  Result<size_t, wire::WireError> Encode(const wire::MpaFrame& frame);
  void StartSending(CepState sending_state);
  void Enter(CepState s);
  void FailProtocol(wire::WireError e);
  void FailIo(const transport::IoResult& r);

  transport::Connection& conn_;
  const Clock& clock_;
  const wire::MpaPolicy policy_;
  const CepTimeouts timeouts_;
  const wire::MpaRole role_;
  CepState state_ = CepState::kFailed;
  std::optional<uint64_t> deadline_;
  std::optional<wire::MpaOutcome> outcome_;
  CepError error_;
  ByteSpan peer_private_data_;
  // Responder: the decoded Request (its private data views rx_buf_) and the
  // error to report once a protocol reject has been sent.
  wire::MpaFrame request_;
  std::optional<wire::WireError> reject_reason_;

  std::array<uint8_t, wire::kMpaMaxFrameSize> tx_buf_{};
  size_t tx_len_ = 0;
  size_t tx_done_ = 0;
  std::array<uint8_t, wire::kMpaMaxFrameSize> rx_buf_{};
  size_t rx_need_ = wire::kMpaHeaderSize;  // header first, then the whole frame
  size_t rx_have_ = 0;
};

}  // namespace iwarpx::cm
