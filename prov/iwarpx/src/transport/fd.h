// UniqueFd: sole owner of a file descriptor.
//
// Contract: move-only; the destructor (and Reset()) closes the descriptor it
// owns, ignoring close() errors (Linux releases the descriptor even when close
// reports EINTR/EIO, so retrying would close someone else's fd). -1 means
// "owns nothing". Release() hands ownership back to the caller. Not
// thread-safe: a value type owned by one object.
#pragma once

#include <unistd.h>

#include <utility>

namespace iwarpx::transport {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }

  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Gives up ownership without closing; returns the descriptor (or -1).
  [[nodiscard]] int Release() { return std::exchange(fd_, -1); }

  // Closes the owned descriptor (if any) and takes ownership of `fd`.
  void Reset(int fd = -1) {
    const int old = std::exchange(fd_, fd);
    if (old >= 0) ::close(old);
  }

 private:
  int fd_ = -1;
};

}  // namespace iwarpx::transport
