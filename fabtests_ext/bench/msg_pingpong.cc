// msg_pingpong: fi_send/fi_recv ping-pong latency over a connected
// (FI_EP_MSG) endpoint, one line per message size.
//
//   server: msg_pingpong -p PROV [-s ADDR] [-B PORT|0 --port-file F] [--sizes L]
//   client: msg_pingpong -p PROV [-P PORT] [--sizes L] [--csv] SERVER-ADDR
//
// Contract: the client drives; per size it runs a warm-up round (o.warmup
// iterations, whole-buffer pattern checked once each way) and a measured
// round (--iters, or enough for --min-time), and prints the one-way latency
// (half the average round trip) in microseconds. Every message's first and
// last byte carry a per-iteration tag both sides check, and every receive
// completion's length is checked, so a provider that drops or misplaces data
// fails loudly instead of looking fast. Progress: fi_cq_read busy polling.
// Exit status 0 only if every round completed and verified.
#include <cstring>
#include <string>

#include <rdma/fabric.h>

#include "bench_args.h"
#include "bench_fabric.h"

namespace {

using bench::Connection;
using bench::Ctl;
using bench::CtlType;
using bench::Options;
using bench::Region;

uint8_t PingTag(uint64_t round, uint64_t i) {
  return static_cast<uint8_t>(round * 37 + i * 2);
}
uint8_t PongTag(uint8_t ping) {
  return static_cast<uint8_t>(ping + 1);
}

void ExpectData(const Options& o, Connection& conn, const Region* rx, size_t size, uint8_t tag,
                bool check_pattern) {
  const bench::RxDone done = conn.WaitRx();
  if (done.kind != bench::OpKind::kData)
    bench::Fail(o, "protocol error: control message in a round");
  if (done.len != size) {
    bench::Fail(o, "received " + std::to_string(done.len) + " B, expected " + std::to_string(size));
  }
  if (!bench::CheckTag(rx->buf, size, tag)) {
    bench::Fail(o, "data check failed: wrong first/last byte at size " + std::to_string(size));
  }
  if (check_pattern && !bench::CheckPattern(rx->buf, size)) {
    bench::Fail(o, "data check failed: payload differs at size " + std::to_string(size));
  }
}

// Client side of one round; returns the seconds from the first ping to the
// last pong.
double ClientRound(const Options& o, Connection& conn, Region* tx, Region* rx, size_t size,
                   uint64_t iters, uint64_t round, bool warm) {
  if (warm) memset(rx->buf, 0, size);
  Ctl begin;
  begin.type = CtlType::kBegin;
  begin.size = size;
  begin.iters = iters;
  begin.tag = round;
  begin.flags = warm ? bench::kCtlWarmup : 0;
  conn.SendCtl(begin);
  if (conn.WaitCtl().type != CtlType::kReady) bench::Fail(o, "protocol error: expected READY");

  const double start = bench::NowSeconds();
  for (uint64_t i = 0; i < iters; ++i) {
    const uint8_t tag = PingTag(round, i);
    bench::SetTag(tx->buf, size, tag);
    conn.PostRecv(rx, size, bench::OpKind::kData);
    conn.PostSend(tx, size);
    ExpectData(o, conn, rx, size, PongTag(tag), warm && i == 0);
    conn.WaitTx(conn.tx_posted());
  }
  const double elapsed = bench::NowSeconds() - start;
  conn.PostCtlRecv();  // for the next READY or the final ACK
  return elapsed;
}

int RunClient(const Options& o, Connection& conn, Region* tx, Region* rx) {
  bench::PrintHeader(o, "lat_us");
  uint64_t round = 0;
  for (const size_t size : o.sizes) {
    bench::FillPattern(tx->buf, size);
    const double warm_time = ClientRound(o, conn, tx, rx, size, o.warmup, ++round, true);
    const bench::Measurement m = bench::Measure(o, warm_time, o.warmup, [&](uint64_t iters) {
      return ClientRound(o, conn, tx, rx, size, iters, ++round, false);
    });
    bench::PrintResult(o, size, m.iters, m.seconds / static_cast<double>(m.iters) / 2.0 * 1e6,
                       "lat_us");
  }
  Ctl quit;
  quit.type = CtlType::kQuit;
  conn.SendCtl(quit);
  if (conn.WaitCtl().type != CtlType::kAck) bench::Fail(o, "protocol error: expected ACK");
  return 0;
}

int RunServer(const Options& o, Connection& conn, Region* tx, Region* rx) {
  size_t filled = 0;
  for (;;) {
    const Ctl begin = conn.WaitCtl();
    if (begin.type == CtlType::kQuit) {
      Ctl ack;
      ack.type = CtlType::kAck;
      conn.SendCtl(ack);
      return 0;
    }
    if (begin.type != CtlType::kBegin) bench::Fail(o, "protocol error: expected BEGIN");
    const size_t size = begin.size;
    const bool warm = (begin.flags & bench::kCtlWarmup) != 0;
    if (size == 0 || size > rx->len || begin.iters == 0) {
      bench::Fail(o, "client asks for " + std::to_string(size) +
                         " B; start the server with the same --sizes");
    }
    if (filled != size) {
      bench::FillPattern(tx->buf, size);
      filled = size;
    }
    if (warm) memset(rx->buf, 0, size);
    conn.PostRecv(rx, size, bench::OpKind::kData);
    Ctl ready;
    ready.type = CtlType::kReady;
    conn.SendCtl(ready);
    for (uint64_t i = 0; i < begin.iters; ++i) {
      const uint8_t tag = PingTag(begin.tag, i);
      ExpectData(o, conn, rx, size, tag, warm && i == 0);
      if (i + 1 == begin.iters) {
        conn.PostCtlRecv();
      } else {
        conn.PostRecv(rx, size, bench::OpKind::kData);
      }
      bench::SetTag(tx->buf, size, PongTag(tag));
      conn.PostSend(tx, size);
      conn.WaitTx(conn.tx_posted());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::ParseArgs(argc, argv, bench::kNoExtra);
  o.op = "pingpong";
  Connection conn(o, FI_MSG, 0);
  if (o.max_size() > conn.info()->ep_attr->max_msg_size) {
    bench::Fail(o, "largest size exceeds the provider's max_msg_size " +
                       std::to_string(conn.info()->ep_attr->max_msg_size));
  }
  Region* tx = conn.Register(o.max_size(), FI_SEND);
  Region* rx = conn.Register(o.max_size(), FI_RECV);
  return o.is_client() ? RunClient(o, conn, tx, rx) : RunServer(o, conn, tx, rx);
}
