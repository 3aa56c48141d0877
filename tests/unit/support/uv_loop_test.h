// UvLoopTest: a fixture with a real libuv loop, for tests that run one
// (timers, TCP on 127.0.0.1:0). The loop is initialised before each test;
// after the derived fixture's TearDown closed its handles and called this
// one, the loop runs until every close callback ran and must then close: a
// handle left open fails the test.
// Thread affinity: the test thread.
#pragma once

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <thread>

namespace tlsfront {

class UvLoopTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uv_loop_init(&loop_), 0); }
  void TearDown() override {
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  // Runs the loop one iteration at a time (each waits for an event) until
  // `done`, or `max_iterations` passed.
  void run_until(const std::function<bool()>& done, int max_iterations = 2000) {
    for (int i = 0; i < max_iterations && !done(); ++i) uv_run(&loop_, UV_RUN_ONCE);
  }
  // For what another thread or process does (the loop may have nothing to
  // wait for): runs the loop without blocking, then sleeps 1 ms, until `done`
  // or about 10 s passed.
  void poll_until(const std::function<bool()>& done) {
    for (int i = 0; i < 10'000 && !done(); ++i) {
      uv_run(&loop_, UV_RUN_NOWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  uv_loop_t loop_{};
};

}  // namespace tlsfront
