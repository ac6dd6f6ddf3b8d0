// raw_floor: what the kernel's sockets alone cost on this machine, the floor
// under every comparison of docs/PERFORMANCE.md (scripts/bench_floor.sh).
//
//   server: raw_floor --op udp|stream [-s ADDR] [-B PORT|0 --port-file F] [-w W] [--sizes L]
//   client: raw_floor --op udp|stream [-P PORT] [-w W] [--sizes L] [--csv] SERVER-ADDR
//
// --op udp (default): datagram ping-pong. Each ping is one datagram of `size`
//   bytes (at most 65507) sent with send() on a connected UDP socket; the
//   server answers every datagram with one of the same size to its sender;
//   both sides busy-poll recvfrom(MSG_DONTWAIT). Prints the one-way latency
//   (half the round trip) in microseconds. A round trip is the least any
//   operation that needs an answer (a remote completion, a flush) can cost
//   over sockets here. A lost datagram fails the run after --timeout (the
//   program does not retransmit; loopback does not lose datagrams).
// --op stream: TCP streaming bandwidth, osu_bw style like tagged_bw: per
//   iteration the client sends W (-w, default 64) messages of `size` bytes,
//   message k from slot k of a W x size region, the server receives message
//   k into its slot k and answers with one byte after the W-th. -w 1 sends
//   and receives the same buffer every time (hot in the caches); -w 64 walks
//   W x size bytes (at 1 MiB, 64 MiB: cold, as tagged_bw and mpi_bench are).
//   Prints MB/s (10^6 B/s) = size x W x iterations / seconds.
//
// Both ops check every message's first and last byte (a per-message tag)
// and, in the warm-up, the whole payload, so a floor that lost data fails
// instead of looking fast. Contract of the sockets: raw_socket.h.
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "bench_args.h"
#include "raw_socket.h"

