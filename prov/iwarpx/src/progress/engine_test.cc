// The engine's hot-descriptor pass (busy polling): after a descriptor had
// input, zero-timeout passes read it directly instead of calling epoll_wait,
// yet every other descriptor is still seen within kDirectPassesMax passes,
// writers disable it, and a hot descriptor that stays empty goes cold. And
// its timers: one deadline scan per epoll pass, timers run only when one is
// due, including a deadline a callback of the same pass set. And the idle
// yield of engines that drive usrsctp connections.
#include "progress/engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <mutex>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "progress/engine_test_pipe.h"
#include "testing/fake_clock.h"
#include "transport/poller.h"

namespace iwarpx::progress {
namespace {

using engine_test::EngineTest;
using engine_test::PipeReader;

using EngineHotTest = EngineTest<MonotonicClock>;

// A PipeReader whose input another thread makes (a usrsctp doorbell's).
class YieldingReader : public PipeReader {
 public:
  [[nodiscard]] bool yields_when_idle() const override { return true; }
};

// "Yielding when idle": only while a yielding Pollable is registered, and
// only on zero-timeout passes whose epoll_wait found nothing.
TEST_F(EngineHotTest, IdlePassesYieldOnlyWhileAYieldingPollableIsRegistered) {
  PipeReader plain;
  Add(plain);
  for (int i = 0; i < 3; ++i) Pass();
  EXPECT_EQ(engine_->idle_yielders(), 0U);
  EXPECT_EQ(engine_->idle_yields(), 0U);
  YieldingReader yielding;
  Add(yielding);
  EXPECT_EQ(engine_->idle_yielders(), 1U);
  for (int i = 0; i < 3; ++i) Pass();
  EXPECT_EQ(engine_->idle_yields(), 3U);
  plain.Put();  // a pass with input: no yield
  EXPECT_EQ(Pass(), 1U);
  EXPECT_EQ(engine_->idle_yields(), 3U);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->RunOnce(1);  // a waiting pass (timed out): no yield either
  }
  EXPECT_EQ(engine_->idle_yields(), 3U);
  Remove(yielding);
  Remove(yielding);  // twice: counted once
  EXPECT_EQ(engine_->idle_yielders(), 0U);
  while (plain.consumed == 0 || Pass() != 0) {
  }
  const uint64_t before = engine_->idle_yields();
  for (int i = 0; i < 3; ++i) Pass();
  EXPECT_EQ(engine_->idle_yields(), before);
  Remove(plain);  // Pollables leave the engine before they go
}

TEST_F(EngineHotTest, DirectReadsReplaceEpollAndOthersAreStillSeen) {
  PipeReader hot;
  PipeReader other;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(engine_->Add(hot).ok());
    ASSERT_TRUE(engine_->Add(other).ok());
  }
  hot.Put();
  EXPECT_EQ(Pass(), 1u);  // epoll finds it: OnReady, and it becomes hot
  EXPECT_EQ(hot.ready, 1);
  EXPECT_EQ(hot.direct, 0);
  hot.Put(3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Pass(), 1u);
  EXPECT_EQ(hot.direct, 3);  // read directly, no readiness callback
  EXPECT_EQ(hot.ready, 1);
  EXPECT_EQ(hot.consumed, 4);
  // Another descriptor's input is seen within kDirectPassesMax passes.
  other.Put();
  int passes = 0;
  while (other.consumed == 0 && passes < 100) {
    Pass();
    ++passes;
  }
  EXPECT_EQ(other.consumed, 1);
  EXPECT_LE(passes, 17);
  std::lock_guard<std::mutex> lock(engine_->mu());
  engine_->Remove(hot);  // Pollables leave the engine before they go
  engine_->Remove(other);
}

