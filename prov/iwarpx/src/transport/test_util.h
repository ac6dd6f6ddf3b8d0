// Helpers for the transport tests: bounded readiness waits on a Poller, a
// usrsctp connect waited for.
// Test-only (included by *_test.cc of this directory).
#pragma once

#include <chrono>
#include <memory>

#include <gtest/gtest.h>

#include "transport/poller.h"
#include "transport/sctp.h"

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

// A usrsctp association to `to`, waited for (bounded), or nullptr.
inline std::unique_ptr<SctpConnection> ConnectUsrsctp(const SockAddr& to,
                                                      const SctpOptions& options) {
  auto c = SctpConnect(SctpBackend::kUsrsctp, to, options);
  if (!c.ok()) return nullptr;
  std::unique_ptr<SctpConnection> conn = std::move(c).value();
  IoResult done = conn->FinishConnect();
  while (done.status == IoStatus::kWouldBlock) {
    if (!WaitFor(conn->fd(), Poller::kReadable)) return nullptr;
    done = conn->FinishConnect();
  }
  return done.ok() ? std::move(conn) : nullptr;
}

}  // namespace iwarpx::transport
