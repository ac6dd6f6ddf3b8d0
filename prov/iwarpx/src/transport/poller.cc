#include "transport/poller.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace iwarpx::transport {
namespace {

// The eventfd's registration token, reserved: Add/Modify refuse it.
constexpr uint64_t kWakeupToken = ~uint64_t{0};

}  // namespace

Result<std::unique_ptr<Poller>, IoError> Poller::Create() {
  UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll.valid()) return Err{IoError{IoStatus::kError, errno}};
  UniqueFd event(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!event.valid()) return Err{IoError{IoStatus::kError, errno}};
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeupToken;
  if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, event.get(), &ev) != 0) {
    return Err{IoError{IoStatus::kError, errno}};
  }
  return std::unique_ptr<Poller>(new Poller(std::move(epoll), std::move(event)));
}

Status Poller::Control(int op, int fd, uint32_t events, uint64_t token) {
  if (fd == event_.get()) return Status{EINVAL};
  // The wakeup sentinel is reserved; a caller token equal to it would be
  // mistaken for a wakeup.
  if (token == kWakeupToken) return Status{EINVAL};
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = token;
  return Status{::epoll_ctl(epoll_.get(), op, fd, &ev) == 0 ? 0 : errno};
}

Status Poller::Add(int fd, uint32_t events, uint64_t token) {
  return Control(EPOLL_CTL_ADD, fd, events, token);
}

Status Poller::Modify(int fd, uint32_t events, uint64_t token) {
  return Control(EPOLL_CTL_MOD, fd, events, token);
}

Status Poller::Remove(int fd) {
  if (fd == event_.get()) return Status{EINVAL};
  return Status{::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr) == 0 ? 0 : errno};
}

Result<WaitResult, IoError> Poller::Wait(int timeout_ms, std::span<PollEvent> out) {
  // Never ask the kernel for more events than `out` holds: an event taken
  // from the ready list and not handed back would be lost (edge-triggered).
  if (out.empty()) return Err{IoError{IoStatus::kError, EINVAL}};
  // Not zeroed: the kernel fills the first n (zeroing 3 KiB cost more than
  // the rest of an idle poll).
  std::array<epoll_event, kMaxEventsPerWait> raw;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  const size_t cap = out.size() < raw.size() ? out.size() : raw.size();
  const int n = ::epoll_wait(epoll_.get(), raw.data(), static_cast<int>(cap), timeout_ms);
  WaitResult result;
  if (n < 0) {
    if (errno == EINTR) return result;
    return Err{IoError{IoStatus::kError, errno}};
  }
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    if (raw[i].data.u64 == kWakeupToken) {
      uint64_t counter = 0;
      // Drains the counter; EAGAIN (already drained) is harmless.
      [[maybe_unused]] const ssize_t r = ::read(event_.get(), &counter, sizeof(counter));
      result.woken = true;
      continue;
    }
    out[result.count++] = PollEvent{raw[i].events, raw[i].data.u64};
  }
  return result;
}

Status Poller::Wakeup() {
  const uint64_t one = 1;
  for (;;) {
    if (::write(event_.get(), &one, sizeof(one)) == static_cast<ssize_t>(sizeof(one))) {
      return Status{};
    }
    if (errno == EINTR) continue;
    // EAGAIN: the counter is at its maximum, a wakeup is pending anyway.
    return Status{errno == EAGAIN ? 0 : errno};
  }
}

}  // namespace iwarpx::transport
