// RdmCore on a real engine and real UDP sockets (loopback): untagged and
// tagged messages in both posting orders (receive first, or unexpected),
// ignore bits and directed receives, eager and rendezvous sizes up to 64 MiB
// bit-exact, truncation, peek/claim/discard, remote write data, and a peer
// that vanishes failing what waits on it; each with the read and the write
// rendezvous handshake.
#include "rdm/rdm_core.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"

namespace iwarpx::rdm {
namespace {

struct Event {
  enum Kind : uint8_t {
    kSendDone,
    kSendFailed,
    kRecvDone,
    kRecvFailed,
    kRmaDone,
    kRmaFailed,
    kData
  };
  Kind kind;
  uint64_t context = 0;
  RecvResult r;
  int err = 0;
};

class Sink final : public RdmSink {
 public:
  void SendDone(uint64_t c) override { ev.push_back({Event::kSendDone, c, {}, 0}); }
  void SendFailed(uint64_t c, int err) override { ev.push_back({Event::kSendFailed, c, {}, err}); }
  void RecvDone(uint64_t c, const RecvResult& r) override {
    ev.push_back({Event::kRecvDone, c, r, 0});
  }
  void RecvFailed(uint64_t c, int err) override { ev.push_back({Event::kRecvFailed, c, {}, err}); }
  void RmaDone(uint64_t c) override { ev.push_back({Event::kRmaDone, c, {}, 0}); }
  void RmaFailed(uint64_t c, const qp::WcError& /*e*/) override {
    ev.push_back({Event::kRmaFailed, c, {}, 0});
  }
  void RemoteWriteData(uint64_t data, PeerId src) override {
    RecvResult r;
    r.data = data;
    r.src = src;
    ev.push_back({Event::kData, 0, r, 0});
  }
  size_t Count(Event::Kind k) const {
    size_t n = 0;
    for (const Event& e : ev) n += e.kind == k ? 1 : 0;
    return n;
  }
  const Event* Find(Event::Kind k, uint64_t context) const {
    for (const Event& e : ev) {
      if (e.kind == k && e.context == context) return &e;
    }
    return nullptr;
  }
  std::vector<Event> ev;
};

// Every test runs with both rendezvous protocols: the receiver's RDMA Reads
// (read) and the RDMA-write handshake (write, FI_IWARPX_RNDV=write).
class RdmCoreTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    auto e = progress::Engine::Create(clock_);
    ASSERT_TRUE(e.ok());
    engine_ = std::move(e).value();
    Open();
  }
  void TearDown() override {
    std::lock_guard<std::mutex> lock(engine_->mu());
    a_.reset();
    b_.reset();
  }
  void Open(const transport::FaultSpec& faults = {}, uint64_t dead_after_ns = 2'000'000'000) {
    RdmConfig c;
    c.channel.pd = 1;
    c.channel.qp.stream.send.dead_after_ns = dead_after_ns;
    c.bounce_size = 4096;
    c.rndv_write = GetParam();
    std::lock_guard<std::mutex> lock(engine_->mu());
    a_.reset();
    b_.reset();
    auto a = RdmCore::Open(*engine_, transport::SockAddr::Loopback4(0), c, stags_a_, sa_, faults);
    auto b = RdmCore::Open(*engine_, transport::SockAddr::Loopback4(0), c, stags_b_, sb_, faults);
    ASSERT_TRUE(a.ok() && b.ok());
    a_ = std::move(a).value();
    b_ = std::move(b).value();
  }
  template <class F>
  bool RunUntil(F done, int seconds = 20) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(engine_->mu());
        if (done()) return true;
        engine_->RunOnce(1);
      }
      if (std::chrono::steady_clock::now() > end) return false;
    }
  }
  RdmStatus Send(RdmCore& from, RdmCore& to, std::vector<uint8_t>& buf, uint64_t ctx,
                 bool tagged = false, uint64_t tag = 0) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    const RdmStatus s = from.Send(to.local_address(), &v, 1, tagged, tag, false, 0, ctx);
    from.AfterPost();
    return s;
  }
  RdmStatus Recv(RdmCore& on, std::vector<uint8_t>& buf, uint64_t ctx, bool tagged = false,
                 uint64_t tag = 0, uint64_t ignore = 0, PeerId src = kAnySource) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    RecvRequest r;
    r.tagged = tagged;
    r.tag = tag;
    r.ignore = ignore;
    r.src = src;
    r.context = ctx;
    r.iov = &v;
    r.count = 1;
    const RdmStatus s = on.PostRecv(r);
    on.AfterPost();
    return s;
  }
  static std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 12));
    return v;
  }

  MonotonicClock clock_;
  std::unique_ptr<progress::Engine> engine_;
  mem::StagTable stags_a_{Random(1), 1024};
  mem::StagTable stags_b_{Random(2), 1024};
  Sink sa_;
  Sink sb_;
  std::unique_ptr<RdmCore> a_;
  std::unique_ptr<RdmCore> b_;
};

