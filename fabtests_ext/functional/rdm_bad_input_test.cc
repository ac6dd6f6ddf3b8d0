// Bad input at a live FI_EP_RDM endpoint, through libfabric's public API plus
// a raw UDP socket: every datagram a peer could forge is counted (struct
// fi_iwarpx_ep_stats, rdma/fi_ext_iwarpx.h) and dropped, answered with a
// RESET, or — for a protection error — answered with a Terminate that ends
// in an error completion at the sender; none of it is ever delivered, and
// the receive posted meanwhile still takes the one intact message.
//
// The forged datagrams start from a real one: A sends a message to the raw
// socket's address, and the test re-encodes that datagram (wire/dgram.h, the
// provider's own codec, linked into the test) with the one field it damages.
#include <algorithm>
#include <optional>

#include <gtest/gtest.h>

#include "rdm_fixture.h"
#include "wire/dgram.h"

namespace {

using fttest::EpStats;
using fttest::RawUdp;
using iwarpx::ByteSpan;
using iwarpx::MutableByteSpan;
using rdmtest::Bytes;
using rdmtest::Ctx;
using rdmtest::Net;
using rdmtest::Pattern;
using rdmtest::Side;
namespace wire = iwarpx::wire;

class RdmBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(net_.Open()) << net_.error;
    a_ = net_.AddSide();
    ASSERT_NE(a_, nullptr) << net_.error;
    b_ = net_.AddSide();
    ASSERT_NE(b_, nullptr) << net_.error;
    ASSERT_TRUE(net_.Connect(*a_, *b_)) << net_.error;
  }

  fi_iwarpx_ep_stats Stats(Side* s) {
    std::optional<fi_iwarpx_ep_stats> st = EpStats(s->domain, s->ep);
    EXPECT_TRUE(st.has_value()) << "fi_open_ops(" FI_IWARPX_STATS_OPS ") or ep_stats failed";
    return st.value_or(fi_iwarpx_ep_stats{});
  }

  // `d` decoded, its header changed by `edit`, encoded again with a valid CRC.
  template <class Edit>
  static Bytes Reencode(const wire::DecodedDgram& d, Edit edit) {
    wire::DgramHeader h = d.header;
    edit(h);
    Bytes out(wire::DgramSize(d.ulpdu.size()));
    auto n = wire::EncodeDgram(h, std::span<const ByteSpan>(&d.ulpdu, 1), true,
                               MutableByteSpan(out.data(), out.size()));
    EXPECT_TRUE(n.ok());
    out.resize(n.ok() ? *n : 0);
    return out;
  }

  Net net_;
  Side* a_ = nullptr;
  Side* b_ = nullptr;
};

