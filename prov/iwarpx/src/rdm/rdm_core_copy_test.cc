// The copy rendezvous of RdmCore (rdm_core_copy.cc) on a real engine and
// loopback UDP: sizes around the fragment size with scattered buffers on
// both sides, bit-exact, counted on the copy channel; the fallback from
// either zero-copy rendezvous when a registration is refused (a full STag
// table) on the sender or the receiver; and hostile DATA — for no
// rendezvous, out of order, or beyond the receive buffer — refused as a
// protocol error without writing outside the buffer. The cases every
// protocol shares (truncation, unexpected, faults, 64 MiB, peer loss) run in
// rdm_core_test.cc with the copy mode too.
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rdm_core.h"
#include "rdm/rdm_core_fixture.h"
#include "wire/rdm_msg.h"

namespace iwarpx::rdm {
namespace {

using testing_core::Event;
using testing_core::RdmCoreTest;
using testing_core::RdmMode;

class RdmCopyTest : public RdmCoreTest {
 protected:
  // Sends `msg` as three pieces and receives it into three pieces of other
  // sizes (plus guard bytes after the buffer); checks it bit-exact.
  void ScatteredRoundTrip(size_t size, uint64_t ctx) {
    SCOPED_TRACE(size);
    const std::vector<uint8_t> msg = Pattern(size, static_cast<uint8_t>(ctx));
    std::vector<uint8_t> src = msg;
    std::vector<uint8_t> dst(size + 64, 0xEE);
    const size_t s1 = size / 3;
    const size_t s2 = size / 2;
    const size_t d1 = size / 5;
    const size_t d2 = size - size / 4;
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      iovec rv[3] = {{dst.data(), d1}, {dst.data() + d1, d2 - d1}, {dst.data() + d2, size - d2}};
      RecvRequest r;
      r.context = ctx;
      r.iov = rv;
      r.count = 3;
      ASSERT_EQ(b_->PostRecv(r), RdmStatus::kOk);
      iovec sv[3] = {{src.data(), s1}, {src.data() + s1, s2 - s1}, {src.data() + s2, size - s2}};
      ASSERT_EQ(a_->Send(b_->local_address(), sv, 3, false, 0, false, 0, ctx), RdmStatus::kOk);
      a_->AfterPost();
      b_->AfterPost();
    }
    ASSERT_TRUE(RunUntil(
        [&] { return sb_.Find(Event::kRecvDone, ctx) && sa_.Find(Event::kSendDone, ctx); }));
    EXPECT_EQ(sb_.Find(Event::kRecvDone, ctx)->r.len, size);
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), dst.begin()));
    for (size_t i = size; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xEE) << i;
  }
  // Posts a raw RDM message (header + payload) from a_ to b_ on their RD QP,
  // as a misbehaving peer would. The bytes must live until the test ends.
  void RawSend(std::vector<uint8_t>& bytes, uint64_t ctx) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    RdmCore::RmaRoute route;
    ASSERT_EQ(a_->RouteRma(b_->local_address(), &route), RdmStatus::kOk);
    ASSERT_FALSE(route.on_rc);  // these tests never open a connection
    qp::SendWr wr;
    wr.context = route.ctx_bits | ctx;
    wr.sgl.Add(bytes.data(), bytes.size());
    a_->RmaPosting(route, wr.context);
    ASSERT_EQ(route.qp->PostSend(wr), qp::QpStatus::kOk);
    a_->RmaPosted(route);
    a_->AfterPost();
  }
  // A table with no room: every registration there is refused. A member,
  // so it outlives the cores (TearDown destroys them).
  mem::StagTable full_{Random(7), 0};
  static std::vector<uint8_t> Encoded(const wire::RdmHeader& h, size_t payload = 0) {
    std::vector<uint8_t> out(wire::kRdmRtsMaxSize);
    auto n = wire::EncodeRdmHeader(h, out);
    EXPECT_TRUE(n.ok());
    out.resize((n.ok() ? *n : 0) + payload, 0x5A);
    return out;
  }
};

// --- The copy channel chosen by the chain ------------------------------------

using RdmCopyChannelTest = RdmCopyTest;

