// RdChannel on a real engine and real UDP sockets (loopback): QPs are made on
// first use from either side, messages flow through the engine's passes alone
// (also through the seeded fault injector, exactly once and in order), and a
// peer that goes away is reported once, its work failed, and a later Peer()
// makes a fresh QP. Datagrams of sessions nobody knows cost no state: a RESET
// answers them. CollectStats counts all of it.
#include "progress/rd_channel.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "progress/rd_channel_fixture.h"
#include "wire/dgram.h"

namespace iwarpx::progress {
namespace {

using qp::test::Completion;

TEST_F(RdChannelTest, QpsAreMadeOnFirstUseAndCarryMessagesBothWays) {
  Open();
  std::vector<uint8_t> msg(20000);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i % 251);
  std::vector<uint8_t> rb(32768);
  std::vector<uint8_t> ra(64);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    rd::RdQp* q = a_->Peer(KeyOf(*b_));
    ASSERT_NE(q, nullptr);
    qp::SendWr s;
    s.context = 1;
    s.sgl.Add(msg.data(), msg.size());
    ASSERT_EQ(q->qp().PostSend(s), qp::QpStatus::kOk);
    a_->AfterPost();
  }
  // B makes its QP when the first datagram arrives; the message waits in its
  // backlog until a receive is posted.
  ASSERT_TRUE(RunUntil([&] { return b_->peers() == 1; }));
  ASSERT_EQ(cb_.made.size(), 1u);
  EXPECT_EQ(cb_.made[0].addr, a_->local_address());
  EXPECT_EQ(cb_.made[0].qpn, 9u);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    rd::RdQp* q = b_->Find(cb_.made[0]);
    ASSERT_NE(q, nullptr);
    qp::RecvWr r;
    r.context = 2;
    r.sgl.Add(rb.data(), rb.size());
    ASSERT_EQ(q->qp().PostRecv(r), qp::QpStatus::kOk);
    b_->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return cb_.sink.Count(Completion::Kind::kRecv) == 1; }));
  EXPECT_EQ(cb_.sink.completions.back().bytes, msg.size());
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), rb.begin()));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    rd::RdQp* qa = a_->Find(KeyOf(*b_));
    ASSERT_NE(qa, nullptr);
    qp::RecvWr r;
    r.context = 3;
    r.sgl.Add(ra.data(), ra.size());
    ASSERT_EQ(qa->qp().PostRecv(r), qp::QpStatus::kOk);
    rd::RdQp* qb = b_->Find(cb_.made[0]);
    qp::SendWr s;
    s.context = 4;
    s.sgl.Add(msg.data(), 10);
    ASSERT_EQ(qb->qp().PostSend(s), qp::QpStatus::kOk);
    b_->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return ca_.sink.Count(Completion::Kind::kRecv) == 1; }));
  EXPECT_EQ(ca_.sink.completions.back().bytes, 10u);
  EXPECT_EQ(ca_.made.size(), 1u);  // the reply used the QP A made
}

