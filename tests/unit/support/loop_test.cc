#include "loop_test.h"

namespace tlsfront::harness {

void LoopTest::SetUp() {
  ASSERT_EQ(uv_loop_init(&loop_), 0);
  ctx_ = std::make_unique<LoopContext>(&loop_);
  tick_.init([this](uv_timer_t* t) { return uv_timer_init(&loop_, t); }, this);
}

void LoopTest::TearDown() {
  hooks_.clear();
  release_objects();
  tick_.close();
  ctx_->run_deferred();
  ctx_->close();
  uv_run(&loop_, UV_RUN_DEFAULT);
  ctx_.reset();
  EXPECT_EQ(uv_loop_close(&loop_), 0) << "a handle is still open on the loop";
}

void LoopTest::run_hooks() {
  for (auto& h : hooks_) h();
}

bool LoopTest::run_until(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kMaxWait;
  uv_timer_start(tick_.get(), [](uv_timer_t*) {}, 5, 5);
  bool ok = false;
  for (int i = 0; i < kMaxIterations && std::chrono::steady_clock::now() < deadline; ++i) {
    run_hooks();
    if (done()) {
      ok = true;
      break;
    }
    uv_run(&loop_, UV_RUN_ONCE);
  }
  uv_timer_stop(tick_.get());
  return ok || done();
}

void LoopTest::settle(int iterations) {
  for (int i = 0; i < iterations; ++i) {
    uv_run(&loop_, UV_RUN_NOWAIT);
    run_hooks();
  }
}

}  // namespace tlsfront::harness