TEST_P(RdmCoreTest, EagerAndRendezvousInBothPostingOrders) {
  for (const size_t size : {size_t{0}, size_t{10}, size_t{4000}, size_t{70000}, size_t{1} << 20}) {
    SCOPED_TRACE(size);
    sa_.ev.clear();
    sb_.ev.clear();
    // Receive posted first.
    std::vector<uint8_t> msg = Pattern(size, 1);
    std::vector<uint8_t> rx(size + 16, 0xEE);
    ASSERT_EQ(Recv(*b_, rx, 1), RdmStatus::kOk);
    ASSERT_EQ(Send(*a_, *b_, msg, 2), RdmStatus::kOk);
    ASSERT_TRUE(RunUntil(
        [&] { return sb_.Count(Event::kRecvDone) == 1 && sa_.Count(Event::kSendDone) == 1; }));
    EXPECT_EQ(sb_.ev[0].r.len, size);
    EXPECT_EQ(sb_.ev[0].r.truncated, 0u);
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), rx.begin()));
    EXPECT_EQ(rx[size], 0xEE);
    // Message first (unexpected), receive later.
    std::vector<uint8_t> msg2 = Pattern(size, 2);
    std::vector<uint8_t> rx2(size, 0);
    ASSERT_EQ(Send(*a_, *b_, msg2, 3), RdmStatus::kOk);
    if (size <= b_->eager_limit()) {
      // The eager message completes at the sender without the receiver.
      ASSERT_TRUE(RunUntil([&] { return sa_.Count(Event::kSendDone) == 2; }));
    } else {
      ASSERT_TRUE(RunUntil([&] { return b_->counters().unexpected >= 1; }));
    }
    ASSERT_EQ(Recv(*b_, rx2, 4), RdmStatus::kOk);
    ASSERT_TRUE(RunUntil(
        [&] { return sb_.Count(Event::kRecvDone) == 2 && sa_.Count(Event::kSendDone) == 2; }));
    EXPECT_TRUE(std::equal(msg2.begin(), msg2.end(), rx2.begin()));
    EXPECT_EQ(sa_.Count(Event::kSendFailed) + sb_.Count(Event::kRecvFailed), 0u);
  }
  EXPECT_GT(a_->counters().rts_sent, 0u);
  EXPECT_GT(a_->counters().eager_sent, 0u);
  // The protocol really used: CTS answers only in the write handshake.
  EXPECT_EQ(b_->counters().cts_sent > 0, GetParam());
  EXPECT_EQ(b_->counters().cts_sent, GetParam() ? a_->counters().rts_sent : 0u);
}

TEST_P(RdmCoreTest, SixtyFourMebibytesBitExact) {
  constexpr size_t kSize = size_t{64} << 20;
  std::vector<uint8_t> msg = Pattern(kSize, 9);
  std::vector<uint8_t> rx(kSize, 0);
  ASSERT_EQ(Recv(*b_, rx, 1, true, 5), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, msg, 2, true, 5), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil(
      [&] { return sb_.Count(Event::kRecvDone) == 1 && sa_.Count(Event::kSendDone) == 1; }, 60));
  EXPECT_EQ(sb_.ev[0].r.len, kSize);
  EXPECT_TRUE(msg == rx);
}

TEST_P(RdmCoreTest, TagsIgnoreBitsDirectedReceivesAndOrder) {
  std::vector<uint8_t> m1 = Pattern(100, 1), m2 = Pattern(100, 2), m3 = Pattern(100, 3);
  std::vector<uint8_t> r1(100), r2(100), r3(100);
  PeerId from_a = 0;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    from_a = b_->PeerIdOf(a_->local_address());
  }
  // r1 wants tag 0x20 exactly, r2 any tag 0x1?, r3 only from some other peer.
  ASSERT_EQ(Recv(*b_, r3, 3, true, 0x11, 0, from_a + 100), RdmStatus::kOk);
  ASSERT_EQ(Recv(*b_, r1, 1, true, 0x20), RdmStatus::kOk);
  ASSERT_EQ(Recv(*b_, r2, 2, true, 0x10, 0x0F, from_a), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, m1, 11, true, 0x11), RdmStatus::kOk);  // -> r2 (r3 is for another peer)
  ASSERT_EQ(Send(*a_, *b_, m2, 12, true, 0x20), RdmStatus::kOk);  // -> r1
  ASSERT_EQ(Send(*a_, *b_, m3, 13, false), RdmStatus::kOk);       // untagged: unexpected
  ASSERT_TRUE(
      RunUntil([&] { return sb_.Count(Event::kRecvDone) == 2 && b_->counters().unexpected == 1; }));
  const Event* e2 = sb_.Find(Event::kRecvDone, 2);
  const Event* e1 = sb_.Find(Event::kRecvDone, 1);
  ASSERT_NE(e1, nullptr);
  ASSERT_NE(e2, nullptr);
  EXPECT_EQ(e2->r.tag, 0x11u);
  EXPECT_EQ(e2->r.src, from_a);
  EXPECT_TRUE(r2 == m1);
  EXPECT_EQ(e1->r.tag, 0x20u);
  EXPECT_TRUE(r1 == m2);
  EXPECT_TRUE(sb_.Find(Event::kRecvDone, 3) == nullptr);
  std::vector<uint8_t> ru(100);
  ASSERT_EQ(Recv(*b_, ru, 4, false), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return sb_.Find(Event::kRecvDone, 4) != nullptr; }));
  EXPECT_TRUE(ru == m3);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_TRUE(b_->CancelRecv(true, 3));
  EXPECT_FALSE(b_->CancelRecv(true, 3));
}

