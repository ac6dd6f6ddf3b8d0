// RMA and atomics of an RDM peer that moves to its on-demand connection
// (docs/design.md "Connected channels in the RDM endpoint", "RMA and
// atomics follow the messages") through the public API. ctest runs it once
// per case (FI_IWARPX_* are read when the provider loads) with a chain
// naming rc_sr and a low FI_IWARPX_RC_THRESHOLD_MSGS; IWARPX_RC_RMA_CASE:
//   order  A -> B, 3000 rounds of: fi_write (every 10th fi_writedata with
//          data i) of value i+1 into slot i of B's window, fi_atomic FI_SUM
//          1 into B's counter, fi_tsend message i, fi_read of slot i back.
//          B, the moment it reads message i's completion from its CQ, must
//          see slot i written and the counter at least i+1 (FI_ORDER_SAW),
//          and the remote CQ data of a writedata must come before its
//          message in B's CQ; every read returns its write (FI_ORDER_RAW).
//          The peer moves to the connection mid-stream: datagram messages
//          and RMA before, connection messages and RMA after
//          (rdm_rd_rma_ops, rdm_rc_rma_ops). Also run with FI_IWARPX_FAULT.
//   idle   FI_IWARPX_RC_IDLE_MS=100: the order stream, a pause in which both
//          ends leave the connection cleanly, the order stream again (RMA
//          back on RD, then on a new connection), no error anywhere.
// Without IWARPX_RC_RMA_CASE the test fails: it is not meant to run bare.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rdm_fixture.h"

namespace {

using rdmtest::Ctx;
using rdmtest::Net;
using rdmtest::Side;

constexpr size_t kRounds = 3000;
constexpr size_t kInFlight = 32;  // rounds posted ahead of B's receive completions

// Contexts: kind in bits 40.., round below.
enum : uint64_t { kWrite = 1, kAtomic, kSend, kRead, kRecv };
void* OpCtx(uint64_t kind, uint64_t round, uint64_t pass) {
  return Ctx((pass << 48) | (kind << 40) | round);
}

struct OrderRun {
  Net* net = nullptr;
  Side* a = nullptr;
  Side* b = nullptr;
  uint64_t pass = 1;
  std::vector<uint64_t> win;  // B's: kRounds slots, then the counter
  std::vector<uint64_t> vals, back;
  std::vector<std::vector<uint8_t>> tx, rx;
  uint64_t key = 0;
  uint64_t base = 0;
  uint64_t one = 1;
  size_t posted_rounds = 0;
  size_t recvs_posted = 0;
  size_t recvs_done = 0;
  size_t tx_done = 0;
  std::vector<bool> data_seen;
  std::string error;

  bool Fail(const std::string& e) {
    if (error.empty()) error = e;
    return false;
  }
  uint64_t Slot(size_t i) const { return base + i * sizeof(uint64_t); }

