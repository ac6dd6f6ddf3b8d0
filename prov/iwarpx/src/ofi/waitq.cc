#include "ofi/waitq.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include <rdma/fi_errno.h>

#include "ofi/log.h"

namespace iwarpx::ofi {

Waiter::~Waiter() {
  if (wait_fd_ >= 0) close(wait_fd_);
  if (fd_ >= 0) close(fd_);
}

int Waiter::Open(enum fi_wait_obj kind, int progress_fd) {
  switch (kind) {
    case FI_WAIT_NONE: kind_ = kind; return 0;
    case FI_WAIT_UNSPEC:
    case FI_WAIT_FD: break;
    default: return -FI_ENOSYS;
  }
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) return -FI_ENOMEM;
  kind_ = FI_WAIT_FD;
  if (progress_fd >= 0) {
    wait_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (wait_fd_ < 0) return -FI_ENOMEM;
    for (const int f : {fd_, progress_fd}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = f;
      if (epoll_ctl(wait_fd_, EPOLL_CTL_ADD, f, &ev) != 0) return -FI_ENOMEM;
    }
  }
  return 0;
}

void Waiter::Signal() {
  if (waiting_ != 0) cv_.notify_all();
  if (fd_ >= 0 && !signalled_) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(fd_, &one, sizeof(one));
    signalled_ = true;
  }
}

void Waiter::Interrupt() {
  ++interrupts_;
  interrupt_pending_ = true;
  Signal();
}

bool Waiter::Drain() {
  if (fd_ < 0) return false;
  signalled_ = false;
  uint64_t count = 0;
  return read(fd_, &count, sizeof(count)) == static_cast<ssize_t>(sizeof(count)) && count != 0;
}

int Waiter::Control(int command, void* arg, enum fi_log_subsys subsys, const char* what) const {
  switch (command) {
    case FI_GETWAIT:
      if (fd_ < 0) {
        FI_WARN(&g_provider, subsys,
                "fi_control(FI_GETWAIT): the %s has no wait object (FI_WAIT_NONE)\n", what);
        return -FI_ENODATA;
      }
      if (arg == nullptr) return -FI_EINVAL;
      *static_cast<int*>(arg) = wait_fd_ >= 0 ? wait_fd_ : fd_;
      exported_.store(true, std::memory_order_relaxed);
      return 0;
    case FI_GETWAITOBJ:
      if (arg == nullptr) return -FI_EINVAL;
      *static_cast<enum fi_wait_obj*>(arg) = kind_;
      return 0;
    default:
      FI_WARN(&g_provider, subsys, "fi_control: command %d is not supported on a %s\n", command,
              what);
      return -FI_ENOSYS;
  }
}

}  // namespace iwarpx::ofi
