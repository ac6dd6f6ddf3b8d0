// The RDM endpoint's on-demand connections (RC-SR, docs/design.md "Connected
// channels in the RDM endpoint") through the public API. ctest runs this
// program once per case (the provider reads FI_IWARPX_* when it loads) with
// FI_IWARPX_SEND_RULES naming rc_sr, a low FI_IWARPX_RC_THRESHOLD_MSGS, and
// IWARPX_RC_CASE:
//   switch  10 000 mixed-size tagged messages A -> B (eager and rendezvous):
//           the peer moves to the connection mid-stream; every message
//           arrives exactly once, in send order, bit-exact; the counters
//           (fi_iwarpx_ep_stats) show datagram messages before the switch and
//           connection messages after it, one connection opened and accepted.
//           Also run with FI_IWARPX_FAULT damaging the datagrams, and with a
//           chain that starts size<=2048:rc_fp (IWARPX_RC_FP=1): then part of
//           the connection's messages must go by RDMA Write into B's RC-FP
//           ring (rdm_rc_fp_msgs), interleaved with RC-SR and rendezvous.
//   idle    FI_IWARPX_RC_IDLE_MS=100: a stream that moves to the connection,
//           a pause in which both ends leave it cleanly, a second stream
//           that opens a new one: both checked as above, no connection and
//           no RD session failed on either side.
//   peers   the switch stream with the hybrid chain (bench_lib.sh's): the
//           per-peer statistics (fi_iwarpx_stats_ops v3 peer_count /
//           peer_stats) show the stream on ud_* then rc_* channels, summing
//           to the messages and bytes sent, the receiver's counts equal the
//           sender's channel by channel, and v1/v2 callers of the same ops
//           get exactly their prefix.
//   close   a stream that moves to the connection, then A's fi_close: B must
//           count no failed connection and no failed RD session, also after
//           its RD timeout has passed (an orderly close is not a failure).
//   cap     FI_IWARPX_MAX_RC=1: A streams to three peers; A opens exactly one
//           connection, the other two peers stay on datagrams, every message
//           of the three streams checked as above.
// Without IWARPX_RC_CASE the test fails: it is not meant to run bare.
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rdm_fixture.h"

namespace {

using rdmtest::Bytes;
using rdmtest::Ctx;
using rdmtest::Net;
using rdmtest::Pattern;
using rdmtest::Side;

constexpr size_t kWindow = 64;  // sends in flight per stream; receives posted 2x ahead

// Mostly eager sizes, every 50th a rendezvous (above the 16 KiB eager limit).
size_t SizeOf(size_t i) {
  return i % 50 == 0 ? 20000 + (i * 7919) % 100000 : (i * 7919) % 9000;
}

// One stream of `count` tagged messages (tag = index) from `from` to `to`;
// the receives ignore every tag bit, so receive i must hold message i.
struct Stream {
  Side* from = nullptr;
  Side* to = nullptr;
  size_t count = 0;
  uint64_t id = 0;  // tells this stream's contexts from the others'
  std::vector<Bytes> tx, rx;
  std::vector<int> seen;
  size_t sent = 0;
  size_t send_done = 0;
  size_t posted = 0;
  size_t received = 0;
  std::string error;

