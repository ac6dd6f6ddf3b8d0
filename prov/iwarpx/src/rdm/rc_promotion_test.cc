// RdmCore's connected channels on a real engine, real UDP and TCP sockets
// (loopback): a peer moves from datagrams to an on-demand connection
// mid-stream with every message matched exactly once, in order, bit-exact
// (also through datagram faults); thresholds, the cap, simultaneous connects
// (the lower address's connection wins on both sides), a connect that
// fails, and an established connection that breaks (no error: the
// lossless fall-back, rc_fallback_test.cc has the rest; traffic goes on over
// datagrams and promotes again). Per-peer statistics
// (rdm/peer_stats.h) follow every move: sender and receiver count each
// message once, on the channel that carried it.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rc_hello.h"
#include "rdm/rc_test_util.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {
namespace {

using namespace testing_rc;  // NOLINT(google-build-using-namespace): the shared harness

class RcPromotionTest : public RcCoreTest {
 protected:
  // Two nodes with config `c` exchanging 1500 messages each way at once (a
  // third of them 30000 B rendezvous, the rest 100 B), all checked: nothing
  // lost, failed or reordered, no protocol error. Returns the first node.
  Node& BothWays(const RdmConfig& c) {
    Node& a = Add(c);
    Node& b = Add(c);
    Flow ab = MakeFlow(a, b, 1500);
    Flow ba = MakeFlow(b, a, 1500);
    ab.size_of = ba.size_of = [](size_t i) { return i % 3 == 0 ? size_t{30000} : size_t{100}; };
    EXPECT_TRUE(Run({&ab, &ba})) << Dump(a) << Dump(b);
    ab.Check();
    ba.Check();
    EXPECT_EQ(a.core->counters().protocol_errors + b.core->counters().protocol_errors, 0u);
    EXPECT_EQ(a.sink.recv_failed + b.sink.recv_failed, 0u);
    return a;
  }
};

TEST(RcHelloTest, RoundTripAndRefusals) {
  const auto h = EncodeRcHello(4791);
  ASSERT_EQ(DecodeRcHello(ByteSpan(h.data(), h.size())), std::optional<uint16_t>(4791));
  for (size_t i = 0; i < h.size(); ++i) {
    auto bad = h;
    bad[i] ^= (i >= 6 ? 0xFF : 0x01);
    if (i >= 6) {
      // Another port is another hello; only port 0 is refused.
      continue;
    }
    EXPECT_FALSE(DecodeRcHello(ByteSpan(bad.data(), bad.size()))) << i;
  }
  const auto zero = EncodeRcHello(0);
  EXPECT_FALSE(DecodeRcHello(ByteSpan(zero.data(), zero.size())));
  EXPECT_FALSE(DecodeRcHello(ByteSpan(h.data(), h.size() - 1)));
  const auto caller = RcCaller(transport::SockAddr::Loopback4(50000), ByteSpan(h.data(), h.size()));
  ASSERT_TRUE(caller);
  EXPECT_EQ(*caller, transport::SockAddr::Loopback4(4791));
  EXPECT_TRUE(RcLower(transport::SockAddr::Loopback4(10), transport::SockAddr::Loopback4(11)));
  EXPECT_FALSE(RcLower(transport::SockAddr::Loopback4(11), transport::SockAddr::Loopback4(10)));
  EXPECT_FALSE(RcLower(transport::SockAddr::Loopback4(10), transport::SockAddr::Loopback4(10)));
}

TEST_F(RcPromotionTest, DefaultChainNeverListensOrConnects) {
  Node& a = Add(Config("any:ud_sr,any:ud_zcopy"));
  Node& b = Add(Config("any:ud_sr,any:ud_zcopy"));
  Flow f = MakeFlow(a, b, 400);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  EXPECT_FALSE(a.core->rc_available());
  EXPECT_EQ(a.core->counters().rc_opened, 0u);
  EXPECT_EQ(a.core->counters().rc_sr_msgs + a.core->counters().rc_rdma_msgs, 0u);
}

// Eager sizes on datagrams, rendezvous sizes on the connection: only the
// messages the chain would put on a connection count toward the threshold
// (100 messages here), so 300 small ones open nothing, and the connection
// comes with the 100th large one (counting every message would open it with
// the 100th small one, and every large one would then go on it).
TEST_F(RcPromotionTest, CountsOnlyMessagesTheChainWouldPutOnTheConnection) {
  const RdmConfig c = Config("size<=1000:ud_sr,any:rc_rdma,any:ud_zcopy");
  Node& a = Add(c);
  Node& b = Add(c);
  ASSERT_TRUE(a.core->rc_available());
  Flow f = MakeFlow(a, b, 600);
  f.size_of = [](size_t i) { return i < 300 ? size_t{100} : size_t{30000}; };
  f.paced = true;  // the receiver keeps up: no message overtakes the small phase
  ASSERT_TRUE(Run({&f}, 120)) << Dump(a) << Dump(b);
  f.Check();
  const RdmCore::Counters& n = a.core->counters();
  EXPECT_EQ(n.rc_opened, 1u) << Dump(a);
  EXPECT_EQ(n.ud_sr_msgs, 300u) << Dump(a);
  // The first 100 large ones went before any connect started.
  EXPECT_GE(n.ud_zcopy_msgs, 100u) << Dump(a);
  EXPECT_GT(n.rc_rdma_msgs, 0u) << Dump(a);
  EXPECT_EQ(n.ud_zcopy_msgs + n.rc_rdma_msgs, 300u) << Dump(a);
}

TEST_F(RcPromotionTest, SmallMessagesAloneOpenNoConnection) {
  const RdmConfig c = Config("size<=1000:ud_sr,any:rc_rdma,any:ud_zcopy");
  Node& a = Add(c);
  Node& b = Add(c);
  Flow f = MakeFlow(a, b, 400);
  f.size_of = [](size_t) { return size_t{100}; };
  ASSERT_TRUE(Run({&f})) << Dump(a) << Dump(b);
  f.Check();
  EXPECT_TRUE(a.core->rc_available());  // listening, as the chain names rc_rdma
  EXPECT_EQ(a.core->counters().rc_opened + b.core->counters().rc_opened, 0u) << Dump(a);
  EXPECT_EQ(a.core->counters().ud_sr_msgs, 400u);
}

TEST_F(RcPromotionTest, MovesToTheConnectionMidStreamInOrder) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  ASSERT_TRUE(a.core->rc_available());
  Flow f = MakeFlow(a, b, 3000);
  ASSERT_TRUE(Run({&f}, 120));
  f.Check();
  const RdmCore::Counters& c = a.core->counters();
  EXPECT_EQ(c.rc_opened, 1u);
  EXPECT_EQ(b.core->counters().rc_accepted, 1u);
  EXPECT_EQ(c.rc_switches, 1u);
  EXPECT_EQ(c.rc_failed, 0u);
  // Before the threshold on datagrams, after it on the connection (eager and
  // rendezvous); nothing went back to datagrams after the SWITCH.
  EXPECT_GE(c.ud_sr_msgs + c.ud_zcopy_msgs, 100u);
  EXPECT_GT(c.rc_sr_msgs, 2000u);
  EXPECT_GT(c.rc_rdma_msgs, 100u);
  EXPECT_EQ(c.ud_sr_msgs + c.ud_zcopy_msgs + c.rc_sr_msgs + c.rc_rdma_msgs, 3000u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_TRUE(a.core->SendsOnRc(b.core->local_address()));
  EXPECT_EQ(a.core->rc_links(), 1u);
  EXPECT_EQ(b.core->rc_links(), 1u);
}

// Sum over the channels of one peer's counts.
ChannelCounts Sum(const PeerStats& s) {
  ChannelCounts t;
  for (const ChannelCounts& c : s.channel) {
    t.msgs_sent += c.msgs_sent;
    t.bytes_sent += c.bytes_sent;
    t.msgs_received += c.msgs_received;
    t.bytes_received += c.bytes_received;
  }
  return t;
}

const ChannelCounts& On(const PeerStats& s, Channel c) {
  return s.channel[static_cast<size_t>(c)];
}

TEST_F(RcPromotionTest, PerPeerCountsFollowTheMoveToTheConnection) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Flow f = MakeFlow(a, b, 3000);
  ASSERT_TRUE(Run({&f}, 120));
  f.Check();
  uint64_t bytes = 0;
  for (size_t i = 0; i < f.count; ++i) bytes += MixedSize(i);
  std::lock_guard<std::mutex> lock(engine_->mu());
  ASSERT_EQ(a.core->peer_count(), 1u);
  ASSERT_EQ(b.core->peer_count(), 1u);
  PeerSnapshot sa;
  PeerSnapshot sb;
  ASSERT_TRUE(a.core->Snapshot(0, &sa));
  ASSERT_TRUE(b.core->Snapshot(0, &sb));
  EXPECT_FALSE(a.core->Snapshot(1, &sa));
  EXPECT_EQ(sa.addr, b.core->local_address());
  EXPECT_EQ(sb.addr, a.core->local_address());
  EXPECT_EQ(sa.state, PeerState::kConnected);
  EXPECT_EQ(sb.state, PeerState::kConnected);
  // The sender: first on datagrams (eager and rendezvous), then on the
  // connection; the endpoint-wide counters agree channel by channel.
  const RdmCore::Counters& c = a.core->counters();
  EXPECT_EQ(On(sa.stats, Channel::kUdSr).msgs_sent, c.ud_sr_msgs);
  EXPECT_EQ(On(sa.stats, Channel::kUdZcopy).msgs_sent, c.ud_zcopy_msgs);
  EXPECT_EQ(On(sa.stats, Channel::kRcSr).msgs_sent, c.rc_sr_msgs);
  EXPECT_EQ(On(sa.stats, Channel::kRcRdma).msgs_sent, c.rc_rdma_msgs);
  EXPECT_GE(On(sa.stats, Channel::kUdSr).msgs_sent, 90u);
  EXPECT_GT(On(sa.stats, Channel::kRcSr).msgs_sent, 2000u);
  EXPECT_EQ(On(sa.stats, Channel::kRcFp).msgs_sent, 0u);
  EXPECT_EQ(Sum(sa.stats).msgs_sent, 3000u);
  EXPECT_EQ(Sum(sa.stats).bytes_sent, bytes);
  EXPECT_EQ(Sum(sa.stats).msgs_received, 0u);
  // The receiver saw each message on the channel it was sent on.
  for (size_t ch = 0; ch < kChannelCount; ++ch) {
    EXPECT_EQ(sb.stats.channel[ch].msgs_received, sa.stats.channel[ch].msgs_sent) << ch;
    EXPECT_EQ(sb.stats.channel[ch].bytes_received, sa.stats.channel[ch].bytes_sent) << ch;
  }
  EXPECT_EQ(Sum(sb.stats).msgs_sent, 0u);
  EXPECT_EQ(sa.stats.rc_opened, 1u);
  EXPECT_EQ(sa.stats.rc_accepted, 0u);
  EXPECT_EQ(sb.stats.rc_accepted, 1u);
  EXPECT_EQ(sa.stats.rc_closed + sb.stats.rc_closed, 0u);
  EXPECT_EQ(sa.stats.rd_sessions, 1u);
  EXPECT_EQ(sa.stats.rd_failed, 0u);
  EXPECT_EQ(a.sink.EventCount(PeerEvent::kRcConnecting), 1u);
  EXPECT_EQ(a.sink.EventCount(PeerEvent::kRcUp), 1u);
  EXPECT_EQ(b.sink.EventCount(PeerEvent::kRcAccepted), 1u);
  EXPECT_EQ(b.sink.EventCount(PeerEvent::kRcUp), 1u);
  EXPECT_EQ(a.sink.EventCount(PeerEvent::kRcClosed) + a.sink.EventCount(PeerEvent::kRdFailed), 0u);
}

