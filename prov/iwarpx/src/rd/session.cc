#include "rd/session.h"

#include <algorithm>

namespace iwarpx::rd {

void OutboundSession::Open() {
  const uint32_t old = id_;
  do {
    id_ = random_.Next32();
  } while (id_ == 0 || id_ == old);
  syn_ = true;
}

bool OutboundSession::OnAckEcho(uint32_t echo_session) {
  if (echo_session != id_) return false;
  syn_ = false;
  return true;
}

bool OutboundSession::OnReset(uint32_t echo_session) {
  if (echo_session != id_) return false;
  Open();
  return true;
}

bool InboundSessions::IsRetired(uint32_t session) const {
  return std::find(retired_.begin(), retired_.end(), session) != retired_.end();
}

void InboundSessions::RetireCurrent() {
  if (current_ == 0) return;
  retired_[next_retired_] = current_;
  next_retired_ = (next_retired_ + 1) % retired_.size();
  current_ = 0;
}

SessionVerdict InboundSessions::Classify(uint32_t session, bool syn) {
  if (session != 0 && session == current_) return SessionVerdict::kCurrent;
  if (session == 0 || IsRetired(session)) return SessionVerdict::kRetired;
  if (!syn) return SessionVerdict::kReset;
  RetireCurrent();
  current_ = session;
  return SessionVerdict::kAdopted;
}

}  // namespace iwarpx::rd
