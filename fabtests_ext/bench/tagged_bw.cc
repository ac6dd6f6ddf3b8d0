// tagged_bw: streaming tagged-message bandwidth over a reliable datagram
// (FI_EP_RDM) endpoint, osu_bw style, one line per message size.
//
//   server: tagged_bw -p PROV [-s ADDR] [-B PORT|0 --port-file F] [-w W] [--sizes L]
//   client: tagged_bw -p PROV [-P PORT] [-w W] [--sizes L] [--csv] SERVER-ADDR
//
// Contract (both sides must be given the same -w and --sizes):
//   - The client sends, the server receives. Per iteration the server has W
//     fi_trecv posted into W distinct buffers (one region of W x size), the
//     client posts W fi_tsend of `size` bytes, waits for their completions
//     and for the server's ACK, which the server sends once all W receives
//     completed and the next iteration's W receives are posted (so the
//     numbers measure transfers into posted receives, not unexpected-message
//     buffering). MB/s = size * W * iterations / seconds / 10^6, timed from
//     the server's READY to the last ACK.
//   - Every message has its own tag (a running message number, both sides
//     count alike, ignore bits 0) and its own first/last byte tag; the server
//     checks the completion's length and tag and the bytes of every message,
//     and the whole payload in the warm-up rounds. A receive buffer is
//     cleared before it is posted, so stale data fails. Wrong data: the ACK
//     says so, both sides print it and exit 1.
//   - --corrupt N (testing): the client damages message N (numbered from 1):
//     a middle byte in a warm-up round, the last byte otherwise; the run
//     must then fail with "data check failed".
//   - Sizes must be at least 2 bytes (the first/last byte tags).
//   - Exit 0 only if every round verified.
#include <stdio.h>

#include <algorithm>
#include <cstring>
#include <string>

#include <rdma/fabric.h>

#include "bench_args.h"
#include "bench_ofi.h"
#include "bench_rdm_fabric.h"

namespace {

using bench::Ctl;
using bench::CtlType;
using bench::Options;
using bench::RdmEndpoint;
using bench::Region;

constexpr uint64_t kTagMask = (uint64_t{1} << 48) - 1;
constexpr unsigned kWindowShift = 16;  // Ctl::flags bits 16.. carry the window

// The wire tag and the payload's byte tag of message number `seq`.
uint64_t WireTag(uint64_t seq) {
  return seq & kTagMask;
}
uint8_t ByteTag(uint64_t seq) {
  return static_cast<uint8_t>(seq * 37 + 11);
}

class Client {
 public:
  Client(const Options& o, RdmEndpoint& ep, size_t window) : o_(o), ep_(ep), window_(window) {
    send_ = ep_.Register(o_.max_size() * window_, FI_SEND);
  }

  void Run() {
    bench::PrintHeader(o_, "MB_s");
    for (const size_t size : o_.sizes) {
      for (size_t slot = 0; slot < window_; ++slot) {
        bench::FillPattern(send_->buf + slot * size, size);
      }
      const double warm_time = Round(size, o_.warmup, true);
      const bench::Measurement m = bench::Measure(
          o_, warm_time, o_.warmup, [&](uint64_t iters) { return Round(size, iters, false); });
      const double bytes =
          static_cast<double>(size) * static_cast<double>(window_) * static_cast<double>(m.iters);
      bench::PrintResult(o_, size, m.iters, bytes / m.seconds / 1e6, "MB_s");
    }
    Ctl quit;
    quit.type = CtlType::kQuit;
    ep_.SendCtl(quit);
    if (ep_.WaitCtl().type != CtlType::kAck) bench::Fail(o_, "protocol error: expected ACK");
  }

 private:
  // Returns the seconds from READY to the last ACK.
  double Round(size_t size, uint64_t iters, bool warm) {
    Ctl begin;
    begin.type = CtlType::kBegin;
    begin.size = size;
    begin.iters = iters;
    begin.tag = seq_;
    begin.flags = (warm ? bench::kCtlWarmup : 0) | (uint64_t{window_} << kWindowShift);
    ep_.SendCtl(begin);
    if (ep_.WaitCtl().type != CtlType::kReady) bench::Fail(o_, "protocol error: expected READY");

    const double start = bench::NowSeconds();
    for (uint64_t it = 0; it < iters; ++it) {
      for (size_t slot = 0; slot < window_; ++slot, ++seq_) {
        uint8_t* buf = send_->buf + slot * size;
        bench::SetTag(buf, size, ByteTag(seq_));
        if (seq_ + 1 == o_.corrupt) buf[warm ? size / 2 : size - 1] ^= 0x01U;
        ep_.PostTSend(send_, slot * size, size, WireTag(seq_));
      }
      ep_.WaitTx(ep_.tx_posted());
      const Ctl ack = ep_.WaitCtl();
      if (ack.type != CtlType::kAck) bench::Fail(o_, "protocol error: expected ACK");
      if (ack.status != 0) {
        bench::Fail(o_, "data check failed: server found wrong data at size " +
                            std::to_string(size) + " (see the server's message)");
      }
    }
    return bench::NowSeconds() - start;
  }