TEST_F(RcPromotionTest, PerPeerRetransmissionsAddUpToTheEndpoints) {
  auto faults = transport::FaultSpec::Parse("drop=50,seed=5");
  ASSERT_TRUE(faults.ok());
  const RdmConfig c = Config("any:ud_sr,any:ud_zcopy");
  Node& a = Add(c, *faults);
  Node& b = Add(c, *faults);
  Node& d = Add(c, *faults);
  Flow ab = MakeFlow(a, b, 500);
  Flow ad = MakeFlow(a, d, 500);
  ASSERT_TRUE(Run({&ab, &ad}, 120));
  ab.Check();
  ad.Check();
  std::lock_guard<std::mutex> lock(engine_->mu());
  progress::EndpointStats total;
  a.core->CollectStats(&total);
  ASSERT_EQ(a.core->peer_count(), 2u);
  uint64_t retransmitted = 0;
  for (PeerId id = 0; id < 2; ++id) {
    PeerSnapshot s;
    ASSERT_TRUE(a.core->Snapshot(id, &s));
    EXPECT_EQ(s.state, PeerState::kDatagram);
    EXPECT_EQ(Sum(s.stats).msgs_sent, 500u);
    EXPECT_EQ(Sum(s.stats).msgs_sent,
              On(s.stats, Channel::kUdSr).msgs_sent + On(s.stats, Channel::kUdZcopy).msgs_sent);
    retransmitted += s.stats.rd_retransmitted;
  }
  EXPECT_GT(total.rd_retransmitted, 0u) << "drop=50 lost nothing";
  EXPECT_EQ(retransmitted, total.rd_retransmitted);
}

