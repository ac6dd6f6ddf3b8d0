#include "progress/engine.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <limits>

namespace iwarpx::progress {

using transport::Poller;

namespace {
constexpr size_t kEventsPerPass = 64;
constexpr uint32_t kInterestMask = Poller::kReadable | Poller::kWritable | Poller::kPeerHalfClosed;
}  // namespace

Result<std::unique_ptr<Engine>, transport::IoError> Engine::Create(const Clock& clock) {
  auto poller = Poller::Create();
  if (!poller.ok()) return Err{poller.error()};
  return std::unique_ptr<Engine>(new Engine(clock, std::move(poller).value()));
}

Engine::Engine(const Clock& clock, std::unique_ptr<Poller> poller)
    : clock_(clock), poller_(std::move(poller)) {
  events_.resize(kEventsPerPass);
  timed_.reserve(64);
  pending_.reserve(64);
  scratch_.reserve(64);
}

Engine::~Engine() {
  for (auto& [token, p] : live_) p->token_ = 0;
}

transport::Status Engine::Add(Pollable& p) {
  if (p.token_ != 0) return {EEXIST};
  const uint64_t token = next_token_++;
  const int fd = p.fd();
  const uint32_t interest = p.interest() & kInterestMask;
  if (fd >= 0) {
    if (const transport::Status s = poller_->Add(fd, interest, token); !s.ok()) return s;
    p.fd_added_ = true;
    ++in_set_;
  }
  p.token_ = token;
  p.registered_ = interest;
  if ((interest & transport::Poller::kWritable) != 0) ++writers_;
  if (p.yields_when_idle()) {
    p.yielder_ = true;
    ++yielders_;
  }
  live_.emplace(token, &p);
  Update(p);
  return {};
}

void Engine::Remove(Pollable& p) {
  if (p.token_ == 0) return;
  if (p.fd_added_) {
    (void)poller_->Remove(p.fd());
    --in_set_;
  }
  if (parked_ == &p) parked_ = nullptr;  // its fd is not in the set
  if ((p.registered_ & transport::Poller::kWritable) != 0) --writers_;
  if (hot_ == &p) hot_ = nullptr;
  if (p.yielder_) --yielders_;
  p.yielder_ = false;
  live_.erase(p.token_);
  std::erase(timed_, p.token_);
  std::erase(pending_, p.token_);
  p.token_ = 0;
  p.registered_ = 0;
  p.fd_added_ = false;
  p.timed_ = false;
  p.pending_ = false;
}

void Engine::Update(Pollable& p) {
  if (p.token_ == 0) return;
  if (parked_ == &p && (p.interest() & kInterestMask) != p.registered_) Unpark();
  if (p.fd_added_) {
    const uint32_t interest = p.interest() & kInterestMask;
    if (interest != p.registered_) {
      if (poller_->Modify(p.fd(), interest, p.token_).ok()) {
        const uint32_t before = p.registered_ & transport::Poller::kWritable;
        const uint32_t after = interest & transport::Poller::kWritable;
        if (before == 0 && after != 0) ++writers_;
        if (before != 0 && after == 0) --writers_;
        p.registered_ = interest;
      }
    }
  }
  const std::optional<uint64_t> deadline = p.deadline();
  if (deadline) pass_deadline_ = std::min(pass_deadline_, *deadline);
  const bool timed = deadline.has_value();
  if (timed != p.timed_) {
    p.timed_ = timed;
    if (timed) {
      timed_.push_back(p.token_);
    } else {
      std::erase(timed_, p.token_);
    }
  }
  const bool pending = p.has_pending_work();
  if (pending && !p.pending_) {
    p.pending_ = true;
    pending_.push_back(p.token_);
    Wakeup();  // a thread blocked in WaitForEvents must come and run it
  }
  // A Pollable that no longer has pending work is dropped from the list by
  // the next RunPending.
}

Pollable* Engine::Lookup(uint64_t token) const {
  const auto it = live_.find(token);
  return it == live_.end() ? nullptr : it->second;
}

void Engine::Dispatch(Pollable& p, uint32_t events) {
  p.OnReady(events);
  if (p.token_ != 0) Update(p);
}

bool Engine::RunDirect(size_t* ran) {
  Pollable* hot = hot_;  // cleared by Remove: a live registered Pollable or null
  if (!hot_polling_ || hot == nullptr || writers_ != 0 || !pending_.empty() ||
      direct_passes_ >= kDirectPassesMax) {
    return false;
  }
  ++direct_passes_;
  if (hot->PollDirect()) {
    hot_misses_ = 0;
    if (hot->token_ != 0) {
      Update(*hot);
      // Counted since it became hot, not in a row: a ping-pong peer's
      // socket is read empty several times between two messages.
      if (++hot_hits_ >= kParkAfterHits) MaybePark(*hot);
    }
    ++*ran;
    return true;
  }
  if (++hot_misses_ >= kHotMisses) SetHot(nullptr);  // gone quiet: back to epoll
  return hot_ != nullptr;
}

void Engine::SetHot(Pollable* p) {
  if (p == hot_) return;
  Unpark();  // only the hot descriptor may be out of the set
  hot_ = p;
  hot_hits_ = 0;
  hot_misses_ = 0;
}

void Engine::MaybePark(Pollable& hot) {
  if (parked_ != nullptr || !parking_ || !hot_polling_ || !hot.fd_added_ ||
      hot.registered_ != transport::Poller::kReadable ||
      sleepers_.load(std::memory_order_relaxed) != 0) {
    return;
  }
  if (!poller_->Remove(hot.fd()).ok()) return;
  hot.fd_added_ = false;
  --in_set_;
  parked_ = &hot;
  ++parks_;
}

void Engine::Unpark() {
  Pollable* p = parked_;
  if (p == nullptr) return;
  const uint32_t interest = p->interest() & kInterestMask;
  // On failure it stays parked: read directly in every pass, and
  // WaitForEvents then sleeps in short slices.
  if (!poller_->Add(p->fd(), interest, p->token_).ok()) return;
  parked_ = nullptr;
  ++unparks_;
  p->fd_added_ = true;
  ++in_set_;
  const uint32_t before = p->registered_ & transport::Poller::kWritable;
  const uint32_t after = interest & transport::Poller::kWritable;
  if (before == 0 && after != 0) ++writers_;
  if (before != 0 && after == 0) --writers_;
  p->registered_ = interest;
}

void Engine::PollParked(size_t* ran) {
  Pollable* p = parked_;
  if (p == nullptr) return;
  if (!p->PollDirect()) {
    // Counted here too: while another descriptor waits to write (or work is
    // pending) every pass is an epoll pass and RunDirect does not run, yet a
    // quiet parked descriptor must go back for epoll to report its hang-ups.
    if (++hot_misses_ >= kHotMisses) SetHot(nullptr);
    return;
  }
  ++*ran;
  hot_misses_ = 0;
  if (p->token_ != 0) Update(*p);
}

void Engine::set_hot_polling(bool on) {
  hot_polling_ = on;
  if (!on) Unpark();
}

void Engine::set_parking(bool on) {
  parking_ = on;
  if (!on) Unpark();
}

size_t Engine::RunOnce(int timeout_ms) {
  size_t ran = 0;
  // Timers are checked in the epoll passes only, which come at least every
  // kDirectPassesMax + 1 passes: a timer scan asks every timed Pollable for
  // its deadline (an RD channel: every peer's), so doing it in every direct
  // pass made each busy poll O(peers) (rdm_scale: 8 B to a hot peer took
  // 271 us with 1024 peers known, 4.4 us with 64).
  if (timeout_ms == 0 && RunDirect(&ran)) return ran;
  direct_passes_ = 0;
  if (!pending_.empty()) timeout_ms = 0;
  if (timeout_ms != 0) {
    Unpark();       // epoll must see every descriptor while we wait
    hot_hits_ = 0;  // hits count from the last sleep: no DEL+ADD per message
  }
  // One deadline scan per pass: its minimum bounds the wait, and the
  // callbacks of this pass lower it through Update(), so RunTimers (a second
  // scan) runs only when some deadline is really due.
  pass_deadline_ = NextDeadline();
  if (timeout_ms != 0) {
    const int until_timer = MsUntil(pass_deadline_);
    if (until_timer >= 0 && (timeout_ms < 0 || until_timer < timeout_ms)) timeout_ms = until_timer;
  }
  // A poll of a set that holds no descriptor (only the wakeup eventfd: the
  // one busy socket parked) could report nothing but a wakeup, which a pass
  // that does not sleep has no use for: no system call then.
  Result<transport::WaitResult, transport::IoError> w = transport::WaitResult{};
  if (timeout_ms != 0 || in_set_ != 0) {
    w = poller_->Wait(timeout_ms, events_);
    ++waits_;
  }
  if (yielders_ != 0 && timeout_ms == 0 && w.ok() && w->count == 0) {
    ++idle_yields_;
    sched_yield();  // "Yielding when idle" (engine.h)
  }
  if (w.ok()) {
    for (size_t i = 0; i < w->count; ++i) {
      Pollable* p = Lookup(events_[i].token);
      if (p == nullptr) continue;  // removed earlier in this pass
      if ((events_[i].events & transport::Poller::kReadable) != 0) {
        SetHot(p);
        hot_misses_ = 0;
      }
      Dispatch(*p, events_[i].events);
      ++ran;
    }
  }
  PollParked(&ran);
  if (!timed_.empty() && pass_deadline_ <= clock_.NowNs()) RunTimers();
  if (!pending_.empty()) RunPending();
  return ran;
}

uint64_t Engine::NextDeadline() const {
  uint64_t next = kNoDeadline;
  for (const uint64_t token : timed_) {
    const Pollable* p = Lookup(token);
    if (p == nullptr) continue;
    if (const auto d = p->deadline(); d) next = std::min(next, *d);
  }
  return next;
}

int Engine::MsUntil(uint64_t deadline) const {
  if (deadline == kNoDeadline) return -1;
  const uint64_t now = clock_.NowNs();
  if (deadline <= now) return 0;
  const uint64_t ms = (deadline - now + kNsPerMs - 1) / kNsPerMs;
  return static_cast<int>(std::min<uint64_t>(ms, std::numeric_limits<int>::max()));
}

int Engine::MsUntilNextDeadline() const {
  return MsUntil(NextDeadline());
}

void Engine::RunTimers() {
  const uint64_t now = clock_.NowNs();
  scratch_.assign(timed_.begin(), timed_.end());
  for (const uint64_t token : scratch_) {
    Pollable* p = Lookup(token);
    if (p == nullptr) continue;
    const auto d = p->deadline();
    if (!d || *d > now) continue;
    p->OnTimer();
    if (p->token_ != 0) Update(*p);
  }
}

void Engine::RunPending() {
  scratch_.swap(pending_);
  pending_.clear();
  for (const uint64_t token : scratch_) {
    Pollable* p = Lookup(token);
    if (p == nullptr) continue;
    p->pending_ = false;
    if (p->has_pending_work()) {
      p->OnPendingWork();
      if (p->token_ != 0) Update(*p);
    }
  }
  scratch_.clear();
}

void Engine::WaitForEvents(int timeout_ms, int extra_fd) {
  int until_timer = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending_.empty()) return;
    sleepers_.fetch_add(1, std::memory_order_relaxed);  // no parking until we are out
    Unpark();
    // A loop that sleeps between messages would otherwise take the socket out
    // and put it back (two epoll_ctl, ~1.3 us) for every message.
    hot_hits_ = 0;
    until_timer = MsUntilNextDeadline();
    if (parked_ != nullptr) until_timer = 1;  // could not put it back: look again soon
  }
  if (until_timer >= 0 && (timeout_ms < 0 || until_timer < timeout_ms)) timeout_ms = until_timer;
  pollfd pfd[2] = {{poller_->fd(), POLLIN, 0}, {extra_fd, POLLIN, 0}};
  (void)::poll(pfd, extra_fd >= 0 ? 2 : 1, timeout_ms);
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void Engine::Wakeup() {
  const transport::Status s = poller_->Wakeup();
  (void)s;
}

}  // namespace iwarpx::progress
