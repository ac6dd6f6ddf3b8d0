// RD queue pairs end to end: two RdQps over an in-memory datagram network
// (testing/sim_datagram.h) on simulated time, with and without the seeded
// fault injector. What must hold: every message arrives exactly once, in
// order and bit-exact through loss, duplication, reordering and corruption;
// RDMA Write/Read/atomics leave exactly the expected bytes; a receiver that
// posts no receives closes the window without losing anything or being
// declared dead; a silent peer, a restarted peer and a peer that lost its
// state end the stream with error completions, never a hang.
#include "rd/rd_qp.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "rd/dgram_port.h"
#include "testing/fake_clock.h"
#include "testing/qp_harness.h"
#include "testing/sim_datagram.h"
#include "transport/fault.h"

namespace iwarpx::rd {
namespace {

using qp::test::Completion;
using qp::test::RecordingSink;
using testing::FakeClock;
using testing::SimDatagramNet;
using testing::SimDatagramSocket;

constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kQpn = 5;
constexpr uint32_t kPd = 3;

RdQpConfig SmallSegments() {
  RdQpConfig c;
  c.stream.max_segment = 1024;
  c.stream.send_buffer_bytes = 64 * 1024;
  c.stream.send.capacity = 64;
  c.stream.send.dead_after_ns = 2'000 * kMs;
  c.stream.recv.window = 64;
  c.sq_size = 256;
  c.rq_size = 256;
  return c;
}

// One host: a socket (maybe under a FaultInjector), its port, and the RdQp
// to the other host, made on demand like the RDM endpoint will.
class Host final : public DgramReceiver {
 public:
  Host(SimDatagramNet& net, uint16_t port, uint16_t peer_port, const std::string& faults,
       const RdQpConfig& config, FakeClock& clock, uint64_t seed)
      : stags(Random(seed), 64),
        peer_(transport::SockAddr::Loopback4(peer_port)),
        config_(config),
        clock_(clock),
        random_(seed * 7919 + 1) {
    auto sim = net.Open(port);
    sim_ = sim.get();
    auto spec = transport::FaultSpec::Parse(faults);
    EXPECT_TRUE(spec.ok());
    if (spec.ok() && spec->any()) {
      auto f = std::make_unique<transport::FaultInjector>(std::move(sim), *spec);
      faults_ = f.get();
      socket_ = std::move(f);
    } else {
      socket_ = std::move(sim);
    }
    port_ = std::make_unique<DgramPort>(*socket_, PortConfig{});
    EXPECT_TRUE(port_->Attach(kQpn, this));
  }

  RdQp& Qp() {
    if (!qp_) Make({});
    return *qp_;
  }
  bool has_qp() const { return qp_ != nullptr; }
  // Forgets the QP and its stream state, as a restarted process would.
  void Restart() {
    if (qp_) graveyard_.push_back(std::move(qp_));
  }

  void OnDatagram(const wire::DecodedDgram& d, const transport::SockAddr& /*from*/) override {
    RdStream::Input in = Qp().OnDatagram(d);
    if (in == RdStream::Input::kPeerRestarted) {
      ++restarts;
      const InboundSessions sessions = qp_->stream().sessions();
      qp_->Fail(ECONNRESET);
      graveyard_.push_back(std::move(qp_));
      Make(sessions);
      in = qp_->OnDatagram(d);
      EXPECT_EQ(in, RdStream::Input::kOk);
    }
  }

  size_t Poll() { return port_->OnReadable(64); }
  uint64_t Deadline() const { return qp_ ? qp_->Deadline() : UINT64_MAX; }
  void Timers() {
    if (!qp_) return;
    if (qp_->wants_socket_write()) qp_->OnSocketWritable();
    if (qp_->Deadline() <= clock_.NowNs()) qp_->OnTimer();
  }
  void FlushFaults() {
    if (faults_ != nullptr) faults_->Flush();
  }

  uint32_t Register(std::vector<uint8_t>& buf, uint32_t access) {
    mem::RegionSpec spec;
    spec.host = buf.data();
    spec.length = buf.size();
    spec.base_to = 0;
    spec.access = access;
    spec.pd = kPd;
    auto r = stags.Register(spec);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : 0;
  }

  SimDatagramSocket& sim() { return *sim_; }
  const PortCounters& counters() const { return port_->counters(); }

  mem::StagTable stags;
  RecordingSink sink;
  int restarts = 0;

 private:
  void Make(const InboundSessions& sessions) {
    auto q = RdQp::Create(*port_, peer_, kQpn, kQpn, config_, stags, kPd, sink, random_, clock_,
                          sessions);
    ASSERT_TRUE(q.ok());
    qp_ = std::move(q).value();
  }

  transport::SockAddr peer_;
  RdQpConfig config_;
  FakeClock& clock_;
  Random random_;
  SimDatagramSocket* sim_ = nullptr;
  transport::FaultInjector* faults_ = nullptr;
  std::unique_ptr<transport::DatagramSocket> socket_;
  std::unique_ptr<DgramPort> port_;
  std::unique_ptr<RdQp> qp_;
  std::vector<std::unique_ptr<RdQp>> graveyard_;
};

class RdQpTest : public ::testing::Test {
 protected:
  void SetUp() override { Build("", "", SmallSegments()); }

  void Build(const std::string& faults_a, const std::string& faults_b, const RdQpConfig& config) {
    b_.reset();
    a_.reset();
    a_ = std::make_unique<Host>(net_, 100, 200, faults_a, config, clock_, 11);
    b_ = std::make_unique<Host>(net_, 200, 100, faults_b, config, clock_, 23);
  }

  // Delivers datagrams and fires timers until `done` or `limit_ns` of
  // simulated time passed. Returns done().
  bool Run(const std::function<bool()>& done, uint64_t limit_ns = 60'000 * kMs) {
    const uint64_t end = clock_.NowNs() + limit_ns;
    for (uint64_t spins = 0; spins < 50'000'000; ++spins) {
      if (done()) return true;
      const size_t moved = a_->Poll() + b_->Poll();
      a_->Timers();
      b_->Timers();
      if (moved > 0 || net_.queued() > 0) continue;  // time moves only when the net is idle
      const uint64_t next = std::min(a_->Deadline(), b_->Deadline());
      if (next <= clock_.NowNs()) continue;
      if (next == UINT64_MAX) {
        // Quiet: release what the fault injectors still hold back.
        a_->FlushFaults();
        b_->FlushFaults();
        if (net_.queued() > 0) continue;
        return done();
      }
      if (next > end) return done();
      clock_.Set(next);
    }
    return done();
  }

