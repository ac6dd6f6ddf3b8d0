// Small helpers shared by the public-API functional tests (msg_fixture.h,
// rdm_fixture.h): the libfabric version they ask for, the bound of every wait,
// deterministic payloads and integer operation contexts, an endpoint's
// counters through the provider's extension (rdma/fi_ext_iwarpx.h), and a raw
// UDP socket on 127.0.0.1 for sending hand-made datagrams. Header-only,
// test-only.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_ext_iwarpx.h>

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

// The counters of `ep` (opened from `domain`); nullopt if the extension
// cannot be opened or refuses the endpoint.
inline std::optional<fi_iwarpx_ep_stats> EpStats(fid_domain* domain, fid_ep* ep) {
  fi_iwarpx_stats_ops* ops = nullptr;
  if (fi_open_ops(&domain->fid, FI_IWARPX_STATS_OPS, 0, reinterpret_cast<void**>(&ops), nullptr) !=
      0) {
    return std::nullopt;
  }
  fi_iwarpx_ep_stats st{};
  if (ops->ep_stats(ep, &st, sizeof(st)) != 0) return std::nullopt;
  return st;
}

// A UDP socket bound to 127.0.0.1 (kernel-chosen port), closed with the object.
class RawUdp {
 public:
  RawUdp() {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd_ < 0) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&name_), &len) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawUdp() {
    if (fd_ >= 0) close(fd_);
  }
  RawUdp(const RawUdp&) = delete;
  RawUdp& operator=(const RawUdp&) = delete;

  [[nodiscard]] bool ok() const { return fd_ >= 0; }
  [[nodiscard]] const sockaddr_in& name() const { return name_; }
  // True if all of `d` went out as one datagram.
  bool SendTo(const sockaddr_in& to, const Bytes& d) const {
    return sendto(fd_, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) ==
           static_cast<ssize_t>(d.size());
  }
  // The next datagram, or nullopt if none arrives within `timeout`.
  [[nodiscard]] std::optional<Bytes> Recv(SteadyClock::duration timeout = kWait) const {
    const auto deadline = SteadyClock::now() + timeout;
    Bytes b(65536);
    do {
      const ssize_t n = recv(fd_, b.data(), b.size(), MSG_DONTWAIT);
      if (n >= 0) {
        b.resize(static_cast<size_t>(n));
        return b;
      }
      usleep(1000);
    } while (SteadyClock::now() < deadline);
    return std::nullopt;
  }

 private:
  int fd_ = -1;
  sockaddr_in name_{};
};

}  // namespace fttest
