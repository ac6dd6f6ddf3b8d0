// The initiator's SctpCep and DDP segments that overtake the Accept
// (sctp_cep.h "Initiator in kAwaitingReply"; docs/wire.md §2.0). Runs over
// testing::FakeSctpConnection, whose HoldStream(0) keeps the Accept back
// while later messages of other streams are delivered past it, as SCTP does
// when the Accept's packet is lost. The responder is a real SctpCep; the
// test plays its QP by sending DDP segments (PPID 16) by hand.
#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "cm/sctp_cep.h"
#include "testing/fake_clock.h"
#include "testing/fake_sctp_connection.h"
#include "wire/fpdu.h"

namespace iwarpx::cm {
namespace {

using ::iwarpx::testing::FakeClock;
using ::iwarpx::testing::FakeSctpConnection;
using transport::MessageInfo;
using wire::WireError;

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

struct Handshake {
  std::unique_ptr<FakeSctpConnection> a;  // initiator's end
  std::unique_ptr<FakeSctpConnection> b;  // responder's end
  FakeClock clock;
  std::unique_ptr<SctpCep> init;
  std::unique_ptr<SctpCep> resp;

  // Both CEPs, driven until the responder holds the Initiate.
  Handshake() {
    auto [x, y] = ::iwarpx::testing::MakeFakeSctpPair();
    a = std::move(x);
    b = std::move(y);
    init = std::move(SctpCep::CreateInitiator(*a, clock, {}, {})).value();
    resp = std::move(SctpCep::CreateResponder(*b, clock, {})).value();
    Drive();
    EXPECT_EQ(init->state(), CepState::kAwaitingReply);
    EXPECT_EQ(resp->state(), CepState::kRequestReceived);
  }
  void Drive() {
    for (int i = 0; i < 4; ++i) {
      init->OnWritable();
      init->OnReadable();
      resp->OnWritable();
      resp->OnReadable();
    }
  }
  // The responder accepts; its Accept waits on stream 0 until Release().
  void AcceptHeld() {
    a->HoldStream(0);
    ASSERT_TRUE(resp->Accept({}).ok());
    ASSERT_EQ(resp->state(), CepState::kEstablished);
  }
  void Release() {
    a->ReleaseStream(0);
    init->OnReadable();
  }
  // What the responder's QP would send: one DDP segment as one message.
  void SendSegment(const std::vector<uint8_t>& bytes, uint16_t stream, bool unordered = false) {
    MessageInfo info;
    info.ppid = wire::kSctpPpidDdpSegment;
    info.stream = stream;
    info.unordered = unordered;
    const iovec v{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    ASSERT_TRUE(b->SendMsg({&v, 1}, info).ok());
  }
  void ExpectFailed(CepErrorKind kind, WireError wire_error = WireError{}) {
    EXPECT_EQ(init->state(), CepState::kFailed) << ToString(init->state());
    EXPECT_EQ(init->error().kind, kind);
    if (kind == CepErrorKind::kProtocol) {
      EXPECT_EQ(init->error().wire_error, wire_error) << ToString(init->error().wire_error);
    }
    EXPECT_TRUE(init->TakeEarlySegments().empty());
  }
};

TEST(SctpCepEarlyTest, SegmentsBeforeTheAcceptAreKeptAndHandedOverInArrivalOrder) {
  Handshake s;
  s.AcceptHeld();
  const auto one = Pattern(10, 1);
  const auto two = Pattern(3000, 2);  // larger than a setup message: joined from pieces
  const auto three = Pattern(wire::kMaxUlpduLength, 3);
  s.SendSegment(one, 3);
  s.SendSegment(two, 5);
  s.SendSegment(three, 3);
  s.a->set_max_per_recv(700);  // partial deliveries
  s.init->OnReadable();
  EXPECT_EQ(s.init->state(), CepState::kAwaitingReply) << "the wait for the Accept goes on";
  EXPECT_EQ(s.a->pending(), 0u) << "every early segment was read";
  EXPECT_TRUE(s.init->TakeEarlySegments().empty()) << "nothing before a valid Accept";

  s.Release();
  ASSERT_EQ(s.init->state(), CepState::kEstablished);
  transport::SctpMessageQueue early = s.init->TakeEarlySegments();
  ASSERT_EQ(early.messages(), 3u);
  const std::vector<std::pair<const std::vector<uint8_t>*, uint16_t>> want = {
      {&one, 3}, {&two, 5}, {&three, 3}};
  for (const auto& [bytes, stream] : want) {
    EXPECT_EQ(early.front_info().ppid, wire::kSctpPpidDdpSegment);
    EXPECT_EQ(early.front_info().stream, stream);
    EXPECT_FALSE(early.front_info().unordered);
    EXPECT_EQ(std::vector<uint8_t>(early.front().begin(), early.front().end()), *bytes);
    early.Pop();
  }
  EXPECT_TRUE(s.init->TakeEarlySegments().empty()) << "handed over once";
}

TEST(SctpCepEarlyTest, WithoutEarlySegmentsNothingIsHandedOver) {
  Handshake s;
  ASSERT_TRUE(s.resp->Accept({}).ok());
  s.init->OnReadable();
  ASSERT_EQ(s.init->state(), CepState::kEstablished);
  EXPECT_TRUE(s.init->TakeEarlySegments().empty());
  EXPECT_TRUE(s.resp->TakeEarlySegments().empty());
}

// What no correct responder sends before its Accept fails the setup at once.
TEST(SctpCepEarlyTest, SegmentOnStreamZeroOrUnorderedFailsTheSetup) {
  {
    Handshake s;  // stream 0 is the Accept's: nothing there can precede it
    s.SendSegment(Pattern(20, 1), 0);
    s.init->OnReadable();
    s.ExpectFailed(CepErrorKind::kProtocol, WireError::kSctpSessionBadFunction);
  }
  {
    Handshake s;  // only Read Responses go unordered; no Read was sent
    s.SendSegment(Pattern(20, 1), 2, /*unordered=*/true);
    s.init->OnReadable();
    s.ExpectFailed(CepErrorKind::kProtocol, WireError::kSctpSessionBadFunction);
  }
}

TEST(SctpCepEarlyTest, SegmentLongerThanAUlpduFailsTheSetup) {
  Handshake s;
  s.AcceptHeld();
  s.SendSegment(Pattern(wire::kMaxUlpduLength + 1, 4), 2);
  s.init->OnReadable();
  s.ExpectFailed(CepErrorKind::kProtocol, WireError::kSctpSessionBadLength);
}

TEST(SctpCepEarlyTest, MoreThanTheBoundFailsTheSetupWithEnobufs) {
  Handshake s;
  s.AcceptHeld();
  const auto seg = Pattern(wire::kMaxUlpduLength, 5);
  const size_t charged = seg.size() + transport::SctpMessageQueue::kOverheadPerMessage;
  const size_t fit = SctpCep::kMaxEarlyBytes / charged;
  for (size_t i = 0; i < fit; ++i) s.SendSegment(seg, 1);
  s.init->OnReadable();
  EXPECT_EQ(s.init->state(), CepState::kAwaitingReply) << "up to the bound";
  s.SendSegment(seg, 1);
  s.init->OnReadable();
  s.ExpectFailed(CepErrorKind::kTransport);
  EXPECT_EQ(s.init->error().sys_errno, ENOBUFS);
  EXPECT_EQ(CepErrno(s.init->error()), ENOBUFS);
}

// Early segments not followed by a valid Accept: the setup ends as it would
// without them, and they are dropped.
TEST(SctpCepEarlyTest, NoValidAcceptAfterEarlySegmentsEndsTheSetupWithoutThem) {
  {
    SCOPED_TRACE("reject");
    Handshake s;
    s.SendSegment(Pattern(20, 1), 2);
    ASSERT_TRUE(s.resp->Reject({}).ok());
    s.init->OnReadable();
    EXPECT_EQ(s.init->state(), CepState::kRejected);
    EXPECT_TRUE(s.init->TakeEarlySegments().empty());
  }
  {
    SCOPED_TRACE("timeout");
    Handshake s;
    s.SendSegment(Pattern(20, 1), 2);
    s.init->OnReadable();
    EXPECT_EQ(s.init->state(), CepState::kAwaitingReply);
    s.clock.Advance(CepTimeouts{}.reply_ns);
    s.init->OnTimer();
    s.ExpectFailed(CepErrorKind::kTimeout);
  }
  {
    SCOPED_TRACE("association ends");
    Handshake s;
    s.SendSegment(Pattern(20, 1), 2);
    ASSERT_TRUE(s.b->ShutdownWrite().ok());
    s.init->OnReadable();
    s.ExpectFailed(CepErrorKind::kPeerClosed);
  }
  {
    SCOPED_TRACE("an answer that is not an Accept");
    Handshake s;
    s.SendSegment(Pattern(20, 1), 2);
    const std::vector<uint8_t> initiate{0x00, 0x01, 0x00, 0x00};  // Initiate, no data
    MessageInfo info;
    info.ppid = wire::kSctpPpidDdpSessionControl;
    s.a->Inject(initiate, info);
    s.init->OnReadable();
    s.ExpectFailed(CepErrorKind::kProtocol, WireError::kSctpSessionBadFunction);
  }
}

}  // namespace
}  // namespace iwarpx::cm
