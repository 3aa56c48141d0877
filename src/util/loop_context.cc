#include "util/loop_context.h"

namespace tlsfront {

LoopContext::LoopContext(uv_loop_t* loop) : loop_(loop), read_buf_(new char[kReadBufferBytes]), timers_(loop) {
  loop->data = this;
  check_.init([loop](uv_check_t* h) { return uv_check_init(loop, h); }, this);
  uv_check_start(check_.get(), [](uv_check_t* h) {
    if (!h->data) return;
    auto* self = static_cast<LoopContext*>(h->data);
    ++self->pass_;
    self->run_flushes();
    self->run_deferred();
  });
  uv_unref(check_.handle());
  idle_.init([loop](uv_idle_t* h) { return uv_idle_init(loop, h); }, this);
}

void LoopContext::schedule_flush(Flushable* obj) {
  if (obj->flush_scheduled_) return;
  obj->flush_scheduled_ = true;
  flushes_.push_back(obj);
  if (flushes_.size() == 1 && idle_.active()) uv_idle_start(idle_.get(), [](uv_idle_t*) {});
}

void LoopContext::cancel_flush(Flushable* obj) {
  if (!obj->flush_scheduled_) return;
  obj->flush_scheduled_ = false;
  for (auto& p : flushes_) {
    if (p == obj) p = nullptr;
  }
}

void LoopContext::run_flushes() {
  // A flush may schedule more (e.g. a session answering a pipelined request).
  for (size_t i = 0; i < flushes_.size(); ++i) {
    Flushable* obj = flushes_[i];
    if (!obj) continue;
    obj->flush_scheduled_ = false;
    obj->flush();
  }
  flushes_.clear();
  if (idle_.active()) uv_idle_stop(idle_.get());
}

LoopContext::~LoopContext() {
  run_deferred();
  close();
}

void LoopContext::alloc_cb(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  LoopContext& ctx = of(handle);
  *buf = uv_buf_init(ctx.read_buf_.get(), kReadBufferBytes);
}

void LoopContext::defer_delete(std::unique_ptr<Deletable> obj) {
  if (obj) deferred_.push_back(std::move(obj));
}

void LoopContext::run_deferred() {
  // Destructors may defer more objects; keep going until none are left.
  while (!deferred_.empty()) {
    std::vector<std::unique_ptr<Deletable>> batch;
    batch.swap(deferred_);
    batch.clear();
  }
}

void LoopContext::close() {
  flushes_.clear();
  check_.close();
  idle_.close();
  timers_.close();
}

}  // namespace tlsfront
