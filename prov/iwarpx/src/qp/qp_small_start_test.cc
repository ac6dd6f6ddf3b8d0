// A QP's parts that start small (queue_pair.h, "Memory"): a receive staging
// buffer of QpConfig::rx_staging_initial bytes doubles while reads fill it,
// the transmit batch grows from one FPDU, the send ring from
// kSqInitialSlots; every byte still arrives, in order.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;
using ::iwarpx::testing::RandomBytes;

// One burst of `n` Sends of mixed sizes a -> b, receives posted first;
// returns b's RecvV calls for it.
size_t Burst(QpPair& p, std::mt19937& rng, size_t n, size_t max_size) {
  std::vector<Bytes> tx(n);
  std::vector<Bytes> rx(n);
  const size_t before_recvs = p.b.sink.Count(Kind::kRecv);
  for (size_t i = 0; i < n; ++i) {
    tx[i] = RandomBytes(rng, 1 + rng() % max_size);
    rx[i].assign(max_size, 0);
    RecvWr w;
    w.context = i;
    w.sgl.Add(rx[i].data(), rx[i].size());
    EXPECT_EQ(p.b.qp->PostRecv(w), QpStatus::kOk);
  }
  const size_t calls0 = p.b.conn->recv_calls();
  for (size_t i = 0; i < n; ++i) {
    SendWr s;
    s.context = i;
    s.sgl.Add(tx[i].data(), tx[i].size());
    EXPECT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
  }
  p.Pump();
  EXPECT_EQ(p.b.sink.Count(Kind::kRecv), before_recvs + n);
  for (size_t i = 0; i < n; ++i) {
    const Completion& c = p.b.sink.completions[before_recvs + i];
    EXPECT_EQ(c.context, i);
    EXPECT_EQ(c.bytes, tx[i].size());
    EXPECT_EQ(0, std::memcmp(rx[i].data(), tx[i].data(), tx[i].size())) << i;
  }
  return p.b.conn->recv_calls() - calls0;
}

TEST(QpSmallStartTest, SmallStagingGrowsAndKeepsEveryByte) {
  QpConfig cfg;
  cfg.sq_size = 64;
  cfg.rq_size = 64;
  cfg.rx_staging_initial = kRxStagingMin;
  QpPair p(0, true, cfg);
  p.Start();
  p.Pump();
  std::mt19937 rng(11);
  // Small messages queued together: the first burst grows the staging
  // buffer, so the second needs fewer reads for the same bytes.
  const size_t first = Burst(p, rng, 60, 200);
  const size_t second = Burst(p, rng, 60, 200);
  EXPECT_LT(second, first);
  // Larger ones, bulk placement included.
  (void)Burst(p, rng, 40, 5000);
  EXPECT_EQ(p.a.sink.terminated + p.b.sink.terminated, 0);
}

TEST(QpSmallStartTest, CreateRefusesBadStagingSizes) {
  auto conns = ::iwarpx::testing::MakeFakeConnectionPair(0);
  mem::StagTable stags{Random(1), 16};
  RecordingSink sink;
  const wire::MpaOutcome mpa;
  for (const size_t good : {kRxStagingMin, size_t{4096}, kRxStagingSize}) {
    QpConfig cfg;
    cfg.rx_staging_initial = good;
    EXPECT_TRUE(QueuePair::Create(*conns.first, stags, 1, mpa, cfg, sink).ok()) << good;
  }
  for (const size_t bad : {size_t{0}, size_t{128}, size_t{3000}, kRxStagingSize * 2}) {
    QpConfig cfg;
    cfg.rx_staging_initial = bad;
    auto q = QueuePair::Create(*conns.first, stags, 1, mpa, cfg, sink);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_EQ(q.error(), QpStatus::kInvalid);
  }
}

}  // namespace
}  // namespace iwarpx::qp::test
