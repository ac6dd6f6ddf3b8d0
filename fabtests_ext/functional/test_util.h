// Small helpers shared by the public-API functional tests (msg_fixture.h,
// rdm_fixture.h): the libfabric version they ask for, the bound of every wait,
// deterministic payloads and integer operation contexts. Header-only, test-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include <rdma/fabric.h>

namespace fttest {

using SteadyClock = std::chrono::steady_clock;
constexpr uint32_t kVersion = FI_VERSION(1, 17);
constexpr auto kWait = std::chrono::seconds(10);

using Bytes = std::vector<uint8_t>;

// n bytes that depend on (n, seed) only.
inline Bytes Pattern(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + n);
  Bytes b(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(&b[i], &v, 8);
  }
  for (; i < n; ++i) b[i] = static_cast<uint8_t>(rng());
  return b;
}

// An operation context made of a small integer.
template <typename T>
void* Ctx(T v) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(v));  // NOLINT(performance-no-int-to-ptr)
}

// Calls `poll` (false: an unexpected error) until `pred` holds or `timeout`
// passes; true if `pred` held. Never an unbounded wait.
inline bool PollUntil(const std::function<bool()>& poll, const std::function<bool()>& pred,
                      SteadyClock::duration timeout = kWait) {
  const auto deadline = SteadyClock::now() + timeout;
  for (;;) {
    if (!poll()) return false;
    if (pred()) return true;
    if (SteadyClock::now() > deadline) return false;
  }
}

// Calls `poll` for `d` regardless (lets messages travel and unwanted entries show up).
inline void PollFor(const std::function<bool()>& poll, SteadyClock::duration d) {
  const auto deadline = SteadyClock::now() + d;
  while (SteadyClock::now() < deadline) (void)poll();
}

}  // namespace fttest
