// soak_rdm: a bounded soak traffic generator on a reliable datagram
// (FI_EP_RDM) endpoint: tagged messages of mixed sizes, RMA writes and reads,
// and atomics, every byte and every message checked, for --seconds.
//
//   server: soak_rdm -p PROV [-B PORT|0 --port-file F] [-w W] [--sizes L]
//   client: soak_rdm -p PROV -P PORT [-w W] [--sizes L] --seconds S SERVER-ADDR
//
// Contract (both sides must be given the same --sizes; -w is the client's):
//   - The client runs rounds until --seconds have passed (checked between
//     rounds). A round: BEGIN(first message number, count <= the server's
//     window) -> the server posts `count` tagged receives that match any tag
//     and answers READY with its RMA region; the client sends `count` tagged
//     messages (tag = message number, size and payload from soak_pattern.h);
//     the server checks that each completion carries a number of this round
//     not seen before, the size of that number and its payload byte for byte,
//     and ACKs. Then the client fi_writes one message of the mix to the
//     region, fi_reads it back and checks it, adds kAtomics numbers to a
//     64-bit counter in the region (fi_atomic FI_SUM) and fetches the counter
//     (fi_fetch_atomic of 0), which must equal the sum of every number it
//     added; DONE tells the server the written message and the sum, which the
//     server checks in its own memory and ACKs.
//   - QUIT carries the client's message and byte counts; the server compares
//     them with what it verified, then waits kStrayWait seconds for any
//     further tagged message (a late duplicate) before it ACKs.
//   - Any mismatch: the side that finds it prints "data check failed: ..."
//     and exits 1 (the server after ACKing with status 1, so the client fails
//     too). An error completion exits 1 with the CQ error entry
//     (bench_ofi.h). Every wait is bounded by --timeout.
//   - Each side ends with soak_pattern.h's "soak: soak_rdm <side> OK ..." line.
//   - --corrupt N (testing): the client damages message N (from 1) after
//     filling it, so the run must fail with "data check failed".
#include <stdio.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>

#include "bench_args.h"
#include "bench_ofi.h"
#include "bench_rdm_fabric.h"
#include "soak_client.h"
#include "soak_pattern.h"

namespace {

using bench::Ctl;
using bench::CtlType;
using bench::Options;
using bench::RdmEndpoint;
using bench::Region;

constexpr size_t kAtomics = 8;      // atomic adds per round
constexpr double kStrayWait = 0.5;  // seconds the server waits for a late message at the end
constexpr uint64_t kAnyTag = ~uint64_t{0};

size_t CounterOffset(size_t max_size) {
  return (max_size + 63) / 64 * 64;
}

class Client {
 public:
  Client(const Options& o, RdmEndpoint& ep, size_t window) : o_(o), ep_(ep), window_(window) {
    send_ = ep_.Register(o_.max_size() * window_, FI_SEND);
    write_ = ep_.Register(o_.max_size(), FI_WRITE);
    read_ = ep_.Register(o_.max_size(), FI_READ);
    atomic_ = ep_.Register((kAtomics + 2) * sizeof(uint64_t), FI_WRITE | FI_READ);
  }

  void Run() {
    soak::RunClient("soak_rdm", o_, ep_, t_, [this] { Round(); });
  }

 private:
  void CheckAck(const char* what) {
    const Ctl ack = ep_.WaitCtl();
    soak::ExpectCtl(o_, ack, CtlType::kAck, "ACK");
    if (ack.status != 0) {
      bench::Fail(o_, std::string("data check failed: the server found wrong ") + what +
                          " in round " + std::to_string(t_.rounds + 1));
    }
  }