TEST_P(RdmCoreTest, TruncationReportsWhatDidNotFit) {
  for (const size_t size : {size_t{3000}, size_t{300000}}) {
    SCOPED_TRACE(size);
    sb_.ev.clear();
    std::vector<uint8_t> msg = Pattern(size, 4);
    std::vector<uint8_t> rx(1000);
    ASSERT_EQ(Recv(*b_, rx, 1), RdmStatus::kOk);
    ASSERT_EQ(Send(*a_, *b_, msg, 2), RdmStatus::kOk);
    ASSERT_TRUE(RunUntil([&] { return sb_.Count(Event::kRecvDone) == 1; }));
    EXPECT_EQ(sb_.ev[0].r.len, 1000u);
    EXPECT_EQ(sb_.ev[0].r.truncated, size - 1000);
    EXPECT_TRUE(std::equal(rx.begin(), rx.end(), msg.begin()));
  }
  ASSERT_TRUE(RunUntil([&] { return sa_.Count(Event::kSendDone) == 2; }));
}

TEST_P(RdmCoreTest, PeekClaimAndDiscard) {
  std::vector<uint8_t> m1 = Pattern(50, 1), m2 = Pattern(60, 2);
  ASSERT_EQ(Send(*a_, *b_, m1, 1, true, 7), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, m2, 2, true, 8), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return b_->counters().unexpected == 2; }));
  std::lock_guard<std::mutex> lock(engine_->mu());
  RecvRequest r;
  r.tagged = true;
  r.tag = 7;
  RecvResult out;
  ASSERT_EQ(b_->Peek(r, 0, &out), RdmStatus::kOk);
  EXPECT_EQ(out.len, 50u);
  ASSERT_EQ(b_->Peek(r, 0xC1A1, &out), RdmStatus::kOk);    // claimed
  EXPECT_EQ(b_->Peek(r, 0, &out), RdmStatus::kNoMessage);  // hidden now
  std::vector<uint8_t> rx(64);
  iovec v{rx.data(), rx.size()};
  r.iov = &v;
  r.count = 1;
  r.context = 5;
  ASSERT_EQ(b_->ReceiveClaimed(r, 0xC1A1, false), RdmStatus::kOk);
  ASSERT_NE(sb_.Find(Event::kRecvDone, 5), nullptr);
  EXPECT_TRUE(std::equal(m1.begin(), m1.end(), rx.begin()));
  EXPECT_EQ(b_->ReceiveClaimed(r, 0xC1A1, false), RdmStatus::kNoMessage);
  r.tag = 8;
  ASSERT_EQ(b_->DiscardUnexpected(r, &out), RdmStatus::kOk);
  EXPECT_EQ(out.tag, 8u);
  EXPECT_EQ(b_->Peek(r, 0, &out), RdmStatus::kNoMessage);
}

