// ProgressThread: FI_PROGRESS_AUTO for an Engine. A thread that sleeps in
// Engine::WaitForEvents (poll(2), no spinning) and runs an engine pass,
// under the engine lock, whenever a descriptor is ready, a timer is due or
// pending work exists.
//
// Contract
// - Start() launches the thread; with `bind` it is bound with hwloc to one
//   processing unit of the process's allowed cpuset (the last one, so that a
//   single-threaded application that runs on the first keeps its core to
//   itself when there are several); binding failures are not errors (the
//   thread then floats; bound_pu() is -1).
// - The destructor stops the thread (Wakeup + join); the engine must outlive
//   it. Application threads may still run engine passes themselves: they
//   serialise on the engine lock.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "progress/engine.h"

namespace iwarpx::progress {

class ProgressThread {
 public:
  static std::unique_ptr<ProgressThread> Start(Engine& engine, bool bind);
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // The hwloc PU the thread is bound to, -1 when not bound.
  [[nodiscard]] int bound_pu() const { return bound_pu_.load(); }
  // Engine passes run so far.
  [[nodiscard]] uint64_t passes() const { return passes_.load(); }

 private:
  explicit ProgressThread(Engine& engine) : engine_(engine) {}
  void Run(bool bind);
  void Bind();

  Engine& engine_;
  std::atomic<bool> stop_{false};
  std::atomic<int> bound_pu_{-1};
  std::atomic<uint64_t> passes_{0};
  std::thread thread_;
};

}  // namespace iwarpx::progress
