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
// --op udpstream: the same iterations and buffers over UDP, each message cut into
//   datagrams of at most 65000 payload bytes sent with a 16-byte header
//   (message number, offset) by sendmsg from the slot and received by recvmsg
//   straight into the server's slot (one copy each way, as iwarpx's RD
//   datagrams placed in memory): the most one datagram flow moves here. Both
//   receive buffers are raised to 4 MiB (the kernel caps them at
//   net.core.rmem_max); the server acknowledges every message and the client
//   keeps at most 2 messages unacknowledged, so nothing overflows. The program
//   does not retransmit: a lost or reordered datagram fails the run.
//
// --crc (client, stream ops; the server follows the client's round header):
//   also what iWARP's CRC32c costs (WIRE.md keeps it on datagrams, MPA on
//   TCP): the sender computes it over every chunk of at most 65000 bytes with
//   iwarpx's own fold (base/crc32c.h), the receiver over what it received, and
//   a mismatch fails the run. udpstream carries each datagram's CRC in its
//   header and computes it just before sending / just after receiving the
//   datagram, as iwarpx does; stream computes a message's chunk CRCs in one
//   pass before sending it whole with a trailer of them (one send of 1 MiB
//   instead of 17 of 64 KiB) and checks them after receiving it.
// --splice (client, --op stream): the sender hands each message's pages to
//   the socket with vmsplice + splice instead of copying them (TcpSocket::
//   SpliceAll); the receiver's copy out of them is the only one. What a
//   zero-copy send would move here; a slot is changed only after the
//   window's acknowledgement, so no page changes while the kernel holds it.
//
// Every op checks every message's first and last byte (a per-message tag)
// and, in the warm-up, the whole payload, so a floor that lost data fails
// instead of looking fast. Contract of the sockets: raw_socket.h.
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "bench_args.h"
#include "raw_socket.h"

namespace {

using bench::Options;

constexpr size_t kMaxDatagram = 65507;  // IPv4 UDP payload limit

constexpr size_t kChunk = 65000;  // payload bytes per datagram; the CRC's unit (--crc)

uint32_t ChunkCrc(const uint8_t* p, size_t len) {
  return iwarpx::Crc32c(iwarpx::ByteSpan(p, len));
}

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
  uint64_t crc;  // 1: --crc
};

size_t Chunks(size_t size) {
  return (size + kChunk - 1) / kChunk;
}

