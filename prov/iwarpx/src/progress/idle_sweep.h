// IdleSweep: the RD QPs of a channel that stayed idle give their buffers
// back (rd::RdQp::ReleaseIdle: send and receive rings, transmit slot,
// staging, the stream's copy buffer and rings; ~1.5 KiB a quiet peer kept
// from its last message, docs/design.md "A quiet peer costs what it uses").
//
// A second-chance sweep, so the busy-peer path stays O(busy) and a
// ping-pong peer never pays a malloc/free per message:
// - WentIdle(q): the channel's active set dropped q (RdChannel::Reap found
//   it idle). q is queued once and marked `recent`; a QP already queued is
//   only marked again. This is the only cost on the message path: two flag
//   writes per transition to idle, a clock read when the queue was empty.
// - Run(now), when due() (every `period` while anything is queued): each
//   queued QP that is in use again (watched) leaves the queue (it is
//   queued anew when it next goes idle); one marked `recent` loses the mark
//   and stays; one unmarked has been idle at least a whole period and is
//   released, then leaves the queue. So a QP gives its buffers back after
//   between one and two periods of idleness, and one that went idle at
//   all during the last period — a busy peer between its messages — never.
// - Forget(q) before q is destroyed (RdChannel::Retire).
// A period of 0 turns the sweep off (WentIdle does nothing).
// Single-threaded (the engine lock), as the channel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "rd/rd_qp.h"

namespace iwarpx::progress {

class IdleSweep {
 public:
  IdleSweep(const Clock& clock, uint64_t period_ns) : clock_(clock), period_(period_ns) {}

  void WentIdle(rd::RdQp& q) {
    if (period_ == 0) return;
    rd::RdQp::SweepMark& m = q.sweep_mark();
    m.recent = true;
    if (m.queued) return;
    m.queued = true;
    if (queue_.empty()) next_ = clock_.NowNs() + period_;
    queue_.push_back(&q);
  }
  void Forget(rd::RdQp& q);
  // When Run is due (absolute ns); UINT64_MAX with nothing queued.
  [[nodiscard]] uint64_t due() const { return next_; }
  void Run(uint64_t now);

  [[nodiscard]] size_t queued() const { return queue_.size(); }
  // QPs released so far, and the bytes they gave back.
  [[nodiscard]] uint64_t releases() const { return releases_; }
  [[nodiscard]] uint64_t released_bytes() const { return released_bytes_; }

 private:
  const Clock& clock_;
  uint64_t period_;
  uint64_t next_ = UINT64_MAX;
  std::vector<rd::RdQp*> queue_;
  uint64_t releases_ = 0;
  uint64_t released_bytes_ = 0;
};

}  // namespace iwarpx::progress