// The active set (rd_channel.h, "Cost"): a QP is visited by the channel's
// passes only while its stream is in use. Twenty peers that each sent one
// message leave the receiver with twenty QPs and, once the acks are out, an
// empty active set; a new message brings back only the QPs it uses.
TEST_F(RdChannelTest, OnlyBusyPeersStayInTheActiveSet) {
  Open();
  constexpr size_t kPeers = 20;
  ca_.receive_on_create = true;
  std::vector<std::unique_ptr<RdChannelTestClient>> clients;
  std::vector<std::unique_ptr<mem::StagTable>> tables;
  std::vector<std::unique_ptr<RdChannel>> senders;
  const std::vector<uint8_t> msg(40, 0x5a);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    RdChannelConfig c;
    c.qpn = 9;
    c.pd = kPd;
    for (size_t i = 0; i < kPeers; ++i) {
      clients.push_back(std::make_unique<RdChannelTestClient>());
      tables.push_back(std::make_unique<mem::StagTable>(Random(10 + i), 4));
      auto ch = RdChannel::Open(*engine_, transport::SockAddr::Loopback4(0), c, *tables.back(),
                                *clients.back());
      ASSERT_TRUE(ch.ok());
      senders.push_back(std::move(ch).value());
      rd::RdQp* q = senders.back()->Peer(KeyOf(*a_));
      ASSERT_NE(q, nullptr);
      qp::SendWr w;
      w.context = i;
      w.sgl.Add(const_cast<uint8_t*>(msg.data()), msg.size());
      ASSERT_EQ(q->qp().PostSend(w), qp::QpStatus::kOk);
      senders.back()->AfterPost();
      EXPECT_EQ(senders.back()->active_peers(), 1u);
    }
  }
  ASSERT_TRUE(RunUntil([&] { return ca_.sink.Count(Completion::Kind::kRecv) == kPeers; }));
  EXPECT_EQ(a_->peers(), kPeers);
  ASSERT_TRUE(RunUntil([&] {
    if (a_->active_peers() != 0) return false;
    return std::all_of(senders.begin(), senders.end(),
                       [](const auto& s) { return s->active_peers() == 0; });
  })) << "receiver active "
      << a_->active_peers();
  for (const auto& cl : clients) EXPECT_EQ(cl->sink.Count(Completion::Kind::kSend), 1u);
  {
    // The QP that receives again is back in the set; the others stay out.
    std::lock_guard<std::mutex> lock(engine_->mu());
    rd::RdQp* rq = a_->Find(KeyOf(*senders[3]));
    ASSERT_NE(rq, nullptr);
    qp::RecvWr r;
    r.context = 7;
    r.sgl.Add(ca_.buffers.front().data(), 64);
    ASSERT_EQ(rq->qp().PostRecv(r), qp::QpStatus::kOk);
    rd::RdQp* q = senders[3]->Find(KeyOf(*a_));
    ASSERT_NE(q, nullptr);
    qp::SendWr w;
    w.sgl.Add(const_cast<uint8_t*>(msg.data()), msg.size());
    ASSERT_EQ(q->qp().PostSend(w), qp::QpStatus::kOk);
    senders[3]->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] {
    return ca_.sink.Count(Completion::Kind::kRecv) == kPeers + 1 || a_->active_peers() > 1;
  }));
  EXPECT_EQ(ca_.sink.Count(Completion::Kind::kRecv), kPeers + 1);
  EXPECT_LE(a_->active_peers(), 1u);
  ASSERT_TRUE(RunUntil([&] { return a_->active_peers() == 0; }));
  std::lock_guard<std::mutex> lock(engine_->mu());
  senders.clear();
}

// The socket asks for a receive buffer that holds a peer's whole send
// buffer; the kernel grants up to net.core.rmem_max.
TEST_F(RdChannelTest, SocketBuffersAreRaisedAsFarAsTheSystemAllows) {
  Open();
  long rmem_max = 0;
  if (FILE* f = std::fopen("/proc/sys/net/core/rmem_max", "r"); f != nullptr) {
    if (std::fscanf(f, "%ld", &rmem_max) != 1) rmem_max = 0;
    std::fclose(f);
  }
  ASSERT_GT(rmem_max, 0) << "cannot read /proc/sys/net/core/rmem_max";
  const long want = std::min<long>(RdChannelConfig{}.socket_buffer_bytes, rmem_max);
  EXPECT_GE(a_->rcvbuf_bytes(), want);
  int got = 0;
  socklen_t len = sizeof(got);
  ASSERT_EQ(getsockopt(a_->fd(), SOL_SOCKET, SO_RCVBUF, &got, &len), 0);
  EXPECT_EQ(got / 2, a_->rcvbuf_bytes());
}

