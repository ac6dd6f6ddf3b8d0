// Injectable monotonic time.
//
// Contract: a Clock reports nanoseconds on a monotonic time line with an
// arbitrary origin (never wall-clock time). Protocol code that arms timers
// (MPA setup timeouts, retransmission) takes a `const Clock&` so tests can
// substitute testing::FakeClock and drive time explicitly. The clock object
// must outlive whatever holds the reference. NowNs() is const and, for
// MonotonicClock, callable from any thread; a FakeClock is not thread-safe.
#pragma once

#include <cstdint>

namespace iwarpx {

inline constexpr uint64_t kNsPerMs = 1'000'000;
inline constexpr uint64_t kNsPerSecond = 1'000'000'000;

class Clock {
 public:
  virtual ~Clock() = default;
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;

  // Nanoseconds since an arbitrary, fixed origin; never decreases.
  [[nodiscard]] virtual uint64_t NowNs() const = 0;
};

// CLOCK_MONOTONIC.
class MonotonicClock final : public Clock {
 public:
  [[nodiscard]] uint64_t NowNs() const override;
};

}  // namespace iwarpx
