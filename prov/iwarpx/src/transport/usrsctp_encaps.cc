#include "transport/usrsctp_encaps.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

namespace iwarpx::transport::usrsctp_encaps {
namespace {

bool IsSocket(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

// The local UDP port of `fd`, 0 when it is not a bound IPv4/IPv6 UDP socket.
uint16_t UdpPortOf(int fd) {
  int type = 0;
  socklen_t len = sizeof(type);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_DGRAM) return 0;
  int protocol = 0;
  len = sizeof(protocol);
  if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0 || protocol != IPPROTO_UDP) {
    return 0;
  }
  sockaddr_storage ss{};
  len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

int ReceiveBufferOf(int fd) {
  int got = 0;
  socklen_t len = sizeof(got);
  return ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) == 0 ? got : 0;
}

// Applies `fn` to each new UDP socket bound to `port`; the smallest
// SO_RCVBUF read back afterwards, 0 when there was none.
template <class Fn>
int ForEachEncapsSocket(const std::vector<int>& before, uint16_t port, Fn fn) {
  if (port == 0) return 0;
  int smallest = 0;
  for (const int fd : SocketFds()) {
    if (std::find(before.begin(), before.end(), fd) != before.end()) continue;
    if (UdpPortOf(fd) != port) continue;
    fn(fd);
    const int got = ReceiveBufferOf(fd);
    if (smallest == 0 || got < smallest) smallest = got;
  }
  return smallest;
}

}  // namespace

std::vector<int> SocketFds() {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd < 0 || fd == own) continue;
    if (IsSocket(static_cast<int>(fd))) fds.push_back(static_cast<int>(fd));
  }
  ::closedir(dir);
  return fds;
}

int GrowReceiveBuffers(const std::vector<int>& before, uint16_t port, int bytes) {
  return ForEachEncapsSocket(before, port, [bytes](int fd) {
    // Failure (never expected for SO_RCVBUF) shows in the value read back.
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  });
}

int ReceiveBuffer(const std::vector<int>& before, uint16_t port) {
  return ForEachEncapsSocket(before, port, [](int) {});
}

}  // namespace iwarpx::transport::usrsctp_encaps