namespace {

using bench::Options;

constexpr size_t kMaxDatagram = 65507;  // IPv4 UDP payload limit

uint8_t Tag(uint64_t round, uint64_t i) {
  return static_cast<uint8_t>(round * 29 + i * 3 + 1);
}

void Expect(const Options& o, const uint8_t* buf, size_t size, uint8_t tag, bool pattern) {
  if (!bench::CheckTag(buf, size, tag) || (pattern && !bench::CheckPattern(buf, size))) {
    bench::Fail(o, "data check failed at size " + std::to_string(size));
  }
}

// ---- datagram ping-pong ----------------------------------------------------

double UdpRound(const Options& o, int fd, uint8_t* tx, uint8_t* rx, size_t size, uint64_t iters,
                uint64_t round, bool warm) {
  const double start = bench::NowSeconds();
  for (uint64_t i = 0; i < iters; ++i) {
    const uint8_t tag = Tag(round, i);
    bench::SetTag(tx, size, tag);
    if (warm) memset(rx, 0, size);
    if (send(fd, tx, size, 0) != static_cast<ssize_t>(size)) bench::SysFail(o, "send");
    const size_t got = bench::RecvDatagram(o, fd, rx, kMaxDatagram, nullptr, nullptr);
    if (got != size)
      bench::Fail(
          o, "pong of " + std::to_string(got) + " B for a ping of " + std::to_string(size) + " B");
    Expect(o, rx, size, static_cast<uint8_t>(tag + 1), warm && i == 0);
  }
  return bench::NowSeconds() - start;
}

int UdpClient(const Options& o) {
  for (const size_t size : o.sizes) {
    if (size > kMaxDatagram || size < 2) {
      bench::Fail(o, "--op udp takes sizes from 2 to 65507 B, not " + std::to_string(size));
    }
  }
  const int fd = bench::ConnectUdp(o);
  std::vector<uint8_t> tx(kMaxDatagram);
  std::vector<uint8_t> rx(kMaxDatagram);
  bench::PrintHeader(o, "lat_us");
  uint64_t round = 0;
  for (const size_t size : o.sizes) {
    bench::FillPattern(tx.data(), size);
    const double warm_time = UdpRound(o, fd, tx.data(), rx.data(), size, o.warmup, ++round, true);
    const bench::Measurement m = bench::Measure(o, warm_time, o.warmup, [&](uint64_t iters) {
      return UdpRound(o, fd, tx.data(), rx.data(), size, iters, ++round, false);
    });
    bench::PrintResult(o, size, m.iters, m.seconds / static_cast<double>(m.iters) / 2.0 * 1e6,
                       "lat_us");
  }
  if (send(fd, tx.data(), 0, 0) != 0) bench::SysFail(o, "send(quit)");
  close(fd);
  return 0;
}

// Echoes every datagram, its tag (first byte) + 1, until an empty one arrives.
int UdpServer(const Options& o) {
  const int fd = bench::BindUdp(o);
  std::vector<uint8_t> buf(kMaxDatagram);
  Options idle = o;
  idle.timeout = o.timeout * 4;  // the client may take a while between sizes
  for (;;) {
    sockaddr_storage from{};
    socklen_t from_len = 0;
    const size_t n = bench::RecvDatagram(idle, fd, buf.data(), buf.size(), &from, &from_len);
    if (n == 0) break;
    if (n >= 2) bench::SetTag(buf.data(), n, static_cast<uint8_t>(buf[0] + 1));
    if (sendto(fd, buf.data(), n, 0, reinterpret_cast<sockaddr*>(&from), from_len) !=
        static_cast<ssize_t>(n)) {
      bench::SysFail(o, "sendto");
    }
  }
  close(fd);
  return 0;
}

// ---- TCP stream --------------------------------------------------------------

struct StreamHeader {
  uint64_t size;
  uint64_t iters;  // 0: quit
  uint64_t round;
  uint64_t window;
  uint64_t warm;
};

double StreamRound(bench::TcpSocket& s, uint8_t* region, size_t size, size_t window, uint64_t iters,
                   uint64_t round, bool warm) {
  const StreamHeader h{size, iters, round, window, warm ? 1U : 0U};
  s.SendAll(&h, sizeof(h));
  const double start = bench::NowSeconds();
  for (uint64_t i = 0; i < iters; ++i) {
    for (size_t k = 0; k < window; ++k) {
      uint8_t* msg = region + k * size;
      bench::SetTag(msg, size, Tag(round, i * window + k));
      s.SendAll(msg, size);
    }
    uint8_t ack = 0;
    s.RecvAll(&ack, 1);
  }
  return bench::NowSeconds() - start;
}

int StreamClient(const Options& o) {
  bench::TcpSocket s(o, bench::ConnectTcp(o));
  std::vector<uint8_t> region(o.max_size() * o.window);
  bench::PrintHeader(o, "MB/s");
  uint64_t round = 0;
  for (const size_t size : o.sizes) {
    if (size < 2) bench::Fail(o, "--op stream takes sizes of at least 2 B");
    for (size_t k = 0; k < o.window; ++k) bench::FillPattern(region.data() + k * size, size);
    const double warm_time = StreamRound(s, region.data(), size, o.window, o.warmup, ++round, true);
    const bench::Measurement m = bench::Measure(o, warm_time, o.warmup, [&](uint64_t iters) {
      return StreamRound(s, region.data(), size, o.window, iters, ++round, false);
    });
    const double bytes =
        static_cast<double>(size) * static_cast<double>(o.window) * static_cast<double>(m.iters);
    bench::PrintResult(o, size, m.iters, bytes / m.seconds / 1e6, "MB/s");
  }
  const StreamHeader quit{};
  s.SendAll(&quit, sizeof(quit));
  return 0;
}

int StreamServer(const Options& o) {
  bench::TcpSocket s(o, bench::AcceptTcp(o));
  const size_t capacity = o.max_size() * o.window;
  std::vector<uint8_t> region(capacity);
  for (;;) {
    StreamHeader h{};
    s.RecvAll(&h, sizeof(h));
    if (h.iters == 0) return 0;
    if (h.size < 2 || h.window == 0 || h.size > capacity / h.window) {
      bench::Fail(o, "client asks for " + std::to_string(h.window) + " x " +
                         std::to_string(h.size) +
                         " B; start the server with the same --sizes and -w");
    }
    const bool warm = h.warm != 0;
    for (uint64_t i = 0; i < h.iters; ++i) {
      for (size_t k = 0; k < h.window; ++k) {
        uint8_t* msg = region.data() + k * h.size;
        if (warm) memset(msg, 0, h.size);
        s.RecvAll(msg, h.size);
        Expect(o, msg, h.size, Tag(h.round, i * h.window + k), warm && i == 0);
      }
      const uint8_t ack = 1;
      s.SendAll(&ack, 1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::ParseArgs(argc, argv, bench::kFloorOp);
  if (o.op == "udp") {
    o.provider = "rawudp";
    return o.is_client() ? UdpClient(o) : UdpServer(o);
  }
  o.provider = "rawtcp-w" + std::to_string(o.window);
  return o.is_client() ? StreamClient(o) : StreamServer(o);
}
