// The client side both soak generators share (soak_msg, soak_rdm): rounds
// until --seconds are up, a progress line every kProgressEvery seconds on
// stderr, then QUIT carrying the client's totals, and the server's verdict
// (its ACK's status 0: it verified exactly those messages and bytes).
//
// Contract: `conn` has SendCtl(const Ctl&) and WaitCtl() -> Ctl (bench's MSG
// connection or RDM endpoint); `round()` runs one verified round and adds
// to `totals`. A protocol or data error ends the process through bench::Fail.
#pragma once

#include <stdio.h>

#include <string>

#include "bench_args.h"
#include "bench_ofi.h"
#include "soak_pattern.h"

namespace soak {

inline constexpr double kProgressEvery = 30;  // seconds between progress lines

inline void ExpectCtl(const bench::Options& o, const bench::Ctl& ctl, bench::CtlType type,
                      const char* what) {
  if (ctl.type != type) bench::Fail(o, std::string("protocol error: expected ") + what);
}

template <class Conn, class Round>
void RunClient(const char* program, const bench::Options& o, Conn& conn, const Totals& totals,
               Round round) {
  const double start = bench::NowSeconds();
  double next_note = start + kProgressEvery;
  while (bench::NowSeconds() - start < o.seconds) {
    round();
    if (bench::NowSeconds() >= next_note) {
      fprintf(stderr, "%s client: %.0f s, %llu messages\n", program, bench::NowSeconds() - start,
              static_cast<unsigned long long>(totals.msgs));
      next_note += kProgressEvery;
    }
  }
  bench::Ctl quit;
  quit.type = bench::CtlType::kQuit;
  quit.iters = totals.msgs;
  quit.size = totals.msg_bytes;
  conn.SendCtl(quit);
  const bench::Ctl ack = conn.WaitCtl();
  ExpectCtl(o, ack, bench::CtlType::kAck, "ACK to QUIT");
  if (ack.status != 0) bench::Fail(o, "data check failed: the server's totals differ");
  PrintTotals(program, "client", "OK", bench::NowSeconds() - start, totals);
}

}  // namespace soak