  // A 10-byte Send from A into a 64-byte receive at B, run until B has it:
  // both ends then know each other's session.
  void DeliverOneMessage() {
    one_rx_.assign(64, 0);
    ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(one_rx_.data(), one_rx_.size())}), qp::QpStatus::kOk);
    one_msg_.assign(10, 1);
    qp::SendWr s;
    s.context = 1;
    s.sgl = Sgl(one_msg_.data(), one_msg_.size());
    ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
    ASSERT_TRUE(Run([&] { return b_->sink.Count(Completion::Kind::kRecv) == 1; }));
  }

  static qp::Sgl Sgl(void* p, size_t n) {
    qp::Sgl s;
    s.sge[0] = {p, n};
    s.count = 1;
    return s;
  }
  // A signaled RDMA Write of all of `src` to (stag, to) at the peer.
  static qp::WriteWr Write(uint64_t context, std::vector<uint8_t>& src, uint32_t stag,
                           uint64_t to) {
    qp::WriteWr w;
    w.context = context;
    w.sgl = Sgl(src.data(), src.size());
    w.remote_stag = stag;
    w.remote_to = to;
    return w;
  }

  SimDatagramNet net_;
  FakeClock clock_;
  std::vector<uint8_t> one_rx_, one_msg_;  // DeliverOneMessage's buffers
  std::unique_ptr<Host> a_;
  std::unique_ptr<Host> b_;
};

TEST_F(RdQpTest, SendAndReceiveBothWaysWithSegmentation) {
  std::vector<uint8_t> rx_a(8192), rx_b(8192);
  ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(rx_b.data(), rx_b.size())}), qp::QpStatus::kOk);
  ASSERT_EQ(a_->Qp().qp().PostRecv({2, Sgl(rx_a.data(), rx_a.size())}), qp::QpStatus::kOk);
  std::vector<uint8_t> msg(5000);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i * 31 + 7);
  qp::SendWr s;
  s.context = 10;
  s.sgl = Sgl(msg.data(), msg.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] { return b_->sink.Count(Completion::Kind::kRecv) == 1; }));
  EXPECT_EQ(b_->sink.completions.back().bytes, msg.size());
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), rx_b.begin()));
  // Five segments of at most 1024 bytes: one datagram each, nothing resent.
  EXPECT_EQ(a_->Qp().stream().stats().data_sent, 5u);
  EXPECT_EQ(a_->Qp().stream().stats().retransmitted, 0u);

  std::vector<uint8_t> reply = {1, 2, 3};
  s.context = 11;
  s.sgl = Sgl(reply.data(), reply.size());
  ASSERT_EQ(b_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] { return a_->sink.Count(Completion::Kind::kRecv) == 1; }));
  EXPECT_EQ(a_->sink.completions.back().bytes, 3u);
  EXPECT_EQ(rx_a[2], 3);
  EXPECT_EQ(a_->sink.Count(Completion::Kind::kError), 0u);
  EXPECT_EQ(b_->sink.Count(Completion::Kind::kError), 0u);
}

// Every in-order datagram goes to the QP whole (queue_pair.h TakeWholeFpdu):
// Sends, Writes, Read Requests and Responses never pass through the byte
// stream (no RecvV on either side), and arrive exactly as through it.
TEST_F(RdQpTest, InOrderDatagramsAreTakenWholeWithoutTheByteStream) {
  constexpr size_t kCount = 12;
  std::vector<std::vector<uint8_t>> rx(kCount, std::vector<uint8_t>(1024, 0));
  for (size_t k = 0; k < kCount; ++k) {
    ASSERT_EQ(b_->Qp().qp().PostRecv({k, Sgl(rx[k].data(), rx[k].size())}), qp::QpStatus::kOk);
  }
  std::vector<std::vector<uint8_t>> tx(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    tx[i].assign(i * 83 % 1000, static_cast<uint8_t>(0xA0 + i));  // 0 bytes first
    qp::SendWr s;
    s.context = i;
    s.sgl = Sgl(tx[i].data(), tx[i].size());
    ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  }
  std::vector<uint8_t> target(4096, 0);
  const uint32_t stag = b_->Register(target, mem::kRemoteWrite | mem::kRemoteRead);
  std::vector<uint8_t> src(3000, 0x5C);
  ASSERT_EQ(a_->Qp().qp().PostWrite(Write(100, src, stag, 100)), qp::QpStatus::kOk);
  std::vector<uint8_t> back(3000, 0);
  const uint32_t sink_stag = a_->Register(back, mem::kLocalWrite);
  qp::ReadWr r;
  r.context = 101;
  r.local_stag = sink_stag;
  r.local_to = 0;
  r.length = static_cast<uint32_t>(back.size());
  r.remote_stag = stag;
  r.remote_to = 100;
  ASSERT_EQ(a_->Qp().qp().PostRead(r), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] {
    return b_->sink.Count(Completion::Kind::kRecv) == kCount &&
           a_->sink.Count(Completion::Kind::kRdma) == 2;
  }));
  for (size_t i = 0; i < kCount; ++i) {
    const Completion& c = b_->sink.completions[i];
    ASSERT_EQ(c.context, i);
    ASSERT_EQ(c.bytes, tx[i].size());
    ASSERT_TRUE(std::equal(tx[i].begin(), tx[i].end(), rx[i].begin())) << i;
  }
  EXPECT_EQ(target[99], 0);
  EXPECT_EQ(target[100], 0x5C);
  EXPECT_EQ(target[3099], 0x5C);
  EXPECT_EQ(target[3100], 0);
  EXPECT_EQ(back, src);
  EXPECT_EQ(b_->Qp().qp().rx_stats().recv_calls, 0u);
  EXPECT_EQ(a_->Qp().qp().rx_stats().recv_calls, 0u);
  // 12 Sends and 3 Write segments at b, 3 Read Response segments at a (1 KiB each).
  EXPECT_EQ(b_->Qp().qp().rx_stats().fpdus, kCount + 3 + 1);
  EXPECT_EQ(a_->Qp().qp().rx_stats().fpdus, 3u);
  EXPECT_EQ(a_->sink.Count(Completion::Kind::kError), 0u);
  EXPECT_EQ(b_->sink.Count(Completion::Kind::kError), 0u);
}