TEST_F(RdmBadInputTest, ForgedDatagramsAreCountedAndNeverDelivered) {
  RawUdp raw;
  ASSERT_TRUE(raw.ok());
  // A real RD data datagram: A's first message to the raw socket's address
  // (Y set, a new session, sequence 0, an eager RDM message of 20 bytes).
  fi_addr_t raw_at_a = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(a_->av, &raw.name(), 1, &raw_at_a, 0, nullptr), 1);
  const Bytes m = Pattern(20, 5);
  ASSERT_EQ(fi_send(a_->ep, m.data(), m.size(), nullptr, raw_at_a, Ctx(1)), 0);
  Bytes captured;
  wire::DecodedDgram real;
  ASSERT_TRUE(net_.WaitUntil([&] {
    std::optional<Bytes> got = raw.Recv(std::chrono::milliseconds(1));
    if (!got) return false;
    auto d = wire::DecodeDgram(ByteSpan(got->data(), got->size()), true);
    if (!d.ok() || d->header.type != wire::DgramType::kRdData) return false;
    captured = *got;
    return true;
  })) << "A sent no RD data datagram to the raw socket";
  real = *wire::DecodeDgram(ByteSpan(captured.data(), captured.size()), true);
  ASSERT_TRUE(real.header.syn);
  ASSERT_EQ(real.header.seq, 0u);

  Bytes r(64, 0);
  ASSERT_EQ(fi_recv(b_->ep, r.data(), r.size(), nullptr, FI_ADDR_UNSPEC, Ctx(2)), 0);
  const fi_iwarpx_ep_stats before = Stats(b_);
  const sockaddr_in& to_b = b_->name;

  ASSERT_TRUE(raw.SendTo(to_b, Pattern(100, 7)));  // not iwarpx at all
  ASSERT_TRUE(raw.SendTo(to_b, Bytes(captured.begin(), captured.begin() + 30)));  // cut header
  Bytes corrupt = captured;
  corrupt[wire::kDgramHeaderSize + 4] ^= 0x01;  // a DDP header bit: the CRC fails
  ASSERT_TRUE(raw.SendTo(to_b, corrupt));
  ASSERT_TRUE(raw.SendTo(to_b, Reencode(real, [](wire::DgramHeader& h) { h.dst_qpn ^= 0x55; })));
  // The session opens (Y), but its sequence number is far outside the window.
  ASSERT_TRUE(raw.SendTo(to_b, Reencode(real, [](wire::DgramHeader& h) { h.seq = 1U << 30; })));
  // A QP the receiver never heard of, without Y: refused with a RESET.
  ASSERT_TRUE(raw.SendTo(to_b, Reencode(real, [](wire::DgramHeader& h) {
                           h.src_qpn ^= 0x0f0f;
                           h.syn = false;
                         })));
  net_.Drive(std::chrono::milliseconds(200));
  EXPECT_TRUE(b_->rx.Empty()) << "a forged datagram completed a receive";
  EXPECT_EQ(r, Bytes(64, 0)) << "a forged datagram reached the receive buffer";
  std::optional<Bytes> reset;
  while (auto d = raw.Recv(std::chrono::milliseconds(100))) {
    auto h = wire::DecodeDgram(ByteSpan(d->data(), d->size()), true);
    if (h.ok() && h->header.type == wire::DgramType::kRdControl &&
        h->header.ctrl_op == wire::DgramControlOp::kReset) {
      reset = d;
      EXPECT_EQ(h->header.echo_session, real.header.session);
      EXPECT_EQ(h->header.dst_qpn, real.header.src_qpn ^ 0x0f0f);
    }
  }
  EXPECT_TRUE(reset.has_value()) << "no RESET came back for the unknown session";

  const fi_iwarpx_ep_stats mid = Stats(b_);
  EXPECT_EQ(mid.rx_malformed - before.rx_malformed, 2u);
  EXPECT_EQ(mid.rx_bad_crc - before.rx_bad_crc, 1u);
  EXPECT_EQ(mid.rx_unknown_qpn - before.rx_unknown_qpn, 1u);
  EXPECT_EQ(mid.rd_outside_window - before.rd_outside_window, 1u);
  EXPECT_EQ(mid.rd_resets_sent - before.rd_resets_sent, 1u);
  // Only the out-of-window one reached a stream.
  EXPECT_EQ(mid.rd_data_received - before.rd_data_received, 1u);

  // The intact datagram is delivered once (its source is in no AV), and
  // the same datagram again is a duplicate.
  ASSERT_TRUE(raw.SendTo(to_b, captured));
  std::optional<rdmtest::Comp> c = net_.WaitComp(b_->rx, Ctx(2));
  ASSERT_TRUE(c.has_value()) << "the intact datagram was not delivered";
  EXPECT_EQ(c->e.len, m.size());
  EXPECT_EQ(c->src, FI_ADDR_NOTAVAIL);
  EXPECT_TRUE(std::equal(m.begin(), m.end(), r.begin()));
  ASSERT_EQ(fi_recv(b_->ep, r.data(), r.size(), nullptr, FI_ADDR_UNSPEC, Ctx(3)), 0);
  ASSERT_TRUE(raw.SendTo(to_b, captured));
  net_.Drive(std::chrono::milliseconds(200));
  EXPECT_FALSE(b_->rx.Take(Ctx(3)).has_value()) << "a duplicate was delivered";
  const fi_iwarpx_ep_stats after = Stats(b_);
  EXPECT_EQ(after.rd_data_received - mid.rd_data_received, 2u);
  EXPECT_EQ(after.rd_duplicates - mid.rd_duplicates, 1u);
  EXPECT_EQ(after.terminates_sent, 0u);
  ASSERT_EQ(fi_cancel(&b_->ep->fid, Ctx(3)), 0);
}

