// LazyTimer: a one-shot timeout that is re-armed and stopped far more often
// than it fires (per-request read, keepalive and upstream timeouts). arm() and
// stop() only record the deadline; the libuv timer (an entry in the loop's
// binary heap: every uv_timer_start/stop is an O(log n) heap update) is
// restarted only when the new deadline is earlier than the one it runs to, and
// a firing that finds a later deadline re-arms for the rest. A stopped timer
// may still wake the loop once, doing nothing. nginx's timers avoid heap
// updates the same way (NGX_TIMER_LAZY_DELAY).
// Times are the loop's clock (uv_now, ms). Thread affinity: the loop's thread.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>

#include "util/uv_handle.h"

namespace tlsfront {

class LazyTimer {
 public:
  using Callback = void (*)(void* arg);

  // Returns the libuv code of uv_timer_init. `cb`(`arg`) runs when an armed
  // deadline passes, never after close().
  int init(uv_loop_t* loop, Callback cb, void* arg);
  // Fires `ms` from now (0 = on the next loop iteration), replacing any
  // earlier arm. No-op before init() or after close().
  void arm(std::chrono::milliseconds ms);
  void stop() { deadline_ = kNever; }
  bool armed() const { return deadline_ != kNever; }
  void close() { handle_.close(); }

 private:
  static constexpr uint64_t kNever = UINT64_MAX;
  void start(uint64_t now);
  void on_fire();

  UvHandle<uv_timer_t> handle_;
  Callback cb_ = nullptr;
  void* arg_ = nullptr;
  uint64_t deadline_ = kNever;  // when the callback is due
  uint64_t due_ = kNever;       // when the libuv timer fires (kNever: not started)
};

}  // namespace tlsfront
