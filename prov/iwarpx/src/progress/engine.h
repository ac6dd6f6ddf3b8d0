// Engine: the readiness loop that drives every connection of one fabric (its
// listeners, connecting and connected channels). Knows nothing of libfabric:
// it calls Pollable objects, which the layers above implement.
//
// Contract
// - One mutex, mu(), the engine lock, serialises all engine state and every
//   call into a registered Pollable. The owner holds it to post work, to
//   register (Add/Remove/Update) and to run RunOnce(). Callbacks run with it
//   held, so a callback must not take it again; callbacks may Add, Remove
//   (even themselves: a removed Pollable is never called again, also within
//   the same pass) and Update any Pollable.
// - Registration costs an allocation (a token map entry); steady-state passes
//   and Update() allocate nothing.
// - Interest: after every callback the engine re-reads the Pollable's
//   interest(), deadline() and has_pending_work() (Update). When something
//   else changed them (an application posted work), the owner calls Update().
//   epoll_ctl runs only when the interest really changed.
// - Timers: deadline() is an absolute Clock time; OnTimer() runs in the first
//   pass at or after it. Only Pollables with a deadline are visited.
// - Pending work: a Pollable with input already staged in user space
//   (has_pending_work()) gets OnPendingWork() in every pass until it has
//   none, without waiting for readiness.
// - Hot descriptor (busy polling): a zero-timeout pass (RunOnce(0), what
//   manual progress runs from every fi_cq_read) first asks the Pollable that
//   last had input to read directly (PollDirect: one non-blocking receive)
//   and skips epoll_wait when it got some, saving one system call per
//   message on a ping-pong. epoll_wait still runs at least every
//   kDirectPassesMax passes, whenever a Pollable waits for writability, when
//   work is pending, and once the hot one has come up empty kHotMisses times
//   in a row (it then stops being hot), so no other descriptor starves.
//   Timers are run in the epoll passes only (at least every
//   kDirectPassesMax + 1 passes), so a busy poll does not scan every timed
//   Pollable's deadline. A zero-timeout epoll pass skips epoll_wait itself
//   while no descriptor is in the set (the only one parked, below): such a
//   poll could report nothing but a Wakeup(), which only sleepers need (a
//   Wakeup left undrained makes the next sleep return at once, once).
// - Parking (set_parking, on by default): a hot descriptor that had input in
//   kParkAfterHits direct reads since it became hot (or since the last pass
//   that could sleep: RunOnce with a timeout, WaitForEvents) leaves the epoll set, so
//   the kernel no longer runs the epoll callback for every datagram queued
//   and every send buffer freed on it (~0.25 us per 8-byte message on
//   loopback). A parked descriptor is read directly in every pass, epoll
//   passes included, and goes back into the set (with its current interest)
//   before anything could sleep on the set: a RunOnce with a non-zero
//   timeout, WaitForEvents (no parking while a thread is inside it), when it
//   goes cold, when another descriptor becomes hot, when its interest
//   changes from read-only, and for good on set_parking(false) or
//   set_hot_polling(false). An owner that hands poll_fd() to someone who
//   sleeps on it without calling WaitForEvents must turn parking off first.
// - Yielding when idle: while a registered Pollable says yields_when_idle()
//   (a channel whose input is produced by another thread of this process:
//   usrsctp's receive and timer threads behind a doorbell), a zero-timeout
//   pass whose epoll_wait found nothing ends with sched_yield(). Manual
//   progress busy-polls from fi_cq_read; without the yield that thread kept
//   its CPU from the usrsctp threads that do the SCTP work (docs/PERFORMANCE.md
//   "Yielding to usrsctp's threads"). Other endpoints never yield.
// - WaitForEvents(timeout) blocks *without* the lock (poll(2) on the epoll
//   descriptor) until a registered descriptor is ready, Wakeup() is called,
//   an extra descriptor is readable, or the timeout (bounded by the nearest deadline) passes; it
//   consumes nothing, so the caller follows it with a locked RunOnce(). Any thread.
// - Wakeup() is thread-safe and needs no lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "transport/poller.h"

namespace iwarpx::progress {

class Engine;

// Something the engine drives: one descriptor, a wanted readiness set, an
// optional deadline and optional work that needs no readiness.
class Pollable {
 public:
  virtual ~Pollable() = default;
  Pollable() = default;
  Pollable(const Pollable&) = delete;
  Pollable& operator=(const Pollable&) = delete;

  // The descriptor to watch; -1 for none (then only timers and pending work).
  [[nodiscard]] virtual int fd() const = 0;
  // transport::Poller::kReadable | kWritable | kPeerHalfClosed wanted now
  // (0: none).
  [[nodiscard]] virtual uint32_t interest() const = 0;
  // fd() is ready: Poller masks, possibly with kError/kHangup.
  virtual void OnReady(uint32_t events) = 0;
  [[nodiscard]] virtual std::optional<uint64_t> deadline() const { return std::nullopt; }
  virtual void OnTimer() {}
  [[nodiscard]] virtual bool has_pending_work() const { return false; }
  virtual void OnPendingWork() {}
  // Reads what fd() has without waiting for readiness (non-blocking), as
  // OnReady(kReadable) would; true if it consumed input. The default cannot.
  virtual bool PollDirect() { return false; }
  // Read once, at Add(): see "Yielding when idle" above.
  [[nodiscard]] virtual bool yields_when_idle() const { return false; }

