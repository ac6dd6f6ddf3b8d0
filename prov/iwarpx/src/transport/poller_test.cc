#include "transport/poller.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace iwarpx::transport {
namespace {

class PollerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = Poller::Create();
    ASSERT_TRUE(p.ok());
    poller_ = std::move(p).value();
    ASSERT_EQ(::pipe2(pipe_, O_NONBLOCK | O_CLOEXEC), 0);
    rd_.Reset(pipe_[0]);
    wr_.Reset(pipe_[1]);
  }

  std::unique_ptr<Poller> poller_;
  int pipe_[2] = {-1, -1};
  UniqueFd rd_;
  UniqueFd wr_;
};

TEST_F(PollerTest, ReportsReadinessWithToken) {
  int marker = 0;
  ASSERT_TRUE(poller_->Add(rd_.get(), Poller::kReadable, &marker).ok());
  PollEvent ev[8];
  auto none = poller_->Wait(0, ev);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->count, 0u);
  EXPECT_FALSE(none->woken);

  ASSERT_EQ(::write(wr_.get(), "x", 1), 1);
  auto one = poller_->Wait(1000, ev);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->count, 1u);
  EXPECT_EQ(ev[0].pointer(), &marker);
  EXPECT_NE(ev[0].events & Poller::kReadable, 0u);

  // Modify to writable interest on the write end, remove the read end.
  ASSERT_TRUE(poller_->Remove(rd_.get()).ok());
  ASSERT_TRUE(poller_->Add(wr_.get(), Poller::kReadable, uint64_t{9}).ok());
  ASSERT_TRUE(poller_->Modify(wr_.get(), Poller::kWritable, uint64_t{10}).ok());
  auto w = poller_->Wait(1000, ev);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->count, 1u);
  EXPECT_EQ(ev[0].token, 10u);
  EXPECT_NE(ev[0].events & Poller::kWritable, 0u);
}

TEST_F(PollerTest, ControlErrorsCarryErrno) {
  EXPECT_EQ(poller_->Remove(rd_.get()).err, ENOENT);
  EXPECT_EQ(poller_->Modify(rd_.get(), Poller::kReadable, uint64_t{1}).err, ENOENT);
  ASSERT_TRUE(poller_->Add(rd_.get(), Poller::kReadable, uint64_t{1}).ok());
  EXPECT_EQ(poller_->Add(rd_.get(), Poller::kReadable, uint64_t{1}).err, EEXIST);
  EXPECT_EQ(poller_->Add(wr_.get(), Poller::kReadable, ~uint64_t{0}).err, EINVAL);
  EXPECT_EQ(poller_->Add(-1, Poller::kReadable, uint64_t{2}).err, EBADF);
  auto empty = poller_->Wait(0, std::span<PollEvent>());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().err, EINVAL);
}

TEST_F(PollerTest, WakeupFromAnotherThreadEndsWait) {
  PollEvent ev[4];
  std::atomic<bool> started{false};
  std::thread waker([&] {
    while (!started.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(poller_->Wakeup().ok());
  });
  started = true;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = poller_->Wait(10000, ev);
  const auto waited = std::chrono::steady_clock::now() - t0;
  waker.join();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->woken);
  EXPECT_EQ(r->count, 0u);
  EXPECT_LT(waited, std::chrono::seconds(5));
  // The wakeup was consumed: the next poll is quiet.
  auto again = poller_->Wait(0, ev);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->woken);
}

TEST_F(PollerTest, WakeupBeforeWaitIsNotLostAndCoalesces) {
  ASSERT_TRUE(poller_->Wakeup().ok());
  ASSERT_TRUE(poller_->Wakeup().ok());
  PollEvent ev[4];
  auto r = poller_->Wait(1000, ev);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->woken);
  auto again = poller_->Wait(0, ev);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->woken);
}

TEST_F(PollerTest, EventsBeyondOutputStayPending) {
  UniqueFd extra[3];
  for (uint64_t i = 0; i < 3; ++i) {
    extra[i].Reset(::eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC));  // readable at once
    ASSERT_TRUE(poller_->Add(extra[i].get(), Poller::kReadable | Poller::kEdgeTriggered, i).ok());
  }
  PollEvent ev[2];
  auto first = poller_->Wait(1000, ev);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->count, 2u);
  auto second = poller_->Wait(1000, ev);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->count, 1u);  // edge-triggered, yet not lost
}

}  // namespace
}  // namespace iwarpx::transport
