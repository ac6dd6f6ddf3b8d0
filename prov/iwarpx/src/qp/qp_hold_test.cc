// HoldRequests (queue_pair.h, "Holding the peer's requests"): while held, the
// peer's Writes are not placed, its Sends not delivered and its Reads not
// answered; the RTR and the responses to our own Reads still pass; releasing
// processes everything in stream order from inside the call.
#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>

#include "testing/qp_harness.h"

namespace iwarpx::qp::test {
namespace {

using Kind = Completion::Kind;

TEST(QpHoldTest, RequestsWaitResponsesAndRtrPass) {
  QpPair p(0, true);
  ASSERT_TRUE(p.a.qp && p.b.qp);
  p.b.qp->HoldRequests(true);  // before anything arrived, as the RDM endpoint does
  EXPECT_TRUE(p.b.qp->requests_held());
  p.Start();
  p.Pump();
  EXPECT_EQ(p.b.sink.established, 1) << "the RTR must pass the hold";

  // B's own Read of A's memory: the Read Response passes the hold.
  Bytes a_src(300, 0x5A);
  const uint32_t a_src_stag = p.a.Register(a_src, mem::kRemoteRead, 0x4000);
  ASSERT_NE(a_src_stag, 0u);
  Bytes b_sink(300, 0);
  const uint32_t b_sink_stag = p.b.Register(b_sink, mem::kLocalWrite, 0x8000);
  ReadWr own;
  own.context = 9;
  own.length = 300;
  own.local_stag = b_sink_stag;
  own.local_to = 0x8000;
  own.remote_stag = a_src_stag;
  own.remote_to = 0x4000;
  ASSERT_EQ(p.b.qp->PostRead(own), QpStatus::kOk);
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRdma), 1u) << "our Read's response was held";
  EXPECT_EQ(b_sink, a_src);

  // A's Write, Send and Read: none of them is processed while held.
  Bytes target(256, 0);
  const uint32_t target_stag = p.b.Register(target, mem::kRemoteWrite | mem::kRemoteRead, 0x1000);
  ASSERT_NE(target_stag, 0u);
  Bytes rbuf(64, 0);
  RecvWr rv;
  rv.context = 5;
  rv.sgl.Add(rbuf.data(), rbuf.size());
  ASSERT_EQ(p.b.qp->PostRecv(rv), QpStatus::kOk);
  Bytes wdata(256, 0x77);
  WriteWr w;
  w.context = 1;
  w.sgl.Add(wdata.data(), wdata.size());
  w.remote_stag = target_stag;
  w.remote_to = 0x1000;
  ASSERT_EQ(p.a.qp->PostWrite(w), QpStatus::kOk);
  Bytes msg(40, 0x33);
  SendWr s;
  s.context = 2;
  s.sgl.Add(msg.data(), msg.size());
  ASSERT_EQ(p.a.qp->PostSend(s), QpStatus::kOk);
  Bytes back(256, 0);
  const uint32_t back_stag = p.a.Register(back, mem::kLocalWrite, 0x9000);
  ReadWr rd;
  rd.context = 3;
  rd.length = 256;
  rd.local_stag = back_stag;
  rd.local_to = 0x9000;
  rd.remote_stag = target_stag;
  rd.remote_to = 0x1000;
  ASSERT_EQ(p.a.qp->PostRead(rd), QpStatus::kOk);
  p.Pump();
  EXPECT_TRUE(std::all_of(target.begin(), target.end(), [](uint8_t b) { return b == 0; }))
      << "a held Write was placed";
  EXPECT_EQ(p.b.sink.Count(Kind::kRecv), 0u) << "a held Send was delivered";
  EXPECT_FALSE(p.b.qp->wants_read());
  EXPECT_FALSE(p.b.qp->wants_progress());
  size_t a_reads_done = 0;
  for (const Completion& c : p.a.sink.completions) {
    if (c.context == 3) ++a_reads_done;
  }
  EXPECT_EQ(a_reads_done, 0u) << "a held Read Request was answered";

  // Released: Write placed, Send delivered, Read answered (with the Write's
  // bytes: stream order), from inside the call and the pumps after it.
  p.b.qp->HoldRequests(false);
  EXPECT_FALSE(p.b.qp->requests_held());
  EXPECT_EQ(target, wdata) << "not placed from inside HoldRequests(false)";
  p.Pump();
  ASSERT_EQ(p.b.sink.Count(Kind::kRecv), 1u);
  EXPECT_EQ(std::memcmp(rbuf.data(), msg.data(), msg.size()), 0);
  EXPECT_EQ(back, wdata);
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
}

TEST(QpHoldTest, UnheldQpIsUnchanged) {
  QpPair p(0, false);
  p.Start();
  p.Pump();
  p.b.qp->HoldRequests(false);  // no hold: nothing happens
  Bytes target(32, 0);
  const uint32_t stag = p.b.Register(target, mem::kRemoteWrite, 0x1000);
  Bytes data(32, 9);
  WriteWr w;
  w.sgl.Add(data.data(), data.size());
  w.remote_stag = stag;
  w.remote_to = 0x1000;
  ASSERT_EQ(p.a.qp->PostWrite(w), QpStatus::kOk);
  p.Pump();
  EXPECT_EQ(target, data);
}

}  // namespace
}  // namespace iwarpx::qp::test