double StreamRound(const Options& o, bench::TcpSocket& s, uint8_t* region, size_t size,
                   size_t window, uint64_t iters, uint64_t round, bool warm) {
  const StreamHeader h{size, iters, round, window, warm ? 1U : 0U, o.crc ? 1U : 0U};
  s.SendAll(&h, sizeof(h));
  std::vector<uint32_t> crcs(o.crc ? Chunks(size) : 0);
  const double start = bench::NowSeconds();
  for (uint64_t i = 0; i < iters; ++i) {
    for (size_t k = 0; k < window; ++k) {
      uint8_t* msg = region + k * size;
      bench::SetTag(msg, size, Tag(round, i * window + k));
      for (size_t c = 0; c < crcs.size(); ++c) {
        crcs[c] = ChunkCrc(msg + c * kChunk, std::min(kChunk, size - c * kChunk));
      }
      if (o.splice) {
        s.SpliceAll(msg, size);
      } else {
        s.SendAll(msg, size);
      }
      if (!crcs.empty()) s.SendAll(crcs.data(), crcs.size() * sizeof(uint32_t));
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
    const double warm_time =
        StreamRound(o, s, region.data(), size, o.window, o.warmup, ++round, true);
    const bench::Measurement m = bench::Measure(o, warm_time, o.warmup, [&](uint64_t iters) {
      return StreamRound(o, s, region.data(), size, o.window, iters, ++round, false);
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
    std::vector<uint32_t> crcs(h.crc != 0 ? Chunks(h.size) : 0);
    for (uint64_t i = 0; i < h.iters; ++i) {
      for (size_t k = 0; k < h.window; ++k) {
        uint8_t* msg = region.data() + k * h.size;
        if (warm) memset(msg, 0, h.size);
        s.RecvAll(msg, h.size);
        if (!crcs.empty()) s.RecvAll(crcs.data(), crcs.size() * sizeof(uint32_t));
        for (size_t c = 0; c < crcs.size(); ++c) {
          if (ChunkCrc(msg + c * kChunk, std::min(kChunk, h.size - c * kChunk)) != crcs[c]) {
            bench::Fail(o, "CRC32c mismatch in chunk " + std::to_string(c));
          }
        }
        Expect(o, msg, h.size, Tag(h.round, i * h.window + k), warm && i == 0);
      }
      const uint8_t ack = 1;
      s.SendAll(&ack, 1);
    }
  }
}

// ---- UDP stream ---------------------------------------------------------------

constexpr uint64_t kMaxUnacked = 2;     // messages in flight (2 MiB at 1 MiB)
constexpr int kSocketBuffer = 4 << 20;  // asked for; capped at net.core.rmem_max

struct ChunkHeader {
  uint64_t message;  // numbered from 0 within a round
  uint64_t offset;
  uint64_t crc;  // CRC32c of the payload (--crc), else 0
};

void RaiseBuffers(const Options& o, int fd) {
  for (const int opt : {SO_RCVBUF, SO_SNDBUF}) {
    if (setsockopt(fd, SOL_SOCKET, opt, &kSocketBuffer, sizeof(kSocketBuffer)) != 0) {
      bench::SysFail(o, "setsockopt(SO_RCVBUF/SO_SNDBUF)");
    }
  }
}

// Reads one acknowledgement (the number of messages the server holds whole).
uint64_t ReadAck(const Options& o, int fd) {
  uint64_t acked = 0;
  const size_t n = bench::RecvDatagram(o, fd, &acked, sizeof(acked), nullptr, nullptr);
  if (n != sizeof(acked)) bench::Fail(o, "acknowledgement of " + std::to_string(n) + " B");
  return acked;
}

double UdpStreamRound(const Options& o, int fd, uint8_t* region, size_t size, size_t window,
                      uint64_t iters, uint64_t round, bool warm) {
  const StreamHeader h{size, iters, round, window, warm ? 1U : 0U, o.crc ? 1U : 0U};
  if (send(fd, &h, sizeof(h), 0) != static_cast<ssize_t>(sizeof(h))) bench::SysFail(o, "send");
  const double start = bench::NowSeconds();
  const uint64_t total = iters * window;
  uint64_t acked = 0;
  for (uint64_t m = 0; m < total; ++m) {
    while (m - acked >= kMaxUnacked) acked = ReadAck(o, fd);
    uint8_t* msg = region + (m % window) * size;
    bench::SetTag(msg, size, Tag(round, m));
    for (size_t off = 0; off < size; off += kChunk) {
      const size_t len = std::min(kChunk, size - off);
      ChunkHeader ch{m, off, o.crc ? ChunkCrc(msg + off, len) : 0};
      iovec iov[2] = {{&ch, sizeof(ch)}, {msg + off, len}};
      msghdr mh{};
      mh.msg_iov = iov;
      mh.msg_iovlen = 2;
      if (sendmsg(fd, &mh, 0) < 0) bench::SysFail(o, "sendmsg");
    }
  }
  while (acked < total) acked = ReadAck(o, fd);
  return bench::NowSeconds() - start;
}

int UdpStreamClient(const Options& o) {
  const int fd = bench::ConnectUdp(o);
  RaiseBuffers(o, fd);
  std::vector<uint8_t> region(o.max_size() * o.window);
  bench::PrintHeader(o, "MB/s");
  uint64_t round = 0;
  for (const size_t size : o.sizes) {
    if (size < 2) bench::Fail(o, "--op udpstream takes sizes of at least 2 B");
    for (size_t k = 0; k < o.window; ++k) bench::FillPattern(region.data() + k * size, size);
    const double warm_time =
        UdpStreamRound(o, fd, region.data(), size, o.window, o.warmup, ++round, true);
    const bench::Measurement m = bench::Measure(o, warm_time, o.warmup, [&](uint64_t iters) {
      return UdpStreamRound(o, fd, region.data(), size, o.window, iters, ++round, false);
    });
    const double bytes =
        static_cast<double>(size) * static_cast<double>(o.window) * static_cast<double>(m.iters);
    bench::PrintResult(o, size, m.iters, bytes / m.seconds / 1e6, "MB/s");
  }
  const StreamHeader quit{};
  if (send(fd, &quit, sizeof(quit), 0) != static_cast<ssize_t>(sizeof(quit))) {
    bench::SysFail(o, "send(quit)");
  }
  close(fd);
  return 0;
}

// Receives message m's datagrams in order straight into its slot; anything else fails.
void ReceiveMessage(const Options& o, int fd, uint8_t* msg, size_t size, uint64_t m, bool crc) {
  for (size_t off = 0; off < size; off += kChunk) {
    const size_t len = std::min(kChunk, size - off);
    ChunkHeader ch{};
    iovec iov[2] = {{&ch, sizeof(ch)}, {msg + off, len}};
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = 2;
    const double deadline = bench::NowSeconds() + o.timeout;
    ssize_t n = -1;
    for (unsigned spins = 0;;) {
      n = recvmsg(fd, &mh, MSG_DONTWAIT);
      if (n >= 0) break;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) bench::SysFail(o, "recvmsg");
      if (++spins % 1024 == 0 && bench::NowSeconds() > deadline) {
        bench::Fail(o, "timed out waiting for message " + std::to_string(m) + " at offset " +
                           std::to_string(off) + " (a datagram lost?)");
      }
    }
    if (static_cast<size_t>(n) != sizeof(ch) + len || ch.message != m || ch.offset != off ||
        (mh.msg_flags & MSG_TRUNC) != 0) {
      bench::Fail(o, "datagram lost or reordered: expected message " + std::to_string(m) +
                         " offset " + std::to_string(off));
    }
    if (crc && ChunkCrc(msg + off, len) != ch.crc) {
      bench::Fail(
          o, "CRC32c mismatch: message " + std::to_string(m) + " offset " + std::to_string(off));
    }
  }
}

int UdpStreamServer(const Options& o) {
  const int fd = bench::BindUdp(o);
  RaiseBuffers(o, fd);
  const size_t capacity = o.max_size() * o.window;
  std::vector<uint8_t> region(capacity);
  Options idle = o;
  idle.timeout = o.timeout * 4;  // the client may take a while between sizes
  for (;;) {
    StreamHeader h{};
    sockaddr_storage from{};
    socklen_t from_len = 0;
    const size_t n = bench::RecvDatagram(idle, fd, &h, sizeof(h), &from, &from_len);
    if (n != sizeof(h)) bench::Fail(o, "expected a round header, got " + std::to_string(n) + " B");
    if (h.iters == 0) break;
    if (connect(fd, reinterpret_cast<sockaddr*>(&from), from_len) != 0)
      bench::SysFail(o, "connect");
    if (h.size < 2 || h.window == 0 || h.size > capacity / h.window) {
      bench::Fail(o, "client asks for " + std::to_string(h.window) + " x " +
                         std::to_string(h.size) +
                         " B; start the server with the same --sizes and -w");
    }
    const bool warm = h.warm != 0;
    const uint64_t total = h.iters * h.window;
    for (uint64_t m = 0; m < total; ++m) {
      uint8_t* msg = region.data() + (m % h.window) * h.size;
      if (warm) memset(msg, 0, h.size);
      ReceiveMessage(o, fd, msg, h.size, m, h.crc != 0);
      Expect(o, msg, h.size, Tag(h.round, m), warm && m < h.window);
      const uint64_t acked = m + 1;
      if (send(fd, &acked, sizeof(acked), 0) != static_cast<ssize_t>(sizeof(acked))) {
        bench::SysFail(o, "send(ack)");
      }
    }
  }
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::ParseArgs(argc, argv, bench::kFloorOp);
  if (o.splice && o.op != "stream") bench::Fail(o, "--splice is for --op stream only");
  if (o.op == "udp") {
    o.provider = "rawudp";
    return o.is_client() ? UdpClient(o) : UdpServer(o);
  }
  if (o.op == "udpstream") {
    o.provider = "rawudp-w" + std::to_string(o.window) + (o.crc ? "-crc" : "");
    return o.is_client() ? UdpStreamClient(o) : UdpStreamServer(o);
  }
  o.provider =
      "rawtcp-w" + std::to_string(o.window) + (o.splice ? "-splice" : "") + (o.crc ? "-crc" : "");
  return o.is_client() ? StreamClient(o) : StreamServer(o);
}
