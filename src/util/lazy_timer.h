// LazyTimer: a one-shot timeout that is re-armed and stopped far more often
// than it fires (per-request read, keepalive and upstream timeouts). arm() and
// stop() only record the deadline; the timer's place in its loop's queue
// (an O(log n) heap update) moves only when the new deadline is earlier than
// the one it is queued for, and a firing that finds a later deadline queues
// it again for the rest. nginx's timers avoid heap updates the same way
// (NGX_TIMER_LAZY_DELAY).
//
// TimerQueue: the lazy timers of one loop (LoopContext owns it), in a
// binary min-heap by (due time, arming order), run by one libuv timer set to
// the earliest. A timer is 56 octets inside its owner, with no libuv handle
// of its own: each connection, upstream connection and HTTP/2 session used
// to hold a 152-octet uv_timer_t on the heap, which a worker holding tens of
// thousands of idle connections or WebSocket tunnels pays for each.
//
// Times are the loop's clock (uv_now, ms); a timer armed with 0 ms fires
// when libuv next runs its timers, as a libuv timer of 0 ms would. Thread
// affinity: the loop's thread.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "util/uv_handle.h"

namespace tlsfront {

class LazyTimer;

class TimerQueue {
 public:
  explicit TimerQueue(uv_loop_t* loop);
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Closes the libuv timer; the timers still queued are let go (they never
  // fire, and arming them does nothing). Before the loop is torn down.
  void close();
  size_t queued() const { return heap_.size(); }

 private:
  friend class LazyTimer;
  static constexpr uint32_t kNone = UINT32_MAX;

  uv_loop_t* loop() const { return loop_; }
  // Queues `t` (or moves it) to fire at `due`.
  void schedule(LazyTimer* t, uint64_t due);
  void remove(LazyTimer* t);
  // The libuv timer fired: runs what is due, then sets it to the earliest.
  void run();
  void restart();
  static bool before(const LazyTimer* a, const LazyTimer* b);
  void place(size_t i, LazyTimer* t);
  void sift_up(size_t i);
  void sift_down(size_t i);

  uv_loop_t* loop_;
  UvHandle<uv_timer_t> handle_;
  std::vector<LazyTimer*> heap_;
  uint64_t next_order_ = 0;
  uint64_t handle_due_ = UINT64_MAX;  // what the libuv timer runs to (UINT64_MAX: stopped)
  bool closed_ = false;
  bool running_ = false;  // run() is running: it sets the libuv timer once, at its end
};

class LazyTimer {
 public:
  using Callback = void (*)(void* arg);

  LazyTimer() = default;
  ~LazyTimer() { close(); }
  LazyTimer(const LazyTimer&) = delete;
  LazyTimer& operator=(const LazyTimer&) = delete;

  // Joins `loop`'s queue (its LoopContext's); returns 0. `cb`(`arg`) runs
  // when an armed deadline passes, never after close().
  int init(uv_loop_t* loop, Callback cb, void* arg);
  // Fires `ms` from now (0 = on the next loop iteration), replacing any
  // earlier arm. No-op before init() or after close().
  void arm(std::chrono::milliseconds ms);
  void stop() { deadline_ = kNever; }
  bool armed() const { return deadline_ != kNever; }
  // Leaves the queue: never fires again. Also done by the destructor.
  void close();

 private:
  friend class TimerQueue;
  static constexpr uint64_t kNever = UINT64_MAX;

  TimerQueue* queue_ = nullptr;  // null before init() and after close()
  Callback cb_ = nullptr;
  void* arg_ = nullptr;
  uint64_t deadline_ = kNever;  // when the callback is due
  uint64_t due_ = kNever;       // when it is queued for (kNever: not queued)
  uint64_t order_ = 0;          // arming order: equal due times fire first-armed first
  uint32_t index_ = TimerQueue::kNone;  // its place in the queue's heap
};

}  // namespace tlsfront