TEST_F(RdChannelTest, ThousandsOfMessagesThroughFaultsOnRealSockets) {
  auto fa = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=5");
  auto fb = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=6");
  ASSERT_TRUE(fa.ok() && fb.ok());
  Open(*fa, *fb);
  constexpr size_t kCount = 3000;
  constexpr size_t kSlots = 128;
  std::vector<std::vector<uint8_t>> tx(kCount);
  std::vector<std::vector<uint8_t>> rx(kSlots, std::vector<uint8_t>(20000));
  auto size_of = [](size_t i) { return 1 + (i * 7919) % (i % 16 == 0 ? 20000 : 900); };
  size_t posted = 0;
  size_t seen = 0;
  bool bad = false;
  rd::RdQp* qb = nullptr;
  ASSERT_TRUE(RunUntil(
      [&] {
        rd::RdQp* qa = a_->Peer(KeyOf(*b_));
        while (posted < kCount) {
          if (tx[posted].empty()) {
            tx[posted].resize(size_of(posted));
            for (size_t k = 0; k < tx[posted].size(); ++k) {
              tx[posted][k] = static_cast<uint8_t>(posted * 3 + k);
            }
          }
          qp::SendWr s;
          s.context = posted;
          s.sgl.Add(tx[posted].data(), tx[posted].size());
          if (qa->qp().PostSend(s) != qp::QpStatus::kOk) break;
          ++posted;
        }
        a_->AfterPost();
        if (qb == nullptr && !cb_.made.empty()) {
          qb = b_->Find(cb_.made[0]);
          for (size_t k = 0; k < kSlots; ++k) {
            qp::RecvWr r;
            r.context = k;
            r.sgl.Add(rx[k].data(), rx[k].size());
            if (qb->qp().PostRecv(r) != qp::QpStatus::kOk) bad = true;
          }
          b_->AfterPost();
        }
        const auto& cs = cb_.sink.completions;
        for (; seen < cs.size(); ++seen) {
          const Completion& c = cs[seen];
          if (c.kind != Completion::Kind::kRecv || c.bytes != size_of(seen) ||
              std::memcmp(rx[c.context].data(), tx[seen].data(), c.bytes) != 0) {
            bad = true;
          }
          qp::RecvWr r;
          r.context = c.context;
          r.sgl.Add(rx[c.context].data(), rx[c.context].size());
          if (qb->qp().PostRecv(r) != qp::QpStatus::kOk) bad = true;
          b_->AfterPost();
        }
        return seen == kCount || bad;
      },
      60));
  EXPECT_FALSE(bad) << "message " << seen;
  EXPECT_EQ(ca_.failed.size() + cb_.failed.size(), 0u);
  EXPECT_GT(b_->port().counters().bad_crc, 0u);
}

TEST_F(RdChannelTest, VanishedPeerIsReportedOnceAndANewQpFollows) {
  Open({}, {}, 300'000'000);  // 300 ms RD timeout
  std::vector<uint8_t> msg(100, 7);
  const RdPeerKey kb = KeyOf(*b_);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    b_.reset();  // B is gone before A ever sends
    rd::RdQp* q = a_->Peer(kb);
    qp::SendWr s;
    s.context = 1;
    s.sgl.Add(msg.data(), msg.size());
    ASSERT_EQ(q->qp().PostSend(s), qp::QpStatus::kOk);
    qp::RecvWr r;
    r.context = 2;
    r.sgl.Add(msg.data(), msg.size());
    ASSERT_EQ(q->qp().PostRecv(r), qp::QpStatus::kOk);
    a_->AfterPost();
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(RunUntil([&] { return !ca_.failed.empty(); }, 5));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::milliseconds(3000));
  EXPECT_EQ(ca_.failed.size(), 1u);
  EXPECT_EQ(ca_.sink.Count(Completion::Kind::kError), 1u);  // the receive
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(a_->Find(kb), nullptr);
  EXPECT_NE(a_->Peer(kb), nullptr);  // a fresh QP, a new session
  EXPECT_EQ(ca_.made.size(), 2u);
  EndpointStats st;
  a_->CollectStats(&st);
  EXPECT_EQ(st.rd_peers, 2u);
  EXPECT_EQ(st.rd_peers_failed, 1u);
  EXPECT_GE(st.rd_data_sent, 1u);
  EXPECT_GE(st.rd_retransmitted, 1u);  // resent until the timeout
}

