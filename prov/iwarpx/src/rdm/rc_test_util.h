// Test harness shared by the connected-channel tests of RdmCore
// (rc_promotion_test.cc, rc_fastpath_core_test.cc): nodes on one real
// engine with loopback UDP and TCP, and flows of tagged messages whose every
// receive must hold the message of the same index (matching order = send
// order), bit-exact, exactly once.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "rdm/rdm_core.h"
#include "testing/engine_fixture.h"

namespace iwarpx::rdm::testing_rc {

struct Sink final : RdmSink {
  size_t send_done = 0;
  size_t send_failed = 0;
  size_t recv_failed = 0;
  std::vector<std::pair<uint64_t, RecvResult>> recvs;
  // RMA (rc_rma_core_test.cc): contexts done and failed, remote CQ data.
  std::vector<uint64_t> rma_done;
  std::vector<std::pair<uint64_t, qp::WcError>> rma_failed;
  std::vector<uint64_t> remote_data;
  // Called at each receive's completion, when the receiver's application
  // would look at it (before the engine runs on).
  std::function<void(uint64_t, const RecvResult&)> on_recv;
  void SendDone(uint64_t /*c*/) override { ++send_done; }
  void SendFailed(uint64_t /*c*/, int /*err*/) override { ++send_failed; }
  void RecvDone(uint64_t c, const RecvResult& r) override {
    if (on_recv) on_recv(c, r);
    recvs.emplace_back(c, r);
  }
  void RecvFailed(uint64_t /*c*/, int /*err*/) override { ++recv_failed; }
  void RmaDone(uint64_t c) override { rma_done.push_back(c); }
  void RmaFailed(uint64_t c, const qp::WcError& e) override { rma_failed.emplace_back(c, e); }
  void RemoteWriteData(uint64_t data, PeerId /*src*/) override { remote_data.push_back(data); }
  std::vector<std::pair<PeerEvent, int>> events;
  void OnPeerEvent(PeerId /*id*/, const transport::SockAddr& /*addr*/, PeerEvent e,
                   int err) override {
    events.emplace_back(e, err);
  }
  [[nodiscard]] size_t EventCount(PeerEvent e) const {
    size_t n = 0;
    for (const auto& [ev, err] : events) n += ev == e ? 1 : 0;
    return n;
  }
};

struct Node {
  mem::StagTable stags{Random(3), 4096};
  Sink sink;
  std::unique_ptr<RdmCore> core;
};

inline std::vector<uint8_t> Pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed * 7 + (i >> 12));
  return v;
}

// One direction of traffic: `count` tagged messages (tag = index) from one
// node to another, receives posted with every tag bit ignored, so receive i
// must hold message i (matching order = send order).
struct Flow {
  Node* from = nullptr;
  Node* to = nullptr;
  size_t count = 0;
  size_t (*size_of)(size_t) = nullptr;
  std::vector<std::vector<uint8_t>> tx, rx;
  size_t sent = 0;
  size_t posted = 0;
  size_t window = 32;  // messages in flight: small, so the engine runs mid-stream
  // Count messages in flight up to the receiver's completions instead of the
  // sender's (an eager send completes once the stream holds it: TCP's buffer
  // would take a whole flow before the receiver runs once).
  bool paced = false;

  void Init() {
    tx.resize(count);
    rx.resize(count);
  }
  void Step() {
    while (posted < count && posted < to->sink.recvs.size() + 2 * window) {
      rx[posted].assign(size_of(posted), 0);
      iovec v{rx[posted].data(), rx[posted].size()};
      RecvRequest r;
      r.tagged = true;
      r.ignore = ~uint64_t{0};
      r.context = posted;
      r.iov = &v;
      r.count = 1;
      if (to->core->PostRecv(r) != RdmStatus::kOk) break;
      ++posted;
    }
    const size_t done =
        paced ? to->sink.recvs.size() : from->sink.send_done + from->sink.send_failed;
    while (sent < count && sent < done + window) {
      tx[sent] = Pattern(size_of(sent), sent);
      iovec v{tx[sent].data(), tx[sent].size()};
      if (from->core->Send(to->core->local_address(), &v, 1, true, sent, false, 0, sent) !=
          RdmStatus::kOk) {
        break;
      }
      ++sent;
    }
    from->core->AfterPost();
    to->core->AfterPost();
  }
  [[nodiscard]] bool Done() const {
    return to->sink.recvs.size() >= count && from->sink.send_done >= count;
  }
  // Every message exactly once, in order, bit-exact.
  void Check() const {
    ASSERT_EQ(to->sink.recvs.size(), count);
    std::vector<int> seen(count, 0);
    for (const auto& [ctx, r] : to->sink.recvs) {
      ASSERT_LT(ctx, count);
      ++seen[ctx];
      ASSERT_EQ(r.tag, ctx) << "receive " << ctx << " matched message " << r.tag;
      ASSERT_EQ(r.len, tx[ctx].size()) << ctx;
      ASSERT_TRUE(rx[ctx] == tx[ctx]) << ctx;
    }
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(seen[i], 1) << i;
    EXPECT_EQ(from->sink.send_failed, 0u);
  }
};

