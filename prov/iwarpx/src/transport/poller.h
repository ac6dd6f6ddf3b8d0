// Poller: an epoll set plus an eventfd wakeup, the readiness source of the
// progress engine.
//
// Contract
// - Add/Modify/Remove register a descriptor with an interest mask (kReadable,
//   kWritable, level-triggered unless kEdgeTriggered/kOneShot is given) and a
//   64-bit token that Wait() hands back (a pointer may be stored with the
//   void* overloads). The poller does not own registered descriptors; remove
//   a descriptor before closing it if another descriptor may share its open
//   file, else closing it removes it implicitly.
// - Wait(timeout_ms, out) waits at most timeout_ms (-1 = no limit, 0 = poll)
//   and fills a prefix of `out` (at most min(out.size(), 256) events per
//   call; `out` must not be empty: EINVAL); the wakeup eventfd is never reported as an
//   event but sets WaitResult::woken (its counter is drained; it takes one of
//   the slots of that call). EINTR returns
//   an empty result, not an error. Reported masks may contain kError and
//   kHangup even when not asked for.
// - Thread-safety: Wakeup() may be called from any thread at any time (it is
//   one write(2) to the eventfd) and is how another thread (an application
//   thread posting work, fi_cq_sread's waiter) interrupts a Wait(). The other
//   methods belong to the thread that owns the poller; the kernel tolerates
//   epoll_ctl during a Wait, but a token removed while another thread waits
//   may still be returned by that Wait, so the owner serialises them.
// - Add/Modify refuse the poller's own eventfd and the token ~0 (EINVAL).
// - Errors are errno values (Status / IoError).
#pragma once

#include <sys/epoll.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <span>

#include "base/result.h"
#include "transport/fd.h"
#include "transport/transport.h"

namespace iwarpx::transport {

struct PollEvent {
  uint32_t events = 0;  // kReadable | kWritable | kError | kHangup ...
  uint64_t token = 0;

  // The token as a pointer (for tokens added with the void* overloads).
  [[nodiscard]] void* pointer() const {
    static_assert(sizeof(void*) == sizeof(uint64_t), "64-bit targets only");
    return std::bit_cast<void*>(token);
  }
};

struct WaitResult {
  size_t count = 0;    // events written to the front of `out`
  bool woken = false;  // Wakeup() was called since the last Wait
};

class Poller {
 public:
  static constexpr uint32_t kReadable = EPOLLIN;
  static constexpr uint32_t kWritable = EPOLLOUT;
  static constexpr uint32_t kError = EPOLLERR;
  static constexpr uint32_t kHangup = EPOLLHUP;
  static constexpr uint32_t kPeerHalfClosed = EPOLLRDHUP;
  static constexpr uint32_t kEdgeTriggered = EPOLLET;
  static constexpr uint32_t kOneShot = EPOLLONESHOT;

  static Result<std::unique_ptr<Poller>, IoError> Create();

  Status Add(int fd, uint32_t events, uint64_t token);
  Status Add(int fd, uint32_t events, void* ptr) { return Add(fd, events, ToToken(ptr)); }
  Status Modify(int fd, uint32_t events, uint64_t token);
  Status Modify(int fd, uint32_t events, void* ptr) { return Modify(fd, events, ToToken(ptr)); }
  Status Remove(int fd);

  Result<WaitResult, IoError> Wait(int timeout_ms, std::span<PollEvent> out);

  // Makes the current or next Wait() return with woken = true. Any thread.
  Status Wakeup();

  [[nodiscard]] int fd() const { return epoll_.get(); }

 private:
  Poller(UniqueFd epoll, UniqueFd event) : epoll_(std::move(epoll)), event_(std::move(event)) {}
  static uint64_t ToToken(void* ptr) { return std::bit_cast<uint64_t>(ptr); }
  Status Control(int op, int fd, uint32_t events, uint64_t token);

  static constexpr size_t kMaxEventsPerWait = 256;

  UniqueFd epoll_;
  UniqueFd event_;
};

}  // namespace iwarpx::transport
