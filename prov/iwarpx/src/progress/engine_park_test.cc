// Parking of the hot descriptor: after kParkAfterHits direct reads with input
// it leaves the epoll set (the engine's epoll descriptor no longer turns
// readable for it), is still read in every pass, and goes back into the set
// before anyone could sleep on it (WaitForEvents, RunOnce with a timeout),
// when it goes cold (also while another descriptor waits to write), when
// another descriptor becomes hot, when it wants to write, and when parking or
// hot polling is switched off; and a loop that sleeps between messages does
// not park at all (hits count from the last sleep).
#include <poll.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "progress/engine.h"
#include "progress/engine_test_pipe.h"

namespace iwarpx::progress {
namespace {

using engine_test::PipeReader;

class EngineParkTest : public engine_test::EngineTest<MonotonicClock> {
 protected:
  void TearDown() override {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->Remove(p_);  // Pollables leave the engine before they go
    engine_->Remove(other_);
  }
  // p_ becomes hot through epoll, then is read directly until parked.
  void HeatAndPark() {
    Add(p_);
    p_.Put();
    Pass();
    ParkAgain();
  }
  // p_ has input in every pass until it is parked again (it may first
  // have to become hot through an epoll pass, at most kDirectPassesMax away).
  void ParkAgain() {
    for (int i = 0; i < 80 && !Parked(); ++i) {
      p_.Put();
      Pass();
    }
    ASSERT_TRUE(Parked());
  }
  bool Parked() {
    std::lock_guard<std::mutex> lock(engine_->mu());
    return engine_->parked();
  }
  // Whether the engine's epoll descriptor is readable right now.
  bool EpollReadable() {
    pollfd pfd{engine_->poll_fd(), POLLIN, 0};
    return ::poll(&pfd, 1, 0) == 1;
  }
  PipeReader p_;
  PipeReader other_;
};

TEST_F(EngineParkTest, ParkedAfterFourHitsOutOfTheSetAndStillReadEveryPass) {
  Add(p_);
  p_.Put();
  EXPECT_EQ(Pass(), 1u);  // epoll: it becomes hot
  // Empty direct reads between hits do not reset the count (a ping-pong).
  for (int hit = 1; hit <= 3; ++hit) {
    p_.Put();
    Pass();
    Pass();
    Pass();
    EXPECT_FALSE(Parked()) << "after " << hit << " hits";
  }
  p_.Put();
  Pass();
  ASSERT_TRUE(Parked());
  EXPECT_EQ(engine_->parks(), 1u);
  // Out of the set for real: input does not make the epoll descriptor
  // readable, yet every pass, the epoll passes too, reads it.
  p_.Put();
  EXPECT_FALSE(EpollReadable());
  const int consumed = p_.consumed;
  for (int i = 0; i < 40; ++i) {
    p_.Put();
    EXPECT_EQ(Pass(), 1u) << "pass " << i;
  }
  EXPECT_EQ(Pass(), 1u);  // the byte put before the loop
  EXPECT_EQ(p_.consumed, consumed + 41);
  EXPECT_EQ(p_.ready, 1);  // never through epoll while parked
  EXPECT_TRUE(Parked());
  EXPECT_EQ(engine_->parks(), 1u);  // no churn while it stays busy
}

TEST_F(EngineParkTest, NoEpollWaitWhileTheParkedOneIsAllThereIs) {
  HeatAndPark();
  // The set holds nothing but the wakeup eventfd: a busy poll's epoll passes
  // (every kDirectPassesMax + 1) make no epoll_wait, yet still read it.
  const uint64_t waits = engine_->waits();
  for (int i = 0; i < 100; ++i) {
    p_.Put();
    EXPECT_EQ(Pass(), 1u) << "pass " << i;
  }
  for (int i = 0; i < 20; ++i) Pass();  // empty reads, not yet cold
  EXPECT_EQ(engine_->waits(), waits);
  EXPECT_TRUE(Parked());
  // A Wakeup meanwhile is left for the next sleep, which returns at once.
  engine_->Wakeup();
  const auto start = std::chrono::steady_clock::now();
  engine_->WaitForEvents(5000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(EngineParkTest, EpollPassesStillPollWhenAnotherDescriptorIsInTheSet) {
  Add(other_);
  HeatAndPark();
  const uint64_t waits = engine_->waits();
  for (int i = 0; i < 20; ++i) {
    p_.Put();
    Pass();
  }
  EXPECT_GE(engine_->waits(), waits + 1);  // one epoll pass in 17 at least
  // ... and the other one is served through them.
  other_.Put();
  for (int i = 0; i < 20 && other_.consumed == 0; ++i) {
    p_.Put();
    Pass();
  }
  EXPECT_EQ(other_.consumed, 1);
}

TEST_F(EngineParkTest, ASleeperInWaitForEventsWakesForAParkedDescriptor) {
  HeatAndPark();
  std::atomic<bool> woke{false};
  const auto start = std::chrono::steady_clock::now();
  std::thread sleeper([&] {
    engine_->WaitForEvents(5000);
    woke = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p_.Put();
  sleeper.join();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(woke);
  EXPECT_LT(waited, std::chrono::seconds(2));  // not the 5 s timeout
  EXPECT_FALSE(Parked());
  EXPECT_EQ(engine_->unparks(), 1u);
  const int consumed = p_.consumed;
  Pass();
  EXPECT_EQ(p_.consumed, consumed + 1);
}

TEST_F(EngineParkTest, ARunOnceThatMayBlockPutsItBackFirst) {
  HeatAndPark();
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->RunOnce(1);
  }
  EXPECT_FALSE(Parked());
  p_.Put();
  EXPECT_TRUE(EpollReadable());
}

TEST_F(EngineParkTest, BackInTheSetWhenColdWhenAnotherIsHotAndWhenItWantsToWrite) {
  HeatAndPark();
  // Cold: after kHotMisses empty reads.
  for (int i = 0; i < 40; ++i) Pass();
  EXPECT_FALSE(Parked());
  p_.Put();
  EXPECT_TRUE(EpollReadable());
  Pass();
  EXPECT_EQ(p_.ready, 2);  // seen through epoll again
  // Parked again; then another descriptor's input makes it the hot one.
  ParkAgain();
  Add(other_);
  other_.Put();
  for (int i = 0; i < 20 && other_.consumed == 0; ++i) Pass();
  EXPECT_EQ(other_.consumed, 1);
  EXPECT_FALSE(Parked());
  p_.Put();
  EXPECT_TRUE(EpollReadable());
  Pass();
  // Parked again, then it wants to write: back with the new interest.
  ParkAgain();
  p_.want_write = true;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->Update(p_);
  }
  EXPECT_FALSE(Parked());
  p_.Put();
  EXPECT_TRUE(EpollReadable());
  EXPECT_EQ(engine_->unparks(), 3u);
}

TEST_F(EngineParkTest, SwitchedOffPutsItBackForGood) {
  HeatAndPark();
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->set_parking(false);
  }
  EXPECT_FALSE(Parked());
  for (int i = 0; i < 20; ++i) {
    p_.Put();
    Pass();
  }
  EXPECT_FALSE(Parked());
  EXPECT_EQ(engine_->parks(), 1u);
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->set_parking(true);
  }
  ParkAgain();
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->set_hot_polling(false);
  }
  EXPECT_FALSE(Parked());
  p_.Put();
  EXPECT_TRUE(EpollReadable());
}

TEST_F(EngineParkTest, AQuietParkedOneGoesBackWhileAnotherWaitsToWrite) {
  HeatAndPark();
  other_.want_write = true;  // a pipe's read end: never writable, always waiting
  Add(other_);
  // Every pass is now an epoll pass (no direct pass with a writer), so the
  // parked one's empty reads must be counted there.
  for (int i = 0; i < 40; ++i) Pass();
  EXPECT_FALSE(Parked());
  p_.Put();
  EXPECT_TRUE(EpollReadable());
}

TEST_F(EngineParkTest, SleepingBetweenMessagesDoesNotParkOncePerMessage) {
  Add(p_);
  for (int i = 0; i < 100; ++i) {
    p_.Put();
    Pass();
    Pass();
    engine_->WaitForEvents(0);  // fi_cq_sread between two messages
  }
  EXPECT_EQ(engine_->parks(), 0u);  // each park would cost a DEL and an ADD
  EXPECT_EQ(p_.consumed, 100);
}

TEST_F(EngineParkTest, RemovingAParkedDescriptor) {
  HeatAndPark();
  Remove(p_);
  EXPECT_FALSE(Parked());
  const int consumed = p_.consumed;
  p_.Put();
  Pass();
  EXPECT_EQ(p_.consumed, consumed);  // never called again
  Add(p_);                           // added again: in the set, found by epoll
  EXPECT_TRUE(EpollReadable());
  Pass();
  EXPECT_EQ(p_.consumed, consumed + 1);
}

}  // namespace
}  // namespace iwarpx::progress
