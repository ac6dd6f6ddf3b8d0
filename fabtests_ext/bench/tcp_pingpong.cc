// tcp_pingpong: raw TCP socket ping-pong, the floor under the libfabric
// ping-pong (msg_pingpong); same options, rounds and output format.
//
//   server: tcp_pingpong [-s ADDR] [-B PORT|0 --port-file F] [--sizes L]
//   client: tcp_pingpong [-P PORT] [--sizes L] [--csv] [--blocking] SERVER-ADDR
//
// Contract: TCP_NODELAY on both sides. Receives busy-poll with
// recv(MSG_DONTWAIT) by default, the same discipline as fi_cq_read busy
// polling in msg_pingpong; --blocking uses blocking recv() (SO_RCVTIMEO bounds
// it). Sends are blocking send(). Per round the client sends a 32-byte header
// (size, iters, tag, flags; iters 0 = quit) and then `iters` pings of `size`
// bytes, each echoed by a pong of the same size; tags and (warm-up) payload
// are checked as in msg_pingpong. Prints the one-way latency in microseconds.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "bench_args.h"

namespace {

using bench::Options;

struct Header {
  uint64_t size;
  uint64_t iters;  // 0: quit
  uint64_t tag;
  uint64_t warm;
};

uint8_t PingTag(uint64_t round, uint64_t i) {
  return static_cast<uint8_t>(round * 37 + i * 2);
}
uint8_t PongTag(uint8_t ping) {
  return static_cast<uint8_t>(ping + 1);
}

[[noreturn]] void SysFail(const Options& o, const char* call) {
  bench::Fail(o, std::string(call) + " failed: " + strerror(errno));
}

class Socket {
 public:
  Socket(const Options& o, int fd) : o_(o), fd_(fd) {
    const int one = 1;
    if (setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
      SysFail(o_, "setsockopt(TCP_NODELAY)");
    }
    if (o_.blocking) {
      timeval tv{};
      tv.tv_sec = static_cast<time_t>(o_.timeout);
      if (setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
        SysFail(o_, "setsockopt(SO_RCVTIMEO)");
      }
    }
  }
  ~Socket() { close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  void SendAll(const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (len > 0) {
      const ssize_t n = send(fd_, p, len, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) SysFail(o_, "send");
      p += n;
      len -= static_cast<size_t>(n);
    }
  }

  void RecvAll(void* data, size_t len) {
    auto* p = static_cast<uint8_t*>(data);
    const int flags = o_.blocking ? 0 : MSG_DONTWAIT;
    const double deadline = bench::NowSeconds() + o_.timeout;
    unsigned spins = 0;
    while (len > 0) {
      const ssize_t n = recv(fd_, p, len, flags);
      if (n > 0) {
        p += n;
        len -= static_cast<size_t>(n);
        continue;
      }
      if (n == 0) bench::Fail(o_, "peer closed the connection");
      if (errno == EINTR) continue;
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && !o_.blocking) {
        if (++spins % 1024 == 0 && bench::NowSeconds() > deadline) {
          bench::Fail(o_, "timed out in recv (--timeout)");
        }
        continue;
      }
      SysFail(o_, "recv");
    }
  }