TEST_F(EngineHotTest, QuietHotDescriptorGoesColdAndWritersDisableIt) {
  PipeReader p;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(engine_->Add(p).ok());
  }
  p.Put();
  Pass();
  ASSERT_EQ(p.ready, 1);
  for (int i = 0; i < 200; ++i) Pass();
  const int direct_after_quiet = p.direct;
  EXPECT_GE(direct_after_quiet, 1);
  EXPECT_LE(direct_after_quiet, 40);  // gave up after about kHotMisses misses
  for (int i = 0; i < 50; ++i) Pass();
  EXPECT_EQ(p.direct, direct_after_quiet);  // cold: epoll only
  // Hot again, then a writer appears: every pass is an epoll pass.
  p.Put();
  Pass();
  p.want_write = true;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->Update(p);
  }
  const int direct_before = p.direct;
  p.Put();
  Pass();
  EXPECT_EQ(p.direct, direct_before);
  EXPECT_EQ(p.consumed, 3);
  // Switched off (FI_IWARPX_BUSY_POLL=0): never direct.
  p.want_write = false;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->Update(p);
    engine_->set_hot_polling(false);
  }
  p.Put(2);
  Pass();
  Pass();
  EXPECT_EQ(p.direct, direct_before);
  EXPECT_EQ(p.consumed, 5);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->Remove(p);
  }
}

// A PipeReader with a settable deadline; counts how often the engine asks for
// the deadline and runs its timer.
class TimedPipe final : public PipeReader {
 public:
  void OnReady(uint32_t events) override {
    PipeReader::OnReady(events);
    if (deadline_on_ready) at = deadline_on_ready;
  }
  [[nodiscard]] std::optional<uint64_t> deadline() const override {
    ++asked;
    return at;
  }
  void OnTimer() override {
    ++timers;
    at.reset();
  }
  std::optional<uint64_t> at;
  std::optional<uint64_t> deadline_on_ready;  // set by OnReady (a callback)
  mutable int asked = 0;
  int timers = 0;
};

class EngineTimerTest : public EngineTest<testing::FakeClock> {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    engine_->set_hot_polling(false);  // every pass an epoll pass
  }
};

TEST_F(EngineTimerTest, OneDeadlineScanPerPassWhileNothingIsDue) {
  TimedPipe a;
  TimedPipe b;
  a.at = clock_.NowNs() + 5 * kNsPerMs;
  b.at = clock_.NowNs() + 7 * kNsPerMs;
  Add(a);
  Add(b);
  a.asked = 0;
  b.asked = 0;
  for (int i = 0; i < 10; ++i) Pass();
  // One scan per pass (it was two: the wait's bound, then the timer run).
  EXPECT_EQ(a.asked, 10);
  EXPECT_EQ(b.asked, 10);
  EXPECT_EQ(a.timers + b.timers, 0);
  clock_.Advance(5 * kNsPerMs);
  Pass();
  EXPECT_EQ(a.timers, 1);  // due: run in this pass
  EXPECT_EQ(b.timers, 0);  // not due
  clock_.Advance(2 * kNsPerMs);
  Pass();
  EXPECT_EQ(b.timers, 1);
  Remove(a);
  Remove(b);
}

TEST_F(EngineTimerTest, DeadlineSetByACallbackRunsInTheSamePassWhenDue) {
  TimedPipe p;
  TimedPipe idle;
  idle.at = clock_.NowNs() + 60 * 1000 * kNsPerMs;  // keeps a scan going
  Add(p);
  Add(idle);
  p.deadline_on_ready = clock_.NowNs();  // due at once
  p.Put();
  EXPECT_EQ(Pass(), 1u);  // OnReady set it; Update lowered the pass's deadline
  EXPECT_EQ(p.timers, 1);
  // A deadline set in the future by a callback waits for its time.
  p.deadline_on_ready = clock_.NowNs() + kNsPerMs;
  p.Put();
  Pass();
  EXPECT_EQ(p.timers, 1);
  clock_.Advance(kNsPerMs);
  Pass();
  EXPECT_EQ(p.timers, 2);
  EXPECT_EQ(idle.timers, 0);
  Remove(p);
  Remove(idle);
}

}  // namespace
}  // namespace iwarpx::progress
