#include "util/lazy_timer.h"

#include "util/loop_context.h"

namespace tlsfront {

TimerQueue::TimerQueue(uv_loop_t* loop) : loop_(loop) {
  handle_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
}

TimerQueue::~TimerQueue() { close(); }

void TimerQueue::close() {
  for (LazyTimer* t : heap_) {
    t->queue_ = nullptr;
    t->index_ = kNone;
    t->due_ = LazyTimer::kNever;
  }
  heap_.clear();
  closed_ = true;
  handle_.close();
}

bool TimerQueue::before(const LazyTimer* a, const LazyTimer* b) {
  return a->due_ != b->due_ ? a->due_ < b->due_ : a->order_ < b->order_;
}

void TimerQueue::place(size_t i, LazyTimer* t) {
  heap_[i] = t;
  t->index_ = static_cast<uint32_t>(i);
}

void TimerQueue::sift_up(size_t i) {
  LazyTimer* t = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!before(t, heap_[parent])) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, t);
}

void TimerQueue::sift_down(size_t i) {
  LazyTimer* t = heap_[i];
  const size_t n = heap_.size();
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
    if (!before(heap_[child], t)) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, t);
}

void TimerQueue::schedule(LazyTimer* t, uint64_t due) {
  const bool queued = t->index_ != kNone;
  const uint64_t old_due = t->due_;
  t->due_ = due;
  t->order_ = next_order_++;
  if (!queued) {
    heap_.push_back(t);
    t->index_ = static_cast<uint32_t>(heap_.size() - 1);
    sift_up(t->index_);
  } else if (due < old_due) {
    sift_up(t->index_);
  } else {
    sift_down(t->index_);
  }
  if (heap_[0] == t) restart();
}

void TimerQueue::remove(LazyTimer* t) {
  const size_t i = t->index_;
  t->index_ = kNone;
  t->due_ = LazyTimer::kNever;
  LazyTimer* last = heap_.back();
  heap_.pop_back();
  if (last != t) {
    place(i, last);
    sift_up(i);
    sift_down(last->index_);
  }
  if (i == 0) restart();
}

void TimerQueue::restart() {
  if (closed_ || running_) return;
  const uint64_t due = heap_.empty() ? LazyTimer::kNever : heap_[0]->due_;
  if (due == handle_due_) return;
  handle_due_ = due;
  if (due == LazyTimer::kNever) {
    uv_timer_stop(handle_.get());
    return;
  }
  const uint64_t now = uv_now(loop_);
  uv_timer_start(
      handle_.get(),
      [](uv_timer_t* h) {
        if (h->data) static_cast<TimerQueue*>(h->data)->run();
      },
      due > now ? due - now : 0, 0);
}

void TimerQueue::run() {
  handle_due_ = LazyTimer::kNever;  // the libuv timer is one-shot: it stopped
  running_ = true;
  const uint64_t now = uv_now(loop_);
  const uint64_t first_new = next_order_;  // timers armed from here on wait for libuv's next call
  while (!heap_.empty()) {
    LazyTimer* t = heap_[0];
    if (t->due_ > now || t->order_ >= first_new) break;
    if (t->deadline_ != LazyTimer::kNever && t->deadline_ > now) {
      schedule(t, t->deadline_);  // re-armed later since it was queued
      continue;
    }
    remove(t);
    if (t->deadline_ == LazyTimer::kNever) continue;  // stopped since it was queued
    t->deadline_ = LazyTimer::kNever;
    t->cb_(t->arg_);  // may arm, stop or close any timer, this one too
  }
  running_ = false;
  restart();
}

int LazyTimer::init(uv_loop_t* loop, Callback cb, void* arg) {
  close();
  cb_ = cb;
  arg_ = arg;
  queue_ = &LoopContext::of(loop).timers();
  return 0;
}

void LazyTimer::arm(std::chrono::milliseconds ms) {
  if (queue_ == nullptr) return;
  deadline_ = uv_now(queue_->loop()) + static_cast<uint64_t>(ms.count());
  if (deadline_ < due_) queue_->schedule(this, deadline_);
}

void LazyTimer::close() {
  deadline_ = kNever;
  if (queue_ == nullptr) return;
  if (index_ != TimerQueue::kNone) queue_->remove(this);
  queue_ = nullptr;
}

}  // namespace tlsfront