 private:
  const Options& o_;
  int fd_;
};

void ExpectPayload(const Options& o, const uint8_t* buf, size_t size, uint8_t tag, bool pattern) {
  if (!bench::CheckTag(buf, size, tag) || (pattern && !bench::CheckPattern(buf, size))) {
    bench::Fail(o, "data check failed at size " + std::to_string(size));
  }
}

double ClientRound(Socket& s, const Options& o, uint8_t* tx, uint8_t* rx, size_t size,
                   uint64_t iters, uint64_t round, bool warm) {
  if (warm) memset(rx, 0, size);
  const Header h{size, iters, round, warm ? 1U : 0U};
  s.SendAll(&h, sizeof(h));
  const double start = bench::NowSeconds();
  for (uint64_t i = 0; i < iters; ++i) {
    const uint8_t tag = PingTag(round, i);
    bench::SetTag(tx, size, tag);
    s.SendAll(tx, size);
    s.RecvAll(rx, size);
    ExpectPayload(o, rx, size, PongTag(tag), warm && i == 0);
  }
  return bench::NowSeconds() - start;
}

int RunClient(const Options& o, uint8_t* tx, uint8_t* rx) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int gai = getaddrinfo(o.server.c_str(), o.port.c_str(), &hints, &res);
  if (gai != 0) bench::Fail(o, std::string("getaddrinfo: ") + gai_strerror(gai));
  const int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0) SysFail(o, "socket");
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) SysFail(o, "connect");
  freeaddrinfo(res);
  Socket s(o, fd);

  bench::PrintHeader(o, "lat_us");
  uint64_t round = 0;
  for (const size_t size : o.sizes) {
    bench::FillPattern(tx, size);
    const double warm_time = ClientRound(s, o, tx, rx, size, o.warmup, ++round, true);
    const bench::Measurement m = bench::Measure(o, warm_time, o.warmup, [&](uint64_t iters) {
      return ClientRound(s, o, tx, rx, size, iters, ++round, false);
    });
    bench::PrintResult(o, size, m.iters, m.seconds / static_cast<double>(m.iters) / 2.0 * 1e6,
                       "lat_us");
  }
  const Header quit{0, 0, 0, 0};
  s.SendAll(&quit, sizeof(quit));
  return 0;
}

int RunServer(const Options& o, uint8_t* tx, uint8_t* rx, size_t capacity) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const char* node = o.src_addr.empty() ? nullptr : o.src_addr.c_str();
  const int gai = getaddrinfo(node, o.port.c_str(), &hints, &res);
  if (gai != 0) bench::Fail(o, std::string("getaddrinfo: ") + gai_strerror(gai));
  const int lfd = socket(res->ai_family, SOCK_STREAM, 0);
  if (lfd < 0) SysFail(o, "socket");
  const int one = 1;
  if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    SysFail(o, "setsockopt(SO_REUSEADDR)");
  }
  if (bind(lfd, res->ai_addr, res->ai_addrlen) != 0) SysFail(o, "bind");
  freeaddrinfo(res);
  if (listen(lfd, 1) != 0) SysFail(o, "listen");
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (getsockname(lfd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    SysFail(o, "getsockname");
  }
  const unsigned port = bound.ss_family == AF_INET6
                            ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                            : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  fprintf(stderr, "%s: listening on port %u\n", o.program.c_str(), port);
  bench::WritePortFile(o, port);

  timeval tv{};
  tv.tv_sec = static_cast<time_t>(o.timeout);
  if (setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
    SysFail(o, "setsockopt(SO_RCVTIMEO)");
  }
  const int fd = accept(lfd, nullptr, nullptr);
  if (fd < 0) SysFail(o, "accept");
  close(lfd);
  Socket s(o, fd);

  size_t filled = 0;
  for (;;) {
    Header h{};
    s.RecvAll(&h, sizeof(h));
    if (h.iters == 0) return 0;
    if (h.size == 0 || h.size > capacity) {
      bench::Fail(o, "client asks for " + std::to_string(h.size) +
                         " B; start the server with the same --sizes");
    }
    const size_t size = h.size;
    if (filled != size) {
      bench::FillPattern(tx, size);
      filled = size;
    }
    if (h.warm != 0) memset(rx, 0, size);
    for (uint64_t i = 0; i < h.iters; ++i) {
      const uint8_t tag = PingTag(h.tag, i);
      s.RecvAll(rx, size);
      ExpectPayload(o, rx, size, tag, h.warm != 0 && i == 0);
      bench::SetTag(tx, size, PongTag(tag));
      s.SendAll(tx, size);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::ParseArgs(argc, argv, bench::kBlocking);
  o.provider = o.blocking ? "rawtcp-blocking" : "rawtcp";
  o.op = "pingpong";
  const size_t capacity = o.max_size();
  std::vector<uint8_t> tx(capacity);
  std::vector<uint8_t> rx(capacity);
  return o.is_client() ? RunClient(o, tx.data(), rx.data())
                       : RunServer(o, tx.data(), rx.data(), capacity);
}
