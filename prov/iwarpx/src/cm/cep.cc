#include "cm/cep.h"

#include <sys/uio.h>

#include <cerrno>
#include <utility>

namespace iwarpx::cm {

using transport::IoResult;
using transport::IoStatus;
using wire::MpaFrame;
using wire::MpaFrameKind;
using wire::MpaRole;
using wire::WireError;

bool IsTerminal(CepState s) {
  return s == CepState::kEstablished || s == CepState::kRejected ||
         s == CepState::kClosedAfterReject || s == CepState::kFailed;
}

const char* ToString(CepState s) {
  switch (s) {
    case CepState::kConnecting: return "connecting";
    case CepState::kSendingRequest: return "sending-request";
    case CepState::kAwaitingReply: return "awaiting-reply";
    case CepState::kAwaitingRequest: return "awaiting-request";
    case CepState::kRequestReceived: return "request-received";
    case CepState::kSendingReply: return "sending-reply";
    case CepState::kSendingReject: return "sending-reject";
    case CepState::kEstablished: return "established";
    case CepState::kRejected: return "rejected";
    case CepState::kClosedAfterReject: return "closed-after-reject";
    case CepState::kFailed: return "failed";
  }
  return "?";
}

int CepErrno(const CepError& e) {
  switch (e.kind) {
    case CepErrorKind::kNone: return 0;
    case CepErrorKind::kProtocol:
      return e.wire_error == WireError::kMpaRejected ? ECONNREFUSED : EPROTO;
    case CepErrorKind::kPeerClosed: return ECONNRESET;
    case CepErrorKind::kTransport: return e.sys_errno != 0 ? e.sys_errno : EIO;
    case CepErrorKind::kTimeout: return ETIMEDOUT;
  }
  return EIO;
}

Cep::Cep(transport::Connection& conn, const Clock& clock, const wire::MpaPolicy& policy,
         const CepTimeouts& timeouts, MpaRole role)
    : conn_(conn), clock_(clock), policy_(policy), timeouts_(timeouts), role_(role) {}

Result<std::unique_ptr<Cep>, WireError> Cep::CreateInitiator(transport::Connection& conn,
                                                             const Clock& clock,
                                                             const wire::MpaPolicy& policy,
                                                             ByteSpan private_data,
                                                             const CepTimeouts& timeouts) {
  if (timeouts.request_ns == 0 || timeouts.reply_ns == 0) return Err{WireError::kInvalidArgument};
  auto request = wire::MakeMpaRequest(policy, private_data);
  if (!request) return Err{request.error()};
  std::unique_ptr<Cep> cep(new Cep(conn, clock, policy, timeouts, MpaRole::kInitiator));
  auto encoded = cep->Encode(*request);
  if (!encoded) return Err{encoded.error()};
  cep->state_ = conn.connected() ? CepState::kSendingRequest : CepState::kConnecting;
  cep->deadline_ = clock.NowNs() + timeouts.reply_ns;
  return cep;
}

Result<std::unique_ptr<Cep>, WireError> Cep::CreateResponder(transport::Connection& conn,
                                                             const Clock& clock,
                                                             const wire::MpaPolicy& policy,
                                                             const CepTimeouts& timeouts) {
  if (timeouts.request_ns == 0 || timeouts.reply_ns == 0 || !wire::IsValidMpaPolicy(policy)) {
    return Err{WireError::kInvalidArgument};
  }
  std::unique_ptr<Cep> cep(new Cep(conn, clock, policy, timeouts, MpaRole::kResponder));
  cep->state_ = CepState::kAwaitingRequest;
  cep->deadline_ = clock.NowNs() + timeouts.request_ns;
  return cep;
}

void Cep::OnWritable() {
  Run(Event::kWritable);
}

void Cep::OnReadable() {
  Run(Event::kReadable);
}

void Cep::OnTimer() {
  if (IsTerminal(state_) || !deadline_ || clock_.NowNs() < *deadline_) return;
  error_ = CepError{};
  error_.kind = CepErrorKind::kTimeout;
  Enter(CepState::kFailed);
}

Result<CepState, WireError> Cep::Accept(ByteSpan private_data, bool offer_send_imm) {
  if (role_ != MpaRole::kResponder || state_ != CepState::kRequestReceived) {
    return Err{WireError::kInvalidArgument};
  }
  wire::MpaPolicy policy = policy_;
  policy.offer_send_imm = policy.offer_send_imm || offer_send_imm;
  auto response = wire::RespondToMpaRequest(policy, request_, private_data);
  if (!response) return Err{response.error()};
  auto encoded = Encode(response->reply);
  if (!encoded) return Err{encoded.error()};
  if (response->accepted) {
    outcome_ = response->outcome;
    StartSending(CepState::kSendingReply);
  } else {
    // Not reached: the same negotiation accepted this Request on arrival, and
    // it depends only on the policy and the Request. Kept total all the same.
    outcome_.reset();
    reject_reason_ = response->reason;
    StartSending(CepState::kSendingReject);
  }
  Run(Event::kWritable);
  return state_;
}

Result<CepState, WireError> Cep::Reject(ByteSpan private_data) {
  if (role_ != MpaRole::kResponder || state_ != CepState::kRequestReceived) {
    return Err{WireError::kInvalidArgument};
  }
  auto reply = wire::MakeMpaRejectReply(policy_, request_, private_data);
  if (!reply) return Err{reply.error()};
  auto encoded = Encode(*reply);
  if (!encoded) return Err{encoded.error()};
  outcome_.reset();
  StartSending(CepState::kSendingReject);
  Run(Event::kWritable);
  return state_;
}

bool Cep::wants_read() const {
  switch (state_) {
    case CepState::kAwaitingReply:
    case CepState::kAwaitingRequest:
    case CepState::kRequestReceived:
    case CepState::kSendingReply: return true;
    default: return false;
  }
}

bool Cep::wants_write() const {
  switch (state_) {
    case CepState::kConnecting:
    case CepState::kSendingRequest:
    case CepState::kSendingReply:
    case CepState::kSendingReject: return true;
    default: return false;
  }
}

void Cep::Run(Event ev) {
  // Each transition moves strictly forward through the states, so this ends.
  for (;;) {
    const CepState before = state_;
    Dispatch(ev);
    if (state_ == before) return;
    switch (state_) {
      case CepState::kSendingRequest:
      case CepState::kSendingReply:
      case CepState::kSendingReject: ev = Event::kWritable; break;
      case CepState::kAwaitingReply: ev = Event::kReadable; break;
      default: return;
    }
  }
}

void Cep::Dispatch(Event ev) {
  switch (state_) {
    case CepState::kConnecting: return HandleConnecting(ev);
    case CepState::kSendingRequest: return HandleSendingRequest(ev);
    case CepState::kAwaitingReply: return HandleAwaitingReply(ev);
    case CepState::kAwaitingRequest: return HandleAwaitingRequest(ev);
    case CepState::kRequestReceived: return HandleRequestReceived(ev);
    case CepState::kSendingReply: return HandleSendingReply(ev);
    case CepState::kSendingReject: return HandleSendingReject(ev);
    case CepState::kEstablished:
    case CepState::kRejected:
    case CepState::kClosedAfterReject:
    case CepState::kFailed: return;
  }
}

void Cep::HandleConnecting(Event ev) {
  if (ev != Event::kWritable) return;
  const IoResult r = conn_.FinishConnect();
  if (r.status == IoStatus::kWouldBlock) return;
  if (!r.ok()) return FailIo(r);
  Enter(CepState::kSendingRequest);
}

void Cep::HandleSendingRequest(Event ev) {
  if (ev != Event::kWritable || Flush() != Io::kDone) return;
  rx_need_ = wire::kMpaHeaderSize;
  rx_have_ = 0;
  Enter(CepState::kAwaitingReply);
}

void Cep::HandleAwaitingReply(Event ev) {
  if (ev != Event::kReadable || FillFrame(MpaFrameKind::kReply) != Io::kDone) return;
  auto decoded = wire::DecodeMpaFrame(ByteSpan(rx_buf_.data(), rx_have_), MpaFrameKind::kReply,
                                      wire::MpaLimitsFor(policy_));
  // A frame that does not decode is not an MPA Reply: the peer is not in FPDU
  // mode, so there is no one to send a Terminate to.
  if (!decoded) return FailProtocol(decoded.error());
  const MpaFrame& reply = decoded->frame;
  auto outcome = wire::ProcessMpaReply(policy_, reply);
  if (outcome) {
    outcome_ = *outcome;
    peer_private_data_ = reply.private_data;
    return Enter(CepState::kEstablished);
  }
  if (outcome.error() == WireError::kMpaRejected) {
    peer_private_data_ = reply.private_data;
    error_ = CepError{};
    error_.kind = CepErrorKind::kProtocol;
    error_.wire_error = WireError::kMpaRejected;
    return Enter(CepState::kRejected);
  }
  // A valid Reply we cannot live with: the responder is in FPDU mode now
  // (mpa_negotiate.h), so the QP owes it a Terminate.
  FailProtocol(outcome.error());
  error_.terminate = wire::TerminateCauseFor(outcome.error());
  error_.terminate_crc = policy_.want_crc || reply.crc;
}

void Cep::HandleAwaitingRequest(Event ev) {
  if (ev != Event::kReadable || FillFrame(MpaFrameKind::kRequest) != Io::kDone) return;
  auto decoded = wire::DecodeMpaFrame(ByteSpan(rx_buf_.data(), rx_have_), MpaFrameKind::kRequest,
                                      wire::MpaLimitsFor(policy_));
  if (!decoded) return FailProtocol(decoded.error());
  request_ = decoded->frame;
  peer_private_data_ = request_.private_data;
  auto response = wire::RespondToMpaRequest(policy_, request_, {});
  if (!response) return FailProtocol(response.error());
  if (!response->accepted) {
    auto encoded = Encode(response->reply);
    if (!encoded) return FailProtocol(encoded.error());
    reject_reason_ = response->reason;
    return StartSending(CepState::kSendingReject);
  }
  outcome_ = response->outcome;
  deadline_.reset();
  Enter(CepState::kRequestReceived);
}

void Cep::HandleRequestReceived(Event ev) {
  if (ev == Event::kReadable) ProbeForTrailingBytes();
}

void Cep::HandleSendingReply(Event ev) {
  if (ev == Event::kReadable) return ProbeForTrailingBytes();
  if (Flush() != Io::kDone) return;
  Enter(CepState::kEstablished);
}

void Cep::HandleSendingReject(Event ev) {
  // Whatever the peer sends now is irrelevant: the connection ends.
  if (ev != Event::kWritable || Flush() != Io::kDone) return;
  (void)conn_.ShutdownWrite();
  if (reject_reason_) return FailProtocol(*reject_reason_);
  Enter(CepState::kClosedAfterReject);
}

Cep::Io Cep::Flush() {
  while (tx_done_ < tx_len_) {
    const iovec v{tx_buf_.data() + tx_done_, tx_len_ - tx_done_};
    const IoResult r = conn_.SendV({&v, 1});
    if (r.status == IoStatus::kWouldBlock || (r.ok() && r.bytes == 0)) return Io::kPending;
    if (!r.ok()) {
      FailIo(r);
      return Io::kFailed;
    }
    tx_done_ += r.bytes;
  }
  return Io::kDone;
}

Cep::Io Cep::FillFrame(MpaFrameKind kind) {
  while (rx_have_ < rx_need_) {
    // Exactly the bytes of this frame: whatever follows belongs to the QP.
    const iovec v{rx_buf_.data() + rx_have_, rx_need_ - rx_have_};
    const IoResult r = conn_.RecvV({&v, 1});
    if (r.status == IoStatus::kWouldBlock || (r.ok() && r.bytes == 0)) return Io::kPending;
    if (!r.ok()) {
      FailIo(r);
      return Io::kFailed;
    }
    const bool header_was_pending = rx_have_ < wire::kMpaHeaderSize;
    rx_have_ += r.bytes;
    if (header_was_pending && rx_have_ == wire::kMpaHeaderSize) {
      auto header = wire::DecodeMpaHeader(ByteSpan(rx_buf_.data(), rx_have_), kind,
                                          wire::MpaLimitsFor(policy_));
      if (!header) {
        FailProtocol(header.error());
        return Io::kFailed;
      }
      // The decoder caps PD_Length at 512; the check keeps the buffer bound local.
      if (header->frame_length > rx_buf_.size()) {
        FailProtocol(WireError::kMpaPrivateDataTooLong);
        return Io::kFailed;
      }
      rx_need_ = header->frame_length;
    }
  }
  return Io::kDone;
}

void Cep::ProbeForTrailingBytes() {
  uint8_t byte = 0;
  const iovec v{&byte, 1};
  const IoResult r = conn_.RecvV({&v, 1});
  if (r.status == IoStatus::kWouldBlock || (r.ok() && r.bytes == 0)) return;
  if (r.ok()) return FailProtocol(WireError::kMpaTrailingBytes);
  FailIo(r);
}

Result<size_t, WireError> Cep::Encode(const MpaFrame& frame) {
  auto n = wire::EncodeMpaFrame(frame, MutableByteSpan(tx_buf_));
  if (!n) return Err{n.error()};
  tx_len_ = *n;
  tx_done_ = 0;
  return *n;
}

void Cep::StartSending(CepState sending_state) {
  deadline_ = clock_.NowNs() + timeouts_.reply_ns;
  Enter(sending_state);
}

void Cep::Enter(CepState s) {
  state_ = s;
  if (IsTerminal(s)) deadline_.reset();
}

void Cep::FailProtocol(WireError e) {
  error_ = CepError{};
  error_.kind = CepErrorKind::kProtocol;
  error_.wire_error = e;
  Enter(CepState::kFailed);
}

void Cep::FailIo(const IoResult& r) {
  error_ = CepError{};
  if (r.status == IoStatus::kClosed) {
    error_.kind = CepErrorKind::kPeerClosed;
  } else {
    error_.kind = CepErrorKind::kTransport;
    error_.sys_errno = r.err != 0 ? r.err : EIO;
  }
  Enter(CepState::kFailed);
}

}  // namespace iwarpx::cm
