#include "data_path_transport.h"

#include "data_path_env.h"

namespace tlsfront::harness {

FakeTransport::FakeTransport(uv_loop_t* loop) {
  zero_timer_.init([loop](uv_timer_t* t) { return uv_timer_init(loop, t); }, this);
}

FakeTransport::~FakeTransport() = default;

void FakeTransport::record(std::string event) {
  if (event == "send" && !events_.empty() && events_.back() == "send") return;
  events_.push_back(std::move(event));
}

void FakeTransport::send(std::string_view plaintext) {
  output_.append(plaintext);
  record("send");
}

void FakeTransport::close(bool notify) {
  ++close_calls_;
  if (!close_notify_) close_notify_ = notify;
  uv_timer_stop(zero_timer_.get());
  timer_.reset();
  record(notify ? "close(true)" : "close(false)");
}

void FakeTransport::client_done() {
  ++client_done_calls_;
  record("client_done");
}

void FakeTransport::arm_timer(std::chrono::milliseconds ms) {
  timer_ = ms;
  record("arm(" + std::to_string(ms.count()) + ")");
  uv_timer_stop(zero_timer_.get());
  if (ms.count() == 0) {
    uv_timer_start(zero_timer_.get(), [](uv_timer_t* t) {
      if (t->data) static_cast<FakeTransport*>(t->data)->fire_timer();
    }, 0, 0);
  }
}

void FakeTransport::stop_timer() {
  timer_.reset();
  uv_timer_stop(zero_timer_.get());
  record("stop");
}

void FakeTransport::resume_input() {
  ++resume_calls_;
  record("resume");
  deliver();
}

void FakeTransport::release_buffers() {
  ++release_calls_;
  record("release");
}

void FakeTransport::replace_session(std::unique_ptr<http::ClientSession> next) {
  successor_ = std::move(next);
  session_ = successor_.get();
  deliver();
}

http::ConnectionInfo FakeTransport::connection_facts() const { return test_connection_info(); }

void FakeTransport::feed(std::string_view bytes) {
  if (closed()) return;
  input_.append(bytes);
  deliver();
}

void FakeTransport::deliver() {
  if (delivering_ || !session_) return;  // the loop below picks up what a nested resume wants
  delivering_ = true;
  while (!closed() && !input_.empty() && session_->wants_input()) {
    std::string chunk = std::move(input_);
    input_.clear();
    session_->on_data(chunk);
  }
  delivering_ = false;
}

void FakeTransport::client_closes() {
  if (session_ && !closed()) session_->on_client_closed();
}

bool FakeTransport::fire_timer() {
  if (!timer_ || !session_ || closed()) return false;
  timer_.reset();
  uv_timer_stop(zero_timer_.get());
  session_->on_timer();
  return true;
}

std::string FakeTransport::take_output() {
  std::string out = output_.substr(taken_);
  taken_ = output_.size();
  return out;
}

int FakeTransport::find_event(std::string_view name, size_t from) const {
  for (size_t i = from; i < events_.size(); ++i) {
    if (events_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace tlsfront::harness