TEST_F(RcPromotionTest, AVanishedPeerFailsByTimeoutAndKeepsItsCounts) {
  RdmConfig c = Config("any:ud_sr,any:ud_zcopy");
  c.channel.qp.stream.send.dead_after_ns = 300'000'000;
  Node& a = Add(c);
  Node& b = Add(c);
  Flow f = MakeFlow(a, b, 50);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  const transport::SockAddr gone = b.core->local_address();
  std::vector<uint8_t> m(100, 7);
  iovec v{m.data(), m.size()};
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    b.core.reset();
    ASSERT_EQ(a.core->Send(gone, &v, 1, false, 0, false, 0, 999), RdmStatus::kOk);
    a.core->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return a.core->counters().peers_failed >= 1; }, 10));
  std::lock_guard<std::mutex> lock(engine_->mu());
  PeerSnapshot s;
  ASSERT_TRUE(a.core->Snapshot(0, &s));
  EXPECT_EQ(s.stats.rd_sessions, 1u);
  EXPECT_EQ(s.stats.rd_failed, 1u);
  EXPECT_EQ(On(s.stats, Channel::kUdSr).msgs_sent + On(s.stats, Channel::kUdZcopy).msgs_sent, 51u);
  // The failed session's retransmissions stay with the peer and the endpoint.
  progress::EndpointStats total;
  a.core->CollectStats(&total);
  EXPECT_GT(s.stats.rd_retransmitted, 0u);
  EXPECT_EQ(s.stats.rd_retransmitted, total.rd_retransmitted);
  ASSERT_EQ(a.sink.EventCount(PeerEvent::kRdFailed), 1u);
  for (const auto& [e, err] : a.sink.events) {
    if (e == PeerEvent::kRdFailed) {
      EXPECT_EQ(err, ETIMEDOUT);
    }
  }
}