// A write into a region registered for remote reads only: B answers with a
// Terminate, A's operations on that peer end in error completions, B's
// memory is untouched, and both ends count the Terminate.
TEST_F(RdmBadInputTest, ProtectionErrorEndsInTerminateCountedAtBothEnds) {
  Bytes target(4096, 0x11);
  fid_mr* mr = net_.Reg(*b_, target.data(), target.size(), FI_REMOTE_READ, 7);
  ASSERT_NE(mr, nullptr) << net_.error;
  const uint64_t at = net_.RemoteAddr(target.data(), target.data());
  const Bytes d = Pattern(512, 8);
  ASSERT_EQ(fi_write(a_->ep, d.data(), d.size(), nullptr, a_->To(*b_), at, fi_mr_key(mr), Ctx(1)),
            0);
  uint64_t probe = 0;
  ASSERT_EQ(fi_read(a_->ep, &probe, sizeof(probe), nullptr, a_->To(*b_), at, fi_mr_key(mr), Ctx(2)),
            0);
  ASSERT_TRUE(net_.WaitUntil([&] { return a_->tx.HasErr(Ctx(1)) || a_->tx.HasErr(Ctx(2)); }))
      << "no error completion at A for a write without FI_REMOTE_WRITE";
  net_.Drive(std::chrono::milliseconds(50));
  EXPECT_EQ(target, Bytes(4096, 0x11));
  EXPECT_EQ(probe, 0u);
  const fi_iwarpx_ep_stats sa = Stats(a_);
  const fi_iwarpx_ep_stats sb = Stats(b_);
  EXPECT_EQ(sb.terminates_sent, 1u);
  EXPECT_EQ(sa.terminates_received, 1u);
  // B's Terminate, if resent after A dropped the failed QP, reopens nothing.
  EXPECT_EQ(sa.rd_peers, 1u);
  EXPECT_EQ(sa.terminates_sent, 0u);
  EXPECT_EQ(sb.terminates_received, 0u);
}

// The extension itself refuses what it does not know.
TEST_F(RdmBadInputTest, StatsExtensionRefusesMisuse) {
  void* ops = nullptr;
  EXPECT_EQ(fi_open_ops(&b_->domain->fid, "no_such_ops", 0, &ops, nullptr), -FI_ENOSYS);
  EXPECT_EQ(fi_open_ops(&b_->domain->fid, FI_IWARPX_STATS_OPS, 1, &ops, nullptr), -FI_EINVAL);
  ASSERT_EQ(fi_open_ops(&b_->domain->fid, FI_IWARPX_STATS_OPS, 0, &ops, nullptr), 0);
  auto* st = static_cast<fi_iwarpx_stats_ops*>(ops);
  EXPECT_EQ(st->size, sizeof(fi_iwarpx_stats_ops));
  fi_iwarpx_ep_stats s{};
  EXPECT_EQ(st->ep_stats(nullptr, &s, sizeof(s)), -FI_EINVAL);
  EXPECT_EQ(st->ep_stats(b_->ep, nullptr, sizeof(s)), -FI_EINVAL);
  // An older caller's shorter structure gets its prefix only.
  uint64_t two[3] = {0, 0, 0xabcdef};
  EXPECT_EQ(st->ep_stats(b_->ep, reinterpret_cast<fi_iwarpx_ep_stats*>(two), 2 * sizeof(uint64_t)),
            0);
  EXPECT_EQ(two[2], 0xabcdefu);
}

}  // namespace
