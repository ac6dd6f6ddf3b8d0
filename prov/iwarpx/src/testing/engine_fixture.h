// EngineFixture<Base, kRunSeconds>: what every test fixture that runs a layer
// on a real progress::Engine shares (RdChannelTest, RdmCoreTest, RcCoreTest,
// RdmBounceTest): a monotonic clock, the engine made in SetUp, and
// RunUntil(done), which drives the engine until done() holds or kRunSeconds
// (or the seconds given) pass. Derived fixtures that override SetUp call
// EngineFixture::SetUp() first; their members (endpoints, channels) are
// destroyed before the engine, which is a base member. Test-only,
// header-only.
#pragma once

#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "progress/engine.h"
#include "testing/run_engine.h"

namespace iwarpx::testing {

template <class Base = ::testing::Test, int kRunSeconds = 20>
class EngineFixture : public Base {
 protected:
  void SetUp() override {
    auto e = progress::Engine::Create(clock_);
    ASSERT_TRUE(e.ok());
    engine_ = std::move(e).value();
  }
  template <class F>
  bool RunUntil(F done, int seconds = kRunSeconds) {
    return RunEngineUntil(*engine_, done, seconds);
  }

  MonotonicClock clock_;
  std::unique_ptr<progress::Engine> engine_;
};

}  // namespace iwarpx::testing