  // A's transmit CQ; B's receive CQ read entry by entry and checked the
  // moment each is read, as B's application would.
  bool Progress() {
    fi_cq_tagged_entry e[16];
    for (;;) {
      const ssize_t n = fi_cq_read(a->tx.cq, e, 16);
      if (n == -FI_EAGAIN) break;
      if (n < 0) return Fail("A's transmit CQ: " + std::string(fi_strerror(int(-n))));
      tx_done += static_cast<size_t>(n);
    }
    for (;;) {
      const ssize_t n = fi_cq_read(b->rx.cq, e, 16);
      if (n == -FI_EAGAIN) break;
      if (n < 0) return Fail("B's receive CQ: " + std::string(fi_strerror(int(-n))));
      for (ssize_t k = 0; k < n; ++k) {
        if (!Check(e[k])) return false;
      }
    }
    return true;
  }
  bool Check(const fi_cq_tagged_entry& c) {
    if ((c.flags & FI_REMOTE_CQ_DATA) != 0 && (c.flags & FI_RMA) != 0) {
      if (c.data >= kRounds || c.data % 10 != 0) return Fail("remote CQ data out of range");
      data_seen[c.data] = true;
      return true;
    }
    const auto v = reinterpret_cast<uintptr_t>(c.op_context);
    const uint64_t i = v & 0xFFFFFFFFFFULL;
    if ((v >> 40 & 0xFF) != kRecv || i >= kRounds) return Fail("a stray receive completion");
    if (c.tag != i)
      return Fail("receive " + std::to_string(i) + " matched " + std::to_string(c.tag));
    if (win[i] != i + 1) {
      return Fail("message " + std::to_string(i) + " arrived before its write was placed");
    }
    if (win[kRounds] < i + 1) {
      return Fail("message " + std::to_string(i) + " arrived before its atomic ran");
    }
    if (i % 10 == 0 && !data_seen[i]) {
      return Fail("message " + std::to_string(i) + " came before its write's remote CQ data");
    }
    ++recvs_done;
    return true;
  }
  // `op` retried on -FI_EAGAIN with progress (bounded).
  bool Post(const char* what, const std::function<ssize_t()>& op) {
    const auto deadline = std::chrono::steady_clock::now() + rdmtest::kWait;
    for (;;) {
      const ssize_t r = op();
      if (r == 0) return true;
      if (r != -FI_EAGAIN) return Fail(std::string(what) + ": " + fi_strerror(int(-r)));
      if (!Progress()) return false;
      if (std::chrono::steady_clock::now() > deadline) return Fail(std::string(what) + ": EAGAIN");
    }
  }

