#include "util/lazy_timer.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <functional>
#include <memory>
#include <vector>

#include "support/loop_test.h"
#include "util/loop_context.h"

namespace tlsfront {
namespace {

using std::chrono::milliseconds;

class LazyTimerTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    ASSERT_EQ(timer_.init(&loop_, [](void* self) { static_cast<LazyTimerTest*>(self)->on_fire(); }, this), 0);
    start_ = uv_now(&loop_);
  }
  void TearDown() override {
    timer_.close();
    for (auto& h : helpers_) {
      delete static_cast<std::function<void()>*>(h->data);  // one that never fired
      uv_close(reinterpret_cast<uv_handle_t*>(h.get()), nullptr);
    }
    LoopTest::TearDown();
  }
  void on_fire() {
    fired_at_.push_back(uv_now(&loop_) - start_);
    if (on_fire_) on_fire_();
  }
  // Runs `fn` after `ms` of loop time, from a plain libuv timer.
  void after(uint64_t ms, std::function<void()> fn) {
    auto& h = helpers_.emplace_back(std::make_unique<uv_timer_t>());
    uv_timer_init(&loop_, h.get());
    h->data = new std::function<void()>(std::move(fn));
    uv_timer_start(
        h.get(),
        [](uv_timer_t* t) {
          auto* f = static_cast<std::function<void()>*>(t->data);
          (*f)();
          delete f;
          t->data = nullptr;
        },
        ms, 0);
  }

  LazyTimer timer_;
  uint64_t start_ = 0;
  std::vector<uint64_t> fired_at_;
  std::function<void()> on_fire_;
  std::vector<std::unique_ptr<uv_timer_t>> helpers_;
};

TEST_F(LazyTimerTest, FiresOnceAtItsDeadline) {
  timer_.arm(milliseconds(20));
  EXPECT_TRUE(timer_.armed());
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_EQ(fired_at_.size(), 1u);
  EXPECT_GE(fired_at_[0], 20u);
  EXPECT_FALSE(timer_.armed());
}

// Re-arming to a later deadline does not touch the libuv timer; its firing at
// the old deadline finds the new one and waits for the rest.
TEST_F(LazyTimerTest, RearmingLaterMovesTheDeadline) {
  timer_.arm(milliseconds(20));
  after(10, [this] { timer_.arm(milliseconds(50)); });
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_EQ(fired_at_.size(), 1u);
  EXPECT_GE(fired_at_[0], 60u);
}

TEST_F(LazyTimerTest, RearmingEarlierFiresEarlier) {
  timer_.arm(milliseconds(10'000));
  timer_.arm(milliseconds(5));
  bool late = false;
  after(5'000, [&] {
    late = true;
    timer_.stop();
  });
  on_fire_ = [this] { uv_stop(&loop_); };
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_FALSE(late);
  ASSERT_EQ(fired_at_.size(), 1u);
  EXPECT_GE(fired_at_[0], 5u);
}

TEST_F(LazyTimerTest, StoppedTimerNeverCallsBack) {
  timer_.arm(milliseconds(10));
  timer_.stop();
  EXPECT_FALSE(timer_.armed());
  uv_run(&loop_, UV_RUN_DEFAULT);  // the libuv timer still wakes once, doing nothing
  EXPECT_TRUE(fired_at_.empty());
}

TEST_F(LazyTimerTest, StopThenArmAgainFiresAtTheNewDeadline) {
  timer_.arm(milliseconds(10));
  timer_.stop();
  after(5, [this] { timer_.arm(milliseconds(30)); });
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_EQ(fired_at_.size(), 1u);
  EXPECT_GE(fired_at_[0], 35u);
}

TEST_F(LazyTimerTest, CallbackMayArmAgain) {
  timer_.arm(milliseconds(5));
  on_fire_ = [this] {
    if (fired_at_.size() < 3) timer_.arm(milliseconds(5));
  };
  uv_run(&loop_, UV_RUN_DEFAULT);
  ASSERT_EQ(fired_at_.size(), 3u);
  EXPECT_GE(fired_at_[2], 15u);
}

TEST_F(LazyTimerTest, ClosedTimerNeverCallsBack) {
  timer_.arm(milliseconds(0));
  timer_.close();
  timer_.arm(milliseconds(0));  // no-op after close
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_TRUE(fired_at_.empty());
}

// Many timers share the loop's one libuv timer: each fires at its own
// deadline, in deadline order, equal deadlines in the order they were armed.
TEST_F(LazyTimerTest, ManyTimersFireInDeadlineThenArmingOrder) {
  struct Entry {
    LazyTimer timer;
    int id = 0;
    std::vector<int>* order = nullptr;
  };
  std::vector<int> order;
  std::vector<std::unique_ptr<Entry>> entries;
  const int deadlines[] = {30, 10, 20, 10, 0, 30, 5};
  for (int i = 0; i < 7; ++i) {
    auto e = std::make_unique<Entry>();
    e->id = i;
    e->order = &order;
    ASSERT_EQ(e->timer.init(&loop_, [](void* p) {
      auto* entry = static_cast<Entry*>(p);
      entry->order->push_back(entry->id);
    }, e.get()), 0);
    e->timer.arm(milliseconds(deadlines[i]));
    entries.push_back(std::move(e));
  }
  entries[5]->timer.close();  // leaves the queue: never fires
  entries.erase(entries.begin() + 2);  // destroyed while queued: never fires
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_EQ(order, (std::vector<int>{4, 6, 1, 3, 0}));
  EXPECT_EQ(LoopContext::of(&loop_).timers().queued(), 0u);
}

}  // namespace
}  // namespace tlsfront
