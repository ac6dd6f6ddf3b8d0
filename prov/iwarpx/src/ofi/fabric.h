// The fabric object (fi_fabric): the root that domains, EQs, passive
// endpoints and fi_trywait hang off. It owns the progress engine: one epoll
// loop for every listener and connection opened under it (passive endpoints
// and EQs belong to the fabric, not to a domain, so the engine lives here).
//
// Contract: any thread may call its ops (FI_THREAD_SAFE). fi_close fails with
// -FI_EBUSY while a domain, EQ or passive endpoint opened from it is open.
// Progress: Progress() runs one non-blocking engine pass; every CQ, EQ and
// counter read calls it, and their blocking reads call ProgressUntil()
// (FI_PROGRESS_MANUAL). A domain opened with FI_PROGRESS_AUTO (or any domain
// with FI_IWARPX_PROGRESS_THREAD=1) starts the fabric's progress thread,
// which then drives the engine too. Neither call may be made with a
// CQ/EQ/counter mutex held (lock order: engine lock, then a queue's mutex).
#pragma once

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>

#include <rdma/fabric.h>

#include "base/clock.h"
#include "ofi/common.h"
#include "progress/engine.h"
#include "progress/progress_thread.h"

namespace iwarpx::ofi {

inline constexpr const char* kFabricName = "iwarpx";

class Fabric {
 public:
  // The provider's fabric() entry point.
  static int Open(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context);
  // The Fabric behind an application's fid_fabric, or nullptr if not ours.
  static Fabric* From(struct fid_fabric* fabric);

  // Children (domains, EQs) hold a reference while open.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() { refs_.fetch_sub(1, std::memory_order_acq_rel); }

  [[nodiscard]] uint32_t api_version() const { return handle_.fid.api_version; }
  struct fid_fabric* fid() {
    return &handle_.fid;
  }

  progress::Engine& engine() { return *engine_; }
  // One non-blocking engine pass (takes the engine lock). With the progress
  // thread running it only runs when the lock is free (the thread makes
  // progress anyway; the caller must not queue behind it).
  void Progress();
  // FI_PROGRESS_AUTO: starts the fabric's progress thread (once; bound with
  // hwloc). Any thread.
  void StartProgressThread();
  // Drives progress until ready() is true or timeout_ms passes (negative: no
  // limit); between passes it sleeps in poll(2) on the engine and on
  // `wake_fd` (the waiting queue's eventfd, -1 for none) so completions that
  // another thread's progress posts wake it too. Returns ready().
  template <class Ready>
  bool ProgressUntil(int timeout_ms, int wake_fd, Ready ready) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      Progress();
      if (ready()) return true;
      int slice = kMaxSleepMs;
      if (timeout_ms >= 0) {
        const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count();
        if (spent >= timeout_ms) return false;
        slice = static_cast<int>(std::min<long>(slice, timeout_ms - spent));
      }
      if (auto_progress_.load(std::memory_order_relaxed) && wake_fd >= 0) {
        // The progress thread drives the engine: sleep on the queue alone.
        pollfd pfd{wake_fd, POLLIN, 0};
        (void)::poll(&pfd, 1, slice);
      } else {
        engine_->WaitForEvents(slice, wake_fd);
      }
    }
  }

  // fi_ops / fi_ops_fabric implementations (fabric.cc).
  int Close();
  static int TryWait(struct fid** fids, int count);
  // Busy-polled sockets stay in the epoll set for good (see progress::Engine
  // "Parking"): someone will sleep on the epoll descriptor without calling
  // into the engine first. `why` is logged. Engine lock not held.
  void StopParking(const char* why);

 private:
  static constexpr int kMaxSleepMs = 100;
  Fabric() = default;

  MonotonicClock clock_;
  std::unique_ptr<progress::Engine> engine_;
  std::mutex thread_mu_;
  std::unique_ptr<progress::ProgressThread> thread_;  // thread_mu_
  std::atomic<bool> auto_progress_{false};
  bool parking_stopped_ = false;  // engine_->mu()

  FidHandle<struct fid_fabric, Fabric> handle_;
  std::atomic<int> refs_{0};
};

int FabricOpen(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context);

}  // namespace iwarpx::ofi
