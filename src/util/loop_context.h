// LoopContext: per-loop scratch state reached through uv_loop_t::data — the
// shared read buffer handed out by alloc_cb (reads never nest, so one buffer
// per loop suffices) and the deferred-delete list. Objects that must not be
// destroyed inside their own callbacks are handed to defer_delete() and freed
// from a uv_check callback, after the current I/O callback has returned
// (Envoy's deferredDelete).
// Thread affinity: the loop's thread only.
#pragma once

#include <uv.h>

#include <memory>
#include <vector>

#include "util/lazy_timer.h"
#include "util/uv_handle.h"

namespace tlsfront {

class Deletable {
 public:
  virtual ~Deletable() = default;
};

// Flushable: an object that batches output during a loop iteration and writes
// it once from the iteration's check phase (h2o's deferred flush).
class Flushable {
 public:
  virtual ~Flushable() = default;
  virtual void flush() = 0;

 private:
  friend class LoopContext;
  bool flush_scheduled_ = false;
};

class LoopContext {
 public:
  static constexpr size_t kReadBufferBytes = 64 * 1024;

  // Installs itself as `loop`->data and starts its uv_check handle.
  explicit LoopContext(uv_loop_t* loop);
  ~LoopContext();
  LoopContext(const LoopContext&) = delete;
  LoopContext& operator=(const LoopContext&) = delete;

  static LoopContext& of(uv_loop_t* loop) { return *static_cast<LoopContext*>(loop->data); }
  static LoopContext& of(const uv_handle_t* h) { return of(h->loop); }

  // libuv alloc_cb handing out the loop's read buffer.
  static void alloc_cb(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);

  void defer_delete(std::unique_ptr<Deletable> obj);
  // Calls `obj`->flush() once at the end of this loop iteration (before any
  // deferred delete). `obj` must stay alive until then or call cancel_flush().
  void schedule_flush(Flushable* obj);
  void cancel_flush(Flushable* obj);
  // Frees everything deferred so far (also called on teardown).
  void run_deferred();
  // Closes the check handle (call before draining the loop on teardown).
  void close();

  uv_loop_t* loop() const { return loop_; }
  // The loop iteration's number (from 1, one more at each check phase):
  // what one iteration's callbacks do, they do for input read together.
  uint64_t pass() const { return pass_; }
  // The loop's lazy timers (util/lazy_timer.h).
  TimerQueue& timers() { return timers_; }

 private:
  uv_loop_t* loop_;
  void run_flushes();

  UvHandle<uv_check_t> check_;
  UvHandle<uv_idle_t> idle_;  // keeps poll from blocking while flushes are due
  std::vector<Flushable*> flushes_;
  std::vector<std::unique_ptr<Deletable>> deferred_;
  std::unique_ptr<char[]> read_buf_;
  TimerQueue timers_;
  uint64_t pass_ = 1;
};

}  // namespace tlsfront
