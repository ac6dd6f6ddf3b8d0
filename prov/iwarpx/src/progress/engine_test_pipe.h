// Test helpers for the engine's tests: a pipe-backed Pollable and a fixture
// owning an Engine on a chosen clock, with locked Add/Remove/Pass.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <mutex>

#include <gtest/gtest.h>

#include "progress/engine.h"
#include "transport/poller.h"

namespace iwarpx::progress::engine_test {

// A pipe's read end. PollDirect reads one byte if there is one.
class PipeReader : public Pollable {
 public:
  PipeReader() { EXPECT_EQ(pipe2(fds_, O_NONBLOCK), 0); }
  ~PipeReader() override {
    close(fds_[0]);
    close(fds_[1]);
  }
  void Put(int n = 1) {
    for (int i = 0; i < n; ++i) ASSERT_EQ(write(fds_[1], "x", 1), 1);
  }
  [[nodiscard]] int fd() const override { return fds_[0]; }
  [[nodiscard]] uint32_t interest() const override {
    return transport::Poller::kReadable | (want_write ? transport::Poller::kWritable : 0);
  }
  void OnReady(uint32_t events) override {
    ++ready;
    if ((events & transport::Poller::kReadable) != 0) ReadOne();
  }
  bool PollDirect() override {
    ++direct;
    return ReadOne();
  }
  bool want_write = false;
  int ready = 0;
  int direct = 0;
  int consumed = 0;

 private:
  bool ReadOne() {
    char c = 0;
    if (read(fds_[0], &c, 1) != 1) return false;
    ++consumed;
    return true;
  }
  int fds_[2] = {-1, -1};
};

// An engine on a ClockT, with locked helpers.
template <class ClockT>
class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = Engine::Create(clock_);
    ASSERT_TRUE(e.ok());
    engine_ = std::move(e).value();
  }
  void Add(Pollable& p) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    ASSERT_TRUE(engine_->Add(p).ok());
  }
  void Remove(Pollable& p) {
    std::lock_guard<std::mutex> lock(engine_->mu());
    engine_->Remove(p);
  }
  size_t Pass() {
    std::lock_guard<std::mutex> lock(engine_->mu());
    return engine_->RunOnce(0);
  }
  ClockT clock_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace iwarpx::progress::engine_test
