// Test-only helpers for the qp layer tests over a message-preserving LLP
// (qp/qp_sctp*_test.cc): the outcome SCTP session setup negotiates, a pair of
// QueuePairs over testing::FakeSctpConnection, and a raw peer that injects
// DDP segments by hand and checks the Terminate it gets back. Header-only,
// never linked into the provider.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fake_sctp_connection.h"
#include "testing/qp_harness.h"
#include "wire/ddp.h"
#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace iwarpx::qp::test {

using ::iwarpx::testing::FakeSctpConnection;
using ::iwarpx::testing::MakeFakeSctpPair;
using ::iwarpx::testing::RandomBytes;
using SctpSide = BasicSide<FakeSctpConnection>;

// What SCTP session setup negotiates (cm/sctp_cep.h): IRD/ORD, no CRC, no
// markers, no RTR.
// `unordered`: both ends set the unordered Read Responses bit.
inline wire::MpaOutcome SctpOutcome(wire::MpaRole role, uint16_t ird = 4, uint16_t ord = 4,
                                    bool unordered = false) {
  wire::MpaOutcome o;
  o.sctp_unordered_read_resp = unordered;
  o.role = role;
  o.revision = 2;
  o.enhanced = true;
  o.crc = false;
  o.ird = o.ord = ird;
  o.peer_ird = o.peer_ord = ord;
  o.ord = ord;
  o.p2p = false;
  o.rtr = wire::MpaRtr::kNone;
  return o;
}

struct SctpPair : BasicQpPair<FakeSctpConnection> {
  explicit SctpPair(QpConfig cfg = {}, bool unordered = false, uint16_t ord = 4)
      : BasicQpPair(MakeFakeSctpPair()) {
    a.CreateWith(SctpOutcome(wire::MpaRole::kInitiator, ord, ord, unordered), cfg);
    b.CreateWith(SctpOutcome(wire::MpaRole::kResponder, ord, ord, unordered), cfg);
  }
};

// One QP facing a raw FakeSctpConnection end the test drives by hand.
struct SctpRawPeer {
  std::unique_ptr<FakeSctpConnection> raw;
  SctpSide side;
  Bytes rbuf = Bytes(64);

  explicit SctpRawPeer(QpConfig cfg = {}, bool unordered = false)
      : SctpRawPeer(MakeFakeSctpPair(), cfg, unordered) {}
  SctpRawPeer(std::pair<std::unique_ptr<FakeSctpConnection>, std::unique_ptr<FakeSctpConnection>> c,
              const QpConfig& cfg, bool unordered = false)
      : raw(std::move(c.first)), side(std::move(c.second), 33) {
    side.CreateWith(SctpOutcome(wire::MpaRole::kResponder, 4, 4, unordered), cfg);
    side.qp->Start();
    RecvWr r;
    r.context = 1;
    r.sgl.Add(rbuf.data(), rbuf.size());
    (void)side.qp->PostRecv(r);
    r.context = 2;
    (void)side.qp->PostRecv(r);
  }
  void Inject(Bytes bytes, uint32_t ppid = kSctpPpidDdpSegment, uint16_t stream = 0,
              bool unordered = false) {
    transport::MessageInfo info;
    info.ppid = ppid;
    info.stream = stream;
    info.unordered = unordered;
    side.conn->Inject(std::move(bytes), info);
  }
  void Drive() {
    for (int i = 0; i < 64; ++i) {
      if (side.qp->wants_write()) side.qp->OnWritable();
      if (side.qp->wants_read()) side.qp->OnReadable();
    }
  }
  // Every message the QP sent, with its info.
  std::vector<std::pair<Bytes, transport::MessageInfo>> Received() {
    std::vector<std::pair<Bytes, transport::MessageInfo>> out;
    for (;;) {
      Bytes b(70000);
      transport::MessageInfo info;
      const iovec v{b.data(), b.size()};
      const transport::IoResult r = raw->RecvMsg(std::span<const iovec>(&v, 1), info);
      if (!r.ok()) break;
      b.resize(r.bytes);
      out.emplace_back(std::move(b), info);
    }
    return out;
  }
  // The QP sent exactly one message: a Terminate with `cause`, PPID 16,
  // stream 0.
  // `flushed`: posted receives the Terminate flushes (those not completed).
  void ExpectTerminate(wire::TermCause cause, size_t flushed = 2) {
    EXPECT_EQ(side.sink.terminated, 1);
    EXPECT_EQ(side.sink.term_origin, TermOrigin::kSent);
    EXPECT_EQ(side.sink.term_cause, cause);
    EXPECT_EQ(side.qp->term_stats().sent, 1u);
    const auto msgs = Received();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].second.ppid, kSctpPpidDdpSegment);
    EXPECT_EQ(msgs[0].second.stream, 0u);
    EXPECT_FALSE(msgs[0].second.unordered);
    auto seg = wire::ParseSegment(msgs[0].first);
    ASSERT_TRUE(seg.ok());
    ASSERT_EQ(seg->opcode, wire::RdmapOpcode::kTerminate);
    auto th = wire::DecodeTerminate(std::get<wire::TerminateBodyView>(seg->body).bytes);
    ASSERT_TRUE(th.ok());
    EXPECT_EQ(th->cause, cause);
    EXPECT_EQ(side.qp->state(), QpState::kError);
    EXPECT_EQ(side.sink.Count(Completion::Kind::kError), flushed);
  }
};

}  // namespace iwarpx::qp::test