  const Options& o_;
  RdmEndpoint& ep_;
  size_t window_;
  Region* send_ = nullptr;
  uint64_t seq_ = 0;  // number of the next message
};

class Server {
 public:
  Server(const Options& o, RdmEndpoint& ep, size_t window) : o_(o), ep_(ep), window_(window) {
    recv_ = ep_.Register(o_.max_size() * window_, FI_RECV);
  }

  void Run() {
    for (;;) {
      const Ctl begin = ep_.WaitCtl();
      if (begin.type == CtlType::kQuit) break;
      if (begin.type != CtlType::kBegin) bench::Fail(o_, "protocol error: expected BEGIN");
      if (begin.size < 2 || begin.size > o_.max_size() || begin.iters == 0) {
        bench::Fail(o_, "client asks for " + std::to_string(begin.size) +
                            " B; start the server with the same --sizes");
      }
      if ((begin.flags >> kWindowShift) != window_) {
        bench::Fail(o_, "client uses window " + std::to_string(begin.flags >> kWindowShift) +
                            ", this server " + std::to_string(window_) +
                            " (give both the same -w)");
      }
      Round(begin);
    }
    Ctl ack;
    ack.type = CtlType::kAck;
    ep_.SendCtl(ack);
  }

 private:
  void PostWindow(size_t size, uint64_t first_seq, bool warm) {
    for (size_t slot = 0; slot < window_; ++slot) {
      uint8_t* buf = recv_->buf + slot * size;
      const uint64_t seq = first_seq + slot;
      if (warm) {
        memset(buf, 0, size);
      } else {
        bench::SetTag(buf, size, static_cast<uint8_t>(~ByteTag(seq)));
      }
      ep_.PostTRecv(recv_, slot * size, size, WireTag(seq), slot);
    }
  }

  // Empty when the completion is the data message its receive was posted
  // for (number first_seq + slot, `size` bytes); else what is wrong.
  std::string Verify(const bench::RdmRxDone& rx, size_t size, uint64_t first_seq, bool warm) {
    if (rx.control) return "a control message arrived during the data";
    if (rx.slot >= window_) return "completion for an unknown receive";
    const uint64_t seq = first_seq + rx.slot;
    auto msg = [seq] { return "message " + std::to_string(seq + 1); };  // numbered from 1
    const uint8_t* buf = recv_->buf + rx.slot * size;
    if (rx.len != size) {
      return msg() + " has " + std::to_string(rx.len) + " B";
    }
    if (rx.tag != WireTag(seq)) return msg() + " has a wrong tag";
    if (!bench::CheckTag(buf, size, ByteTag(seq))) {
      return msg() + ": first/last byte wrong (stale or misplaced)";
    }
    if (warm && !bench::CheckPattern(buf, size)) {
      return msg() + ": payload differs from the pattern";
    }
    return "";
  }

  void Round(const Ctl& begin) {
    const size_t size = begin.size;
    const bool warm = (begin.flags & bench::kCtlWarmup) != 0;
    uint64_t seq = begin.tag;
    PostWindow(size, seq, warm);
    Ctl ready;
    ready.type = CtlType::kReady;
    ep_.SendCtl(ready);
    for (uint64_t it = 0; it < begin.iters; ++it, seq += window_) {
      std::string error;
      for (size_t k = 0; k < window_; ++k) {
        const std::string what = Verify(ep_.WaitRx(), size, seq, warm);
        if (error.empty()) error = what;
      }
      if (error.empty() && it + 1 < begin.iters) PostWindow(size, seq + window_, warm);
      Ctl ack;
      ack.type = CtlType::kAck;
      ack.status = error.empty() ? 0 : 1;
      ep_.SendCtl(ack);
      if (!error.empty()) {
        bench::Fail(o_, "data check failed at size " + std::to_string(size) + ": " + error);
      }
    }
  }

  const Options& o_;
  RdmEndpoint& ep_;
  size_t window_;
  Region* recv_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::ParseArgs(argc, argv, bench::kWindowAndAv | bench::kCorrupt);
  o.op = "tsend";
  if (*std::min_element(o.sizes.begin(), o.sizes.end()) < 2) {
    bench::Fail(o, "sizes must be at least 2 bytes (first/last byte tags)");
  }
  RdmEndpoint ep(o, FI_TAGGED);
  if (o.max_size() > ep.info()->ep_attr->max_msg_size) {
    bench::Fail(o, "largest size exceeds the provider's max_msg_size " +
                       std::to_string(ep.info()->ep_attr->max_msg_size));
  }
  const size_t window = std::min(o.window, ep.max_window());
  if (window < o.window) {
    fprintf(stderr, "%s: window %zu limited to %zu by the endpoint's queue sizes\n",
            o.program.c_str(), o.window, window);
  }
  if (o.is_client()) {
    Client(o, ep, window).Run();
  } else {
    Server(o, ep, window).Run();
  }
  return 0;
}
