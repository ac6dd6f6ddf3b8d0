// FI_MORE on the RDM endpoint's RMA through libfabric's public API
// (docs/wire.md §3.6.1, rdm::RdmCore::CorkRma): Writes posted with FI_MORE
// and the Read behind them without it leave as one bundled datagram instead
// of one datagram each, deliver exactly the same bytes, and complete in post
// order; injected FI_MORE Writes without a context (the OSC's MPI_Put) write
// no completion; FI_MORE Writes that nothing follows still leave at the next
// progress pass. Datagrams are counted with the provider's statistics
// (fi_iwarpx_stats_ops): the target's rx_datagrams, the origin's rd_bundle*.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/fi_ext_iwarpx.h>
#include <rdma/fi_rma.h>

#include "rdm_fixture.h"
#include "test_util.h"

namespace {

using rdmtest::Bytes;
using rdmtest::Ctx;
using rdmtest::Net;
using rdmtest::Pattern;
using rdmtest::Side;

constexpr size_t kWrites = 8;
constexpr size_t kPiece = 8;

class RdmMoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(net_.Open()) << net_.error;
    a_ = net_.AddSide();
    ASSERT_NE(a_, nullptr) << net_.error;
    b_ = net_.AddSide();
    ASSERT_NE(b_, nullptr) << net_.error;
    ASSERT_TRUE(net_.Connect(*a_, *b_)) << net_.error;
    mr_ = net_.Reg(*b_, target_.data(), target_.size(), FI_REMOTE_WRITE | FI_REMOTE_READ, 1);
    ASSERT_NE(mr_, nullptr) << net_.error;
    // The first contact opens the RD session (and its window): not measured.
    Burst(/*more=*/false, /*inject=*/false, 0);
    net_.Drive(std::chrono::milliseconds(20));  // the acks settle
  }

  fi_iwarpx_ep_stats Stats(Side* s) {
    std::optional<fi_iwarpx_ep_stats> st = fttest::EpStats(s->domain, s->ep);
    EXPECT_TRUE(st.has_value()) << "fi_open_ops(" FI_IWARPX_STATS_OPS ") or ep_stats failed";
    return st.value_or(fi_iwarpx_ep_stats{});
  }

  // kWrites Writes of kPiece bytes to consecutive places of B's target (with
  // FI_MORE if `more`; FI_INJECT without a context and completion if
  // `inject`), then one Read of all of them without FI_MORE; waits for the
  // Read and checks the bytes at B and read back, and the completions' order.
  void Burst(bool more, bool inject, uint64_t seed) {
    const uint64_t key = fi_mr_key(mr_);
    std::vector<Bytes> pieces;  // what each Write must leave at B
    std::vector<Bytes> srcs;    // its source buffer
    pieces.reserve(kWrites);
    srcs.reserve(kWrites);
    for (size_t i = 0; i < kWrites; ++i) {
      pieces.push_back(Pattern(kPiece, seed * 100 + i));
      srcs.push_back(pieces.back());
      iovec iov{srcs.back().data(), kPiece};
      fi_rma_iov rma{net_.RemoteAddr(target_.data(), target_.data() + i * kPiece), kPiece, key};
      fi_msg_rma msg{};
      msg.msg_iov = &iov;
      msg.iov_count = 1;
      msg.addr = a_->To(*b_);
      msg.rma_iov = &rma;
      msg.rma_iov_count = 1;
      msg.context = inject ? nullptr : Ctx(1 + i);
      const uint64_t flags = (more ? FI_MORE : 0) | (inject ? FI_INJECT : FI_COMPLETION);
      ASSERT_EQ(fi_writemsg(a_->ep, &msg, flags), 0) << i;
      if (inject) std::fill(srcs.back().begin(), srcs.back().end(), 0);  // the caller's again
    }
    Bytes back(kWrites * kPiece, 0);
    iovec iov{back.data(), back.size()};
    fi_rma_iov rma{net_.RemoteAddr(target_.data(), target_.data()), back.size(), key};
    fi_msg_rma msg{};
    msg.msg_iov = &iov;
    msg.iov_count = 1;
    msg.addr = a_->To(*b_);
    msg.rma_iov = &rma;
    msg.rma_iov_count = 1;
    msg.context = Ctx(100);
    ASSERT_EQ(fi_readmsg(a_->ep, &msg, FI_COMPLETION), 0);
    ASSERT_TRUE(net_.WaitUntil([&] {
      return std::any_of(a_->tx.done.begin(), a_->tx.done.end(),
                         [](const rdmtest::Comp& c) { return c.e.op_context == Ctx(100); });
    })) << "no read completion";
    EXPECT_TRUE(a_->tx.errs.empty());
    // Completions in post order: the Writes' (none when injected), then the Read's.
    std::vector<void*> order;
    for (const rdmtest::Comp& c : a_->tx.done) order.push_back(c.e.op_context);
    std::vector<void*> want;
    if (!inject) {
      for (size_t i = 0; i < kWrites; ++i) want.push_back(Ctx(1 + i));
    }
    want.push_back(Ctx(100));
    EXPECT_EQ(order, want);
    a_->tx.done.clear();
    for (size_t i = 0; i < kWrites; ++i) {
      const auto at = static_cast<std::ptrdiff_t>(i * kPiece);
      EXPECT_TRUE(std::equal(pieces[i].begin(), pieces[i].end(), back.begin() + at)) << i;
      EXPECT_TRUE(std::equal(pieces[i].begin(), pieces[i].end(), target_.begin() + at)) << i;
    }
  }

  Net net_;
  Side* a_ = nullptr;
  Side* b_ = nullptr;
  Bytes target_ = Bytes(4096, 0);
  fid_mr* mr_ = nullptr;
};

