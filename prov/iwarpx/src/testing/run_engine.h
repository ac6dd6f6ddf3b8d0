// RunEngineUntil: drives a progress::Engine (RunOnce with a 1 ms wait, under
// its lock) until `done()` holds or `seconds` pass; true if it held. For the
// tests of layers that run on a real engine (RD channels, RdmCore, the
// connected channels). Test-only, header-only.
#pragma once

#include <chrono>
#include <mutex>

#include "progress/engine.h"

namespace iwarpx::testing {

template <class F>
bool RunEngineUntil(progress::Engine& engine, F done, int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(engine.mu());
      if (done()) return true;
      engine.RunOnce(1);
    }
    if (std::chrono::steady_clock::now() > end) return false;
  }
}

}  // namespace iwarpx::testing
