// rma_bw: one-sided (fi_write / fi_read) or two-sided (fi_send) bandwidth
// over a connected (FI_EP_MSG) endpoint, one line per message size.
//
//   server: rma_bw -p PROV [--op write|read|send] [-B PORT|0 --port-file F] [--sizes L]
//   client: rma_bw -p PROV [--op ...] [-w WINDOW] [--sizes L] [--csv] SERVER-ADDR
//
// Contract (both sides must be given the same --op and --sizes):
//   - The server registers one data region (FI_REMOTE_WRITE|FI_REMOTE_READ)
//     and sends its remote address (per FI_MR_VIRT_ADDR) and key in the READY
//     control message of every round.
//   - write: the client keeps up to -w fi_write of size S in flight to the
//     server's region until `iters` completed, then sends DONE; the server
//     checks the landed data and answers ACK. The time runs from READY to ACK,
//     so it includes the data really landing. FI_ORDER_SAW is asked for so
//     DONE cannot overtake the writes; a provider that does not advertise it
//     (iWARP delivers in order anyway) runs with a note, and the server's
//     data check turns any overtaking into a failure, not a fast number.
//   - read: the same with fi_read from the server's region; the time runs
//     until the last read completion, and the client checks the data.
//   - send: fi_send into receives the server keeps posted (up to -w ahead);
//     a message that arrives before its receive is posted relies on the
//     provider holding it (flow control), as MSG endpoints do.
//   - Every round checks the first/last byte tag; warm-up rounds the whole
//     payload. Prints MB/s (10^6 bytes per second). Exit 0 only if all verified.
#include <stdio.h>

#include <algorithm>
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

enum class Op : uint64_t { kWrite = 1, kRead = 2, kSend = 3 };
constexpr unsigned kOpShift = 8;  // Ctl::flags bits 8..15 carry the Op

Op ParseOp(const std::string& name) {
  if (name == "read") return Op::kRead;
  if (name == "send") return Op::kSend;
  return Op::kWrite;
}

uint8_t RoundTag(uint64_t round) {
  return static_cast<uint8_t>(round * 37 + 11);
}

// Makes a stale buffer fail the tag check: either zeroed (warm-up rounds,
// whole payload) or carrying the complement of the expected tag.
void ClearTarget(uint8_t* buf, size_t size, uint8_t tag, bool warm) {
  if (warm) {
    memset(buf, 0, size);
  } else {
    bench::SetTag(buf, size, static_cast<uint8_t>(~tag));
  }
}

bool Landed(const uint8_t* buf, size_t size, uint8_t tag, bool warm) {
  return bench::CheckTag(buf, size, tag) && (!warm || bench::CheckPattern(buf, size));
}

class Client {
 public:
  Client(const Options& o, Connection& conn, Op op, size_t window)
      : o_(o), conn_(conn), op_(op), window_(window) {
    const uint64_t access = op == Op::kSend ? FI_SEND : (FI_WRITE | FI_READ);
    local_ = conn_.Register(o_.max_size(), access);
  }

  void Run() {
    bench::PrintHeader(o_, "MB_s");
    uint64_t round = 0;
    const uint64_t warmup = std::max<uint64_t>(o_.warmup, window_);
    for (const size_t size : o_.sizes) {
      if (op_ != Op::kRead) bench::FillPattern(local_->buf, size);
      const double warm_time = Round(size, warmup, ++round, true);
      const bench::Measurement m = bench::Measure(o_, warm_time, warmup, [&](uint64_t iters) {
        return Round(size, iters, ++round, false);
      });
      const double bytes = static_cast<double>(size) * static_cast<double>(m.iters);
      bench::PrintResult(o_, size, m.iters, bytes / m.seconds / 1e6, "MB_s");
    }
    Ctl quit;
    quit.type = CtlType::kQuit;
    conn_.SendCtl(quit);
    if (conn_.WaitCtl().type != CtlType::kAck) bench::Fail(o_, "protocol error: expected ACK");
  }

 private:
  // Returns the seconds the round's transfer took (see the file comment).
  double Round(size_t size, uint64_t iters, uint64_t round, bool warm) {
    const uint8_t tag = RoundTag(round);
    if (op_ == Op::kRead) {
      ClearTarget(local_->buf, size, tag, warm);
    } else {
      bench::SetTag(local_->buf, size, tag);
    }
    Ctl begin;
    begin.type = CtlType::kBegin;
    begin.size = size;
    begin.iters = iters;
    begin.tag = tag;
    begin.flags = (warm ? bench::kCtlWarmup : 0) | (static_cast<uint64_t>(op_) << kOpShift);
    conn_.SendCtl(begin);
    const Ctl ready = conn_.WaitCtl();
    if (ready.type != CtlType::kReady) bench::Fail(o_, "protocol error: expected READY");
    conn_.PostCtlRecv();  // for the ACK

    const double start = bench::NowSeconds();
    for (uint64_t posted = 0; posted < iters;) {
      if (conn_.tx_posted() - conn_.tx_done() >= window_) {
        conn_.Progress();
        continue;
      }
      switch (op_) {
        case Op::kWrite: conn_.PostWrite(local_, size, ready.addr, ready.key); break;
        case Op::kRead: conn_.PostRead(local_, size, ready.addr, ready.key); break;
        case Op::kSend: conn_.PostSend(local_, size); break;
      }
      ++posted;
    }
    conn_.WaitTx(conn_.tx_posted());
    const double transfer_done = bench::NowSeconds();
    if (op_ == Op::kRead && !Landed(local_->buf, size, tag, warm)) {
      bench::Fail(o_, "data check failed: fi_read data wrong at size " + std::to_string(size));
    }
    Ctl done;
    done.type = CtlType::kDone;
    conn_.SendCtl(done);
    const Ctl ack = conn_.WaitCtl();
    if (ack.type != CtlType::kAck) bench::Fail(o_, "protocol error: expected ACK");
    conn_.PostCtlRecv();  // for the next READY or the final ACK
    if (ack.status != 0) {
      bench::Fail(o_, "data check failed: server found wrong data at size " + std::to_string(size));
    }
    return op_ == Op::kRead ? transfer_done - start : bench::NowSeconds() - start;
  }

