// FakeTransport: a ClientTransport for unit tests of the client sessions. It
// records the plaintext the session sends, close(notify), client_done(),
// the timer, resume_input and release_buffers, in order (events()). Input
// goes in through feed(), which delivers to the session only while it wants
// input, as data::Connection does, and keeps the rest until resume_input().
// A 0 ms timer ("next iteration") fires on the loop by itself; a longer one
// waits for fire_timer(), so timeouts happen when the test says.
// Thread affinity: the loop's thread only.
#pragma once

#include <uv.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/http/client_session.h"
#include "data/http/client_transport.h"
#include "util/uv_handle.h"

namespace tlsfront::harness {

class FakeTransport final : public http::ClientTransport {
 public:
  explicit FakeTransport(uv_loop_t* loop);
  ~FakeTransport() override;
  FakeTransport(const FakeTransport&) = delete;
  FakeTransport& operator=(const FakeTransport&) = delete;

  // The session this transport feeds and whose on_timer it calls (borrowed).
  void attach(http::ClientSession* session) { session_ = session; }

  // ClientTransport
  void send(std::string_view plaintext) override;
  size_t buffered_output() const override { return buffered_output_; }
  void close(bool notify) override;
  void client_done() override;
  void arm_timer(std::chrono::milliseconds ms) override;
  void stop_timer() override;
  void resume_input() override;
  void release_buffers() override;
  // Attaches `next` and keeps it (the test keeps the session it made).
  void replace_session(std::unique_ptr<http::ClientSession> next) override;
  // test_connection_info().
  http::ConnectionInfo connection_facts() const override;

  // Test side: client bytes in. Delivered while the session wants input;
  // the rest waits for resume_input(). Nothing is delivered after close().
  void feed(std::string_view bytes);
  // The client closed its side: on_client_closed().
  void client_closes();
  // Fires the armed timer (the session's on_timer); false when none is armed.
  bool fire_timer();
  // Pretend `n` bytes are not yet written to the socket (output congestion);
  // setting it back below the watermark is the test's on_output_drained() cue.
  void set_buffered_output(size_t n) { buffered_output_ = n; }

  // What the session sent, all of it / since the last take_output().
  const std::string& output() const { return output_; }
  std::string take_output();
  size_t undelivered_input() const { return input_.size(); }

  bool closed() const { return close_notify_.has_value(); }
  // The notify argument of the first close(); nullopt while open.
  std::optional<bool> close_notify() const { return close_notify_; }
  int close_calls() const { return close_calls_; }
  bool client_done_called() const { return client_done_calls_ > 0; }
  int resume_calls() const { return resume_calls_; }
  int release_calls() const { return release_calls_; }
  // The armed timer's duration; nullopt when stopped or fired.
  std::optional<std::chrono::milliseconds> timer() const { return timer_; }
  // Every call in order: "send", "close(true)", "close(false)", "client_done",
  // "arm(<ms>)", "stop", "resume", "release" (consecutive sends as one).
  const std::vector<std::string>& events() const { return events_; }
  // Index of the first event equal to `name` at or after `from`, or -1.
  int find_event(std::string_view name, size_t from = 0) const;

 private:
  void deliver();
  void record(std::string event);

  http::ClientSession* session_ = nullptr;
  std::unique_ptr<http::ClientSession> successor_;  // from replace_session()
  UvHandle<uv_timer_t> zero_timer_;  // for 0 ms timers only
  std::string output_;
  size_t taken_ = 0;
  std::string input_;
  bool delivering_ = false;
  size_t buffered_output_ = 0;
  std::optional<bool> close_notify_;
  int close_calls_ = 0;
  int client_done_calls_ = 0;
  int resume_calls_ = 0;
  int release_calls_ = 0;
  std::optional<std::chrono::milliseconds> timer_;
  std::vector<std::string> events_;
};

}  // namespace tlsfront::harness