// A Send that finds no receive is left to the byte stream (which stops on it,
// nothing lost); once receives come everything arrives once, in order, and the
// datagrams after that are taken whole again.
TEST_F(RdQpTest, ASendWithoutAReceiveFallsBackToTheStreamAndWholeDeliveryResumes) {
  std::vector<std::vector<uint8_t>> tx(4);
  auto send = [&](size_t i) {
    tx[i].assign(100 + i, static_cast<uint8_t>(i + 1));
    qp::SendWr s;
    s.context = i;
    s.sgl = Sgl(tx[i].data(), tx[i].size());
    ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  };
  for (size_t i = 0; i < 3; ++i) send(i);
  b_->Qp();
  Run([] { return false; }, 100 * kMs);
  EXPECT_EQ(b_->sink.completions.size(), 0u);
  // The first one went into the QP's staging, which stopped on it; the rest waits.
  EXPECT_GT(b_->Qp().qp().rx_staged_bytes(), 0u);
  EXPECT_GE(b_->Qp().stream().recv_window().backlog(), 1u);
  std::vector<std::vector<uint8_t>> rx(4, std::vector<uint8_t>(256, 0));
  for (size_t k = 0; k < 4; ++k) {
    ASSERT_EQ(b_->Qp().qp().PostRecv({k, Sgl(rx[k].data(), rx[k].size())}), qp::QpStatus::kOk);
  }
  ASSERT_TRUE(Run([&] { return b_->sink.completions.size() == 3; }));
  const uint64_t reads = b_->Qp().qp().rx_stats().recv_calls;
  EXPECT_GT(reads, 0u);  // the blocked Send went through the stream
  send(3);
  ASSERT_TRUE(Run([&] { return b_->sink.completions.size() == 4; }));
  EXPECT_EQ(b_->Qp().qp().rx_stats().recv_calls, reads);  // whole again
  for (size_t i = 0; i < 4; ++i) {
    const Completion& c = b_->sink.completions[i];
    ASSERT_EQ(c.kind, Completion::Kind::kRecv);
    ASSERT_EQ(c.context, i);
    ASSERT_EQ(c.bytes, tx[i].size());
    ASSERT_TRUE(std::equal(tx[i].begin(), tx[i].end(), rx[i].begin())) << i;
  }
}

// The heart of the RD service: a long stream of mixed-size messages through
// every kind of fault arrives exactly once, in order, bit-exact.
// `cork`: every burst of posts goes to a corked stream and leaves when it is
// uncorked after the burst, small ULPDUs bundled (docs/wire.md §3.6.1); most
// messages are then small (up to 60 bytes) so that bundles form.
void RunManyMessages(RdQpTest* t, Host& a, Host& b, size_t count,
                     const std::function<bool(const std::function<bool()>&)>& run,
                     bool cork = false) {
  constexpr size_t kSlots = 64;
  constexpr size_t kMax = 9000;
  std::vector<std::vector<uint8_t>> rx(kSlots, std::vector<uint8_t>(kMax));
  auto size_of = [cork](size_t i) {
    return 1 + (i * 2654435761u) % (i % 10 == 0 ? kMax : cork ? 60 : 600);
  };
  auto byte_of = [](size_t i, size_t k) { return static_cast<uint8_t>((i * 131) ^ (k * 7)); };
  for (size_t k = 0; k < kSlots; ++k) {
    qp::RecvWr r{k, {}};
    r.sgl.sge[0] = {rx[k].data(), kMax};
    r.sgl.count = 1;
    ASSERT_EQ(b.Qp().qp().PostRecv(r), qp::QpStatus::kOk);
  }
  std::vector<std::vector<uint8_t>> tx(count);
  size_t posted = 0;
  size_t received = 0;
  size_t seen_completions = 0;
  bool bad = false;
  auto pump = [&] {
    // Post sends while the SQ takes them; check and repost receives.
    if (cork) a.Qp().stream().Cork();
    while (posted < count) {
      tx[posted].resize(size_of(posted));
      for (size_t k = 0; k < tx[posted].size(); ++k) tx[posted][k] = byte_of(posted, k);
      qp::SendWr s;
      s.context = posted;
      s.sgl.sge[0] = {tx[posted].data(), tx[posted].size()};
      s.sgl.count = 1;
      if (a.Qp().qp().PostSend(s) != qp::QpStatus::kOk) break;
      ++posted;
    }
    if (cork) a.Qp().stream().Uncork();
    auto& cs = b.sink.completions;
    for (; seen_completions < cs.size(); ++seen_completions) {
      const Completion& c = cs[seen_completions];
      if (c.kind != Completion::Kind::kRecv) {
        bad = true;
        continue;
      }
      const size_t i = received++;
      const size_t slot = c.context;
      if (c.bytes != size_of(i)) bad = true;
      for (size_t k = 0; k < c.bytes && !bad; ++k) {
        if (rx[slot][k] != byte_of(i, k)) bad = true;
      }
      qp::RecvWr r{slot, {}};
      r.sgl.sge[0] = {rx[slot].data(), kMax};
      r.sgl.count = 1;
      if (b.Qp().qp().PostRecv(r) != qp::QpStatus::kOk) bad = true;
    }
    return received == count || bad;
  };
  (void)t;
  ASSERT_TRUE(run(pump));
  EXPECT_FALSE(bad) << "message " << received << " arrived damaged, out of order or as an error";
  EXPECT_EQ(received, count);
  EXPECT_EQ(a.sink.Count(Completion::Kind::kError), 0u);
  EXPECT_EQ(a.sink.Count(Completion::Kind::kSend), count);
}