TEST_P(RdmCopyChannelTest, SizesAroundTheFragmentScatteredBitExact) {
  size_t limit = 0;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    limit = a_->eager_limit();
  }
  const std::vector<size_t> sizes = {limit + 1,
                                     2 * limit - 1,
                                     2 * limit,
                                     2 * limit + 1,
                                     RdmCore::kCopyWindow * limit,
                                     RdmCore::kCopyWindow * limit + 7,
                                     size_t{3} << 20};
  uint64_t ctx = 1;
  uint64_t bytes = 0;
  for (const size_t size : sizes) {
    ASSERT_NO_FATAL_FAILURE(ScatteredRoundTrip(size, ctx++));
    bytes += size;
  }
  EXPECT_EQ(sa_.Count(Event::kSendFailed) + sb_.Count(Event::kRecvFailed), 0u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(a_->counters().copy_msgs, sizes.size());
  EXPECT_EQ(a_->counters().copy_fallbacks, 0u);
  EXPECT_EQ(a_->counters().ud_zcopy_msgs, 0u);
  EXPECT_EQ(b_->counters().cts_sent, sizes.size());
  EXPECT_EQ(b_->counters().protocol_errors + a_->counters().protocol_errors, 0u);
  // Counted per peer on the copy channel, both sides, in messages and bytes.
  PeerSnapshot sa;
  PeerSnapshot sb;
  ASSERT_TRUE(a_->Snapshot(a_->PeerIdOf(b_->local_address()), &sa));
  ASSERT_TRUE(b_->Snapshot(b_->PeerIdOf(a_->local_address()), &sb));
  const ChannelCounts& tx = sa.stats.channel[static_cast<size_t>(Channel::kCopy)];
  const ChannelCounts& rx = sb.stats.channel[static_cast<size_t>(Channel::kCopy)];
  EXPECT_EQ(tx.msgs_sent, sizes.size());
  EXPECT_EQ(tx.bytes_sent, bytes);
  EXPECT_EQ(rx.msgs_received, sizes.size());
  EXPECT_EQ(rx.bytes_received, bytes);
}

// A receive buffer of 0 bytes takes nothing: CTS (C) for 0, both sides done.
TEST_P(RdmCopyChannelTest, EmptyReceiveBufferTakesNothing) {
  std::vector<uint8_t> msg = Pattern(50000, 3);
  std::vector<uint8_t> none;
  ASSERT_EQ(Recv(*b_, none, 1), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, msg, 2), RdmStatus::kOk);
  ASSERT_TRUE(
      RunUntil([&] { return sb_.Find(Event::kRecvDone, 1) && sa_.Find(Event::kSendDone, 2); }));
  EXPECT_EQ(sb_.Find(Event::kRecvDone, 1)->r.len, 0u);
  EXPECT_EQ(sb_.Find(Event::kRecvDone, 1)->r.truncated, msg.size());
}

// --- Hostile DATA ----------------------------------------------------------

// A DATA that names no rendezvous: a protocol error, the peer's session fails.
TEST_P(RdmCopyChannelTest, StrayDataIsAProtocolError) {
  std::vector<uint8_t> warm = Pattern(10, 1);  // makes the RD session
  std::vector<uint8_t> rx(10);
  ASSERT_EQ(Recv(*b_, rx, 1), RdmStatus::kOk);
  ASSERT_EQ(Send(*a_, *b_, warm, 2), RdmStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return sb_.Find(Event::kRecvDone, 1) != nullptr; }));
  wire::RdmHeader d;
  d.op = wire::RdmOp::kData;
  d.msg_id = 0x70007;
  d.offset = 0;
  d.size = 100;
  std::vector<uint8_t> stray = Encoded(d, 100);
  ASSERT_NO_FATAL_FAILURE(RawSend(stray, 9));
  ASSERT_TRUE(RunUntil([&] { return b_->counters().protocol_errors >= 1; }));
  EXPECT_GE(b_->counters().peers_failed, 1u);
}

// A matched copy rendezvous, then a DATA that starts in order but runs past
// the 100-byte buffer (the message claims 1000): refused, the receive fails,
// and not one byte lands in the buffer or after it.
TEST_P(RdmCopyChannelTest, DataBeyondTheBufferIsRefusedAndWritesNothing) {
  std::vector<uint8_t> buf(164, 0xEE);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), 100};
    RecvRequest r;
    r.context = 1;
    r.iov = &v;
    r.count = 1;
    ASSERT_EQ(b_->PostRecv(r), RdmStatus::kOk);
  }
  wire::RdmHeader rts;
  rts.op = wire::RdmOp::kRts;
  rts.copy = true;
  rts.msg_id = 0x50005;
  rts.size = 1000;
  std::vector<uint8_t> rts_bytes = Encoded(rts);
  wire::RdmHeader d;
  d.op = wire::RdmOp::kData;
  d.msg_id = rts.msg_id;
  d.offset = 0;
  d.size = 150;  // inside the message, beyond the 100 bytes the receiver took
  std::vector<uint8_t> data = Encoded(d, 150);
  ASSERT_NO_FATAL_FAILURE(RawSend(rts_bytes, 1));
  ASSERT_NO_FATAL_FAILURE(RawSend(data, 2));
  ASSERT_TRUE(RunUntil([&] { return sb_.Find(Event::kRecvFailed, 1) != nullptr; }));
  EXPECT_GE(b_->counters().protocol_errors, 1u);
  EXPECT_EQ(b_->counters().cts_sent, 1u);  // it did match and answer
  for (size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xEE) << i;
}

