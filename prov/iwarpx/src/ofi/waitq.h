// What CQs, EQs and counters share: the wait object behind fi_*_sread /
// fi_cntr_wait / FI_GETWAIT / fi_trywait, and a fixed-capacity ring.
//
// Wait object contract
// - Each queue has one mutex (Waiter::mu) guarding its state. Producers change
//   the state under the mutex and then call Signal(); Signal wakes every thread
//   blocked in WaitUntil and makes the eventfd readable.
// - Blocking calls inside the provider wait on a condition variable, not on the
//   eventfd, so two threads waiting on one queue never steal each other's
//   wake-up. The eventfd is for applications that poll it (FI_GETWAIT) and for
//   the provider's own blocking reads, which sleep in poll(2) on it while they
//   drive progress (Fabric::ProgressUntil). fi_trywait drains it once the queue
//   is seen empty, so a later Signal makes it readable again; a blocking read
//   that finds nothing ready drains it too (Quiesce), else one Signal in the
//   past would keep every later sleep from sleeping.
// - Signal writes the eventfd only when it is not readable already (one write
//   per drain, not one per completion).
// - FI_WAIT_NONE has no eventfd and refuses blocking calls; FI_WAIT_FD and
//   FI_WAIT_UNSPEC use an eventfd; other wait objects are not supported.
// - Interrupt() (fi_cq_signal) makes blocked waiters return early once.
// Any thread may call any method.
//
// Ring contract: Init allocates the capacity asked for; a Push into a full
// ring doubles it (the only allocation afterwards; Push fails only if that
// allocation does), so queued completions and events are never dropped. No
// exceptions. Not thread-safe: the owner's mutex guards it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <utility>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/providers/fi_log.h>

namespace iwarpx::ofi {

class Waiter {
 public:
  Waiter() = default;
  ~Waiter();
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // Sets the wait object kind; opens the eventfd when needed. With
  // `progress_fd` (the engine's epoll descriptor, -1 for none) the descriptor
  // FI_GETWAIT hands out is an epoll set of both, so an application sleeping
  // on it also wakes when a socket needs progress (manual progress: it then
  // calls fi_cq_read/fi_trywait, which run the engine). 0 or -FI_E*.
  int Open(enum fi_wait_obj kind, int progress_fd = -1);

  [[nodiscard]] bool can_block() const { return kind_ != FI_WAIT_NONE; }
  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] enum fi_wait_obj kind() const { return kind_; }
  // Takes a pending Interrupt() (fi_cq_signal before or during a blocking
  // read ends that read once). mu held.
  bool TakeInterrupt() {
    const bool pending = interrupt_pending_;
    interrupt_pending_ = false;
    return pending;
  }
  // fi_control(FI_GETWAIT / FI_GETWAITOBJ) of the object that owns this
  // waiter (CQ, EQ, counter); `what` names it in the log line. Other commands
  // are -FI_ENOSYS. Any thread.
  int Control(int command, void* arg, enum fi_log_subsys subsys, const char* what) const;

  // Call with mu held after the state changed.
  void Signal();
  // Call with mu held: wakes waiters without a state change (fi_cq_signal).
  void Interrupt();
  // Empties the eventfd (fi_trywait once the queue is empty); true when it
  // was signalled since the last Drain. mu held.
  bool Drain();
  // A blocking read found nothing ready and is about to sleep on fd(): empties
  // the eventfd so that the sleep ends at the next Signal, not at once. `empty`:
  // the owner has nothing an application could still be told about (CQ/EQ:
  // the ring is empty), so an application sleeping on FI_GETWAIT's descriptor
  // loses nothing either. Otherwise (a counter, whose "news" is a change since
  // the application's last fi_trywait) it drains only while no application
  // has asked for the descriptor. mu held.
  void Quiesce(bool empty) {
    if (empty || !exported_.load(std::memory_order_relaxed)) Drain();
  }

  // Blocks with `lock` (on mu) held until ready() is true, Interrupt() is
  // called, or timeout_ms passes (negative: forever). Returns ready().
  template <class Ready>
  bool WaitUntil(std::unique_lock<std::mutex>& lock, int timeout_ms, Ready ready) {
    const uint64_t epoch = interrupts_;
    auto done = [&] { return ready() || interrupts_ != epoch; };
    ++waiting_;
    if (timeout_ms < 0) {
      cv_.wait(lock, done);
    } else {
      cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
    }
    --waiting_;
    return ready();
  }

  std::mutex mu;

 private:
  std::condition_variable cv_;
  // Threads inside WaitUntil (mu held to change or read): Signal skips the
  // broadcast without them (a completion per message on a busy-polled CQ).
  int waiting_ = 0;
  enum fi_wait_obj kind_ = FI_WAIT_NONE;
  int fd_ = -1;
  int wait_fd_ = -1;        // epoll set {fd_, progress_fd}; what FI_GETWAIT returns
  bool signalled_ = false;  // fd_ written since the last Drain (mu)
  // FI_GETWAIT handed a descriptor out (Control is const and runs without mu).
  mutable std::atomic<bool> exported_{false};
  uint64_t interrupts_ = 0;
  bool interrupt_pending_ = false;
};

template <class T>
class Ring {
 public:
  // Allocates `capacity` slots; false when out of memory.
  bool Init(size_t capacity) {
    slots_.reset(new (std::nothrow) T[capacity]());
    capacity_ = slots_ ? capacity : 0;
    return slots_ != nullptr;
  }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] bool full() const { return size_ == capacity_; }
  [[nodiscard]] size_t capacity() const { return capacity_; }

  // The i-th oldest entry, i < size().
  T& at(size_t i) { return slots_[Wrap(head_ + i)]; }
  T& front() { return at(0); }
  // Returns the slot to fill. A full ring doubles first (nullptr only when
  // that allocation fails): completions and events are never dropped; the
  // capacity asked for at open is where the ring starts.
  T* Push() {
    if (full() && !Grow()) return nullptr;
    T* slot = &slots_[Wrap(head_ + size_)];
    ++size_;
    return slot;
  }
  void Pop() {
    head_ = Wrap(head_ + 1);
    --size_;
  }

 private:
  // head_ + i for i <= capacity_ (head_ < capacity_): one compare instead of
  // a division per access (a completion is pushed, read and popped each
  // message).
  [[nodiscard]] size_t Wrap(size_t i) const { return i >= capacity_ ? i - capacity_ : i; }
  bool Grow() {
    const size_t bigger = capacity_ < 8 ? 16 : capacity_ * 2;
    std::unique_ptr<T[]> s(new (std::nothrow) T[bigger]());
    if (!s) return false;
    for (size_t i = 0; i < size_; ++i) s[i] = std::move(at(i));
    slots_ = std::move(s);
    capacity_ = bigger;
    head_ = 0;
    return true;
  }

  std::unique_ptr<T[]> slots_;
  size_t capacity_ = 0;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace iwarpx::ofi
