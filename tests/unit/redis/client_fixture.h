// The fixture of redis::Client's tests (client_test.cc, client_tls_test.cc):
// a real redis-server (tests/shared/redis_server.h), one libuv loop run
// until a condition holds (its wake-ups counted: "no busy loop" is checked
// by counting, never by timing), a client made on it, and what a command's
// callback got.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/client.h"
#include "shared/redis_server.h"

namespace tlsfront::redis {

using itest::RedisServer;
using itest::TempDir;
using std::chrono::milliseconds;

// What a callback got: the reply's shape and bytes (the view dies with the
// callback), or the error.
struct Got {
  bool called = false;
  std::optional<Error> error;
  Reply::Type type = Reply::Type::Nil;
  std::string str;
  long long integer = 0;
  std::vector<std::optional<std::string>> elements;  // nullopt: nil element
};

inline size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// Captures stderr (the log) until take(), or until destroyed: an ASSERT that
// returns early must not leave a capture running into the next test.
class LogCapture {
 public:
  LogCapture() { testing::internal::CaptureStderr(); }
  ~LogCapture() {
    if (!taken_) testing::internal::GetCapturedStderr();
  }
  std::string take() {
    taken_ = true;
    return testing::internal::GetCapturedStderr();
  }

 private:
  bool taken_ = false;
};

class RedisClientFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ::signal(SIGPIPE, SIG_IGN); }  // as Server::run: a write to a dead peer fails

  void SetUp() override {
    if (itest::find_tool("redis-server").empty() || itest::find_tool("redis-cli").empty()) {
      GTEST_SKIP() << "redis-server / redis-cli not installed";
    }
    uv_loop_init(&loop_);
    loop_ready_ = true;
  }

  void TearDown() override {
    if (!loop_ready_) return;
    client_.reset();
    run_for(milliseconds(1));  // let uv_close finish
    EXPECT_EQ(uv_loop_close(&loop_), 0) << "a handle was left open";
  }

  Options options(int port) {
    Options o;
    o.address = config::Endpoint{"127.0.0.1", static_cast<uint16_t>(port)};
    o.timeout = milliseconds(300);
    o.first_backoff = milliseconds(50);
    o.max_backoff = milliseconds(200);
    o.log_name = "unit";
    o.consequence = [] { return std::string("carrying on"); };
    return o;
  }

  Client& make_client(Options o) {
    client_ = std::make_unique<Client>(std::move(o));
    client_->start(&loop_);
    return *client_;
  }

  // Runs the loop until `pred` holds or `deadline` passes (a guard timer);
  // returns pred(). `iterations` counts the loop's wake-ups meanwhile.
  bool run_until(const std::function<bool()>& pred, milliseconds deadline = milliseconds(10'000)) {
    bool expired = false;
    uv_timer_t guard;
    uv_timer_init(&loop_, &guard);
    guard.data = &expired;
    uv_timer_start(
        &guard, [](uv_timer_t* t) { *static_cast<bool*>(t->data) = true; }, deadline.count(), 0);
    while (!pred() && !expired) {
      uv_run(&loop_, UV_RUN_ONCE);
      ++iterations_;
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&guard), nullptr);
    uv_run(&loop_, UV_RUN_NOWAIT);
    return pred();
  }
  void run_for(milliseconds d) {
    run_until([] { return false; }, d);
  }

  // Sends `argv`, runs the loop until the callback ran; false if refused.
  bool call(std::initializer_list<std::string_view> argv, Got& got) {
    got = Got{};
    if (!client_->command(argv, record(got))) return false;
    EXPECT_TRUE(run_until([&] { return got.called; })) << "no callback";
    return true;
  }

  static Client::Callback record(Got& got) {
    return [&got](Result<Reply> r) {
      got.called = true;
      if (!r) {
        got.error = r.error();
        return;
      }
      got.type = r->type();
      got.str = std::string(r->str());
      got.integer = r->integer();
      for (size_t i = 0; i < r->size(); ++i) {
        const Reply e = (*r)[i];
        got.elements.push_back(e.is_nil() ? std::nullopt : std::optional<std::string>(std::string(e.str())));
      }
    };
  }

  TempDir dir_;
  RedisServer redis_{dir_};
  uv_loop_t loop_{};
  bool loop_ready_ = false;
  std::unique_ptr<Client> client_;
  uint64_t iterations_ = 0;
};

}  // namespace tlsfront::redis
