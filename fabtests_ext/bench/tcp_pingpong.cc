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
#include <cstring>
#include <string>
#include <vector>

#include "bench_args.h"
#include "raw_socket.h"

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

using Socket = bench::TcpSocket;

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
  Socket s(o, bench::ConnectTcp(o));

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
  Socket s(o, bench::AcceptTcp(o));

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