// B's Read reached A and was acknowledged, so B's stream has nothing in
// flight; A holds it unanswered (its QP holds requests). A live A answers
// B's PROBEs, so the Read waits (over two RD timeouts) and completes once A lets
// it run. An A that failed B's session answers the next PROBE with a RESET;
// an A that is gone answers nothing, and B gives up after the RD timeout.
// Either way B's Read ends in an error completion instead of waiting forever
// (rd_stream.h "Failure").
TEST_F(RdChannelTest, AnUnansweredReadEndsWhenItsPeerForgotItOrWent) {
  constexpr uint64_t kDeadAfterNs = 400'000'000;
  for (const int how : {0, 1, 2}) {  // A stays and answers, fails B's session, is gone
    SCOPED_TRACE(how == 0 ? "alive" : how == 1 ? "forgot" : "gone");
    a_.reset();
    b_.reset();
    ca_ = RdChannelTestClient();
    cb_ = RdChannelTestClient();
    Open({}, {}, kDeadAfterNs);
    std::vector<uint8_t> src(256, 0x5A), dst(256, 0);
    const RdPeerKey ka = KeyOf(*a_);
    const RdPeerKey kb = KeyOf(*b_);
    uint32_t src_stag = 0;
    uint32_t dst_stag = 0;
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      auto s = stags_a_.Register(mem::RegionSpec{src.data(), src.size(), 0, mem::kRemoteRead, kPd});
      auto d = stags_b_.Register(mem::RegionSpec{dst.data(), dst.size(), 0, mem::kLocalWrite, kPd});
      ASSERT_TRUE(s.ok() && d.ok());
      src_stag = *s;
      dst_stag = *d;
      a_->Peer(kb)->qp().HoldRequests(true);
      qp::ReadWr r;
      r.context = 7;
      r.local_stag = dst_stag;
      r.length = static_cast<uint32_t>(src.size());
      r.remote_stag = src_stag;
      ASSERT_EQ(b_->Peer(ka)->qp().PostRead(r), qp::QpStatus::kOk);
      b_->AfterPost();
    }
    ASSERT_TRUE(RunUntil([&] {
      const rd::RdQp* q = b_->Find(ka);
      return q != nullptr && q->stream().settled();
    }));
    const auto start = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      if (how == 1) {
        a_->Find(kb)->Fail(ECONNRESET);
        a_->AfterPost();
      }
      if (how == 2) a_.reset();
    }
    if (how == 0) {
      EXPECT_FALSE(RunUntil([&] { return !cb_.sink.completions.empty(); }, 1))
          << "a live peer's unanswered Read was failed";
      {
        std::lock_guard<std::mutex> lock(engine_->mu());
        a_->Find(kb)->qp().HoldRequests(false);
        a_->AfterPost();
      }
      ASSERT_TRUE(RunUntil([&] { return !cb_.sink.completions.empty(); }, 5));
      EXPECT_EQ(cb_.sink.completions[0].kind, Completion::Kind::kRdma);
      EXPECT_EQ(dst, src);
      EXPECT_TRUE(cb_.failed.empty());
      continue;
    }
    ASSERT_TRUE(RunUntil([&] { return !cb_.sink.completions.empty(); }, 5))
        << "the Read waited for a peer that will never answer it";
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(cb_.sink.completions[0].kind, Completion::Kind::kError);
    EXPECT_EQ(cb_.failed.size(), 1u);
    if (how == 1) {
      EXPECT_LT(took, std::chrono::milliseconds(300)) << "the RESET should end it first";
    } else {
      EXPECT_GE(took, std::chrono::milliseconds(300));
      EXPECT_LT(took, std::chrono::milliseconds(2500));
    }
    std::lock_guard<std::mutex> lock(engine_->mu());
    (void)stags_b_.Deregister(dst_stag);
    if (a_ != nullptr) (void)stags_a_.Deregister(src_stag);
  }
}

