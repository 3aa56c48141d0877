#include "util/lazy_timer.h"

namespace tlsfront {

int LazyTimer::init(uv_loop_t* loop, Callback cb, void* arg) {
  cb_ = cb;
  arg_ = arg;
  return handle_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
}

void LazyTimer::arm(std::chrono::milliseconds ms) {
  if (!handle_.active()) return;
  const uint64_t now = uv_now(handle_.get()->loop);
  deadline_ = now + static_cast<uint64_t>(ms.count());
  if (deadline_ < due_) start(now);
}

void LazyTimer::start(uint64_t now) {
  due_ = deadline_;
  uv_timer_start(
      handle_.get(),
      [](uv_timer_t* t) {
        if (t->data) static_cast<LazyTimer*>(t->data)->on_fire();
      },
      deadline_ - now, 0);
}

void LazyTimer::on_fire() {
  due_ = kNever;
  if (deadline_ == kNever) return;
  const uint64_t now = uv_now(handle_.get()->loop);
  if (now < deadline_) {
    start(now);  // re-armed later since this firing was set
    return;
  }
  deadline_ = kNever;
  cb_(arg_);  // may arm again, or destroy the owner's state (not this timer)
}

}  // namespace tlsfront