TEST_F(RcPromotionTest, BelowTheThresholdNothingOpens) {
  RdmConfig c = Config();
  c.rc.threshold_msgs = 1000;
  Node& a = Add(c);
  Node& b = Add(c);
  Flow f = MakeFlow(a, b, 999);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 0u);
  EXPECT_EQ(b.core->rc_links(), 0u);
}

TEST_F(RcPromotionTest, ByteThresholdAlsoPromotes) {
  RdmConfig c = Config();
  c.rc.threshold_msgs = 1'000'000;
  c.rc.threshold_bytes = 200'000;
  Node& a = Add(c);
  Node& b = Add(c);
  Flow f = MakeFlow(a, b, 600);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 1u);
  EXPECT_GT(a.core->counters().rc_sr_msgs, 0u);
}

TEST_F(RcPromotionTest, MovesInOrderThroughDatagramFaults) {
  auto faults = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=12");
  ASSERT_TRUE(faults.ok());
  Node& a = Add(Config(), *faults);
  Node& b = Add(Config(), *faults);
  Flow f = MakeFlow(a, b, 3000);
  ASSERT_TRUE(Run({&f}, 120));
  f.Check();
  EXPECT_EQ(a.core->counters().rc_switches, 1u);
  EXPECT_GT(a.core->counters().rc_sr_msgs, 1000u);
}

TEST_F(RcPromotionTest, SimultaneousConnectsEndWithTheLowerAddresssConnection) {
  RdmConfig c = Config();
  c.rc.threshold_msgs = 20;
  Node& a = Add(c);
  Node& b = Add(c);
  // Both cross the threshold before the engine runs: two connects cross.
  Flow ab = MakeFlow(a, b, 1500);
  Flow ba = MakeFlow(b, a, 1500);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ab.Step();
    ba.Step();
    ASSERT_EQ(a.core->counters().rc_opened, 1u);
    ASSERT_EQ(b.core->counters().rc_opened, 1u);
  }
  ASSERT_TRUE(Run({&ab, &ba}, 60)) << Dump(a) << Dump(b) << "\n  sent " << ab.sent << "/" << ba.sent
                                   << " posted " << ab.posted << "/" << ba.posted;
  ab.Check();
  ba.Check();
  const bool a_lower = RcLower(a.core->local_address(), b.core->local_address());
  Node& lo = a_lower ? a : b;
  Node& hi = a_lower ? b : a;
  EXPECT_EQ(lo.core->counters().rc_accepted, 0u);
  EXPECT_EQ(lo.core->counters().rc_rejected, 1u);
  EXPECT_EQ(hi.core->counters().rc_accepted, 1u);
  EXPECT_EQ(lo.core->counters().rc_failed, 0u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(a.core->rc_links(), 1u);
  EXPECT_EQ(b.core->rc_links(), 1u);
  EXPECT_TRUE(a.core->SendsOnRc(b.core->local_address()));
  EXPECT_TRUE(b.core->SendsOnRc(a.core->local_address()));
}

