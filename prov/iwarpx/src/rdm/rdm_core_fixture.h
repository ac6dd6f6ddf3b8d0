// Test harness of the RdmCore tests on one real engine and loopback UDP
// (rdm_core_test.cc, rdm_core_copy_test.cc): two cores a_ and b_, a sink
// that records every completion, and helpers to send, receive and wait.
// Every test runs with each rendezvous protocol (RdmMode): the receiver's
// RDMA Reads, the RDMA-write handshake (FI_IWARPX_RNDV=write), and the copy
// rendezvous chosen by a send rule (any:ud_sr,any:copy,any:ud_zcopy).
#pragma once

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "rdm/rdm_core.h"
#include "testing/engine_fixture.h"

namespace iwarpx::rdm::testing_core {

enum class RdmMode : uint8_t { kRead, kWrite, kCopy };

inline std::string ModeName(const ::testing::TestParamInfo<RdmMode>& i) {
  switch (i.param) {
    case RdmMode::kRead: return "read";
    case RdmMode::kWrite: return "write";
    case RdmMode::kCopy: return "copy";
  }
  return "unknown";
}

struct Event {
  enum Kind : uint8_t {
    kSendDone,
    kSendFailed,
    kRecvDone,
    kRecvFailed,
    kRmaDone,
    kRmaFailed,
    kData
  };
  Kind kind;
  uint64_t context = 0;
  RecvResult r;
  int err = 0;
};

class Sink final : public RdmSink {
 public:
  void SendDone(uint64_t c) override { ev.push_back({Event::kSendDone, c, {}, 0}); }
  void SendFailed(uint64_t c, int err) override { ev.push_back({Event::kSendFailed, c, {}, err}); }
  void RecvDone(uint64_t c, const RecvResult& r) override {
    ev.push_back({Event::kRecvDone, c, r, 0});
  }
  void RecvFailed(uint64_t c, int err) override { ev.push_back({Event::kRecvFailed, c, {}, err}); }
  void RmaDone(uint64_t c) override { ev.push_back({Event::kRmaDone, c, {}, 0}); }
  void RmaFailed(uint64_t c, const qp::WcError& /*e*/) override {
    ev.push_back({Event::kRmaFailed, c, {}, 0});
  }
  void RemoteWriteData(uint64_t data, PeerId src) override {
    RecvResult r;
    r.data = data;
    r.src = src;
    ev.push_back({Event::kData, 0, r, 0});
  }
  size_t Count(Event::Kind k) const {
    size_t n = 0;
    for (const Event& e : ev) n += e.kind == k ? 1 : 0;
    return n;
  }
  const Event* Find(Event::Kind k, uint64_t context) const {
    for (const Event& e : ev) {
      if (e.kind == k && e.context == context) return &e;
    }
    return nullptr;
  }
  std::vector<Event> ev;
};

class RdmCoreTest : public testing::EngineFixture<::testing::TestWithParam<RdmMode>, 20> {
 protected:
  void SetUp() override {
    EngineFixture::SetUp();
    if (HasFatalFailure()) return;
    Open();
  }
  void TearDown() override {
    std::lock_guard<std::mutex> lock(engine_->mu());
    a_.reset();
    b_.reset();
  }
  // The configuration of both cores in this test's mode.
  [[nodiscard]] RdmConfig Config(uint64_t dead_after_ns = 2'000'000'000) const {
    RdmConfig c;
    c.channel.pd = 1;
    c.channel.qp.stream.send.dead_after_ns = dead_after_ns;
    c.bounce_size = 4096;
    c.rndv_write = GetParam() == RdmMode::kWrite;
    if (GetParam() == RdmMode::kCopy) {
      auto chain = SendRuleChain::Parse("any:ud_sr,any:copy,any:ud_zcopy");
      EXPECT_TRUE(chain.ok());
      if (chain.ok()) c.send_rules = *chain;
    }
    return c;
  }
  void Open(const transport::FaultSpec& faults = {}, uint64_t dead_after_ns = 2'000'000'000) {
    OpenWith(Config(dead_after_ns), faults);
  }
  // Both cores with `c`; each registers in its own table (the fixture's
  // unless given: a full one refuses every registration).
  void OpenWith(const RdmConfig& c, const transport::FaultSpec& faults = {},
                mem::StagTable* stags_a = nullptr, mem::StagTable* stags_b = nullptr) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    a_.reset();
    b_.reset();
    auto a = RdmCore::Open(*engine_, transport::SockAddr::Loopback4(0), c,
                           stags_a != nullptr ? *stags_a : stags_a_, sa_, faults);
    auto b = RdmCore::Open(*engine_, transport::SockAddr::Loopback4(0), c,
                           stags_b != nullptr ? *stags_b : stags_b_, sb_, faults);
    ASSERT_TRUE(a.ok() && b.ok());
    a_ = std::move(a).value();
    b_ = std::move(b).value();
  }
  RdmStatus Send(RdmCore& from, RdmCore& to, std::vector<uint8_t>& buf, uint64_t ctx,
                 bool tagged = false, uint64_t tag = 0) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    const RdmStatus s = from.Send(to.local_address(), &v, 1, tagged, tag, false, 0, ctx);
    from.AfterPost();
    return s;
  }
  RdmStatus Recv(RdmCore& on, std::vector<uint8_t>& buf, uint64_t ctx, bool tagged = false,
                 uint64_t tag = 0, uint64_t ignore = 0, PeerId src = kAnySource) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    iovec v{buf.data(), buf.size()};
    RecvRequest r;
    r.tagged = tagged;
    r.tag = tag;
    r.ignore = ignore;
    r.src = src;
    r.context = ctx;
    r.iov = &v;
    r.count = 1;
    const RdmStatus s = on.PostRecv(r);
    on.AfterPost();
    return s;
  }
  static std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 12));
    return v;
  }

  mem::StagTable stags_a_{Random(1), 1024};
  mem::StagTable stags_b_{Random(2), 1024};
  Sink sa_;
  Sink sb_;
  std::unique_ptr<RdmCore> a_;
  std::unique_ptr<RdmCore> b_;
};

}  // namespace iwarpx::rdm::testing_core