  const Options& o_;
  Connection& conn_;
  Op op_;
  size_t window_;
  Region* local_ = nullptr;
};

class Server {
 public:
  Server(const Options& o, Connection& conn, Op op, size_t window)
      : o_(o), conn_(conn), op_(op), window_(window) {
    const uint64_t access = op == Op::kSend ? FI_RECV : (FI_REMOTE_WRITE | FI_REMOTE_READ);
    data_ = conn_.Register(o_.max_size(), access);
  }

  void Run() {
    for (;;) {
      const Ctl begin = conn_.WaitCtl();
      if (begin.type == CtlType::kQuit) break;
      if (begin.type != CtlType::kBegin) bench::Fail(o_, "protocol error: expected BEGIN");
      if (static_cast<Op>(begin.flags >> kOpShift) != op_) {
        bench::Fail(o_, "client uses another --op than this server");
      }
      if (begin.size == 0 || begin.size > data_->len || begin.iters == 0) {
        bench::Fail(o_, "client asks for " + std::to_string(begin.size) +
                            " B; start the server with the same --sizes");
      }
      Round(begin);
    }
    Ctl ack;
    ack.type = CtlType::kAck;
    conn_.SendCtl(ack);
  }

 private:
  void Round(const Ctl& begin) {
    const size_t size = begin.size;
    const bool warm = (begin.flags & bench::kCtlWarmup) != 0;
    const auto tag = static_cast<uint8_t>(begin.tag);
    if (op_ == Op::kRead) {
      bench::FillPattern(data_->buf, size);
      bench::SetTag(data_->buf, size, tag);
    } else {
      ClearTarget(data_->buf, size, tag, warm);
    }
    uint64_t posted = 0;
    if (op_ == Op::kSend) {
      for (; posted < std::min<uint64_t>(begin.iters, window_); ++posted) {
        conn_.PostRecv(data_, size, bench::OpKind::kData);
      }
    }
    // The DONE receive goes after every data receive (receives match in order).
    bool done_posted = op_ != Op::kSend || posted == begin.iters;
    if (done_posted) conn_.PostCtlRecv();
    Ctl ready;
    ready.type = CtlType::kReady;
    ready.addr = data_->remote_addr;
    ready.key = data_->key;
    conn_.SendCtl(ready);

    for (uint64_t received = 0; op_ == Op::kSend && received < begin.iters; ++received) {
      const bench::RxDone rx = conn_.WaitRx();
      if (rx.kind != bench::OpKind::kData || rx.len != size) {
        bench::Fail(
            o_, "receive of " + std::to_string(rx.len) + " B, expected " + std::to_string(size));
      }
      if (posted < begin.iters) {
        conn_.PostRecv(data_, size, bench::OpKind::kData);
        ++posted;
      }
      if (!done_posted && posted == begin.iters) {
        conn_.PostCtlRecv();
        done_posted = true;
      }
    }
    if (conn_.WaitCtl().type != CtlType::kDone) bench::Fail(o_, "protocol error: expected DONE");
    Ctl ack;
    ack.type = CtlType::kAck;
    ack.status = (op_ == Op::kRead || Landed(data_->buf, size, tag, warm)) ? 0 : 1;
    conn_.PostCtlRecv();  // for the next BEGIN or QUIT
    conn_.SendCtl(ack);
    if (ack.status != 0) {
      bench::Fail(o_,
                  "data check failed: the written data is wrong at size " + std::to_string(size));
    }
  }

  const Options& o_;
  Connection& conn_;
  Op op_;
  size_t window_;
  Region* data_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = bench::ParseArgs(argc, argv, bench::kWindowAndOp);
  const Op op = ParseOp(o.op);
  const uint64_t caps = op == Op::kSend ? FI_MSG : (FI_MSG | FI_RMA);
  Connection conn(o, caps, op == Op::kWrite ? FI_ORDER_SAW : 0);
  if (o.max_size() > conn.info()->ep_attr->max_msg_size) {
    bench::Fail(o, "largest size exceeds the provider's max_msg_size " +
                       std::to_string(conn.info()->ep_attr->max_msg_size));
  }
  const size_t window = std::min(o.window, conn.max_window());
  if (window < o.window) {
    fprintf(stderr, "%s: window %zu limited to %zu by the endpoint's queue sizes\n",
            o.program.c_str(), o.window, window);
  }
  if (o.is_client()) {
    Client(o, conn, op, window).Run();
  } else {
    Server(o, conn, op, window).Run();
  }
  return 0;
}
