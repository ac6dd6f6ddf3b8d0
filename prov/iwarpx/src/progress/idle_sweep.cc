#include "progress/idle_sweep.h"

#include <algorithm>

namespace iwarpx::progress {

void IdleSweep::Forget(rd::RdQp& q) {
  rd::RdQp::SweepMark& m = q.sweep_mark();
  if (!m.queued) return;
  m.queued = false;
  std::erase(queue_, &q);
  if (queue_.empty()) next_ = UINT64_MAX;
}

void IdleSweep::Run(uint64_t now) {
  size_t kept = 0;
  for (rd::RdQp* q : queue_) {
    rd::RdQp::SweepMark& m = q->sweep_mark();
    if (q->watched()) {
      m.queued = false;  // busy again: queued anew when it next goes idle
      continue;
    }
    if (m.recent) {
      m.recent = false;  // idle only since the last look: another period
      queue_[kept++] = q;
      continue;
    }
    m.queued = false;
    const size_t bytes = q->ReleaseIdle();
    if (bytes != 0) {
      ++releases_;
      released_bytes_ += bytes;
    }
  }
  queue_.resize(kept);
  if (queue_.empty()) {
    std::vector<rd::RdQp*>().swap(queue_);  // a quiet channel keeps no queue
    next_ = UINT64_MAX;
  } else {
    next_ = now + period_;
  }
}

}  // namespace iwarpx::progress
