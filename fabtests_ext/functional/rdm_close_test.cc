// fi_close of an FI_EP_RDM endpoint and the sends it already completed
// (FI_IWARPX_RD_LINGER, fi_iwarpx(7)). A send completes once the RD stream
// copied it; until the peer acknowledges it, that copy is the only one. So a
// close right after the last send — a server's final reply — must keep
// retransmitting until the peer has it, bounded by the linger time.
//
// ctest runs this program twice (provider parameters are read at load):
//   FI_IWARPX_RD_LINGER=1000 IWARPX_LINGER_EXPECT=delivered
//   FI_IWARPX_RD_LINGER=0    IWARPX_LINGER_EXPECT=lost  (the scenario really loses
//                            the message without the linger: the test can fail)
//
// The lost datagram is made deterministic without fault injection: B's
// endpoint closes, A sends to B's old port (nobody listens: the first
// transmission is gone), then a new endpoint C binds that same port and
// posts the receive, and A closes. Only A's retransmissions, which run
// while A's close lingers (C shares A's fabric, so the close's progress
// drives C too), can bring the message to C.
#include <arpa/inet.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "rdm_fixture.h"

namespace {

using rdmtest::Bytes;
using rdmtest::Ctx;
using rdmtest::Net;
using rdmtest::Pattern;
using rdmtest::Side;
using rdmtest::SteadyClock;

std::string Expect() {
  const char* e = std::getenv("IWARPX_LINGER_EXPECT");
  return e != nullptr ? e : "";
}

// A side bound to `port` on 127.0.0.1 (info->src_addr changed for its endpoint only).
Side* AddSideOnPort(Net& net, uint16_t port) {
  auto* src = static_cast<sockaddr_in*>(net.info->src_addr);
  const sockaddr_in saved = *src;
  src->sin_port = port;  // network order, as fi_getname gave it
  Side* s = net.AddSide();
  *src = saved;
  return s;
}

// A and B on one fabric; B's endpoint closed again, so A's sends to B's
// address meet a port nobody listens on.
class RdmClose : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(net_.Open()) << net_.error;
    a_ = net_.AddSide();
    ASSERT_NE(a_, nullptr) << net_.error;
    b_ = net_.AddSide();
    ASSERT_NE(b_, nullptr) << net_.error;
    ASSERT_TRUE(net_.Insert(*a_, *b_)) << net_.error;
    port_ = b_->name.sin_port;
    net_.CloseEp(*b_);
  }

  // A sends `m` to B's old address and the send completes (copied).
  void SendCompleted(const Bytes& m, void* ctx) {
    ASSERT_EQ(
        net_.Post([&] { return fi_send(a_->ep, m.data(), m.size(), nullptr, a_->To(*b_), ctx); }),
        0);
    ASSERT_TRUE(net_.WaitComp(a_->tx, ctx).has_value()) << "the send did not complete (copied)";
  }

  // Closes A's endpoint; the seconds it took.
  double CloseA() {
    const auto t0 = SteadyClock::now();
    net_.CloseEp(*a_);
    return std::chrono::duration<double>(SteadyClock::now() - t0).count();
  }

  Net net_;
  Side* a_ = nullptr;
  Side* b_ = nullptr;
  uint16_t port_ = 0;  // B's, network order
};

TEST_F(RdmClose, ACompletedSendLostOnTheWireArrivesWhileTheCloseLingers) {
  const std::string expect = Expect();
  ASSERT_TRUE(expect == "delivered" || expect == "lost")
      << "IWARPX_LINGER_EXPECT must be delivered or lost (set by ctest)";
  const Bytes m = Pattern(1000, 7);
  ASSERT_NO_FATAL_FAILURE(SendCompleted(m, Ctx(1)));
  net_.Drive(std::chrono::milliseconds(5));  // the first transmission goes to the closed port

  Side* c = AddSideOnPort(net_, port_);
  ASSERT_NE(c, nullptr) << net_.error << " (port " << ntohs(port_) << " taken meanwhile?)";
  Bytes dst(m.size(), 0);
  void* rctx = Ctx(2);
  ASSERT_EQ(fi_recv(c->ep, dst.data(), dst.size(), nullptr, FI_ADDR_UNSPEC, rctx), 0);

  const double close_s = CloseA();
  EXPECT_LT(close_s, 1.0 + 2.0) << "fi_close lingered longer than FI_IWARPX_RD_LINGER allows";
  // C is polled for a while either way: without the linger nothing can come.
  auto r = net_.WaitComp(c->rx, rctx, std::chrono::milliseconds(500));
  if (expect == "delivered") {
    ASSERT_TRUE(r.has_value()) << "the completed send was lost at close (close took " << close_s
                               << " s)";
    EXPECT_EQ(r->e.len, m.size());
    EXPECT_EQ(dst, m) << "the message arrived damaged";
  } else {
    EXPECT_FALSE(r.has_value())
        << "with FI_IWARPX_RD_LINGER=0 the message still arrived: the test no longer loses the "
           "first transmission, so it cannot show what the linger does";
    EXPECT_LT(close_s, 0.5) << "FI_IWARPX_RD_LINGER=0 must close at once";
  }
}

TEST_F(RdmClose, ACloseToAPeerThatIsGoneIsBoundedByTheLinger) {
  const Bytes m = Pattern(64, 9);
  ASSERT_NO_FATAL_FAILURE(SendCompleted(m, Ctx(3)));
  const double close_s = CloseA();
  if (Expect() == "delivered") {  // FI_IWARPX_RD_LINGER=1000: waits for it, then gives up
    EXPECT_GT(close_s, 0.9) << "the close did not wait for the acknowledgement";
    EXPECT_LT(close_s, 3.0) << "the close waited past FI_IWARPX_RD_LINGER";
  } else {
    EXPECT_LT(close_s, 0.5) << "FI_IWARPX_RD_LINGER=0 must close at once";
  }
}

}  // namespace