TEST_F(RcPromotionTest, CapLimitsConnectionsAndRefusesRequestsBeyondIt) {
  RdmConfig capped = Config();
  capped.rc.max_links = 1;
  Node& a = Add(capped);
  Node& b = Add(Config());
  Node& c = Add(Config());
  Node& d = Add(Config());
  Flow ab = MakeFlow(a, b, 400);
  Flow ac = MakeFlow(a, c, 400);
  ASSERT_TRUE(Run({&ab, &ac}));
  ab.Check();
  ac.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 1u);
  // d's connect to the capped a is refused; d stays on datagrams.
  Flow da = MakeFlow(d, a, 400);
  ASSERT_TRUE(Run({&da}));
  da.Check();
  EXPECT_GE(a.core->counters().rc_rejected, 1u);
  EXPECT_GE(d.core->counters().rc_failed, 1u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(a.core->rc_links(), 1u);
  EXPECT_FALSE(d.core->SendsOnRc(a.core->local_address()));
}

TEST_F(RcPromotionTest, ConnectToAPeerWithoutListenerFallsBackToDatagrams) {
  Node& a = Add(Config());
  Node& b = Add(Config("any:ud_sr,any:ud_zcopy"));  // no listener
  ASSERT_FALSE(b.core->rc_available());
  Flow f = MakeFlow(a, b, 600);
  ASSERT_TRUE(Run({&f}));
  f.Check();
  EXPECT_GE(a.core->counters().rc_opened, 1u);
  EXPECT_EQ(a.core->counters().rc_failed, a.core->counters().rc_opened);
  EXPECT_EQ(a.core->counters().rc_sr_msgs, 0u);
  EXPECT_EQ(a.core->counters().peers_failed, 0u);
}

TEST_F(RcPromotionTest, ABrokenConnectionFallsBackWithoutErrorsThenPromotesAgain) {
  Node& a = Add(Config());
  Node& b = Add(Config());
  Flow first = MakeFlow(a, b, 400);
  ASSERT_TRUE(Run({&first}));
  first.Check();
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a.core->SendsOnRc(b.core->local_address()));
    a.core->DropRcForTest(b.core->local_address());
    EXPECT_EQ(a.core->rc_links(), 0u);
  }
  ASSERT_TRUE(RunUntil([&] {
    return a.core->counters().rc_fallbacks == 1 && b.core->counters().rc_fallbacks == 1 &&
           b.core->rc_links() == 0;
  }));
  EXPECT_GE(a.sink.EventCount(PeerEvent::kRcClosed), 1u);
  // The RD session lives on: nothing failed on either side.
  EXPECT_EQ(a.sink.EventCount(PeerEvent::kRdFailed) + b.sink.EventCount(PeerEvent::kRdFailed), 0u);
  EXPECT_EQ(a.core->counters().peers_failed + b.core->counters().peers_failed, 0u);
  EXPECT_EQ(a.sink.send_failed + b.sink.recv_failed, 0u);
  // Traffic goes on over datagrams and is promoted again later.
  a.sink = Sink{};
  b.sink = Sink{};
  Flow second = MakeFlow(a, b, 400);
  ASSERT_TRUE(Run({&second}));
  second.Check();
  EXPECT_EQ(a.core->counters().rc_opened, 2u);
  // Per peer: the dropped connection closed, the RD session went on, the
  // connection opened again.
  std::lock_guard<std::mutex> lock(engine_->mu());
  PeerSnapshot s;
  ASSERT_TRUE(a.core->Snapshot(0, &s));
  EXPECT_EQ(s.stats.rc_opened, 2u);
  EXPECT_GE(s.stats.rc_closed, 1u);
  EXPECT_EQ(s.stats.rd_failed, 0u);
  EXPECT_EQ(s.stats.rd_sessions, 1u);
  EXPECT_EQ(Sum(s.stats).msgs_sent, 800u);
  // The endpoint's MPA counters keep the dropped connection's (they only grow).
  progress::EndpointStats st;
  a.core->CollectStats(&st);
  EXPECT_EQ(st.mpa_connections, 2u);
  EXPECT_GT(st.mpa_bytes_sent, 0u);
}

