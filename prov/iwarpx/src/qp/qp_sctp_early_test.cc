// DDP segments that overtake the responder's Accept (docs/wire.md §2.0 "DDP
// segments before the Accept"): session setup on both ends (cm::SctpCep),
// then the QPs as progress/msg_channel.cc makes them, over
// FakeSctpConnection. HoldStream(0) keeps the Accept back, as SCTP does while
// the Accept's packet is retransmitted, so the responder's Sends on another
// stream arrive first. The initiator keeps them and its QP receives them
// first once the Accept is in: nothing lost, duplicated or out of order on
// a stream, and nothing placed before the QP exists; what the QP refuses in
// them ends in a Terminate as it would later.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "cm/sctp_cep.h"
#include "testing/fake_clock.h"
#include "testing/qp_sctp_harness.h"
#include "wire/ddp.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {
namespace {

using ::iwarpx::testing::Iota;
using Kind = Completion::Kind;

struct EarlyPair {
  ::iwarpx::testing::FakeClock clock;
  SctpSide a;  // initiator
  SctpSide b;  // responder
  std::unique_ptr<cm::SctpCep> init;
  std::unique_ptr<cm::SctpCep> resp;
  QpConfig cfg;

  EarlyPair() : EarlyPair(MakeFakeSctpPair()) {}
  explicit EarlyPair(
      std::pair<std::unique_ptr<FakeSctpConnection>, std::unique_ptr<FakeSctpConnection>> c)
      : a(std::move(c.first), 11), b(std::move(c.second), 22) {
    cfg.max_fpdu_payload = 1024;
    init = std::move(cm::SctpCep::CreateInitiator(*a.conn, clock, {}, {})).value();
    resp = std::move(cm::SctpCep::CreateResponder(*b.conn, clock, {})).value();
    for (int i = 0; i < 4; ++i) {
      init->OnWritable();
      init->OnReadable();
      resp->OnReadable();
    }
  }
  // The responder accepts with its Accept held back, and its QP starts (as
  // MsgChannel does once the Accept is sent).
  void AcceptHeldAndStartResponder() {
    a.conn->HoldStream(0);
    ASSERT_TRUE(resp->Accept({}).ok());
    ASSERT_EQ(resp->state(), cm::CepState::kEstablished);
    b.CreateWith(*resp->outcome(), cfg, resp->TakeEarlySegments());
    ASSERT_TRUE(b.qp);
    b.qp->Start();
  }
  // The initiator's QP once its SctpCep established (MsgChannel::StartQp).
  void StartInitiator(std::vector<Bytes>& bufs) {
    ASSERT_EQ(init->state(), cm::CepState::kEstablished) << ToString(init->state());
    a.CreateWith(*init->outcome(), cfg, init->TakeEarlySegments());
    ASSERT_TRUE(a.qp);
    for (size_t i = 0; i < bufs.size(); ++i) {
      RecvWr r;
      r.context = i + 1;
      r.sgl.Add(bufs[i].data(), bufs[i].size());
      ASSERT_EQ(a.qp->PostRecv(r), QpStatus::kOk);
    }
    a.qp->Start();
    if (a.qp->wants_read()) a.qp->OnReadable();
  }
  void Pump() {
    for (int i = 0; i < 256; ++i) {
      if (b.qp->wants_write()) b.qp->OnWritable();
      if (a.qp && a.qp->wants_read()) a.qp->OnReadable();
      if (b.qp->wants_read()) b.qp->OnReadable();
    }
  }
};

SendWr SendOn(uint64_t context, Bytes& data, uint16_t stream) {
  SendWr s;
  s.context = context;
  s.sgl.Add(data.data(), data.size());
  s.stream = stream;
  return s;
}

std::vector<Completion> Recvs(const RecordingSink& sink) {
  std::vector<Completion> out;
  std::copy_if(sink.completions.begin(), sink.completions.end(), std::back_inserter(out),
               [](const Completion& c) { return c.kind == Kind::kRecv; });
  return out;
}

TEST(QpSctpEarlyTest, SendsThatOvertookTheAcceptArriveAfterSetupInStreamOrder) {
  EarlyPair p;
  p.AcceptHeldAndStartResponder();
  // Two segments of the first Send on stream 2 overtake the Accept; its
  // third segment and the second Send on stream 2 come after it, as does
  // the Send on stream 0 (always behind the Accept).
  p.a.conn->HoldStream(2, 2);
  Bytes first = Iota(2500, 1);  // 3 segments at 1024
  Bytes second = Iota(100, 50);
  Bytes zero = Iota(50, 90);
  ASSERT_EQ(p.b.qp->PostSend(SendOn(1, first, 2)), QpStatus::kOk);
  ASSERT_EQ(p.b.qp->PostSend(SendOn(2, second, 2)), QpStatus::kOk);
  ASSERT_EQ(p.b.qp->PostSend(SendOn(3, zero, 0)), QpStatus::kOk);
  p.Pump();

  p.init->OnReadable();  // reads the two segments that overtook the Accept
  ASSERT_EQ(p.init->state(), cm::CepState::kAwaitingReply)
      << "the initiator failed the setup on a Send ahead of the Accept";
  p.a.conn->ReleaseStream(0);
  p.init->OnReadable();
  std::vector<Bytes> bufs(3, Bytes(4096, 0));
  p.StartInitiator(bufs);
  ASSERT_EQ(p.a.qp->sctp_framing()->messages_received(), 3u)
      << "the two early segments, then the stream 0 Send";
  p.a.conn->ReleaseStream(2);
  p.Pump();

  EXPECT_EQ(p.a.sink.terminated, 0);
  EXPECT_EQ(p.b.sink.terminated, 0);
  EXPECT_EQ(p.a.sink.Count(Kind::kError), 0u);
  const auto recvs = Recvs(p.a.sink);
  ASSERT_EQ(recvs.size(), 3u);
  // Receives are taken in arrival order: the first Send claimed receive 1
  // with its first (early) segment, the stream 0 Send receive 2.
  EXPECT_EQ(recvs[0].context, 2u);
  EXPECT_EQ(recvs[0].bytes, zero.size());
  EXPECT_EQ(recvs[1].context, 1u);
  EXPECT_EQ(recvs[1].bytes, first.size());
  EXPECT_EQ(recvs[2].context, 3u);
  EXPECT_EQ(recvs[2].bytes, second.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), bufs[0].begin()));
  EXPECT_TRUE(std::equal(zero.begin(), zero.end(), bufs[1].begin()));
  EXPECT_TRUE(std::equal(second.begin(), second.end(), bufs[2].begin()));
  EXPECT_EQ(p.b.sink.Count(Kind::kSend), 3u);
  EXPECT_EQ(p.a.qp->sctp_framing()->messages_received_on(2), 4u);
}

