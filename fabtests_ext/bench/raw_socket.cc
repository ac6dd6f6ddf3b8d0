#include "raw_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace bench {

namespace {

timeval Timeval(double seconds) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  return tv;
}

// getaddrinfo for the server (passive, src_addr or any) or the client (o.server).
addrinfo* Resolve(const Options& o, int socktype, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const char* node =
      passive ? (o.src_addr.empty() ? nullptr : o.src_addr.c_str()) : o.server.c_str();
  addrinfo* res = nullptr;
  const int gai = getaddrinfo(node, o.port.c_str(), &hints, &res);
  if (gai != 0) Fail(o, std::string("getaddrinfo: ") + gai_strerror(gai));
  return res;
}

int OpenFor(const Options& o, const addrinfo* ai) {
  const int fd = socket(ai->ai_family, ai->ai_socktype, 0);
  if (fd < 0) SysFail(o, "socket");
  return fd;
}

// Binds fd to res, then reports the bound port (stderr and --port-file).
void BindAndReport(const Options& o, int fd, const addrinfo* res) {
  const int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    SysFail(o, "setsockopt(SO_REUSEADDR)");
  }
  if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) SysFail(o, "bind");
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    SysFail(o, "getsockname");
  }
  const unsigned port = bound.ss_family == AF_INET6
                            ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                            : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  fprintf(stderr, "%s: listening on port %u\n", o.program.c_str(), port);
  WritePortFile(o, port);
}

}  // namespace

void SysFail(const Options& o, const char* call) {
  Fail(o, std::string(call) + " failed: " + strerror(errno));
}

TcpSocket::TcpSocket(const Options& o, int fd) : o_(o), fd_(fd) {
  const int one = 1;
  if (setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    SysFail(o_, "setsockopt(TCP_NODELAY)");
  }
  if (o_.blocking) {
    const timeval tv = Timeval(o_.timeout);
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
      SysFail(o_, "setsockopt(SO_RCVTIMEO)");
    }
  }
}

TcpSocket::~TcpSocket() {
  close(fd_);
  if (pipe_[0] >= 0) {
    close(pipe_[0]);
    close(pipe_[1]);
  }
}

void TcpSocket::SpliceAll(const void* data, size_t len) {
  if (pipe_[0] < 0) {
    if (pipe(pipe_) != 0) SysFail(o_, "pipe");
    // As much in flight per call as one 1 MiB message (the kernel may cap it
    // at /proc/sys/fs/pipe-max-size; a smaller pipe only means more calls).
    (void)fcntl(pipe_[1], F_SETPIPE_SZ, 1 << 20);
  }
  const auto* p = static_cast<const uint8_t*>(data);
  while (len > 0) {
    iovec v{const_cast<uint8_t*>(p), len};
    const ssize_t n = vmsplice(pipe_[1], &v, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) SysFail(o_, "vmsplice");
    for (ssize_t moved = 0; moved < n;) {
      const ssize_t m =
          splice(pipe_[0], nullptr, fd_, nullptr, static_cast<size_t>(n - moved), SPLICE_F_MORE);
      if (m < 0 && errno == EINTR) continue;
      if (m <= 0) SysFail(o_, "splice");
      moved += m;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
}

void TcpSocket::SendAll(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (len > 0) {
    const ssize_t n = send(fd_, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) SysFail(o_, "send");
    p += n;
    len -= static_cast<size_t>(n);
  }
}

void TcpSocket::RecvAll(void* data, size_t len) {
  auto* p = static_cast<uint8_t*>(data);
  const int flags = o_.blocking ? 0 : MSG_DONTWAIT;
  const double deadline = NowSeconds() + o_.timeout;
  unsigned spins = 0;
  while (len > 0) {
    const ssize_t n = recv(fd_, p, len, flags);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) Fail(o_, "peer closed the connection");
    if (errno == EINTR) continue;
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && !o_.blocking) {
      if (++spins % 1024 == 0 && NowSeconds() > deadline) {
        Fail(o_, "timed out in recv (--timeout)");
      }
      continue;
    }
    SysFail(o_, "recv");
  }
}

int ConnectTcp(const Options& o) {
  addrinfo* res = Resolve(o, SOCK_STREAM, false);
  const int fd = OpenFor(o, res);
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) SysFail(o, "connect");
  freeaddrinfo(res);
  return fd;
}

int AcceptTcp(const Options& o) {
  addrinfo* res = Resolve(o, SOCK_STREAM, true);
  const int lfd = OpenFor(o, res);
  BindAndReport(o, lfd, res);
  freeaddrinfo(res);
  if (listen(lfd, 1) != 0) SysFail(o, "listen");
  const timeval tv = Timeval(o.timeout);
  if (setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
    SysFail(o, "setsockopt(SO_RCVTIMEO)");
  }
  const int fd = accept(lfd, nullptr, nullptr);
  if (fd < 0) SysFail(o, "accept");
  close(lfd);
  return fd;
}

int BindUdp(const Options& o) {
  addrinfo* res = Resolve(o, SOCK_DGRAM, true);
  const int fd = OpenFor(o, res);
  BindAndReport(o, fd, res);
  freeaddrinfo(res);
  return fd;
}

int ConnectUdp(const Options& o) {
  addrinfo* res = Resolve(o, SOCK_DGRAM, false);
  const int fd = OpenFor(o, res);
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) SysFail(o, "connect");
  freeaddrinfo(res);
  return fd;
}

size_t RecvDatagram(const Options& o, int fd, void* buf, size_t cap, sockaddr_storage* from,
                    socklen_t* from_len) {
  const double deadline = NowSeconds() + o.timeout;
  unsigned spins = 0;
  for (;;) {
    if (from_len != nullptr) *from_len = sizeof(*from);
    const ssize_t n =
        recvfrom(fd, buf, cap, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(from), from_len);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) SysFail(o, "recvfrom");
    if (++spins % 1024 == 0 && NowSeconds() > deadline) {
      Fail(o, "timed out waiting for a datagram (--timeout; a datagram lost?)");
    }
  }
}

}  // namespace bench