TEST_F(RdQpTest, ManyMessagesArriveExactlyOnceInOrderThroughFaults) {
  const std::string faults = "drop=50,dup=30,reorder=50,corrupt=10,gap=5,seed=";
  Build(faults + "3", faults + "4", SmallSegments());
  RunManyMessages(this, *a_, *b_, 20000,
                  [&](const std::function<bool()>& pump) { return Run(pump, 600'000 * kMs); });
  const RdStreamStats& st = a_->Qp().stream().stats();
  EXPECT_GT(st.retransmitted, 0u);
  EXPECT_GT(b_->Qp().stream().stats().duplicates, 0u);
  EXPECT_GT(b_->counters().bad_crc, 0u);  // corrupted datagrams were dropped, never delivered
  // Efficiency: resends stay near the loss rate (5 % each way plus spurious ones).
  EXPECT_LT(st.retransmitted * 100, st.data_sent * 30)
      << st.retransmitted << " of " << st.data_sent;
  std::printf("data %llu, resent %llu, duplicates %llu, bad CRC %llu, held %llu\n",
              static_cast<unsigned long long>(st.data_sent),
              static_cast<unsigned long long>(st.retransmitted),
              static_cast<unsigned long long>(b_->Qp().stream().stats().duplicates),
              static_cast<unsigned long long>(b_->counters().bad_crc),
              static_cast<unsigned long long>(b_->Qp().stream().stats().held));
}

// Bundles through every fault: the same messages in the same order,
// bit-exact, as unbundled (RunManyMessages checks each against the sequence
// it posted); lost bundles come back as single resends.
TEST_F(RdQpTest, CorkedBurstsLeaveBundledAndArriveExactlyOnceInOrderThroughFaults) {
  const std::string faults = "drop=50,dup=30,reorder=50,corrupt=10,gap=5,seed=";
  Build(faults + "5", faults + "6", SmallSegments());
  RunManyMessages(
      this, *a_, *b_, 20000,
      [&](const std::function<bool()>& pump) { return Run(pump, 600'000 * kMs); }, true);
  const RdStreamStats st = a_->Qp().stream().stats();
  EXPECT_GT(st.bundles_sent, 100u);
  EXPECT_GT(st.bundled_records, 2 * st.bundles_sent - 1);
  EXPECT_GT(st.retransmitted, 0u);
  EXPECT_GT(b_->counters().bundles, 0u);
  EXPECT_FALSE(a_->Qp().stream().corked());
  std::printf("data %llu in %llu bundles (%llu records), resent %llu, duplicates %llu\n",
              static_cast<unsigned long long>(st.data_sent),
              static_cast<unsigned long long>(st.bundles_sent),
              static_cast<unsigned long long>(st.bundled_records),
              static_cast<unsigned long long>(st.retransmitted),
              static_cast<unsigned long long>(b_->Qp().stream().stats().duplicates));
}

// Without faults: bundles save datagrams, nothing is resent.
TEST_F(RdQpTest, CorkedBurstsWithoutFaultsSendFewerDatagrams) {
  RunManyMessages(
      this, *a_, *b_, 5000, [&](const std::function<bool()>& pump) { return Run(pump); }, true);
  const RdStreamStats st = a_->Qp().stream().stats();
  EXPECT_EQ(st.retransmitted, 0u);
  EXPECT_EQ(b_->Qp().stream().stats().duplicates, 0u);
  EXPECT_GT(st.bundles_sent, 0u);
  // Datagrams with data: singles plus bundles, fewer than the ULPDUs.
  EXPECT_LT(st.data_sent - st.bundled_records + st.bundles_sent, st.data_sent);
  EXPECT_EQ(b_->counters().bundles, st.bundles_sent);
}

// FI_MORE never waits unboundedly: a corked stream left corked holds its
// ULPDUs only until its next timer pass (its deadline is now), which sends
// them bundled.
TEST_F(RdQpTest, ACorkedStreamSendsWhatItHoldsAtItsNextTimerPass) {
  std::vector<uint8_t> rx_b(64), rx_c(64);
  ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(rx_b.data(), rx_b.size())}), qp::QpStatus::kOk);
  ASSERT_EQ(b_->Qp().qp().PostRecv({2, Sgl(rx_c.data(), rx_c.size())}), qp::QpStatus::kOk);
  std::vector<uint8_t> m1(8, 0x11), m2(24, 0x22);
  a_->Qp().stream().Cork();
  qp::SendWr s;
  s.context = 1;
  s.sgl = Sgl(m1.data(), m1.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  s.context = 2;
  s.sgl = Sgl(m2.data(), m2.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  EXPECT_EQ(a_->sim().sent(), 0u);  // held
  EXPECT_EQ(a_->Qp().Deadline(), 0u);
  ASSERT_TRUE(Run([&] { return b_->sink.Count(Completion::Kind::kRecv) == 2; }));
  EXPECT_TRUE(std::equal(m1.begin(), m1.end(), rx_b.begin()));
  EXPECT_TRUE(std::equal(m2.begin(), m2.end(), rx_c.begin()));
  EXPECT_EQ(a_->Qp().stream().stats().bundles_sent, 1u);
  EXPECT_EQ(a_->Qp().stream().stats().bundled_records, 2u);
  EXPECT_FALSE(a_->Qp().stream().corked());
}

// A bundle's records are acked together: 36 records (ack_every 16) draw
// one standalone ack, at the last record, not one every 16 records while
// the datagram is dispatched.
TEST_F(RdQpTest, ABundleOfManyRecordsDrawsOneAckNotOneEverySixteen) {
  constexpr size_t kCount = 36;  // 28-byte records: one bundle of at most 1024 bytes
  std::vector<std::vector<uint8_t>> rx(kCount + 1, std::vector<uint8_t>(16));
  for (size_t i = 0; i <= kCount; ++i) {
    ASSERT_EQ(b_->Qp().qp().PostRecv({i, Sgl(rx[i].data(), rx[i].size())}), qp::QpStatus::kOk);
  }
  std::vector<uint8_t> msg(8, 0x3C);
  // One message first: its ack opens the window beyond the 16 initial credits.
  qp::SendWr first;
  first.context = 100;
  first.sgl = Sgl(msg.data(), msg.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(first), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] { return a_->Qp().stream().settled(); }));
  b_->sink.completions.clear();
  const uint64_t acks_before = b_->Qp().stream().stats().acks_sent;
  a_->Qp().stream().Cork();
  for (size_t i = 0; i < kCount; ++i) {
    qp::SendWr s;
    s.context = i;
    s.sgl = Sgl(msg.data(), msg.size());
    ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  }
  a_->Qp().stream().Uncork();
  EXPECT_EQ(a_->Qp().stream().stats().bundles_sent, 1u);
  EXPECT_EQ(b_->Poll(), 1u);
  EXPECT_EQ(b_->sink.Count(Completion::Kind::kRecv), kCount);
  EXPECT_EQ(b_->Qp().stream().stats().acks_sent - acks_before, 1u);
  ASSERT_TRUE(Run([&] { return a_->Qp().stream().settled(); }));
  EXPECT_EQ(b_->Qp().stream().stats().acks_sent - acks_before, 1u);
}

TEST_F(RdQpTest, ManyMessagesWithoutFaultsNeedNoResend) {
  RunManyMessages(this, *a_, *b_, 5000,
                  [&](const std::function<bool()>& pump) { return Run(pump); });
  EXPECT_EQ(a_->Qp().stream().stats().retransmitted, 0u);
  EXPECT_EQ(b_->Qp().stream().stats().duplicates, 0u);
}

// A peer that sends a message now and then keeps a copy buffer of a few
// hundred bytes; a stream of messages grows it (records keep their bytes).
TEST_F(RdQpTest, CopyBufferStartsSmallAndGrowsWithTheFlight) {
  std::vector<uint8_t> rx(64);
  ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(rx.data(), rx.size())}), qp::QpStatus::kOk);
  std::vector<uint8_t> ping(8, 0x5A);
  qp::SendWr s;
  s.context = 1;
  s.sgl = Sgl(ping.data(), ping.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  ASSERT_TRUE(Run(
      [&] { return b_->sink.Count(Completion::Kind::kRecv) == 1 && a_->Qp().stream().settled(); }));
  EXPECT_EQ(rx[7], 0x5A);
  EXPECT_LE(a_->Qp().stream().send_buffer_allocated(), 256u);
  EXPECT_LE(b_->Qp().stream().send_buffer_allocated(), 256u);
  a_->sink.completions.clear();
  b_->sink.completions.clear();
  RunManyMessages(this, *a_, *b_, 3000,
                  [&](const std::function<bool()>& pump) { return Run(pump); });
  EXPECT_GT(a_->Qp().stream().send_buffer_allocated(), 4096u);
  EXPECT_EQ(a_->Qp().stream().stats().retransmitted, 0u);
}

TEST_F(RdQpTest, RdmaWriteReadAndAtomicsThroughFaults) {
  const std::string faults = "drop=50,dup=30,reorder=50,corrupt=10,seed=";
  Build(faults + "8", faults + "9", SmallSegments());
  constexpr size_t kLen = 256 * 1024;
  constexpr size_t kGuard = 64;
  std::vector<uint8_t> target(kLen + 2 * kGuard, 0xEE);
  std::vector<uint8_t> src(kLen), back(kLen, 0), result(8);
  for (size_t i = 0; i < kLen; ++i) src[i] = static_cast<uint8_t>(i * 13 + (i >> 9));
  const uint32_t t_stag =
      b_->Register(target, mem::kRemoteWrite | mem::kRemoteRead | mem::kRemoteAtomic);
  const uint32_t back_stag = a_->Register(back, mem::kLocalWrite);
  ASSERT_EQ(a_->Qp().qp().PostWrite(Write(1, src, t_stag, kGuard)), qp::QpStatus::kOk);
  qp::ReadWr r;
  r.context = 2;
  r.local_stag = back_stag;
  r.local_to = 0;
  r.length = kLen;
  r.remote_stag = t_stag;
  r.remote_to = kGuard;
  ASSERT_EQ(a_->Qp().qp().PostRead(r), qp::QpStatus::kOk);
  // 100 fetch-adds on the 8 bytes just after the written range's start.
  uint64_t counter = 0;
  std::memcpy(&target[kGuard + kLen], &counter, 0);  // (the guard stays 0xEE)
  size_t atomics_done = 0;
  std::vector<uint64_t> fetched(100);
  for (size_t i = 0; i < 100; ++i) {
    qp::AtomicWr a;
    a.context = 100 + i;
    a.op = wire::AtomicOp::kFetchAdd;
    a.remote_stag = t_stag;
    a.remote_to = kGuard;  // the first 8 bytes of the written data
    a.operand = 1;
    a.result = &fetched[i];
    ASSERT_EQ(a_->Qp().qp().PostAtomic(a), qp::QpStatus::kOk);
  }
  ASSERT_TRUE(Run([&] {
    atomics_done = a_->sink.Count(Completion::Kind::kRdma);
    return atomics_done == 102 || a_->sink.Count(Completion::Kind::kError) > 0;
  }));
  ASSERT_EQ(a_->sink.Count(Completion::Kind::kError), 0u);
  EXPECT_GT(a_->Qp().stream().stats().retransmitted + b_->Qp().stream().stats().retransmitted, 0u);
  // The Read ran after the Write (same stream, in order): it saw the data.
  EXPECT_TRUE(std::equal(src.begin(), src.end(), back.begin()));
  uint64_t first = 0;
  std::memcpy(&first, src.data(), 8);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(fetched[i], first + i) << i;
  uint64_t now_value = 0;
  std::memcpy(&now_value, &target[kGuard], 8);
  EXPECT_EQ(now_value, first + 100);
  EXPECT_TRUE(std::equal(src.begin() + 8, src.end(), target.begin() + kGuard + 8));
  for (size_t i = 0; i < kGuard; ++i) {
    ASSERT_EQ(target[i], 0xEE) << i;
    ASSERT_EQ(target[kGuard + kLen + i], 0xEE) << i;
  }
}

TEST_F(RdQpTest, ProtectionErrorEndsInTerminateAndErrorCompletions) {
  std::vector<uint8_t> target(4096, 0x11);
  const uint32_t ro_stag = b_->Register(target, mem::kRemoteRead);  // no remote write
  std::vector<uint8_t> src(100, 0x22);
  ASSERT_EQ(a_->Qp().qp().PostWrite(Write(7, src, ro_stag, 0)), qp::QpStatus::kOk);
  std::vector<uint8_t> rx(64);
  ASSERT_EQ(a_->Qp().qp().PostRecv({8, Sgl(rx.data(), rx.size())}), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] { return a_->sink.terminated == 1 && b_->sink.terminated == 1; }));
  EXPECT_EQ(b_->sink.term_origin, qp::TermOrigin::kSent);
  EXPECT_EQ(a_->sink.term_origin, qp::TermOrigin::kReceived);
  EXPECT_EQ(a_->sink.Count(Completion::Kind::kError), 1u);  // the receive, flushed
  EXPECT_TRUE(std::all_of(target.begin(), target.end(), [](uint8_t v) { return v == 0x11; }));
}

