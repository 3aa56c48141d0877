// LoopTest: a GoogleTest fixture owning a uv loop with its LoopContext, for
// unit tests that run real libuv I/O (sockets on 127.0.0.1) in-process.
// run_until() turns the loop until a condition holds, bounded in iterations
// and in time (a 5 ms tick keeps a blocked poll from waiting longer), never
// sleeping blindly, also for what another thread or process does (the tick
// wakes the poll); settle() turns it a few times for "nothing more happens".
// Subclasses free their loop objects in release_objects(), before the loop
// is drained and closed (which must then succeed: no handle leaked).
// Thread affinity: the test's thread.
#pragma once

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "util/loop_context.h"
#include "util/uv_handle.h"

namespace tlsfront::harness {

class LoopTest : public ::testing::Test {
 protected:
  static constexpr int kMaxIterations = 20000;
  static constexpr std::chrono::seconds kMaxWait{10};

  void SetUp() override;
  void TearDown() override;
  // Frees what the subclass made on the loop (sessions, pools, servers).
  virtual void release_objects() {}

  // Runs the loop until `done()` (checked before every iteration, after the
  // per-iteration hooks); false when the bound was reached first.
  bool run_until(const std::function<bool()>& done);
  // Turns the loop `iterations` times without blocking.
  void settle(int iterations = 30);
  // Called after every iteration of run_until() and settle() (e.g. moving
  // bytes between an HTTP/2 client and the session).
  void each_iteration(std::function<void()> hook) { hooks_.push_back(std::move(hook)); }

  uv_loop_t loop_{};
  std::unique_ptr<LoopContext> ctx_;

 private:
  void run_hooks();
  UvHandle<uv_timer_t> tick_;
  std::vector<std::function<void()>> hooks_;
};

}  // namespace tlsfront::harness
