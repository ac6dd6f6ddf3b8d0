#include "progress/progress_thread.h"

#include <mutex>

#include <hwloc.h>

namespace iwarpx::progress {

namespace {
// Longest sleep between passes; stopping never waits for it (Wakeup).
constexpr int kSleepMs = 1000;
}  // namespace

std::unique_ptr<ProgressThread> ProgressThread::Start(Engine& engine, bool bind) {
  std::unique_ptr<ProgressThread> t(new ProgressThread(engine));
  t->thread_ = std::thread([p = t.get(), bind] { p->Run(bind); });
  return t;
}

ProgressThread::~ProgressThread() {
  stop_.store(true);
  engine_.Wakeup();
  if (thread_.joinable()) thread_.join();
}

void ProgressThread::Bind() {
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) return;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
    if (allowed != nullptr && hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS) == 0 &&
        !hwloc_bitmap_iszero(allowed)) {
      const int last = hwloc_bitmap_last(allowed);
      hwloc_bitmap_t one = hwloc_bitmap_alloc();
      if (one != nullptr && last >= 0) {
        hwloc_bitmap_only(one, static_cast<unsigned>(last));
        if (hwloc_set_cpubind(topo, one, HWLOC_CPUBIND_THREAD) == 0) bound_pu_.store(last);
      }
      hwloc_bitmap_free(one);
    }
    hwloc_bitmap_free(allowed);
  }
  hwloc_topology_destroy(topo);
}

void ProgressThread::Run(bool bind) {
  if (bind) Bind();
  while (!stop_.load(std::memory_order_relaxed)) {
    engine_.WaitForEvents(kSleepMs);
    if (stop_.load(std::memory_order_relaxed)) break;
    std::lock_guard<std::mutex> lock(engine_.mu());
    engine_.RunOnce(0);
    passes_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace iwarpx::progress