  void Init() {
    tx.resize(count);
    rx.resize(count);
    seen.assign(count, 0);
  }
  void* SendCtx(size_t i) const { return Ctx((id << 40) | (uint64_t{1} << 39) | i); }
  void* RecvCtx(size_t i) const { return Ctx((id << 40) | i); }
  // Posts what the windows allow; false on a post error.
  bool Step() {
    while (posted < count && posted < received + 2 * kWindow) {
      rx[posted].assign(SizeOf(posted), 0);
      const ssize_t r = fi_trecv(to->ep, rx[posted].data(), rx[posted].size(), nullptr,
                                 FI_ADDR_UNSPEC, 0, ~uint64_t{0}, RecvCtx(posted));
      if (r == -FI_EAGAIN) break;
      if (r != 0) return Fail("fi_trecv", r);
      ++posted;
    }
    while (sent < count && sent < send_done + kWindow) {
      tx[sent] = Pattern(SizeOf(sent), sent * 31 + id);
      const ssize_t r = fi_tsend(from->ep, tx[sent].data(), tx[sent].size(), nullptr, from->To(*to),
                                 sent, SendCtx(sent));
      if (r == -FI_EAGAIN) break;
      if (r != 0) return Fail("fi_tsend", r);
      ++sent;
    }
    return true;
  }
  bool Fail(const char* what, ssize_t r) {
    if (error.empty()) error = std::string(what) + ": " + fi_strerror(static_cast<int>(-r));
    return false;
  }
  // Takes this stream's completions out of the two sides' buffers.
  void Drain() {
    for (auto it = from->tx.done.begin(); it != from->tx.done.end();) {
      const auto c = reinterpret_cast<uintptr_t>(it->e.op_context);
      if ((c >> 40) != id || ((c >> 39) & 1) == 0) {
        ++it;
        continue;
      }
      ++send_done;
      it = from->tx.done.erase(it);
    }
    for (auto it = to->rx.done.begin(); it != to->rx.done.end();) {
      const auto c = reinterpret_cast<uintptr_t>(it->e.op_context);
      if ((c >> 40) != id || ((c >> 39) & 1) != 0) {
        ++it;
        continue;
      }
      const size_t i = c & ((uint64_t{1} << 39) - 1);
      if (i >= count) {
        error = "a receive completion with a context this stream never posted";
      } else {
        ++seen[i];
        if (it->e.tag != i && error.empty()) {
          error = "receive " + std::to_string(i) + " matched message " + std::to_string(it->e.tag);
        }
        if ((it->e.len != tx[i].size() || rx[i] != tx[i]) && error.empty()) {
          error = "message " + std::to_string(i) + " differs";
        }
      }
      ++received;
      it = to->rx.done.erase(it);
    }
    if (!from->tx.errs.empty() || !to->rx.errs.empty()) error = "an error completion";
  }
  [[nodiscard]] bool Done() const { return received == count && send_done == count; }
  void Check() const {
    EXPECT_EQ(error, "");
    ASSERT_EQ(received, count);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(seen[i], 1) << "message " << i;
  }
};

// Runs the streams to the end (or 240 s).
bool RunStreams(Net& net, const std::vector<Stream*>& streams) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  for (;;) {
    bool done = true;
    for (Stream* s : streams) {
      if (!s->Step()) return false;
    }
    if (!net.PollAll()) return false;
    for (Stream* s : streams) {
      s->Drain();
      if (!s->error.empty()) return false;
      done = done && s->Done();
    }
    if (done) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
}

fi_iwarpx_ep_stats StatsOf(Side* s) {
  std::optional<fi_iwarpx_ep_stats> st = fttest::EpStats(s->domain, s->ep);
  EXPECT_TRUE(st.has_value()) << "fi_open_ops(" FI_IWARPX_STATS_OPS ") or ep_stats failed";
  return st.value_or(fi_iwarpx_ep_stats{});
}

fi_iwarpx_stats_ops* OpsOf(Side* s, const char* name) {
  fi_iwarpx_stats_ops* ops = nullptr;
  EXPECT_EQ(fi_open_ops(&s->domain->fid, name, 0, reinterpret_cast<void**>(&ops), nullptr), 0)
      << name;
  return ops;
}

// The only peer of `s`, through the v3 ops.
fi_iwarpx_peer_stats OnlyPeerOf(Side* s) {
  fi_iwarpx_stats_ops* ops = OpsOf(s, FI_IWARPX_STATS_OPS);
  fi_iwarpx_peer_stats ps{};
  if (ops == nullptr) return ps;
  EXPECT_GE(ops->size, sizeof(fi_iwarpx_stats_ops));
  size_t n = 99;
  EXPECT_EQ(ops->peer_count(s->ep, &n), 0);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(ops->peer_stats(s->ep, 0, &ps, sizeof(ps)), 0);
  fi_iwarpx_peer_stats none{};
  EXPECT_EQ(ops->peer_stats(s->ep, 1, &none, sizeof(none)), -FI_ENOENT);
  return ps;
}

// Every byte of `buf` from `from` on is still `fill`.
bool Untouched(const void* buf, size_t from, size_t size, uint8_t fill) {
  const auto* b = static_cast<const uint8_t*>(buf);
  for (size_t i = from; i < size; ++i) {
    if (b[i] != fill) return false;
  }
  return true;
}

// The per-peer checks of the "peers" case, after `s` ran from a to b.
void CheckPeers(Side* a, Side* b, const Stream& s) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < s.count; ++i) bytes += SizeOf(i);
  const fi_iwarpx_peer_stats pa = OnlyPeerOf(a);
  const fi_iwarpx_peer_stats pb = OnlyPeerOf(b);
  EXPECT_EQ(pa.fi_addr, a->To(*b));
  EXPECT_EQ(pb.fi_addr, b->To(*a));
  ASSERT_EQ(pa.addrlen, sizeof(sockaddr_in));
  EXPECT_EQ(std::memcmp(pa.addr, &b->name, sizeof(sockaddr_in)), 0) << "not b's address";
  EXPECT_EQ(pa.state, uint32_t{FI_IWARPX_PEER_CONNECTED});
  EXPECT_EQ(pb.state, uint32_t{FI_IWARPX_PEER_CONNECTED});
  const auto& ch = pa.channel;
  EXPECT_GT(ch[FI_IWARPX_CH_UD_SR].msgs_sent, 0u) << "nothing on datagrams before the switch";
  EXPECT_GT(ch[FI_IWARPX_CH_RC_SR].msgs_sent, 5000u) << "the stream did not move";
  EXPECT_GT(ch[FI_IWARPX_CH_RC_RDMA].msgs_sent, 0u);
  uint64_t msgs = 0;
  uint64_t sent_bytes = 0;
  for (size_t i = 0; i < FI_IWARPX_MAX_CHANNELS; ++i) {
    msgs += ch[i].msgs_sent;
    sent_bytes += ch[i].bytes_sent;
    EXPECT_EQ(ch[i].msgs_received, 0u) << i;
    EXPECT_EQ(pb.channel[i].msgs_received, ch[i].msgs_sent) << "channel " << i;
    EXPECT_EQ(pb.channel[i].bytes_received, ch[i].bytes_sent) << "channel " << i;
  }
  EXPECT_EQ(msgs, s.count);
  EXPECT_EQ(sent_bytes, bytes);
  EXPECT_EQ(pa.rc_opened, 1u);
  EXPECT_EQ(pb.rc_accepted, 1u);
  EXPECT_EQ(pa.rc_closed + pb.rc_closed, 0u);
  EXPECT_EQ(pa.rd_sessions, 1u);
  EXPECT_EQ(pa.rd_failed, 0u);
  // The endpoint-wide counters tell the same story.
  const fi_iwarpx_ep_stats sa = StatsOf(a);
  EXPECT_EQ(sa.rdm_ud_sr_msgs, ch[FI_IWARPX_CH_UD_SR].msgs_sent);
  EXPECT_EQ(sa.rdm_ud_zcopy_msgs, ch[FI_IWARPX_CH_UD_ZCOPY].msgs_sent);
  EXPECT_EQ(sa.rdm_rc_sr_msgs, ch[FI_IWARPX_CH_RC_SR].msgs_sent);
  EXPECT_EQ(sa.rdm_rc_rdma_msgs, ch[FI_IWARPX_CH_RC_RDMA].msgs_sent);
  EXPECT_EQ(sa.rd_retransmitted, pa.rd_retransmitted);

  // Older callers: v2 and v1 names open, ep_stats fills exactly their prefix.
  constexpr uint8_t kFill = 0xA5;
  const size_t v2_len = offsetof(fi_iwarpx_ep_stats, rc_failed) + sizeof(uint64_t);
  const size_t v1_len = offsetof(fi_iwarpx_ep_stats, terminates_received) + sizeof(uint64_t);
  for (const auto& [name, len] :
       {std::pair{FI_IWARPX_STATS_OPS_V2, v2_len}, std::pair{FI_IWARPX_STATS_OPS_V1, v1_len}}) {
    fi_iwarpx_stats_ops* old = OpsOf(a, name);
    ASSERT_NE(old, nullptr);
    fi_iwarpx_ep_stats st{};
    std::memset(&st, kFill, sizeof(st));
    ASSERT_EQ(old->ep_stats(a->ep, &st, len), 0) << name;
    EXPECT_TRUE(Untouched(&st, len, sizeof(st), kFill)) << name << ": wrote past its length";
    EXPECT_EQ(st.rdm_ud_sr_msgs == sa.rdm_ud_sr_msgs, len > v1_len) << name;
    EXPECT_EQ(st.rd_peers, sa.rd_peers) << name;
  }
  // A short peer_stats caller gets its prefix only.
  fi_iwarpx_stats_ops* ops = OpsOf(a, FI_IWARPX_STATS_OPS);
  ASSERT_NE(ops, nullptr);
  fi_iwarpx_peer_stats part{};
  std::memset(&part, kFill, sizeof(part));
  const size_t part_len = offsetof(fi_iwarpx_peer_stats, channel[FI_IWARPX_CH_RC_SR]);
  ASSERT_EQ(ops->peer_stats(a->ep, 0, &part, part_len), 0);
  EXPECT_TRUE(Untouched(&part, part_len, sizeof(part), kFill));
  EXPECT_EQ(part.channel[FI_IWARPX_CH_UD_SR].msgs_sent, ch[FI_IWARPX_CH_UD_SR].msgs_sent);
}