  bool Run() {
    win.assign(kRounds + 1, 0);
    vals.resize(kRounds);
    back.assign(kRounds, 0);
    tx.assign(kRounds, std::vector<uint8_t>(64, static_cast<uint8_t>(pass)));
    rx.assign(kRounds, std::vector<uint8_t>(64, 0));
    data_seen.assign(kRounds, false);
    for (size_t i = 0; i < kRounds; ++i) vals[i] = i + 1;
    fid_mr* mr =
        net->Reg(*b, win.data(), win.size() * sizeof(uint64_t), FI_REMOTE_WRITE | FI_REMOTE_READ);
    if (mr == nullptr) return Fail(net->error);
    key = fi_mr_key(mr);
    base = net->RemoteAddr(win.data(), win.data());
    const fi_addr_t to_b = a->To(*b);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
    while (recvs_done < kRounds || tx_done < 4 * kRounds) {
      while (recvs_posted < kRounds && recvs_posted < recvs_done + 2 * kInFlight) {
        const size_t i = recvs_posted;
        if (!Post("fi_trecv", [&] {
              return fi_trecv(b->ep, rx[i].data(), rx[i].size(), nullptr, FI_ADDR_UNSPEC, 0,
                              ~uint64_t{0}, OpCtx(kRecv, i, 0));
            })) {
          return false;
        }
        ++recvs_posted;
      }
      while (posted_rounds < kRounds && posted_rounds < recvs_done + kInFlight) {
        const size_t i = posted_rounds;
        const bool data = i % 10 == 0;
        if (!Post(data ? "fi_writedata" : "fi_write",
                  [&] {
                    return data ? fi_writedata(a->ep, &vals[i], sizeof(uint64_t), nullptr, i, to_b,
                                               Slot(i), key, OpCtx(kWrite, i, pass))
                                : fi_write(a->ep, &vals[i], sizeof(uint64_t), nullptr, to_b,
                                           Slot(i), key, OpCtx(kWrite, i, pass));
                  }) ||
            !Post("fi_atomic",
                  [&] {
                    return fi_atomic(a->ep, &one, 1, nullptr, to_b, Slot(kRounds), key, FI_UINT64,
                                     FI_SUM, OpCtx(kAtomic, i, pass));
                  }) ||
            !Post("fi_tsend",
                  [&] {
                    return fi_tsend(a->ep, tx[i].data(), tx[i].size(), nullptr, to_b, i,
                                    OpCtx(kSend, i, pass));
                  }) ||
            !Post("fi_read", [&] {
              return fi_read(a->ep, &back[i], sizeof(uint64_t), nullptr, to_b, Slot(i), key,
                             OpCtx(kRead, i, pass));
            })) {
          return false;
        }
        ++posted_rounds;
      }
      if (!Progress()) return false;
      if (std::chrono::steady_clock::now() > deadline) {
        return Fail("timed out: " + std::to_string(recvs_done) + " messages, " +
                    std::to_string(tx_done) + " transmit completions");
      }
    }
    // The transmit side counts 4 operations per round; writedata's remote
    // completion is B's, so A saw exactly 4 x kRounds.
    if (tx_done != 4 * kRounds) return Fail("transmit completions: " + std::to_string(tx_done));
    for (size_t i = 0; i < kRounds; ++i) {
      if (back[i] != i + 1) return Fail("read " + std::to_string(i) + " missed its write");
    }
    if (win[kRounds] != kRounds) return Fail("counter " + std::to_string(win[kRounds]));
    return true;
  }
};

fi_iwarpx_ep_stats StatsOf(Side* s) {
  std::optional<fi_iwarpx_ep_stats> st = fttest::EpStats(s->domain, s->ep);
  EXPECT_TRUE(st.has_value()) << "fi_open_ops(" FI_IWARPX_STATS_OPS ") or ep_stats failed";
  return st.value_or(fi_iwarpx_ep_stats{});
}

TEST(RdmRcRma, CaseFromTheEnvironment) {
  const char* which = std::getenv("IWARPX_RC_RMA_CASE");
  ASSERT_TRUE(which != nullptr && std::getenv("FI_IWARPX_SEND_RULES") != nullptr)
      << "run through ctest, which sets IWARPX_RC_RMA_CASE and FI_IWARPX_SEND_RULES";
  const std::string c = which;
  ASSERT_TRUE(c == "order" || c == "idle") << "unknown IWARPX_RC_RMA_CASE " << c;
  Net net;
  ASSERT_TRUE(net.Open()) << net.error;
  Side* a = net.AddSide();
  Side* b = net.AddSide();
  ASSERT_TRUE(a != nullptr && b != nullptr) << net.error;
  ASSERT_TRUE(net.Connect(*a, *b)) << net.error;
  const uint64_t passes = c == "idle" ? 2 : 1;
  for (uint64_t pass = 1; pass <= passes; ++pass) {
    OrderRun run;
    run.net = &net;
    run.a = a;
    run.b = b;
    run.pass = pass;
    ASSERT_TRUE(run.Run()) << "pass " << pass << ": " << run.error;
    const fi_iwarpx_ep_stats sa = StatsOf(a);
    EXPECT_EQ(sa.rc_opened, pass);
    EXPECT_GT(sa.rdm_ud_sr_msgs + sa.rdm_ud_zcopy_msgs, 0u)
        << "nothing on datagrams before the switch";
    EXPECT_GT(sa.rdm_rc_sr_msgs, (kRounds / 2) * pass) << "the messages did not move";
    EXPECT_GT(sa.rdm_rd_rma_ops, 0u) << "no RMA before the switch";
    EXPECT_GT(sa.rdm_rc_rma_ops, (kRounds / 2) * 3 * pass)
        << "RMA did not follow the messages onto the connection";
    EXPECT_EQ(sa.rdm_rd_rma_ops + sa.rdm_rc_rma_ops, 3 * kRounds * pass);
    EXPECT_EQ(sa.rdm_rc_rma_failed, 0u);
    if (c == "idle") {
      // Idle for 10x FI_IWARPX_RC_IDLE_MS: both ends leave the connection.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (std::chrono::steady_clock::now() < until) ASSERT_TRUE(net.PollAll());
    }
  }
  const fi_iwarpx_ep_stats sa = StatsOf(a);
  const fi_iwarpx_ep_stats sb = StatsOf(b);
  EXPECT_EQ(sa.rc_failed + sb.rc_failed, 0u) << "a connection ended with an error";
  EXPECT_EQ(sa.rd_peers_failed + sb.rd_peers_failed, 0u);
  if (std::getenv("FI_IWARPX_FAULT") != nullptr) {
    EXPECT_GT(sa.rd_retransmitted + sb.rd_retransmitted, 0u) << "the faults did not happen";
  }
}

}  // namespace