TEST_P(RdmCoreTest, ManyMessagesThroughFaultsInOrder) {
  auto f = transport::FaultSpec::Parse("drop=50,dup=20,reorder=30,corrupt=5,seed=12");
  ASSERT_TRUE(f.ok());
  Open(*f);
  constexpr size_t kCount = 2000;
  std::vector<std::vector<uint8_t>> tx(kCount), rx(kCount);
  auto size_of = [](size_t i) { return (i * 7919) % (i % 50 == 0 ? 200000 : 3000); };
  size_t sent = 0;
  size_t posted = 0;
  ASSERT_TRUE(RunUntil(
      [&] {
        while (posted < kCount && posted < sb_.ev.size() + 64) {
          rx[posted].assign(size_of(posted), 0);
          iovec v{rx[posted].data(), rx[posted].size()};
          RecvRequest r;
          r.tagged = true;
          r.tag = 0;  // one tag for all: message i must match receive i (order)
          r.context = posted;
          r.iov = &v;
          r.count = 1;
          if (b_->PostRecv(r) != RdmStatus::kOk) break;
          ++posted;
        }
        while (sent < kCount && sent < sa_.ev.size() + 64) {
          tx[sent] = Pattern(size_of(sent), static_cast<uint8_t>(sent));
          iovec v{tx[sent].data(), tx[sent].size()};
          if (a_->Send(b_->local_address(), &v, 1, true, 0, false, 0, sent) != RdmStatus::kOk) {
            break;
          }
          ++sent;
        }
        a_->AfterPost();
        b_->AfterPost();
        return sb_.ev.size() == kCount && sa_.ev.size() == kCount;
      },
      120));
  // Completions may come out of order (a rendezvous finishes after the eager
  // messages behind it), but matching is in order: receive i holds message i.
  std::vector<int> seen(kCount, 0);
  for (const Event& e : sb_.ev) {
    ASSERT_EQ(e.kind, Event::kRecvDone);
    ASSERT_LT(e.context, kCount);
    ++seen[e.context];
    ASSERT_EQ(e.r.len, tx[e.context].size()) << e.context;
    ASSERT_TRUE(rx[e.context] == tx[e.context]) << e.context;
  }
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(seen[i], 1) << i;
}

TEST_P(RdmCoreTest, VanishedPeerFailsWhatWaitsOnIt) {
  Open({}, 300'000'000);
  std::vector<uint8_t> big = Pattern(100000, 1);
  std::vector<uint8_t> small = Pattern(10, 2);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    const transport::SockAddr gone = b_->local_address();
    b_.reset();
    iovec v{big.data(), big.size()};
    ASSERT_EQ(a_->Send(gone, &v, 1, false, 0, false, 0, 1), RdmStatus::kOk);
    iovec w{small.data(), small.size()};
    ASSERT_EQ(a_->Send(gone, &w, 1, false, 0, false, 0, 2), RdmStatus::kOk);
    a_->AfterPost();
  }
  ASSERT_TRUE(RunUntil([&] { return sa_.Find(Event::kSendFailed, 1) != nullptr; }, 5));
  const Event* failed = sa_.Find(Event::kSendFailed, 1);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->err, ECONNRESET);
  EXPECT_EQ(a_->counters().peers_failed, 1u);
}

TEST_P(RdmCoreTest, MultiReceiveBufferFillsInOrderAndReleasesBelowTheMinimum) {
  // Three messages arrive before the buffer is posted (unexpected), the rest after.
  constexpr size_t kMsg = 900;
  constexpr size_t kCount = 12;
  std::vector<std::vector<uint8_t>> msgs;
  for (size_t i = 0; i < kCount; ++i) msgs.push_back(Pattern(kMsg, static_cast<uint8_t>(i)));
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(Send(*a_, *b_, msgs[i], i), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return b_->counters().unexpected == 3; }));
  std::vector<uint8_t> buf(10000, 0xEE);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    RecvRequest r;
    r.context = 77;
    r.iov = &v;
    r.count = 1;
    r.multi = true;
    r.multi_min = 1000;
    ASSERT_EQ(b_->PostRecv(r), RdmStatus::kOk);
    b_->AfterPost();
  }
  std::vector<uint8_t> plain(kMsg);
  ASSERT_EQ(Recv(*b_, plain, 78), RdmStatus::kOk);  // ordinary receive, posted later
  for (size_t i = 3; i < kCount; ++i) ASSERT_EQ(Send(*a_, *b_, msgs[i], i), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return sb_.Count(Event::kRecvDone) == kCount; }));
  // Messages 0..10 fill the buffer back to back; after the 11th, 100 bytes are
  // left (< 1000): that completion releases it; the 12th goes to the ordinary receive.
  size_t multi_seen = 0;
  for (const Event& e : sb_.ev) {
    if (e.context == 78) {
      EXPECT_TRUE(plain == msgs[11]);
      continue;
    }
    ASSERT_EQ(e.context, 77u);
    ASSERT_EQ(e.r.len, kMsg);
    EXPECT_EQ(e.r.buf, buf.data() + multi_seen * kMsg);
    EXPECT_TRUE(std::equal(msgs[multi_seen].begin(), msgs[multi_seen].end(),
                           buf.begin() + static_cast<std::ptrdiff_t>(multi_seen * kMsg)));
    EXPECT_EQ(e.r.released, multi_seen == 10) << multi_seen;
    ++multi_seen;
  }
  EXPECT_EQ(multi_seen, 11u);
  EXPECT_EQ(buf[11 * kMsg], 0xEE);  // nothing written past the last message
}

INSTANTIATE_TEST_SUITE_P(Rndv, RdmCoreTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "write" : "read";
                         });

}  // namespace
}  // namespace iwarpx::rdm