  void Round() {
    const size_t max = o_.max_size();
    Ctl begin;
    begin.type = CtlType::kBegin;
    begin.tag = seq_;
    begin.iters = window_;
    ep_.SendCtl(begin);
    const Ctl ready = ep_.WaitCtl();
    soak::ExpectCtl(o_, ready, CtlType::kReady, "READY");
    for (size_t k = 0; k < window_; ++k, ++seq_) {
      const size_t size = soak::MsgSize(seq_, o_.sizes);
      uint8_t* buf = send_->buf + k * max;
      soak::Fill(buf, size, seq_);
      if (seq_ + 1 == o_.corrupt) buf[size / 2] ^= 0x01U;
      ep_.PostTSend(send_, k * max, size, seq_);
      ++t_.msgs;
      t_.msg_bytes += size;
    }
    ep_.WaitTx(ep_.tx_posted());
    CheckAck("tagged messages");

    // RMA: write one message of the mix, read it back.
    const uint64_t rma_seq = soak::kRmaSeqBase + t_.rounds;
    const size_t len = soak::MsgSize(rma_seq, o_.sizes);
    soak::Fill(write_->buf, len, rma_seq);
    ep_.PostWrite(write_, 0, len, ready.addr, ready.key);
    ep_.WaitTx(ep_.tx_posted());
    memset(read_->buf, 0, len);
    ep_.PostRead(read_, 0, len, ready.addr, ready.key);
    ep_.WaitTx(ep_.tx_posted());
    if (const size_t at = soak::FirstWrong(read_->buf, len, rma_seq); at != len) {
      bench::Fail(o_, "data check failed: fi_read of " + std::to_string(len) +
                          " B returned a wrong byte at offset " + std::to_string(at));
    }
    t_.writes++;
    t_.write_bytes += len;
    t_.reads++;
    t_.read_bytes += len;

    // Atomics: kAtomics adds, then fetch the counter (add 0).
    auto* ops = reinterpret_cast<uint64_t*>(atomic_->buf);
    const uint64_t counter = ready.addr + ready.flags;
    for (size_t i = 0; i < kAtomics; ++i) {
      ops[i] = soak::Mix(t_.rounds * kAtomics + i) & 0xffffU;
      sum_ += ops[i];
      ep_.PostAtomicAdd(atomic_, i * sizeof(uint64_t), counter, ready.key);
    }
    ep_.WaitTx(ep_.tx_posted());
    ops[kAtomics] = 0;
    ops[kAtomics + 1] = ~uint64_t{0};
    ep_.PostFetchAdd(atomic_, kAtomics * sizeof(uint64_t), atomic_,
                     (kAtomics + 1) * sizeof(uint64_t), counter, ready.key);
    ep_.WaitTx(ep_.tx_posted());
    if (ops[kAtomics + 1] != sum_) {
      bench::Fail(o_, "data check failed: the atomic counter is " +
                          std::to_string(ops[kAtomics + 1]) + ", expected " + std::to_string(sum_));
    }
    t_.atomics += kAtomics + 1;

    Ctl done;
    done.type = CtlType::kDone;
    done.tag = rma_seq;
    done.size = len;
    done.iters = sum_;
    ep_.SendCtl(done);
    CheckAck("RMA or atomic data");
    ++t_.rounds;
  }

  const Options& o_;
  RdmEndpoint& ep_;
  size_t window_;
  Region* send_ = nullptr;
  Region* write_ = nullptr;
  Region* read_ = nullptr;
  Region* atomic_ = nullptr;
  uint64_t seq_ = 0;  // number of the next tagged message
  uint64_t sum_ = 0;  // what the counter must hold
  soak::Totals t_;
};

class Server {
 public:
  Server(const Options& o, RdmEndpoint& ep, size_t window) : o_(o), ep_(ep), window_(window) {
    recv_ = ep_.Register(o_.max_size() * window_, FI_RECV);
    rma_ = ep_.Register(CounterOffset(o_.max_size()) + sizeof(uint64_t),
                        FI_REMOTE_WRITE | FI_REMOTE_READ);
  }

  void Run() {
    const double start = bench::NowSeconds();
    for (;;) {
      const Ctl ctl = ep_.WaitCtl();
      if (ctl.type == CtlType::kBegin) {
        Messages(ctl);
      } else if (ctl.type == CtlType::kDone) {
        Rma(ctl);
      } else if (ctl.type == CtlType::kQuit) {
        Quit(ctl);
        break;
      } else {
        bench::Fail(o_, "protocol error: unexpected control message");
      }
    }
    soak::PrintTotals("soak_rdm", "server", "OK", bench::NowSeconds() - start, t_);
  }

 private:
  void Ack(const std::string& error) {
    Ctl ack;
    ack.type = CtlType::kAck;
    ack.status = error.empty() ? 0 : 1;
    ep_.SendCtl(ack);
    if (!error.empty()) bench::Fail(o_, "data check failed: " + error);
  }