 private:
  friend class Engine;
  bool yielder_ = false;     // counted in Engine::yielders_
  uint64_t token_ = 0;       // 0: not registered
  uint32_t registered_ = 0;  // interest currently in the epoll set
  bool fd_added_ = false;
  bool timed_ = false;    // listed in Engine::timed_
  bool pending_ = false;  // listed in Engine::pending_
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>, transport::IoError> Create(const Clock& clock);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::mutex& mu() { return mu_; }
  [[nodiscard]] const Clock& clock() const { return clock_; }

  // --- mu held.
  // Registers `p` (its fd with its current interest). errno on failure.
  transport::Status Add(Pollable& p);
  // Unregisters `p`; it is never called again. Safe for unregistered objects.
  void Remove(Pollable& p);
  // Re-reads interest/deadline/pending work of a registered `p`.
  void Update(Pollable& p);
  // One pass: waits at most timeout_ms for readiness (0: just polls), runs
  // the ready callbacks, expired timers and pending work. Returns the number
  // of callbacks run.
  size_t RunOnce(int timeout_ms);
  // Milliseconds until the nearest deadline (-1: none, 0: due).
  [[nodiscard]] int MsUntilNextDeadline() const;
  [[nodiscard]] bool has_pending_work() const { return !pending_.empty(); }
  // The hot-descriptor pass (on by default; FI_IWARPX_BUSY_POLL).
  void set_hot_polling(bool on);
  // Parking of the hot descriptor (on by default; FI_IWARPX_BUSY_POLL_PARK,
  // and off for good once poll_fd() is handed to an application).
  void set_parking(bool on);
  // The descriptor parked outside the epoll set now (tests), and how often
  // one was taken out of / put back into the set.
  [[nodiscard]] bool parked() const { return parked_ != nullptr; }
  [[nodiscard]] uint64_t parks() const { return parks_; }
  [[nodiscard]] uint64_t unparks() const { return unparks_; }
  // epoll_wait calls made by passes so far (tests).
  [[nodiscard]] uint64_t waits() const { return waits_; }
  [[nodiscard]] size_t registered() const { return live_.size(); }
  // Registered Pollables that yield when idle, and the yields made so far.
  [[nodiscard]] size_t idle_yielders() const { return yielders_; }
  [[nodiscard]] uint64_t idle_yields() const { return idle_yields_; }
  // The epoll descriptor: readable while a registered descriptor is ready for
  // what its Pollable wants (or after Wakeup). For wait objects handed to
  // applications; never read or waited on through it by the engine's owner.
  [[nodiscard]] int poll_fd() const { return poller_->fd(); }

  // --- any thread, mu not held.
  // `extra_fd` (-1: none) also ends the wait when readable.
  void WaitForEvents(int timeout_ms, int extra_fd = -1);
  void Wakeup();

 private:
  Engine(const Clock& clock, std::unique_ptr<transport::Poller> poller);
  Pollable* Lookup(uint64_t token) const;
  void Dispatch(Pollable& p, uint32_t events);
  void RunTimers();
  void RunPending();
  // The earliest deadline of the timed Pollables (kNoDeadline: none), and
  // the milliseconds from now until a deadline (-1: none, 0: due).
  static constexpr uint64_t kNoDeadline = std::numeric_limits<uint64_t>::max();
  [[nodiscard]] uint64_t NextDeadline() const;
  [[nodiscard]] int MsUntil(uint64_t deadline) const;

  // The hot-descriptor pass of RunOnce(0); true if it replaced epoll_wait.
  bool RunDirect(size_t* ran);
  // Parking (see the contract): takes the hot descriptor out of the epoll
  // set when allowed; puts the parked one back; reads the parked one.
  void MaybePark(Pollable& hot);
  void Unpark();
  void PollParked(size_t* ran);
  // A new hot descriptor (null: none); the parked one goes back first.
  void SetHot(Pollable* p);

  static constexpr uint32_t kDirectPassesMax = 16;
  static constexpr uint32_t kHotMisses = 32;
  static constexpr uint32_t kParkAfterHits = 4;

  const Clock& clock_;
  std::unique_ptr<transport::Poller> poller_;
  Pollable* hot_ = nullptr;     // the Pollable that last had input (none: null)
  uint32_t hot_misses_ = 0;     // direct reads in a row that found nothing
  uint32_t hot_hits_ = 0;       // direct reads with input since it became hot
  Pollable* parked_ = nullptr;  // null or hot_, its fd out of the epoll set
  uint64_t parks_ = 0;
  uint64_t unparks_ = 0;
  uint64_t waits_ = 0;
  size_t in_set_ = 0;                  // registered descriptors in the epoll set now
  std::atomic<uint32_t> sleepers_{0};  // threads inside WaitForEvents
  uint32_t direct_passes_ = 0;         // passes since the last epoll_wait
  uint32_t writers_ = 0;               // Pollables registered for writability
  size_t yielders_ = 0;                // registered Pollables with yields_when_idle()
  uint64_t idle_yields_ = 0;
  // The earliest deadline seen in this pass: NextDeadline() at its start,
  // lowered by every Update() (a callback may set an earlier one).
  uint64_t pass_deadline_ = kNoDeadline;
  bool hot_polling_ = true;
  bool parking_ = true;
  std::mutex mu_;
  uint64_t next_token_ = 1;
  std::unordered_map<uint64_t, Pollable*> live_;
  std::vector<uint64_t> timed_;    // tokens with a deadline
  std::vector<uint64_t> pending_;  // tokens with pending work
  std::vector<uint64_t> scratch_;
  std::vector<transport::PollEvent> events_;
};

}  // namespace iwarpx::progress