TEST_F(RdQpTest, ReceiverWithoutReceivesClosesTheWindowWithoutLossOrDeath) {
  RdQpConfig c = SmallSegments();
  c.stream.recv.window = 16;
  Build("", "", c);
  constexpr size_t kCount = 200;
  std::vector<std::vector<uint8_t>> msgs(kCount);
  size_t posted = 0;
  auto post = [&] {
    while (posted < kCount) {
      msgs[posted].assign(700, static_cast<uint8_t>(posted));
      qp::SendWr s;
      s.context = posted;
      s.sgl = Sgl(msgs[posted].data(), msgs[posted].size());
      if (a_->Qp().qp().PostSend(s) != qp::QpStatus::kOk) break;
      ++posted;
    }
    return false;
  };
  b_->Qp();
  // Five RD timeouts pass with nobody receiving.
  Run(post, 10'000 * kMs);
  EXPECT_FALSE(a_->Qp().stream().failed());
  EXPECT_FALSE(b_->Qp().stream().failed());
  EXPECT_EQ(b_->Qp().stream().recv_window().backlog(), 16u);  // the window is full, not lost
  EXPECT_GT(a_->Qp().stream().stats().probes_sent, 0u);
  EXPECT_EQ(b_->sink.completions.size(), 0u);
  // Receives appear: everything arrives, in order.
  std::vector<std::vector<uint8_t>> rx(kCount, std::vector<uint8_t>(1024));
  for (size_t k = 0; k < 64; ++k) {
    ASSERT_EQ(b_->Qp().qp().PostRecv({k, Sgl(rx[k].data(), rx[k].size())}), qp::QpStatus::kOk);
  }
  size_t next_rx = 64;
  ASSERT_TRUE(Run([&] {
    post();
    while (next_rx < kCount && next_rx - 64 < b_->sink.completions.size()) {
      (void)b_->Qp().qp().PostRecv({next_rx, Sgl(rx[next_rx].data(), rx[next_rx].size())});
      ++next_rx;
    }
    return b_->sink.completions.size() == kCount;
  }));
  for (size_t i = 0; i < kCount; ++i) {
    const Completion& c2 = b_->sink.completions[i];
    ASSERT_EQ(c2.kind, Completion::Kind::kRecv);
    ASSERT_EQ(c2.context, i);
    ASSERT_EQ(c2.bytes, 700u);
    ASSERT_EQ(rx[i][699], static_cast<uint8_t>(i));
  }
}

// What an endpoint waits for before it closes (FI_IWARPX_RD_LINGER): a send
// completes once copied, but the QP is settled only when the peer has
// acknowledged it; FlushAck makes the receiver's owed ack go at once.
TEST_F(RdQpTest, SettledOnlyOnceTheSendIsAcknowledgedAndFlushAckSendsTheOwedAck) {
  std::vector<uint8_t> rx(64);
  ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(rx.data(), rx.size())}), qp::QpStatus::kOk);
  EXPECT_TRUE(a_->Qp().settled()) << "nothing sent yet";
  std::vector<uint8_t> msg(10, 1);
  qp::SendWr s;
  s.context = 1;
  s.sgl = Sgl(msg.data(), msg.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  EXPECT_EQ(a_->sink.Count(Completion::Kind::kSend), 1u) << "the send completes once copied";
  EXPECT_FALSE(a_->Qp().settled()) << "completed, but only the resend copy has it";
  // B receives it (no time passes: its ack waits for the ack-request delay).
  ASSERT_GT(b_->Poll(), 0u);
  EXPECT_EQ(b_->sink.Count(Completion::Kind::kRecv), 1u);
  EXPECT_NE(b_->Qp().stream().recv_window().AckDeadline(), 0u) << "the ack is delayed";
  a_->Poll();
  EXPECT_FALSE(a_->Qp().settled()) << "no ack has gone yet";
  b_->Qp().FlushAck();
  ASSERT_GT(a_->Poll(), 0u) << "FlushAck sent nothing";
  EXPECT_TRUE(a_->Qp().settled());
  EXPECT_TRUE(b_->Qp().settled()) << "B sent no data";
  EXPECT_EQ(b_->Qp().stream().recv_window().AckDeadline(), UINT64_MAX) << "the owed ack went";
  b_->Qp().FlushAck();  // nothing owed: sends nothing
  EXPECT_EQ(a_->Poll(), 0u);
}