  // Empty when the completion is a message of this round seen for the first
  // time with its size and payload; else what is wrong.
  std::string Verify(const bench::RdmRxDone& rx, uint64_t first, std::vector<bool>* seen) {
    if (rx.control) return "a control message arrived during the tagged messages";
    if (rx.slot >= seen->size()) return "completion for an unknown receive";
    const uint64_t idx = rx.tag - first;
    const std::string name = "message " + std::to_string(rx.tag + 1);  // numbered from 1
    if (rx.tag < first || idx >= seen->size()) {
      return name + " arrived in the round of messages " + std::to_string(first + 1) + ".." +
             std::to_string(first + seen->size()) + " (lost, duplicated or stray)";
    }
    if ((*seen)[idx]) return name + " arrived twice";
    (*seen)[idx] = true;
    const size_t size = soak::MsgSize(rx.tag, o_.sizes);
    if (rx.len != size) {
      return name + " has " + std::to_string(rx.len) + " B, expected " + std::to_string(size);
    }
    const uint8_t* buf = recv_->buf + rx.slot * o_.max_size();
    if (const size_t at = soak::FirstWrong(buf, size, rx.tag); at != size) {
      return name + " (" + std::to_string(size) + " B) has a wrong byte at offset " +
             std::to_string(at);
    }
    ++t_.msgs;
    t_.msg_bytes += size;
    return "";
  }

  void Messages(const Ctl& begin) {
    if (begin.iters == 0 || begin.iters > window_) {
      bench::Fail(o_, "client asks for " + std::to_string(begin.iters) +
                          " messages per round, this server takes 1.." + std::to_string(window_));
    }
    const size_t max = o_.max_size();
    for (size_t k = 0; k < begin.iters; ++k) {
      ep_.PostTRecv(recv_, k * max, max, 0, k, kAnyTag);
    }
    Ctl ready;
    ready.type = CtlType::kReady;
    ready.addr = rma_->remote_addr;
    ready.key = rma_->key;
    ready.flags = CounterOffset(max);
    ep_.SendCtl(ready);
    std::vector<bool> seen(begin.iters, false);
    std::string error;
    for (size_t k = 0; k < begin.iters; ++k) {
      const std::string what = Verify(ep_.WaitRx(), begin.tag, &seen);
      if (error.empty()) error = what;
    }
    Ack(error);
  }

  void Rma(const Ctl& done) {
    std::string error;
    const size_t len = done.size;
    uint64_t counter = 0;
    memcpy(&counter, rma_->buf + CounterOffset(o_.max_size()), sizeof(counter));
    if (len == 0 || len > o_.max_size()) {
      error = "DONE names " + std::to_string(len) + " B (start both sides with the same --sizes)";
    } else if (const size_t at = soak::FirstWrong(rma_->buf, len, done.tag); at != len) {
      error = "the written " + std::to_string(len) + " B have a wrong byte at offset " +
              std::to_string(at);
    } else if (counter != done.iters) {
      error = "the atomic counter holds " + std::to_string(counter) + ", the client added " +
              std::to_string(done.iters);
    } else {
      t_.writes++;
      t_.write_bytes += len;
      ++t_.rounds;
    }
    Ack(error);
  }

  void Quit(const Ctl& quit) {
    std::string error;
    if (quit.iters != t_.msgs || quit.size != t_.msg_bytes) {
      error = "client sent " + std::to_string(quit.iters) + " messages (" +
              std::to_string(quit.size) + " B), this server verified " + std::to_string(t_.msgs) +
              " (" + std::to_string(t_.msg_bytes) + " B)";
    }
    // A late copy of any message would complete this receive.
    ep_.PostTRecv(recv_, 0, o_.max_size(), 0, 0, kAnyTag);
    const double until = bench::NowSeconds() + kStrayWait;
    while (error.empty() && bench::NowSeconds() < until) {
      ep_.Progress();
      if (ep_.rx_pending() != 0) error = "a tagged message arrived after the last round";
    }
    Ack(error);
  }

  const Options& o_;
  RdmEndpoint& ep_;
  size_t window_;
  Region* recv_ = nullptr;
  Region* rma_ = nullptr;
  soak::Totals t_;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o =
      bench::ParseArgs(argc, argv, bench::kWindowAndAv | bench::kCorrupt | bench::kDuration);
  RdmEndpoint ep(o, FI_TAGGED | FI_RMA | FI_ATOMIC);
  if (o.max_size() > ep.info()->ep_attr->max_msg_size) {
    bench::Fail(o, "largest size exceeds the provider's max_msg_size " +
                       std::to_string(ep.info()->ep_attr->max_msg_size));
  }
  const size_t window = std::min(o.window, ep.max_window());
  if (o.is_client()) {
    Client(o, ep, window).Run();
  } else {
    Server(o, ep, window).Run();
  }
  return 0;
}
