// Helpers for the transport tests: bounded readiness waits on a Poller.
// Test-only (included by *_test.cc of this directory).
#pragma once

#include <chrono>

#include <gtest/gtest.h>

#include "transport/poller.h"

namespace iwarpx::transport {

inline constexpr int kTestTimeoutMs = 5000;

// Waits (at most kTestTimeoutMs) until `fd` reports any of `events`.
inline bool WaitFor(int fd, uint32_t events, int timeout_ms = kTestTimeoutMs) {
  auto poller = Poller::Create();
  if (!poller.ok()) return false;
  if (!(*poller)->Add(fd, events, uint64_t{1}).ok()) return false;
  PollEvent ev[4];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = (*poller)->Wait(50, ev);
    if (!r.ok()) return false;
    for (size_t i = 0; i < r->count; ++i) {
      if ((ev[i].events & (events | Poller::kError | Poller::kHangup)) != 0) return true;
    }
  }
  return false;
}

}  // namespace iwarpx::transport
