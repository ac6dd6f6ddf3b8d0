#include "base/clock.h"

#include <ctime>

namespace iwarpx {

uint64_t MonotonicClock::NowNs() const {
  timespec ts{};
  // CLOCK_MONOTONIC cannot fail with a valid timespec pointer.
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSecond + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace iwarpx
