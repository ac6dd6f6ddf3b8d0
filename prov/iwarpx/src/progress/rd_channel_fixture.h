// The fixture of the RdChannel tests (rd_channel_test.cc,
// rd_channel_place_test.cc, rd_channel_bundle_reset_test.cc): a real engine and two RdChannels A
// and B on loopback UDP sockets, each with its own STag table (PD kPd) and a client recording the
// QPs made and failed and every completion.
#pragma once

#include <sys/socket.h>

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/random.h"
#include "mem/stag_table.h"
#include "progress/engine.h"
#include "progress/rd_channel.h"
#include "testing/engine_fixture.h"
#include "testing/qp_harness.h"
#include "transport/fault.h"
#include "transport/fd.h"

namespace iwarpx::progress {

using qp::test::RecordingSink;

constexpr uint32_t kPd = 4;

class RdChannelTestClient final : public RdChannelClient {
 public:
  qp::CompletionSink& PeerSink(const RdPeerKey& key) override {
    made.push_back(key);
    return sink;
  }
  void PeerFailed(const RdPeerKey& key, const rd::RdQp& /*qp*/) override { failed.push_back(key); }
  // With receive_on_create, every new QP gets one 64-byte receive at once.
  void PeerCreated(const RdPeerKey& /*key*/, rd::RdQp& qp) override {
    if (!receive_on_create) return;
    buffers.emplace_back(64);
    qp::RecvWr r;
    r.context = 100 + buffers.size();
    r.sgl.Add(buffers.back().data(), buffers.back().size());
    (void)qp.qp().PostRecv(r);
  }

  bool receive_on_create = false;
  std::deque<std::vector<uint8_t>> buffers;
  RecordingSink sink;
  std::vector<RdPeerKey> made;
  std::vector<RdPeerKey> failed;
};

class RdChannelTest : public testing::EngineFixture<::testing::Test, 10> {
 protected:
  void TearDown() override {
    std::lock_guard<std::mutex> lock(engine_->mu());
    a_.reset();
    b_.reset();
  }

  void Open(const transport::FaultSpec& fa = {}, const transport::FaultSpec& fb = {},
            uint64_t dead_after_ns = 2'000'000'000, bool place_reads = true) {
    RdChannelConfig c;
    c.place_reads = place_reads;
    if (send_buffer_bytes_ != 0) c.qp.stream.send_buffer_bytes = send_buffer_bytes_;
    c.idle_release_ns = idle_release_ns_;
    c.hot_socket = hot_socket_;
    c.qpn = 9;
    c.pd = kPd;
    c.qp.stream.send.dead_after_ns = dead_after_ns;
    c.qp.stream.max_segment = 8192;
    c.qp.rq_size = 256;
    c.qp.sq_size = 256;
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto a = RdChannel::Open(*engine_, transport::SockAddr::Loopback4(0), c, stags_a_, ca_, fa);
    auto b = RdChannel::Open(*engine_, transport::SockAddr::Loopback4(0), c, stags_b_, cb_, fb);
    ASSERT_TRUE(a.ok() && b.ok());
    a_ = std::move(a).value();
    b_ = std::move(b).value();
  }

  RdPeerKey KeyOf(const RdChannel& ch) const { return {ch.local_address(), 9}; }

  // A UDP socket of the test's own bound to 127.0.0.1 (any port), for
  // datagrams no RdChannel would send (forged, stale); invalid if it could
  // not be made or bound (the caller asserts valid()).
  static transport::UniqueFd RawLoopbackSocket() {
    transport::UniqueFd fd(socket(AF_INET, SOCK_DGRAM, 0));
    const transport::SockAddr local = transport::SockAddr::Loopback4(0);
    if (fd.valid() && bind(fd.get(), local.sa(), local.length()) != 0) fd = transport::UniqueFd();
    return fd;
  }

  size_t send_buffer_bytes_ = 0;  // RdStreamConfig::send_buffer_bytes for Open (0: default)
  uint64_t idle_release_ns_ = 0;  // RdChannelConfig::idle_release_ns for Open (0: no sweep)
  bool hot_socket_ = true;        // RdChannelConfig::hot_socket for Open

  mem::StagTable stags_a_{Random(1), 16};
  mem::StagTable stags_b_{Random(2), 16};
  RdChannelTestClient ca_;
  RdChannelTestClient cb_;
  std::unique_ptr<RdChannel> a_;
  std::unique_ptr<RdChannel> b_;
};

}  // namespace iwarpx::progress