// The QP checks an early segment as one from the association: a tagged Write
// on stream 2 (only stream 0 carries Writes) is refused with a Terminate and
// nothing of it is placed, though its STag is valid.
TEST(QpSctpEarlyTest, EarlySegmentTheQpRefusesEndsInATerminateWithNothingPlaced) {
  EarlyPair p;
  p.AcceptHeldAndStartResponder();
  Bytes target(64, 0);
  const uint32_t stag = p.a.Register(target, mem::kRemoteWrite, 0x4000);
  ASSERT_NE(stag, 0u);
  Bytes write(wire::kDdpTaggedHeaderSize + 8, 0x77);
  ASSERT_TRUE(wire::EncodeWriteHeader(stag, 0x4000, true, write).ok());
  transport::MessageInfo info;
  info.stream = 2;
  const iovec v{write.data(), write.size()};
  ASSERT_TRUE(p.b.conn->SendMsg({&v, 1}, info).ok());
  p.init->OnReadable();
  ASSERT_EQ(p.init->state(), cm::CepState::kAwaitingReply);
  EXPECT_EQ(target, Bytes(64, 0)) << "nothing placed before the QP exists";
  p.a.conn->ReleaseStream(0);
  p.init->OnReadable();
  std::vector<Bytes> bufs(1, Bytes(64, 0));
  p.StartInitiator(bufs);
  EXPECT_EQ(p.a.sink.terminated, 1);
  EXPECT_EQ(p.a.sink.term_origin, TermOrigin::kSent);
  EXPECT_EQ(p.a.sink.term_cause, wire::term::kLlpInvalidReqRep);
  EXPECT_EQ(target, Bytes(64, 0)) << "the refused Write placed nothing";
}

}  // namespace
}  // namespace iwarpx::qp::test