// A send whose only transmission was lost leaves the QP unsettled until a
// resend is acknowledged; a QP whose stream failed is settled (nothing left
// that could still be delivered).
TEST_F(RdQpTest, ALostSendKeepsTheQpUnsettledUntilItsResendIsAcknowledged) {
  std::vector<uint8_t> rx(64);
  ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(rx.data(), rx.size())}), qp::QpStatus::kOk);
  b_->sim().set_cut(true);
  std::vector<uint8_t> msg(10, 2);
  qp::SendWr s;
  s.context = 1;
  s.sgl = Sgl(msg.data(), msg.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  EXPECT_EQ(b_->Poll(), 0u) << "the cut did not drop the datagram";
  EXPECT_FALSE(a_->Qp().settled());
  b_->sim().set_cut(false);
  ASSERT_TRUE(Run([&] { return a_->Qp().settled(); }));
  EXPECT_GE(a_->Qp().stream().stats().retransmitted, 1u);
  EXPECT_EQ(b_->sink.Count(Completion::Kind::kRecv), 1u);
  // Failed: settled however much is unacknowledged.
  b_->sim().set_cut(true);
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  EXPECT_FALSE(a_->Qp().settled());
  a_->Qp().Fail(ECONNRESET);
  EXPECT_TRUE(a_->Qp().settled());
}

TEST_F(RdQpTest, SilentPeerFailsOutstandingWorkWithinTheTimeout) {
  DeliverOneMessage();
  if (HasFatalFailure()) return;
  // B goes silent; A reads from it.
  b_->sim().set_cut(true);
  std::vector<uint8_t> sink_buf(64);
  const uint32_t stag = a_->Register(sink_buf, mem::kLocalWrite);
  qp::ReadWr r;
  r.context = 2;
  r.local_stag = stag;
  r.length = 64;
  r.remote_stag = 0x1234;
  ASSERT_EQ(a_->Qp().qp().PostRead(r), qp::QpStatus::kOk);
  const uint64_t start = clock_.NowNs();
  ASSERT_TRUE(Run([&] { return a_->sink.Count(Completion::Kind::kError) == 1; }));
  const uint64_t took = clock_.NowNs() - start;
  const uint64_t dead = SmallSegments().stream.send.dead_after_ns;
  EXPECT_GE(took, dead);
  EXPECT_LE(took, dead + SmallSegments().stream.send.rto.max_ns);
  EXPECT_EQ(a_->sink.completions.back().op, qp::WcOp::kRead);
  EXPECT_EQ(a_->sink.term_origin, qp::TermOrigin::kConnectionLost);
  EXPECT_EQ(a_->Qp().stream().error(), ETIMEDOUT);
}

// Work that starts waiting on the peer after a long quiet (the owner's mark,
// SetAwaited: an RDM rendezvous) probes first: a live peer answers and is
// not taken for dead although it was silent for three RD timeouts; once it
// goes silent the stream fails one RD timeout after it was last heard.
TEST_F(RdQpTest, AMarkAfterALongQuietProbesBeforeItGivesUp) {
  DeliverOneMessage();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(Run([&] { return a_->Deadline() == UINT64_MAX; }));
  const uint64_t dead = SmallSegments().stream.send.dead_after_ns;
  clock_.Set(clock_.NowNs() + 3 * dead);
  a_->Qp().SetAwaited(true);
  EXPECT_FALSE(Run([&] { return a_->Qp().stream().failed(); }, 2 * dead))
      << "a live peer was taken for dead after a quiet";
  EXPECT_GE(a_->Qp().stream().stats().probes_sent, 2u);
  b_->sim().set_cut(true);
  const uint64_t start = clock_.NowNs();
  ASSERT_TRUE(Run([&] { return a_->Qp().stream().failed(); }, 3 * dead));
  EXPECT_LE(clock_.NowNs() - start, dead + dead / 8);
  EXPECT_EQ(a_->Qp().stream().error(), ETIMEDOUT);
}

TEST_F(RdQpTest, RestartedPeerIsDetectedAndTheNewSessionWorks) {
  std::vector<uint8_t> rx_a(64), rx_b(64);
  ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(rx_b.data(), rx_b.size())}), qp::QpStatus::kOk);
  ASSERT_EQ(a_->Qp().qp().PostRecv({2, Sgl(rx_a.data(), rx_a.size())}), qp::QpStatus::kOk);
  std::vector<uint8_t> msg(10, 1);
  qp::SendWr s;
  s.context = 1;
  s.sgl = Sgl(msg.data(), msg.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  // Until B's (delayed) ack arrived: A then knows B's session.
  ASSERT_TRUE(Run([&] {
    return b_->sink.Count(Completion::Kind::kRecv) == 1 &&
           a_->Qp().stream().send_window().outstanding() == 0;
  }));
  // B restarts (new QP, new session) and sends to A.
  b_->Restart();
  s.context = 2;
  ASSERT_EQ(b_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  // A notices the new session: its old QP fails (the posted receive is
  // flushed with an error) and a new one takes the message.
  ASSERT_TRUE(Run([&] { return a_->restarts == 1; }));
  EXPECT_EQ(a_->sink.Count(Completion::Kind::kError), 1u);
  ASSERT_EQ(a_->Qp().qp().PostRecv({3, Sgl(rx_a.data(), rx_a.size())}), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] { return a_->sink.Count(Completion::Kind::kRecv) == 1; }));
  EXPECT_EQ(a_->sink.completions.back().context, 3u);
}

