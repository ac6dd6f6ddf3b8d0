// FakeClock: a Clock (base/clock.h) that moves only when a test says so.
// Test-only, header-only, not thread-safe.
#pragma once

#include <cassert>
#include <cstdint>

#include "base/clock.h"

namespace iwarpx::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(uint64_t start_ns = 1'000'000'000) : now_(start_ns) {}

  [[nodiscard]] uint64_t NowNs() const override { return now_; }

  void Advance(uint64_t ns) { now_ += ns; }
  // Time never goes backwards, as for a real monotonic clock.
  void Set(uint64_t ns) {
    assert(ns >= now_);
    now_ = ns;
  }

 private:
  uint64_t now_;
};

}  // namespace iwarpx::testing