TEST(RdmRc, CaseFromTheEnvironment) {
  const char* which = std::getenv("IWARPX_RC_CASE");
  ASSERT_TRUE(which != nullptr && std::getenv("FI_IWARPX_SEND_RULES") != nullptr)
      << "run through ctest, which sets IWARPX_RC_CASE and FI_IWARPX_SEND_RULES";
  const std::string c = which;
  Net net;
  ASSERT_TRUE(net.Open()) << net.error;
  Side* a = net.AddSide();
  ASSERT_NE(a, nullptr) << net.error;
  if (c == "switch" || c == "peers") {
    Side* b = net.AddSide();
    ASSERT_NE(b, nullptr) << net.error;
    ASSERT_TRUE(net.Connect(*a, *b)) << net.error;
    Stream s;
    s.from = a;
    s.to = b;
    s.count = 10000;
    s.id = 1;
    s.Init();
    ASSERT_TRUE(RunStreams(net, {&s}))
        << s.error << " (received " << s.received << ", sends done " << s.send_done << ")";
    s.Check();
    const fi_iwarpx_ep_stats sa = StatsOf(a);
    const fi_iwarpx_ep_stats sb = StatsOf(b);
    EXPECT_EQ(sa.rc_opened, 1u);
    EXPECT_EQ(sb.rc_accepted, 1u);
    EXPECT_EQ(sa.rc_failed + sb.rc_failed, 0u);
    EXPECT_GT(sa.rdm_ud_sr_msgs + sa.rdm_ud_zcopy_msgs, 0u) << "nothing before the switch";
    const bool fp = std::getenv("IWARPX_RC_FP") != nullptr;
    EXPECT_GT(sa.rdm_rc_sr_msgs + sa.rdm_rc_fp_msgs, 5000u)
        << "the stream did not move to the connection";
    EXPECT_GT(sa.rdm_rc_rdma_msgs, 0u) << "no rendezvous over the connection";
    if (fp) {
      EXPECT_GT(sa.rdm_rc_fp_msgs, 0u) << "nothing went by the RC-FP ring";
      EXPECT_GT(sa.rdm_rc_sr_msgs, 0u) << "no RC-SR between the ring's messages";
    } else {
      EXPECT_EQ(sa.rdm_rc_fp_msgs, 0u) << "the chain names no rc_fp";
    }
    EXPECT_EQ(sa.rdm_ud_sr_msgs + sa.rdm_ud_zcopy_msgs + sa.rdm_rc_sr_msgs + sa.rdm_rc_rdma_msgs +
                  sa.rdm_rc_fp_msgs,
              10000u);
    EXPECT_EQ(sa.rd_peers_failed + sb.rd_peers_failed, 0u);
    if (std::getenv("FI_IWARPX_FAULT") != nullptr) {
      EXPECT_GT(sa.rd_retransmitted + sb.rd_retransmitted, 0u) << "the faults did not happen";
    }
    if (c == "peers") CheckPeers(a, b, s);
    return;
  }
  if (c == "idle") {
    Side* b = net.AddSide();
    ASSERT_NE(b, nullptr) << net.error;
    ASSERT_TRUE(net.Connect(*a, *b)) << net.error;
    for (uint64_t round = 1; round <= 2; ++round) {
      Stream s;
      s.from = a;
      s.to = b;
      s.count = 2000;
      s.id = round;
      s.Init();
      ASSERT_TRUE(RunStreams(net, {&s})) << "round " << round << ": " << s.error;
      s.Check();
      EXPECT_EQ(StatsOf(a).rc_opened, round);
      // Idle for 10x FI_IWARPX_RC_IDLE_MS: both ends leave the connection.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (std::chrono::steady_clock::now() < until) ASSERT_TRUE(net.PollAll());
    }
    const fi_iwarpx_ep_stats sa = StatsOf(a);
    const fi_iwarpx_ep_stats sb = StatsOf(b);
    EXPECT_EQ(sb.rc_accepted, 2u);
    EXPECT_EQ(sa.rc_failed + sb.rc_failed, 0u) << "a connection ended with an error";
    EXPECT_EQ(sa.rd_peers_failed + sb.rd_peers_failed, 0u);
    return;
  }
  if (c == "close") {
    Side* b = net.AddSide();
    ASSERT_NE(b, nullptr) << net.error;
    ASSERT_TRUE(net.Connect(*a, *b)) << net.error;
    Stream s;
    s.from = a;
    s.to = b;
    s.count = 2000;
    s.id = 1;
    s.Init();
    ASSERT_TRUE(RunStreams(net, {&s})) << s.error;
    s.Check();
    ASSERT_EQ(StatsOf(b).rc_accepted, 1u) << "the stream did not move to a connection";
    // A's fi_close (its linger drives B too: one fabric) leaves the connection
    // cleanly; then B runs on past its RD timeout (FI_IWARPX_RD_TIMEOUT=1000).
    net.CloseEp(*a);
    net.Drive(std::chrono::milliseconds(2500));
    const fi_iwarpx_ep_stats sb = StatsOf(b);
    EXPECT_EQ(sb.rc_failed, 0u) << "the peer's orderly close was counted as a failure";
    EXPECT_EQ(sb.rd_peers_failed, 0u) << "the peer's orderly close failed its RD session";
    EXPECT_EQ(sb.rdm_rc_fallbacks, 0u);
    return;
  }
  ASSERT_EQ(c, "cap") << "unknown IWARPX_RC_CASE";
  std::vector<Side*> peers;
  std::vector<Stream> streams(3);
  for (size_t i = 0; i < 3; ++i) {
    Side* p = net.AddSide();
    ASSERT_NE(p, nullptr) << net.error;
    ASSERT_TRUE(net.Connect(*a, *p)) << net.error;
    peers.push_back(p);
    streams[i].from = a;
    streams[i].to = p;
    streams[i].count = 2000;
    streams[i].id = 10 + i;
    streams[i].Init();
  }
  ASSERT_TRUE(RunStreams(net, {&streams[0], &streams[1], &streams[2]}))
      << streams[0].error << streams[1].error << streams[2].error;
  for (const Stream& s : streams) s.Check();
  const fi_iwarpx_ep_stats sa = StatsOf(a);
  EXPECT_EQ(sa.rc_opened, 1u) << "FI_IWARPX_MAX_RC=1 with three busy peers";
  uint64_t accepted = 0;
  for (Side* p : peers) accepted += StatsOf(p).rc_accepted;
  EXPECT_EQ(accepted, 1u);
  EXPECT_GT(sa.rdm_rc_sr_msgs, 0u);
  EXPECT_GT(sa.rdm_ud_sr_msgs + sa.rdm_ud_zcopy_msgs, 2 * 1900u)
      << "two peers should have stayed on datagrams";
}

}  // namespace