TEST_F(RdmMoreTest, MoreWritesAndTheirReadLeaveAsOneDatagram) {
  // Without FI_MORE: a datagram per operation.
  fi_iwarpx_ep_stats a0 = Stats(a_), b0 = Stats(b_);
  Burst(false, false, 1);
  fi_iwarpx_ep_stats a1 = Stats(a_), b1 = Stats(b_);
  EXPECT_GE(b1.rx_datagrams - b0.rx_datagrams, kWrites + 1);
  EXPECT_EQ(a1.rd_bundles_sent, a0.rd_bundles_sent);
  net_.Drive(std::chrono::milliseconds(20));

  // With FI_MORE: one bundle of every Write and the Read (and at most an
  // ack or two besides).
  a0 = Stats(a_);
  b0 = Stats(b_);
  Burst(true, false, 2);
  a1 = Stats(a_);
  b1 = Stats(b_);
  EXPECT_EQ(a1.rd_bundles_sent - a0.rd_bundles_sent, 1u);
  EXPECT_EQ(a1.rd_bundled_records - a0.rd_bundled_records, kWrites + 1);
  EXPECT_EQ(a1.rd_data_sent - a0.rd_data_sent, kWrites + 1);  // each still its own segment
  EXPECT_EQ(b1.rd_bundles_received - b0.rd_bundles_received, 1u);
  EXPECT_LE(b1.rx_datagrams - b0.rx_datagrams, 3u);
  EXPECT_EQ(b1.rx_malformed, 0u);
}

// The OSC's MPI_Put: fi_writemsg(FI_INJECT | FI_MORE) without a context.
TEST_F(RdmMoreTest, InjectedMoreWritesWriteNoCompletionAndLeaveWithTheRead) {
  const fi_iwarpx_ep_stats a0 = Stats(a_);
  Burst(true, true, 3);
  const fi_iwarpx_ep_stats a1 = Stats(a_);
  EXPECT_EQ(a1.rd_bundles_sent - a0.rd_bundles_sent, 1u);
  EXPECT_EQ(a1.rd_bundled_records - a0.rd_bundled_records, kWrites + 1);
}

// FI_MORE Writes with nothing after them: the next progress pass sends them.
TEST_F(RdmMoreTest, MoreWritesNothingFollowsLeaveAtTheNextProgressPass) {
  const uint64_t key = fi_mr_key(mr_);
  const Bytes a = Pattern(kPiece, 41), b = Pattern(kPiece, 42);
  const fi_iwarpx_ep_stats a0 = Stats(a_);
  for (size_t i = 0; i < 2; ++i) {
    const Bytes& src = i == 0 ? a : b;
    iovec iov{const_cast<uint8_t*>(src.data()), kPiece};
    fi_rma_iov rma{net_.RemoteAddr(target_.data(), target_.data() + 1024 + i * kPiece), kPiece,
                   key};
    fi_msg_rma msg{};
    msg.msg_iov = &iov;
    msg.iov_count = 1;
    msg.addr = a_->To(*b_);
    msg.rma_iov = &rma;
    msg.rma_iov_count = 1;
    msg.context = Ctx(10 + i);
    ASSERT_EQ(fi_writemsg(a_->ep, &msg, FI_MORE | FI_COMPLETION), 0);
  }
  ASSERT_TRUE(net_.WaitUntil([&] {
    return std::equal(a.begin(), a.end(), target_.begin() + 1024) &&
           std::equal(b.begin(), b.end(), target_.begin() + 1024 + kPiece);
  })) << "FI_MORE writes were never sent";
  const fi_iwarpx_ep_stats a1 = Stats(a_);
  EXPECT_EQ(a1.rd_bundles_sent - a0.rd_bundles_sent, 1u);
  EXPECT_TRUE(net_.WaitComp(a_->tx, Ctx(10)).has_value());
  EXPECT_TRUE(net_.WaitComp(a_->tx, Ctx(11)).has_value());
}

}  // namespace
