// Markers in both directions (RFC 5044 §4: each side asked for them): the
// transmit side inserts them every 512 octets of the stream, the receive side
// checks and strips them, whatever the FPDU sizes and however the stream is
// split into reads.
#include <algorithm>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;
using ::iwarpx::testing::RandomBytes;

class QpMarkersBothWaysTest : public ::testing::TestWithParam<std::tuple<size_t, bool>> {};

TEST_P(QpMarkersBothWaysTest, SendsWritesAndReadsArriveIntact) {
  const auto [max_per_call, crc] = GetParam();
  QpConfig cfg;
  cfg.max_fpdu_payload = 1000;  // several markers per FPDU, FPDUs not aligned to 512
  QpPair p(max_per_call, crc, cfg, 4, 4, /*markers=*/true);
  ASSERT_NE(p.a.qp, nullptr);
  ASSERT_NE(p.b.qp, nullptr);
  p.Start();
  std::mt19937 rng(11);
  // Sends of awkward sizes both ways.
  std::vector<Bytes> sent_ab;
  std::vector<Bytes> recv_b(12, Bytes(3000, 0));
  for (size_t i = 0; i < recv_b.size(); ++i) {
    RecvWr r;
    r.context = 100 + i;
    r.sgl.Add(recv_b[i].data(), recv_b[i].size());
    ASSERT_EQ(p.b.qp->PostRecv(r), QpStatus::kOk);
  }
  for (size_t i = 0; i < recv_b.size(); ++i) {
    sent_ab.push_back(RandomBytes(rng, 1 + (i * 251) % 2999));
    SendWr s;
    s.context = i;
    s.sgl.Add(sent_ab.back().data(), sent_ab.back().size());
    ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
  }
  // An RDMA Write and a Read from b's region.
  Bytes region(20000, 0);
  const uint32_t stag = p.b.Register(region, mem::kRemoteWrite | mem::kRemoteRead, 0);
  const Bytes data = RandomBytes(rng, 9999);
  WriteWr w;
  w.context = 50;
  w.sgl.Add(const_cast<uint8_t*>(data.data()), data.size());
  w.remote_stag = stag;
  w.remote_to = 3;
  ASSERT_EQ(p.a.qp->PostWrite(w), QpStatus::kOk);
  Bytes back(9999, 0);
  const uint32_t sink = p.a.Register(back, mem::kLocalWrite, 0);
  ReadWr rd;
  rd.context = 51;
  rd.local_stag = sink;
  rd.length = static_cast<uint32_t>(back.size());
  rd.remote_stag = stag;
  rd.remote_to = 3;
  rd.flags = kWrSignaled | kWrFence;
  ASSERT_EQ(p.a.qp->PostRead(rd), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(p.a.sink.terminated, 0);
  EXPECT_EQ(p.b.sink.terminated, 0);
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), recv_b.size());
  for (size_t i = 0; i < recv_b.size(); ++i) {
    EXPECT_TRUE(std::equal(sent_ab[i].begin(), sent_ab[i].end(), recv_b[i].begin())) << i;
  }
  EXPECT_TRUE(std::equal(data.begin(), data.end(), region.begin() + 3));
  EXPECT_EQ(back, data);
  EXPECT_EQ(p.a.sink.Count(Kind::kRdma), 2u);
}

INSTANTIATE_TEST_SUITE_P(Splits, QpMarkersBothWaysTest,
                         ::testing::Combine(::testing::Values(size_t{1}, size_t{13}, size_t{0}),
                                            ::testing::Bool()));

}  // namespace
}  // namespace iwarpx::qp::test
