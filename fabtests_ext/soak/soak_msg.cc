// soak_msg: a bounded soak traffic generator on a connected (FI_EP_MSG)
// endpoint: send/recv of mixed sizes plus RMA writes and reads, every byte
// and every message checked, for --seconds.
//
//   server: soak_msg -p PROV [-B PORT|0 --port-file F] [-w W] [--sizes L]
//   client: soak_msg -p PROV -P PORT [-w W] [--sizes L] --seconds S SERVER-ADDR
//
// Contract (both sides must be given the same --sizes; -w is the client's):
//   - The client runs rounds until --seconds have passed (checked between
//     rounds). A round: BEGIN(first message number, count <= the server's
//     window) -> the server posts `count` receives, one buffer each, then the
//     receive for DONE, and answers READY with its RMA region; the client
//     sends `count` messages (size and payload from soak_pattern.h), fi_writes
//     one message of the mix to the region and fi_reads it back and checks
//     it, then sends DONE naming the written message. Receives on a connected
//     endpoint complete in the order they were posted, so the server's k-th
//     completion must be message first + k: its length and every byte are
//     checked (a lost or repeated message shifts the payloads and fails). The
//     server then checks the written message in its own memory and ACKs.
//   - QUIT carries the client's message and byte counts; the server compares
//     them with what it verified, then waits kStrayWait seconds for a further
//     message before it ACKs.
//   - Any mismatch: the side that finds it prints "data check failed: ..."
//     and exits 1 (the server after ACKing with status 1). An error
//     completion exits 1 with the CQ error entry. Every wait is bounded by
//     --timeout.
//   - Each side ends with soak_pattern.h's "soak: soak_msg <side> OK ..." line.
//   - --corrupt N (testing): the client damages message N (from 1).
#include <stdio.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>

#include "bench_args.h"
#include "bench_fabric.h"
#include "soak_client.h"
#include "soak_pattern.h"

namespace {

using bench::Connection;
using bench::Ctl;
using bench::CtlType;
using bench::Options;
using bench::Region;

constexpr double kStrayWait = 0.5;  // seconds the server waits for a late message at the end

class Client {
 public:
  Client(const Options& o, Connection& conn, size_t window) : o_(o), conn_(conn) {
    for (size_t k = 0; k < window; ++k) send_.push_back(conn_.Register(o_.max_size(), FI_SEND));
    write_ = conn_.Register(o_.max_size(), FI_WRITE);
    read_ = conn_.Register(o_.max_size(), FI_READ);
  }

  void Run() {
    soak::RunClient("soak_msg", o_, conn_, t_, [this] { Round(); });
  }

 private:
  void Round() {
    Ctl begin;
    begin.type = CtlType::kBegin;
    begin.tag = seq_;
    begin.iters = send_.size();
    conn_.SendCtl(begin);
    const Ctl ready = conn_.WaitCtl();
    soak::ExpectCtl(o_, ready, CtlType::kReady, "READY");
    conn_.PostCtlRecv();  // for the ACK
    for (Region* r : send_) {
      const size_t size = soak::MsgSize(seq_, o_.sizes);
      soak::Fill(r->buf, size, seq_);
      if (seq_ + 1 == o_.corrupt) r->buf[size / 2] ^= 0x01U;
      conn_.PostSend(r, size);
      ++seq_;
      ++t_.msgs;
      t_.msg_bytes += size;
    }

    const uint64_t rma_seq = soak::kRmaSeqBase + t_.rounds;
    const size_t len = soak::MsgSize(rma_seq, o_.sizes);
    soak::Fill(write_->buf, len, rma_seq);
    conn_.PostWrite(write_, len, ready.addr, ready.key);
    conn_.WaitTx(conn_.tx_posted());
    memset(read_->buf, 0, len);
    conn_.PostRead(read_, len, ready.addr, ready.key);
    conn_.WaitTx(conn_.tx_posted());
    if (const size_t at = soak::FirstWrong(read_->buf, len, rma_seq); at != len) {
      bench::Fail(o_, "data check failed: fi_read of " + std::to_string(len) +
                          " B returned a wrong byte at offset " + std::to_string(at));
    }
    t_.writes++;
    t_.write_bytes += len;
    t_.reads++;
    t_.read_bytes += len;

    Ctl done;
    done.type = CtlType::kDone;
    done.tag = rma_seq;
    done.size = len;
    conn_.SendCtl(done);
    const Ctl ack = conn_.WaitCtl();
    soak::ExpectCtl(o_, ack, CtlType::kAck, "ACK");
    conn_.PostCtlRecv();  // for the next READY or the final ACK
    if (ack.status != 0) {
      bench::Fail(o_, "data check failed: the server found wrong data in round " +
                          std::to_string(t_.rounds + 1));
    }
    ++t_.rounds;
  }

