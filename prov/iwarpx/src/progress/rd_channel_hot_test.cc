// RdChannel's hot socket (config.hot_socket, transport::HotPeerSocket): the
// first peer's datagrams travel on a second socket connected to it, a third
// peer's on the main socket, both reach the channel through the engine's
// waits (RunUntil drives RunOnce with a 1 ms epoll wait, no busy poll, so a
// socket the engine did not watch would never be read), and with the option
// off there is one socket as before.
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "progress/rd_channel_fixture.h"

namespace iwarpx::progress {
namespace {

using qp::test::Completion;

class RdChannelHotTest : public RdChannelTest {
 protected:
  // Posts one receive on `to`'s QP of `from` once it exists and one Send of
  // `n` bytes `fill` from `from`; true when `to`'s client saw the receive
  // complete with those bytes.
  bool OneMessage(RdChannel& from, RdChannel& to, RdChannelTestClient& to_client, uint8_t fill) {
    std::vector<uint8_t> msg(300, fill);
    std::vector<uint8_t> buf(512);
    const size_t before = to_client.sink.Count(Completion::Kind::kRecv);
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      rd::RdQp* q = from.Peer(KeyOf(to));
      if (q == nullptr) return false;
      qp::SendWr s;
      s.context = 1;
      s.sgl.Add(msg.data(), msg.size());
      if (q->qp().PostSend(s) != qp::QpStatus::kOk) return false;
      from.AfterPost();
    }
    const RdPeerKey key{from.local_address(), 9};
    if (!RunUntil([&] { return to.Find(key) != nullptr; })) return false;
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      qp::RecvWr r;
      r.context = 2;
      r.sgl.Add(buf.data(), buf.size());
      if (to.Find(key)->qp().PostRecv(r) != qp::QpStatus::kOk) return false;
      to.AfterPost();
    }
    if (!RunUntil([&] { return to_client.sink.Count(Completion::Kind::kRecv) == before + 1; })) {
      return false;
    }
    return to_client.sink.completions.back().bytes == msg.size() && buf[0] == fill &&
           buf[msg.size() - 1] == fill;
  }
};

TEST_F(RdChannelHotTest, TheFirstPeerTravelsOnTheHotSocketAndAThirdOnTheMainOne) {
  Open();
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    EXPECT_FALSE(a_->hot_peer().has_value());  // no peer yet
  }
  ASSERT_TRUE(OneMessage(*a_, *b_, cb_, 0x11));
  ASSERT_TRUE(OneMessage(*b_, *a_, ca_, 0x22));
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(a_->hot_peer().has_value());
    EXPECT_EQ(*a_->hot_peer(), b_->local_address());
    ASSERT_TRUE(b_->hot_peer().has_value());
    EXPECT_EQ(*b_->hot_peer(), a_->local_address());
  }
  // A third channel reaches A on A's main socket (A's hot one is B's), and A
  // answers it from there.
  RdChannelTestClient cc;
  mem::StagTable stags_c{Random(3), 16};
  std::unique_ptr<RdChannel> c;
  {
    RdChannelConfig cfg;
    cfg.qpn = 9;
    cfg.pd = kPd;
    cfg.qp.rq_size = 16;
    cfg.qp.sq_size = 16;
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto opened = RdChannel::Open(*engine_, transport::SockAddr::Loopback4(0), cfg, stags_c, cc);
    ASSERT_TRUE(opened.ok());
    c = std::move(opened).value();
  }
  EXPECT_TRUE(OneMessage(*c, *a_, ca_, 0x33));
  EXPECT_TRUE(OneMessage(*a_, *c, cc, 0x44));
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_EQ(*a_->hot_peer(), b_->local_address());  // still B's
  ASSERT_TRUE(c->hot_peer().has_value());
  EXPECT_EQ(*c->hot_peer(), a_->local_address());
  c.reset();
}

TEST_F(RdChannelHotTest, OffKeepsOneSocket) {
  hot_socket_ = false;
  Open();
  ASSERT_TRUE(OneMessage(*a_, *b_, cb_, 0x55));
  ASSERT_TRUE(OneMessage(*b_, *a_, ca_, 0x66));
  std::lock_guard<std::mutex> lock(engine_->mu());
  EXPECT_FALSE(a_->hot_peer().has_value());
  EXPECT_FALSE(b_->hot_peer().has_value());
}

}  // namespace
}  // namespace iwarpx::progress