TEST_F(RdQpTest, PeerThatLostItsStateAnswersResetAndTheSenderFails) {
  std::vector<uint8_t> rx_b(64);
  ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(rx_b.data(), rx_b.size())}), qp::QpStatus::kOk);
  std::vector<uint8_t> msg(10, 1);
  qp::SendWr s;
  s.context = 1;
  s.sgl = Sgl(msg.data(), msg.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] {
    return b_->sink.Count(Completion::Kind::kRecv) == 1 &&
           !a_->Qp().stream().wants_socket_write() &&
           a_->Qp().stream().send_window().outstanding() == 0;
  }));
  b_->Restart();  // B forgets A's session; A's next datagram carries no Y
  std::vector<uint8_t> rx_a(64);
  ASSERT_EQ(a_->Qp().qp().PostRecv({2, Sgl(rx_a.data(), rx_a.size())}), qp::QpStatus::kOk);
  s.context = 2;
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] { return a_->Qp().stream().failed(); }));
  EXPECT_EQ(a_->Qp().stream().error(), ECONNRESET);
  EXPECT_GE(b_->Qp().stream().stats().resets_sent, 1u);
  EXPECT_EQ(a_->sink.term_origin, qp::TermOrigin::kConnectionLost);
  EXPECT_EQ(a_->sink.Count(Completion::Kind::kError), 1u);  // the receive
}

TEST_F(RdQpTest, SocketThatRefusesSendsDelaysButLosesNothing) {
  std::vector<uint8_t> rx(4096);
  ASSERT_EQ(b_->Qp().qp().PostRecv({1, Sgl(rx.data(), rx.size())}), qp::QpStatus::kOk);
  a_->sim().set_refuse_sends(true);
  std::vector<uint8_t> msg(3000, 9);
  qp::SendWr s;
  s.context = 1;
  s.sgl = Sgl(msg.data(), msg.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  EXPECT_TRUE(a_->Qp().wants_socket_write());
  EXPECT_GT(a_->Qp().stream().stats().send_blocked, 0u);
  a_->sim().set_refuse_sends(false);
  ASSERT_TRUE(Run([&] { return b_->sink.Count(Completion::Kind::kRecv) == 1; }));
  EXPECT_EQ(b_->sink.completions.back().bytes, 3000u);
  EXPECT_EQ(a_->Qp().stream().stats().retransmitted, 0u);
}

// Zero copy on the responder: Read Response payloads leave from the lent
// region (stats().lent counts them) and every lend is returned once acked.
// A region deregistered while its Read Responses are still unacknowledged is
// reclaimed first: resends carry the bytes it held when they were read, even
// after the application reuses the memory.
class RdQpLendTest : public RdQpTest {
 protected:
  static constexpr size_t kSegs = 16;
  static constexpr size_t kLen = kSegs * (1024 - wire::kDdpTaggedHeaderSize);  // 16 datagrams

  void StartRead(std::vector<uint8_t>& target, std::vector<uint8_t>& back) {
    for (size_t i = 0; i < kLen; ++i) target[i] = static_cast<uint8_t>(i * 7 + (i >> 8));
    t_stag_ = b_->Register(target, mem::kRemoteRead);
    qp::ReadWr r;
    r.context = 1;
    r.local_stag = a_->Register(back, mem::kLocalWrite);
    r.length = kLen;
    r.remote_stag = t_stag_;
    ASSERT_EQ(a_->Qp().qp().PostRead(r), qp::QpStatus::kOk);
  }
  bool ReadDone() const {
    return a_->sink.Count(Completion::Kind::kRdma) + a_->sink.Count(Completion::Kind::kError) > 0;
  }
  uint32_t t_stag_ = 0;
};

TEST_F(RdQpLendTest, ReadResponsesAreLentAndReturnedWhenAcked) {
  std::vector<uint8_t> target(kLen), back(kLen, 0);
  StartRead(target, back);
  ASSERT_TRUE(Run([&] { return ReadDone(); }));
  ASSERT_EQ(a_->sink.Count(Completion::Kind::kError), 0u);
  EXPECT_EQ(back, target);
  EXPECT_EQ(b_->Qp().stream().stats().lent, kSegs);
  EXPECT_EQ(b_->Qp().stream().stats().reclaimed, 0u);
  ASSERT_TRUE(Run([&] { return b_->Qp().stream().send_window().outstanding() == 0; }));
  EXPECT_EQ(b_->stags.lent(t_stag_), 0u);
}

TEST_F(RdQpLendTest, DeregisteredRegionIsReclaimedAndResendsKeepItsBytes) {
  Build("", "drop=300,seed=5", SmallSegments());  // a third of B's datagrams are lost
  std::vector<uint8_t> target(kLen), back(kLen, 0);
  StartRead(target, back);
  const std::vector<uint8_t> expected = target;
  // Every Read Response is out (lent), none acknowledged yet.
  ASSERT_TRUE(Run([&] { return b_->Qp().stream().stats().lent == kSegs; }));
  ASSERT_EQ(b_->stags.lent(t_stag_), kSegs);
  ASSERT_TRUE(b_->stags.Deregister(t_stag_));
  EXPECT_EQ(b_->Qp().stream().stats().reclaimed, kSegs);
  std::fill(target.begin(), target.end(), 0xA5);  // the application reuses the memory
  ASSERT_TRUE(Run([&] { return ReadDone(); }));
  ASSERT_EQ(a_->sink.Count(Completion::Kind::kError), 0u);
  EXPECT_GT(b_->Qp().stream().stats().retransmitted, 0u);
  EXPECT_EQ(back, expected);
}

// An application that unmaps a region it still has registered (Open MPI's
// registration cache can) while Read Responses from it await a resend: the
// responder reads the lent bytes back through the kernel, finds them gone,
// and never sends them again, instead of faulting.
TEST_F(RdQpLendTest, UnmappedRegionIsNeverReadAgain) {
  Build("", "drop=300,seed=5", SmallSegments());
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = (kLen + page - 1) / page * page;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* mem = static_cast<uint8_t*>(m);
  for (size_t i = 0; i < kLen; ++i) mem[i] = static_cast<uint8_t>(i * 7 + (i >> 8));
  const std::vector<uint8_t> expected(mem, mem + kLen);
  mem::RegionSpec region;
  region.host = mem;
  region.length = kLen;
  region.access = mem::kRemoteRead;
  region.pd = kPd;
  auto st = b_->stags.Register(region);
  ASSERT_TRUE(st.ok());
  t_stag_ = *st;
  std::vector<uint8_t> back(kLen, 0);
  qp::ReadWr r;
  r.context = 1;
  r.local_stag = a_->Register(back, mem::kLocalWrite);
  r.length = kLen;
  r.remote_stag = t_stag_;
  ASSERT_EQ(a_->Qp().qp().PostRead(r), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] { return b_->Qp().stream().stats().lent == kSegs; }));
  ASSERT_EQ(mprotect(mem, bytes, PROT_NONE), 0);  // gone, still registered
  // Resends find the bytes gone: no fault; the responder's stream gives up
  // (EFAULT) once the dead timeout passes without the peer's ack; its lends
  // go back when the failed QP is destroyed. (The requester learns through the RESET sent then; a
  // requester whose RESET is lost has no liveness check of its own for a
  // Read in flight: left for the next increment, docs/design.md.)
  ASSERT_TRUE(Run([&] { return ReadDone() || b_->Qp().stream().failed(); }));
  EXPECT_GT(b_->Qp().stream().stats().unreadable, 0u);
  if (a_->sink.Count(Completion::Kind::kRdma) != 0) {
    EXPECT_EQ(back, expected);
  }
  ASSERT_EQ(munmap(mem, bytes), 0);
}