// DATA must come in order: one that skips ahead is refused (no hole filled
// later could be told from a duplicate), and nothing is written.
TEST_P(RdmCopyChannelTest, DataOutOfOrderIsRefused) {
  std::vector<uint8_t> buf(1000, 0xEE);
  ASSERT_EQ(Recv(*b_, buf, 1), RdmStatus::kOk);
  wire::RdmHeader rts;
  rts.op = wire::RdmOp::kRts;
  rts.copy = true;
  rts.msg_id = 0x60006;
  rts.size = 1000;
  std::vector<uint8_t> rts_bytes = Encoded(rts);
  wire::RdmHeader d;
  d.op = wire::RdmOp::kData;
  d.msg_id = rts.msg_id;
  d.offset = 500;
  d.size = 100;
  std::vector<uint8_t> data = Encoded(d, 100);
  ASSERT_NO_FATAL_FAILURE(RawSend(rts_bytes, 1));
  ASSERT_NO_FATAL_FAILURE(RawSend(data, 2));
  ASSERT_TRUE(RunUntil([&] { return sb_.Find(Event::kRecvFailed, 1) != nullptr; }));
  EXPECT_GE(b_->counters().protocol_errors, 1u);
  for (const uint8_t c : buf) ASSERT_EQ(c, 0xEE);
}

INSTANTIATE_TEST_SUITE_P(Copy, RdmCopyChannelTest, ::testing::Values(RdmMode::kCopy),
                         testing_core::ModeName);

// --- Fallback from the zero-copy rendezvous ------------------------------------

// full_ on one side: every registration there is refused.
using RdmCopyFallbackTest = RdmCopyTest;

TEST_P(RdmCopyFallbackTest, ReceiverThatCannotRegisterGetsTheDataByCopy) {
  OpenWith(Config(), {}, nullptr, &full_);
  for (const size_t size : {size_t{5000}, size_t{1} << 20}) {
    ASSERT_NO_FATAL_FAILURE(ScatteredRoundTrip(size, size));
  }
  EXPECT_EQ(sa_.Count(Event::kSendFailed) + sb_.Count(Event::kRecvFailed), 0u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(b_->counters().copy_fallbacks, 2u);  // counted where registration failed
  EXPECT_EQ(a_->counters().copy_fallbacks, 0u);
  EXPECT_EQ(a_->counters().copy_msgs, 2u);  // the sender turned copy on the CTS (C)
  EXPECT_EQ(stags_a_.size(), 0u);           // its regions for the Reads are gone
  EXPECT_EQ(a_->counters().protocol_errors + b_->counters().protocol_errors, 0u);
}

TEST_P(RdmCopyFallbackTest, SenderThatCannotRegisterSendsByCopy) {
  OpenWith(Config(), {}, &full_, nullptr);
  for (const size_t size : {size_t{5000}, size_t{1} << 20}) {
    ASSERT_NO_FATAL_FAILURE(ScatteredRoundTrip(size, size));
  }
  EXPECT_EQ(sa_.Count(Event::kSendFailed) + sb_.Count(Event::kRecvFailed), 0u);
  std::lock_guard<std::mutex> lock(engine_->mu());
  // The read handshake registers at the sender: it falls back there; the
  // write handshake registers nothing at the sender: no fallback needed.
  const bool read = GetParam() == RdmMode::kRead;
  EXPECT_EQ(a_->counters().copy_fallbacks, read ? 2u : 0u);
  EXPECT_EQ(a_->counters().copy_msgs, read ? 2u : 0u);
  EXPECT_EQ(a_->counters().protocol_errors + b_->counters().protocol_errors, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fallback, RdmCopyFallbackTest,
                         ::testing::Values(RdmMode::kRead, RdmMode::kWrite),
                         testing_core::ModeName);

}  // namespace
}  // namespace iwarpx::rdm
