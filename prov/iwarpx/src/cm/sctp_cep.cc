#include "cm/sctp_cep.h"

#include <sys/uio.h>

#include <cerrno>
#include <utility>

#include "wire/fpdu.h"

namespace iwarpx::cm {

using transport::IoResult;
using transport::IoStatus;
using transport::MessageInfo;
using wire::MpaRole;
using wire::SctpSessionFunction;
using wire::SctpSessionMessage;
using wire::WireError;

SctpCep::SctpCep(transport::SctpConnection& conn, const Clock& clock,
                 const wire::SctpSessionPolicy& policy, const CepTimeouts& timeouts, MpaRole role)
    : conn_(conn), clock_(clock), policy_(policy), timeouts_(timeouts), role_(role) {}

Result<std::unique_ptr<SctpCep>, WireError> SctpCep::CreateInitiator(
    transport::SctpConnection& conn, const Clock& clock, const wire::SctpSessionPolicy& policy,
    ByteSpan private_data, const CepTimeouts& timeouts) {
  if (timeouts.request_ns == 0 || timeouts.reply_ns == 0) return Err{WireError::kInvalidArgument};
  auto initiate = wire::MakeSctpInitiate(policy, private_data);
  if (!initiate) return Err{initiate.error()};
  std::unique_ptr<SctpCep> cep(new SctpCep(conn, clock, policy, timeouts, MpaRole::kInitiator));
  auto encoded = cep->Encode(*initiate);
  if (!encoded) return Err{encoded.error()};
  cep->state_ = conn.connected() ? CepState::kSendingRequest : CepState::kConnecting;
  cep->deadline_ = clock.NowNs() + timeouts.reply_ns;
  return cep;
}

Result<std::unique_ptr<SctpCep>, WireError> SctpCep::CreateResponder(
    transport::SctpConnection& conn, const Clock& clock, const wire::SctpSessionPolicy& policy,
    const CepTimeouts& timeouts) {
  if (timeouts.request_ns == 0 || timeouts.reply_ns == 0 ||
      !wire::IsValidMpaPolicy(wire::ToMpaPolicy(policy))) {
    return Err{WireError::kInvalidArgument};
  }
  std::unique_ptr<SctpCep> cep(new SctpCep(conn, clock, policy, timeouts, MpaRole::kResponder));
  cep->state_ = CepState::kAwaitingRequest;
  cep->deadline_ = clock.NowNs() + timeouts.request_ns;
  return cep;
}

void SctpCep::OnWritable() {
  Run();
}

void SctpCep::OnReadable() {
  Run();
}

void SctpCep::OnTimer() {
  if (IsTerminal(state_) || !deadline_ || clock_.NowNs() < *deadline_) return;
  error_ = CepError{};
  error_.kind = CepErrorKind::kTimeout;
  Enter(CepState::kFailed);
}

Result<CepState, WireError> SctpCep::Accept(ByteSpan private_data, bool offer_send_imm) {
  if (role_ != MpaRole::kResponder || state_ != CepState::kRequestReceived) {
    return Err{WireError::kInvalidArgument};
  }
  wire::SctpSessionPolicy policy = policy_;
  policy.offer_send_imm = policy.offer_send_imm || offer_send_imm;
  auto response = wire::RespondToSctpInitiate(policy, initiate_, private_data);
  if (!response) return Err{response.error()};
  auto encoded = Encode(response->answer);
  if (!encoded) return Err{encoded.error()};
  if (response->accepted) {
    outcome_ = response->outcome;
    Enter(CepState::kSendingReply);
  } else {
    // Not reached: the same negotiation accepted this Initiate on arrival.
    outcome_.reset();
    reject_reason_ = response->reason;
    Enter(CepState::kSendingReject);
  }
  Run();
  return state_;
}

Result<CepState, WireError> SctpCep::Reject(ByteSpan private_data) {
  if (role_ != MpaRole::kResponder || state_ != CepState::kRequestReceived) {
    return Err{WireError::kInvalidArgument};
  }
  SctpSessionMessage reject;
  reject.function = SctpSessionFunction::kReject;
  reject.private_data = private_data;
  auto encoded = Encode(reject);
  if (!encoded) return Err{encoded.error()};
  outcome_.reset();
  Enter(CepState::kSendingReject);
  Run();
  return state_;
}

bool SctpCep::wants_read() const {
  return state_ == CepState::kAwaitingReply || state_ == CepState::kAwaitingRequest ||
         state_ == CepState::kRequestReceived;
}

bool SctpCep::wants_write() const {
  return state_ == CepState::kConnecting || state_ == CepState::kSendingRequest ||
         state_ == CepState::kSendingReply || state_ == CepState::kSendingReject;
}

void SctpCep::Run() {
  // Each step either changes the state or waits; at most a few rounds.
  for (int i = 0; i < 8 && !IsTerminal(state_); ++i) {
    const CepState before = state_;
    Step();
    if (state_ == before) return;
  }
}

void SctpCep::Step() {
  switch (state_) {
    case CepState::kConnecting: {
      const IoResult r = conn_.FinishConnect();
      if (r.ok()) {
        Enter(CepState::kSendingRequest);
      } else if (r.status != IoStatus::kWouldBlock) {
        FailIo(r);
      }
      return;
    }
    case CepState::kSendingRequest:
      if (SendPending()) Enter(CepState::kAwaitingReply);
      return;
    case CepState::kAwaitingReply: {
      auto m = ReceiveMessage();
      if (!m) return;
      if (m->function == SctpSessionFunction::kReject) {
        peer_private_data_ = m->private_data;
        error_ = CepError{};
        error_.kind = CepErrorKind::kProtocol;
        error_.wire_error = WireError::kMpaRejected;
        Enter(CepState::kRejected);
        return;
      }
      if (m->function != SctpSessionFunction::kAccept) {
        FailProtocol(WireError::kSctpSessionBadFunction);
        return;
      }
      auto outcome = wire::ProcessSctpAnswer(policy_, *m);
      if (!outcome) {
        FailProtocol(outcome.error());
        // The association is the QP's now; it sends this Terminate (LLP
        // causes: no CRC on SCTP).
        error_.terminate = wire::TerminateCauseFor(outcome.error());
        return;
      }
      outcome_ = *outcome;
      peer_private_data_ = m->private_data;
      Enter(CepState::kEstablished);
      return;
    }
    case CepState::kAwaitingRequest: {
      auto m = ReceiveMessage();
      if (!m) return;
      if (m->function != SctpSessionFunction::kInitiate) {
        FailProtocol(WireError::kSctpSessionBadFunction);
        return;
      }
      initiate_ = *m;
      auto response = wire::RespondToSctpInitiate(policy_, initiate_, {});
      if (!response) {
        FailProtocol(response.error());
        return;
      }
      peer_private_data_ = m->private_data;
      if (!response->accepted) {
        auto encoded = Encode(response->answer);
        if (!encoded) {
          FailProtocol(encoded.error());
          return;
        }
        reject_reason_ = response->reason;
        Enter(CepState::kSendingReject);
        return;
      }
      outcome_ = response->outcome;
      Enter(CepState::kRequestReceived);
      return;
    }
    case CepState::kSendingReply:
      if (SendPending()) Enter(CepState::kEstablished);
      return;
    case CepState::kSendingReject:
      if (!SendPending()) return;
      (void)conn_.ShutdownWrite();
      if (reject_reason_) {
        FailProtocol(*reject_reason_);
      } else {
        Enter(CepState::kClosedAfterReject);
      }
      return;
    case CepState::kRequestReceived: {
      // The initiator sends nothing before our answer: a message now is a
      // protocol error, and an end or abort means it left (as Cep's probe).
      std::array<uint8_t, 1> probe{};
      const iovec v{probe.data(), probe.size()};
      MessageInfo info;
      const IoResult r = conn_.RecvMsg({&v, 1}, info);
      if (r.status == IoStatus::kWouldBlock) return;
      if (r.ok()) {
        FailProtocol(WireError::kMpaTrailingBytes);
      } else {
        FailIo(r);
      }
      return;
    }
    case CepState::kEstablished:
    case CepState::kRejected:
    case CepState::kClosedAfterReject:
    case CepState::kFailed: return;
  }
}

bool SctpCep::SendPending() {
  const iovec v{tx_buf_.data(), tx_len_};
  MessageInfo info;
  info.ppid = wire::kSctpPpidDdpSessionControl;
  info.stream = 0;
  const IoResult r = conn_.SendMsg({&v, 1}, info);
  if (r.ok()) return true;
  if (r.status != IoStatus::kWouldBlock) FailIo(r);
  return false;
}

std::optional<SctpSessionMessage> SctpCep::ReceiveMessage() {
  MessageInfo info;
  IoResult r;
  // Each round keeps one more early DDP segment (initiator), bounded by
  // kMaxEarlyBytes.
  for (;;) {
    if (early_.open() && !ContinueEarly()) return std::nullopt;
    const iovec v{rx_buf_.data(), rx_buf_.size()};
    info = MessageInfo{};
    r = conn_.RecvMsg({&v, 1}, info);
    if (r.status == IoStatus::kWouldBlock) return std::nullopt;
    if (!r.ok()) {
      FailIo(r);
      return std::nullopt;
    }
    if (!PeerSpeaksDdp()) return std::nullopt;
    if (state_ != CepState::kAwaitingReply || info.ppid != wire::kSctpPpidDdpSegment) break;
    if (!KeepEarly(info, ByteSpan(rx_buf_.data(), r.bytes))) return std::nullopt;
  }
  if (info.ppid != wire::kSctpPpidDdpSessionControl) {
    FailProtocol(WireError::kSctpSessionBadFunction);
    return std::nullopt;
  }
  if (!info.end_of_message) {
    FailProtocol(WireError::kSctpSessionBadLength);
    return std::nullopt;
  }
  wire::SctpSessionLimits limits;
  limits.max_private_data = policy_.max_private_data;
  auto m = wire::DecodeSctpSessionMessage(ByteSpan(rx_buf_.data(), r.bytes), limits);
  if (!m) {
    FailProtocol(m.error());
    return std::nullopt;
  }
  return *m;
}

bool SctpCep::PeerSpeaksDdp() {
  if (conn_.peer_adaptation_indication() == wire::kSctpAdaptationCodeDdp) return true;
  FailProtocol(WireError::kSctpNoDdpAdaptation);
  return false;
}

bool SctpCep::KeepEarly(const MessageInfo& info, ByteSpan piece) {
  if (info.stream == 0 || info.unordered) {
    FailProtocol(WireError::kSctpSessionBadFunction);
    return false;
  }
  early_.Begin(info);
  early_.Append(piece);
  if (!CheckEarly()) return false;
  if (info.end_of_message) early_.End();
  return true;
}

bool SctpCep::ContinueEarly() {
  while (early_.open()) {
    // One byte more than a ULPDU may have, so a longer message shows.
    const MutableByteSpan room = early_.Reserve(wire::kMaxUlpduLength + 1 - early_.open_length());
    const iovec v{room.data(), room.size()};
    MessageInfo info;
    const IoResult r = conn_.RecvMsg({&v, 1}, info);
    if (!r.ok()) {
      early_.Commit(0);
      if (r.status != IoStatus::kWouldBlock) FailIo(r);
      return false;
    }
    early_.Commit(r.bytes);
    const MessageInfo& open = early_.open_info();
    if (info.ppid != open.ppid || info.stream != open.stream || info.unordered != open.unordered) {
      FailProtocol(WireError::kSctpSessionBadFunction);
      return false;
    }
    if (!CheckEarly()) return false;
    if (info.end_of_message) {
      early_.End();
    } else if (r.bytes == 0) {
      return false;  // nothing more yet
    }
  }
  return true;
}

bool SctpCep::CheckEarly() {
  if (early_.open_length() > wire::kMaxUlpduLength) {
    FailProtocol(WireError::kSctpSessionBadLength);
    return false;
  }
  if (early_.bytes() > kMaxEarlyBytes) {
    FailIo(IoResult::Error(ENOBUFS));
    return false;
  }
  return true;
}

transport::SctpMessageQueue SctpCep::TakeEarlySegments() {
  if (state_ != CepState::kEstablished || role_ != MpaRole::kInitiator) return {};
  return std::exchange(early_, {});
}

Result<size_t, WireError> SctpCep::Encode(const SctpSessionMessage& m) {
  auto n = wire::EncodeSctpSessionMessage(m, tx_buf_);
  if (!n) return Err{n.error()};
  tx_len_ = *n;
  return *n;
}

void SctpCep::Enter(CepState s) {
  state_ = s;
  switch (s) {
    case CepState::kRequestReceived:
      deadline_.reset();  // the decision is the application's
      break;
    case CepState::kSendingReply:
    case CepState::kSendingReject: deadline_ = clock_.NowNs() + timeouts_.reply_ns; break;
    default:
      if (IsTerminal(s)) deadline_.reset();
      // Early DDP segments go to the QP only after a valid Accept.
      if (IsTerminal(s) && s != CepState::kEstablished) early_ = {};
      break;
  }
}

void SctpCep::FailProtocol(WireError e) {
  error_ = CepError{};
  error_.kind = CepErrorKind::kProtocol;
  error_.wire_error = e;
  Enter(CepState::kFailed);
}

void SctpCep::FailIo(const IoResult& r) {
  error_ = CepError{};
  if (r.status == IoStatus::kClosed) {
    error_.kind = CepErrorKind::kPeerClosed;
  } else {
    error_.kind = CepErrorKind::kTransport;
    error_.sys_errno = r.err;
  }
  Enter(CepState::kFailed);
}

}  // namespace iwarpx::cm