// What a node did, for failure messages.
inline std::string Dump(const Node& n) {
  const RdmCore::Counters& c = n.core->counters();
  char buf[640];
  snprintf(buf, sizeof buf,
           "\n  opened %lu accepted %lu rejected %lu failed %lu switches %lu | ud_sr %lu "
           "ud_zcopy %lu rc_sr %lu rc_rdma %lu | links %u peers_failed %lu protocol_errors %lu "
           "| sends done %zu failed %zu, recvs done %zu failed %zu | fp sent %lu received %lu "
           "credit writes %lu rings %u",
           c.rc_opened, c.rc_accepted, c.rc_rejected, c.rc_failed, c.rc_switches, c.ud_sr_msgs,
           c.ud_zcopy_msgs, c.rc_sr_msgs, c.rc_rdma_msgs, n.core->rc_links(), c.peers_failed,
           c.protocol_errors, n.sink.send_done, n.sink.send_failed, n.sink.recvs.size(),
           n.sink.recv_failed, c.rc_fp_msgs, c.rc_fp_received, c.fp_credit_writes,
           n.core->fp_links());
  return buf;
}

// Mostly eager, every 17th a rendezvous (the bounce holds 4064 bytes).
inline size_t MixedSize(size_t i) {
  return i % 17 == 0 ? 20000 + (i * 7919) % 60000 : (i * 7919) % 3000;
}

class RcCoreTest : public testing::EngineFixture<::testing::Test, 60> {
 protected:
  void TearDown() override {
    std::lock_guard<std::mutex> lock(engine_->mu());
    for (auto& n : nodes_) n->core.reset();
  }
  static RdmConfig Config(const char* chain = "any:rc_sr,any:ud_sr,any:ud_zcopy") {
    RdmConfig c;
    c.channel.pd = 1;
    c.channel.qp.stream.send.dead_after_ns = 2'000'000'000;
    c.channel.qp.sq_size = 256;  // as the provider (ofi/rdm_ep.cc kPerPeerSq)
    c.channel.qp.rq_size = 16;
    c.bounce_size = 4096;
    auto rules = SendRuleChain::Parse(chain);
    EXPECT_TRUE(rules.ok());
    if (rules.ok()) c.send_rules = std::move(rules).value();
    c.rc.threshold_msgs = 100;
    c.rc.threshold_bytes = uint64_t{1} << 40;
    return c;
  }
  Node& Add(const RdmConfig& c, const transport::FaultSpec& faults = {}) {
    nodes_.push_back(std::make_unique<Node>());
    Node& n = *nodes_.back();
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto core =
        RdmCore::Open(*engine_, transport::SockAddr::Loopback4(0), c, n.stags, n.sink, faults);
    EXPECT_TRUE(core.ok());
    if (core.ok()) n.core = std::move(core).value();
    return n;
  }
  bool Run(const std::vector<Flow*>& flows, int seconds = 60) {
    return RunUntil(
        [&] {
          bool all = true;
          for (Flow* f : flows) {
            f->Step();
            all = all && f->Done();
          }
          return all;
        },
        seconds);
  }
  static Flow MakeFlow(Node& from, Node& to, size_t count) {
    Flow f;
    f.from = &from;
    f.to = &to;
    f.count = count;
    f.size_of = MixedSize;
    f.Init();
    return f;
  }

  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace iwarpx::rdm::testing_rc