TEST_F(RdQpLendTest, LentBytesCountAgainstTheSendBuffer) {
  RdQpConfig c = SmallSegments();
  c.stream.send_buffer_bytes = 4096;  // four 1024-byte ULPDUs, lent or not
  Build("", "", c);
  std::vector<uint8_t> target(kLen), back(kLen, 0);
  StartRead(target, back);
  uint32_t most = 0;
  ASSERT_TRUE(Run([&] {
    most = std::max(most, b_->Qp().stream().send_window().outstanding());
    return ReadDone();
  }));
  EXPECT_EQ(back, target);
  // Each time the budget stops the QP, the Read Response it had built is
  // stashed (copied), so not every one leaves lent.
  EXPECT_GT(b_->Qp().stream().stats().lent, 0u);
  EXPECT_GT(most, 0u);
  EXPECT_LE(most, 4u);
}

TEST_F(RdQpLendTest, WithoutLendingEveryPayloadIsCopied) {
  RdQpConfig c = SmallSegments();
  c.stream.lend_reads = false;
  Build("", "", c);
  std::vector<uint8_t> target(kLen), back(kLen, 0);
  StartRead(target, back);
  ASSERT_TRUE(Run([&] { return ReadDone(); }));
  EXPECT_EQ(back, target);
  EXPECT_EQ(b_->Qp().stream().stats().lent, 0u);
}

// A corked stream numbers the ULPDUs it holds (AcceptUlpdu) but sends none
// of them before Uncork(): an ack that reaches one (forged, or from a
// confused peer) is ignored whole. Before that rule it released the held
// records and their buffer bytes, and Uncork() then sent the released slots,
// whose bytes belonged to later messages (found by review25).
TEST_F(RdQpTest, AnAckOfHeldRecordsIsIgnoredAndUncorkSendsEachMessageOnce) {
  constexpr size_t kRx = 8;
  std::vector<std::vector<uint8_t>> rx(kRx, std::vector<uint8_t>(16, 0));
  for (size_t i = 0; i < kRx; ++i) {
    ASSERT_EQ(b_->Qp().qp().PostRecv({i, Sgl(rx[i].data(), rx[i].size())}), qp::QpStatus::kOk);
  }
  std::vector<uint8_t> rx_a(16);
  ASSERT_EQ(a_->Qp().qp().PostRecv({50, Sgl(rx_a.data(), rx_a.size())}), qp::QpStatus::kOk);
  // Both sessions adopted: one message each way.
  std::vector<uint8_t> warm(8, 0x01);
  qp::SendWr s;
  s.context = 100;
  s.sgl = Sgl(warm.data(), warm.size());
  ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  ASSERT_EQ(b_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  ASSERT_TRUE(Run([&] {
    return a_->Qp().stream().settled() && b_->Qp().stream().settled() &&
           a_->sink.Count(Completion::Kind::kRecv) == 1;
  }));
  std::vector<std::vector<uint8_t>> msgs;
  for (uint8_t v = 0x11; v <= 0x66; v += 0x11) msgs.emplace_back(8, v);
  a_->Qp().stream().Cork();
  for (size_t i = 0; i < 3; ++i) {
    s.context = 200 + i;
    s.sgl = Sgl(msgs[i].data(), msgs[i].size());
    ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  }
  const uint32_t una = a_->Qp().stream().send_window().snd_una();
  // An ack of everything numbered, the held records included, then one that
  // acks none of them but SACKs the last: both reach held records.
  wire::DecodedDgram d;
  d.header.type = wire::DgramType::kRdAck;
  d.header.dst_qpn = a_->Qp().stream().local_qpn();
  d.header.src_qpn = a_->Qp().stream().peer_qpn();
  d.header.session = a_->Qp().stream().sessions().current();
  d.header.has_ack = true;
  d.header.echo_session = b_->Qp().stream().sessions().current();
  d.header.ack = a_->Qp().stream().send_window().snd_nxt();
  d.header.credits = 16;
  d.header.seq = b_->Qp().stream().send_window().snd_nxt();
  (void)a_->Qp().OnDatagram(d);
  EXPECT_EQ(a_->Qp().stream().send_window().snd_una(), una);
  d.header.ack = una;
  d.header.has_sack = true;
  d.header.sack = 1u << 1;  // seq una + 2: the last held record
  (void)a_->Qp().OnDatagram(d);
  EXPECT_EQ(a_->Qp().stream().send_window().snd_una(), una);
  for (size_t i = 3; i < 6; ++i) {
    s.context = 200 + i;
    s.sgl = Sgl(msgs[i].data(), msgs[i].size());
    ASSERT_EQ(a_->Qp().qp().PostSend(s), qp::QpStatus::kOk);
  }
  a_->Qp().stream().Uncork();
  ASSERT_TRUE(Run(
      [&] { return b_->sink.Count(Completion::Kind::kRecv) == 7 && a_->Qp().stream().settled(); }));
  for (size_t i = 1; i < 7; ++i) {
    EXPECT_TRUE(std::equal(msgs[i - 1].begin(), msgs[i - 1].end(), rx[i].begin()))
        << "message " << i;
  }
  EXPECT_FALSE(a_->Qp().failed());
  EXPECT_EQ(b_->Qp().stream().stats().duplicates, 0u);
  EXPECT_EQ(b_->sink.Count(Completion::Kind::kRecv), 7u);
}

}  // namespace
}  // namespace iwarpx::rd
