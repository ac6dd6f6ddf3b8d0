// Reliable-datagram sessions (docs/wire.md §3.6, rules 1-5 and 13): how a
// stream's two ends tell a restarted or re-created peer from late datagrams
// of its old incarnation, without any connection setup.
//
// * OutboundSession: the sender's own session toward one peer QP. A random,
//   non-zero id (rule 1); the Y flag is set on every datagram until an ack
//   echoing this id arrives (rule 2); a RESET for this id makes it reopen with
//   a new id (rule 5) — the owner then fails the unacknowledged operations and
//   restarts its SendWindow at sequence 0.
// * InboundSessions: the receiver's view of one peer QP's sessions: the
//   current one and the last kRetiredKept replaced ones (rule 3). Classify() says
//   what to do with a data/ack/PROBE datagram of `session`:
//     kCurrent       process it;
//     kAdopted       the peer is new or restarted (unknown session with Y): the
//                    old session is retired; the owner drops the old stream's
//                    receive state and partial messages, reports the restart,
//                    and starts a RecvWindow at 0;
//     kRetired       a late datagram of an old incarnation: drop silently;
//     kReset         unknown session without Y: the receiver lost its state;
//                    answer RESET with echo_session = session, adopt nothing.
//   Forget() drops the current session without retiring it (rule 13: after
//   this end sent a Terminate, later datagrams of that session draw a RESET).
//
// Contract: pure, deterministic given the Random; no allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "base/random.h"

namespace iwarpx::rd {

class OutboundSession {
 public:
  explicit OutboundSession(Random& random) : random_(random) { Open(); }

  [[nodiscard]] uint32_t id() const { return id_; }
  // Y: set until the peer acknowledged this session.
  [[nodiscard]] bool syn() const { return syn_; }
  // An ack's echo_session: true if it refers to this session (rule 4); the
  // first such ack clears Y.
  bool OnAckEcho(uint32_t echo_session);
  // A RESET: true if it refused this session, which is then reopened with a
  // new id (the owner resets its stream); other RESETs are ignored.
  bool OnReset(uint32_t echo_session);

 private:
  void Open();

  Random& random_;
  uint32_t id_ = 0;
  bool syn_ = true;
};

enum class SessionVerdict : uint8_t { kCurrent, kAdopted, kRetired, kReset };

class InboundSessions {
 public:
  static constexpr size_t kRetiredKept = 4;

  // `session` is never 0 (the decoder refuses 0 on RD datagrams).
  SessionVerdict Classify(uint32_t session, bool syn);
  void Forget() { current_ = 0; }
  // The current session becomes a retired one (its stream was discarded).
  void RetireCurrent();
  [[nodiscard]] uint32_t current() const { return current_; }
  // `session` is current or retired here (Classify would not adopt it).
  [[nodiscard]] bool Knows(uint32_t session) const {
    return session != 0 && (session == current_ || IsRetired(session));
  }

 private:
  bool IsRetired(uint32_t session) const;

  uint32_t current_ = 0;  // 0: none
  std::array<uint32_t, kRetiredKept> retired_{};
  size_t next_retired_ = 0;
};

}  // namespace iwarpx::rd