  const Options& o_;
  Connection& conn_;
  std::vector<Region*> send_;
  Region* write_ = nullptr;
  Region* read_ = nullptr;
  uint64_t seq_ = 0;
  soak::Totals t_;
};

class Server {
 public:
  Server(const Options& o, Connection& conn, size_t window) : o_(o), conn_(conn) {
    for (size_t k = 0; k < window; ++k) recv_.push_back(conn_.Register(o_.max_size(), FI_RECV));
    rma_ = conn_.Register(o_.max_size(), FI_REMOTE_WRITE | FI_REMOTE_READ);
  }

  void Run() {
    const double start = bench::NowSeconds();
    for (;;) {
      const Ctl ctl = conn_.WaitCtl();
      if (ctl.type == CtlType::kBegin) {
        Round(ctl);
      } else if (ctl.type == CtlType::kQuit) {
        Quit(ctl);
        break;
      } else {
        bench::Fail(o_, "protocol error: expected BEGIN or QUIT");
      }
    }
    soak::PrintTotals("soak_msg", "server", "OK", bench::NowSeconds() - start, t_);
  }

 private:
  void Ack(const std::string& error) {
    Ctl ack;
    ack.type = CtlType::kAck;
    ack.status = error.empty() ? 0 : 1;
    conn_.SendCtl(ack);
    if (!error.empty()) bench::Fail(o_, "data check failed: " + error);
  }

  // Empty when the completion is message `seq` with its size and payload.
  std::string Verify(const bench::RxDone& rx, const Region* r, uint64_t seq) {
    const std::string name = "message " + std::to_string(seq + 1);  // numbered from 1
    if (rx.kind != bench::OpKind::kData) return "a control message where " + name + " was due";
    const size_t size = soak::MsgSize(seq, o_.sizes);
    if (rx.len != size) {
      return name + " has " + std::to_string(rx.len) + " B, expected " + std::to_string(size) +
             " (lost, duplicated or reordered)";
    }
    if (const size_t at = soak::FirstWrong(r->buf, size, seq); at != size) {
      return name + " (" + std::to_string(size) + " B) has a wrong byte at offset " +
             std::to_string(at);
    }
    ++t_.msgs;
    t_.msg_bytes += size;
    return "";
  }

  // Empty when the region holds the message DONE names; else what is wrong.
  std::string CheckWritten(const Ctl& done) {
    const size_t len = done.size;
    if (len == 0 || len > o_.max_size()) {
      return "DONE names " + std::to_string(len) + " B (start both sides with the same --sizes)";
    }
    if (const size_t at = soak::FirstWrong(rma_->buf, len, done.tag); at != len) {
      return "the written " + std::to_string(len) + " B have a wrong byte at offset " +
             std::to_string(at);
    }
    t_.writes++;
    t_.write_bytes += len;
    ++t_.rounds;
    return "";
  }

  void Round(const Ctl& begin) {
    if (begin.iters == 0 || begin.iters > recv_.size()) {
      bench::Fail(o_, "client asks for " + std::to_string(begin.iters) +
                          " messages per round, this server takes 1.." +
                          std::to_string(recv_.size()));
    }
    for (size_t k = 0; k < begin.iters; ++k) {
      conn_.PostRecv(recv_[k], o_.max_size(), bench::OpKind::kData);
    }
    conn_.PostCtlRecv();  // for DONE, after the data receives
    Ctl ready;
    ready.type = CtlType::kReady;
    ready.addr = rma_->remote_addr;
    ready.key = rma_->key;
    conn_.SendCtl(ready);
    std::string error;
    for (size_t k = 0; k < begin.iters; ++k) {
      const std::string what = Verify(conn_.WaitRx(), recv_[k], begin.tag + k);
      if (error.empty()) error = what;
    }
    const Ctl done = conn_.WaitCtl();
    soak::ExpectCtl(o_, done, CtlType::kDone, "DONE");
    if (error.empty()) error = CheckWritten(done);
    conn_.PostCtlRecv();  // for the next BEGIN or QUIT
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
    conn_.PostRecv(recv_[0], o_.max_size(), bench::OpKind::kData);
    const double until = bench::NowSeconds() + kStrayWait;
    while (error.empty() && bench::NowSeconds() < until) {
      conn_.Progress();
      if (conn_.rx_pending() != 0) error = "a message arrived after the last round";
    }
    Ack(error);
  }

  const Options& o_;
  Connection& conn_;
  std::vector<Region*> recv_;
  Region* rma_ = nullptr;
  soak::Totals t_;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o =
      bench::ParseArgs(argc, argv, bench::kWindowAndOp | bench::kCorrupt | bench::kDuration);
  Connection conn(o, FI_MSG | FI_RMA, FI_ORDER_SAS | FI_ORDER_SAW | FI_ORDER_RAW);
  if (o.max_size() > conn.info()->ep_attr->max_msg_size) {
    bench::Fail(o, "largest size exceeds the provider's max_msg_size " +
                       std::to_string(conn.info()->ep_attr->max_msg_size));
  }
  // Two receive slots stay free for the control messages.
  const size_t window = std::min(o.window, std::max<size_t>(conn.max_window(), 3) - 2);
  if (o.is_client()) {
    Client(o, conn, window).Run();
  } else {
    Server(o, conn, window).Run();
  }
  return 0;
}