// A raw socket sends B datagrams of a session B never saw: data and a PROBE
// without Y draw a RESET refusing that session; a stray RESET is dropped.
// None of them makes a QP.
TEST_F(RdChannelTest, UnknownSessionsDrawAResetAndMakeNoQp) {
  Open();
  const transport::UniqueFd raw_fd = RawLoopbackSocket();
  ASSERT_TRUE(raw_fd.valid());
  const int raw = raw_fd.get();
  timeval tv{.tv_sec = 0, .tv_usec = 20'000};
  ASSERT_EQ(setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
  const transport::SockAddr to = b_->local_address();
  auto send = [&](const wire::DgramHeader& h, size_t ulpdu) {
    std::vector<uint8_t> seg(ulpdu, 0);
    const ByteSpan part(seg.data(), seg.size());
    std::vector<uint8_t> out(wire::DgramSize(ulpdu));
    auto n = wire::EncodeDgram(h, std::span<const ByteSpan>(&part, ulpdu != 0 ? 1 : 0), true,
                               MutableByteSpan(out.data(), out.size()));
    ASSERT_TRUE(n.ok());
    ASSERT_EQ(sendto(raw, out.data(), *n, 0, to.sa(), to.length()), static_cast<ssize_t>(*n));
  };
  // What comes back to the raw socket within `ms` of engine passes.
  auto replies = [&](int ms) {
    std::vector<wire::DgramHeader> got;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard<std::mutex> lock(engine_->mu());
        engine_->RunOnce(1);
      }
      uint8_t buf[2048];
      const ssize_t n = recv(raw, buf, sizeof(buf), MSG_DONTWAIT);
      if (n <= 0) continue;
      auto d = wire::DecodeDgram(ByteSpan(buf, static_cast<size_t>(n)), true);
      if (d.ok()) got.push_back(d->header);
    }
    return got;
  };
  wire::DgramHeader data;
  data.type = wire::DgramType::kRdData;
  data.dst_qpn = 9;
  data.src_qpn = 77;
  data.session = 0x5e55;
  data.seq = 12345;  // far from anything: there is no window to be in
  send(data, 20);
  wire::DgramHeader probe = data;
  probe.type = wire::DgramType::kRdControl;
  probe.ctrl_op = wire::DgramControlOp::kProbe;
  probe.session = 0x5e56;
  send(probe, 0);
  wire::DgramHeader reset;
  reset.type = wire::DgramType::kRdControl;
  reset.ctrl_op = wire::DgramControlOp::kReset;
  reset.dst_qpn = 9;
  reset.src_qpn = 77;
  reset.session = 0x5e57;
  reset.echo_session = 0x1234;
  send(reset, 0);
  const std::vector<wire::DgramHeader> got = replies(300);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].type, wire::DgramType::kRdControl);
    EXPECT_EQ(got[i].ctrl_op, wire::DgramControlOp::kReset);
    EXPECT_EQ(got[i].dst_qpn, 77u);
    EXPECT_EQ(got[i].src_qpn, 9u);
    EXPECT_NE(got[i].session, 0u);
    EXPECT_FALSE(got[i].syn);
  }
  EXPECT_EQ(got[0].echo_session, 0x5e55u);
  EXPECT_EQ(got[1].echo_session, 0x5e56u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(b_->peers(), 0u);
  EXPECT_TRUE(cb_.made.empty());
  EndpointStats st;
  b_->CollectStats(&st);
  EXPECT_EQ(st.rx_datagrams, 3u);
  EXPECT_EQ(st.rd_resets_sent, 2u);
  EXPECT_EQ(st.rd_stale, 1u);
  EXPECT_EQ(st.rd_peers, 0u);
}

}  // namespace
}  // namespace iwarpx::progress