// Rendezvous in both directions at once: a Read or FIN that finds the send
// queue full waits for its completions (before, a FIN without room failed
// the peer and a Read without room failed the receive with EAGAIN).
TEST_F(RcPromotionTest, BothDirectionsAtOnceWithASmallSendQueueOnDatagrams) {
  RdmConfig c = Config("any:ud_sr,any:ud_zcopy");
  c.channel.qp.sq_size = 16;  // far less than the Reads, FINs and sends in flight
  BothWays(c);
}

TEST_F(RcPromotionTest, BothDirectionsOnTheConnectionWithASmallSendQueue) {
  RdmConfig c = Config();
  c.rc.qp.sq_size = 16;
  c.rc.threshold_msgs = 20;
  const Node& a = BothWays(c);
  EXPECT_GT(a.core->counters().rc_rdma_msgs, 300u);
}

// The RDMA-write rendezvous handshake (FI_IWARPX_RNDV=write) across the move
// to the connection, through datagram faults: CTS answers every rendezvous,
// on datagrams and on the connection, and nothing is lost or reordered.
TEST_F(RcPromotionTest, WriteHandshakeMovesToTheConnectionThroughFaults) {
  auto faults = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=21");
  ASSERT_TRUE(faults.ok());
  RdmConfig c = Config();
  c.rndv_write = true;
  Node& a = Add(c, *faults);
  Node& b = Add(c, *faults);
  Flow f = MakeFlow(a, b, 3000);
  ASSERT_TRUE(Run({&f}, 120)) << Dump(a) << Dump(b);
  f.Check();
  const RdmCore::Counters& ca = a.core->counters();
  EXPECT_EQ(ca.rc_switches, 1u);
  EXPECT_GT(ca.ud_zcopy_msgs, 0u);
  EXPECT_GT(ca.rc_rdma_msgs, 100u);
  EXPECT_EQ(b.core->counters().cts_sent, ca.rts_sent);
  EXPECT_EQ(ca.protocol_errors + b.core->counters().protocol_errors, 0u);
}

// Small send queues both ways: CTSes wait for room behind FINs and sends,
// Writes and the FIN (W) behind them, on datagrams and on the connection.
TEST_F(RcPromotionTest, WriteHandshakeBothDirectionsWithSmallSendQueues) {
  RdmConfig c = Config();
  c.rndv_write = true;
  c.channel.qp.sq_size = 16;
  c.rc.qp.sq_size = 16;
  c.rc.threshold_msgs = 200;
  const Node& a = BothWays(c);
  EXPECT_GT(a.core->counters().rc_rdma_msgs, 100u);
  EXPECT_GT(a.core->counters().ud_zcopy_msgs, 10u);
  EXPECT_GT(a.core->counters().cts_sent, 300u);
}

// The sender's setting decides: a read-handshake endpoint and a
// write-handshake one exchange rendezvous both ways.
TEST_F(RcPromotionTest, ReadAndWriteHandshakeEndpointsInteroperate) {
  RdmConfig cw = Config("any:ud_sr,any:ud_zcopy");
  cw.rndv_write = true;
  Node& w = Add(cw);
  Node& r = Add(Config("any:ud_sr,any:ud_zcopy"));
  Flow wr = MakeFlow(w, r, 400);
  Flow rw = MakeFlow(r, w, 400);
  wr.size_of = rw.size_of = [](size_t i) { return i % 2 == 0 ? size_t{70000} : size_t{10}; };
  ASSERT_TRUE(Run({&wr, &rw})) << Dump(w) << Dump(r);
  wr.Check();
  rw.Check();
  EXPECT_EQ(r.core->counters().cts_sent, w.core->counters().rts_sent);  // answered w's RTSes
  EXPECT_EQ(w.core->counters().cts_sent, 0u);                           // r's RTSes asked for Reads
}

}  // namespace
}  // namespace iwarpx::rdm
