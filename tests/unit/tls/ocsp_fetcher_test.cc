// OcspFetcher on a real uv loop against a hostile HTTP responder on
// 127.0.0.1:0 (a thread): huge, garbage, error status, header flood, one
// that never answers (timeout) and does not delay another fetch; stop() with
// fetches in flight leaves a loop that closes cleanly.
#include "tls/ocsp_fetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "support/thread_http_server.h"
#include "support/loop_test.h"

namespace tlsfront::tls {
namespace {

using namespace std::chrono_literals;

// Answers each connection by the request path: /ok, /huge, /huge-chunked,
// /status500, /headers, /garbage, /hang (never answers); 404 otherwise.
std::optional<std::string> hostile_answer(const std::string& head) {
  const std::string path = ThreadHttpServer::target(head);
  if (path == "/hang") return std::nullopt;
  if (path == "/ok") return "HTTP/1.1 200 OK\r\nContent-Type: application/ocsp-response\r\nContent-Length: 5\r\n\r\nhello";
  if (path == "/status500") return "HTTP/1.1 500 Oops\r\nContent-Length: 5\r\n\r\nhello";
  if (path == "/huge") return "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n" + std::string(100000, 'x');
  if (path == "/huge-chunked") {
    std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 20; ++i) out += "2000\r\n" + std::string(0x2000, 'y') + "\r\n";
    return out + "0\r\n\r\n";
  }
  if (path == "/headers") {
    std::string out = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i < 2000; ++i) out += "X-Junk-" + std::to_string(i) + ": " + std::string(50, 'z') + "\r\n";
    return out + "Content-Length: 2\r\n\r\nok";
  }
  if (path == "/garbage") return std::string(5000, '\x01');
  return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
}

class OcspFetcherTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    auto f = OcspFetcher::create(&loop_);
    ASSERT_TRUE(f.ok()) << f.error().message();
    fetcher_ = std::move(f).value();
  }
  void TearDown() override {
    if (fetcher_) fetcher_->stop();
    fetcher_.reset();
    LoopTest::TearDown();
  }

  // Runs one fetch of `path` to completion.
  Result<std::vector<uint8_t>> get(const std::string& path, std::chrono::milliseconds timeout = 5s,
                                   size_t max_bytes = 64 * 1024) {
    Result<std::vector<uint8_t>> out = make_error(Errc::Internal, "not called");
    bool done = false;
    auto id = fetcher_->fetch(OcspHttpRequest{responder_.url(path), false, {}}, timeout, max_bytes,
                              [&](Result<std::vector<uint8_t>> r) {
                                out = std::move(r);
                                done = true;
                              });
    EXPECT_TRUE(id.ok());
    while (!done && uv_run(&loop_, UV_RUN_ONCE)) {
    }
    EXPECT_TRUE(done);
    return out;
  }

  ThreadHttpServer responder_{hostile_answer};
  std::unique_ptr<OcspFetcher> fetcher_;
};

TEST_F(OcspFetcherTest, Ok) {
  auto r = get("/ok");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(std::string(r->begin(), r->end()), "hello");
}

TEST_F(OcspFetcherTest, PostSendsTheBody) {
  bool done = false;
  Result<std::vector<uint8_t>> out = make_error(Errc::Internal, "");
  OcspHttpRequest req{responder_.url("/ok"), true, std::vector<uint8_t>(300, 0x30)};
  ASSERT_TRUE(fetcher_->fetch(req, 5s, 1024, [&](Result<std::vector<uint8_t>> r) {
                        out = std::move(r);
                        done = true;
                      }).ok());
  while (!done && uv_run(&loop_, UV_RUN_ONCE)) {
  }
  ASSERT_TRUE(out.ok()) << out.error().message();
}

TEST_F(OcspFetcherTest, HostileAnswersAreBoundedErrors) {
  auto huge = get("/huge");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().code, Errc::ResourceExhausted) << huge.error().message();
  auto chunked = get("/huge-chunked");
  ASSERT_FALSE(chunked.ok());
  EXPECT_EQ(chunked.error().code, Errc::ResourceExhausted) << chunked.error().message();
  auto headers = get("/headers");
  ASSERT_FALSE(headers.ok());
  EXPECT_EQ(headers.error().code, Errc::ResourceExhausted) << headers.error().message();
  auto status = get("/status500");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("500"), std::string::npos);
  auto garbage = get("/garbage");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code, Errc::Upstream) << garbage.error().message();
  auto refused = fetcher_->fetch(OcspHttpRequest{"https://127.0.0.1:1/", false, {}}, 1s, 1024,
                                 [](Result<std::vector<uint8_t>> r) { EXPECT_FALSE(r.ok()); });
  EXPECT_TRUE(refused.ok());  // https is refused by libcurl (protocol not allowed), reported via the callback
  while (fetcher_->active_for_test() && uv_run(&loop_, UV_RUN_ONCE)) {
  }
}

TEST_F(OcspFetcherTest, HungResponderTimesOutWithoutDelayingAnother) {
  std::vector<std::string> order;
  Result<std::vector<uint8_t>> hung = make_error(Errc::Internal, "");
  ASSERT_TRUE(fetcher_->fetch(OcspHttpRequest{responder_.url("/hang"), false, {}}, 1500ms, 1024,
                              [&](Result<std::vector<uint8_t>> r) {
                                hung = std::move(r);
                                order.push_back("hang");
                              }).ok());
  // The second starts after the first is connected and waiting.
  run_until([&] { return responder_.accepted() >= 1; });
  ASSERT_TRUE(fetcher_->fetch(OcspHttpRequest{responder_.url("/ok"), false, {}}, 5s, 1024,
                              [&](Result<std::vector<uint8_t>> r) {
                                EXPECT_TRUE(r.ok());
                                order.push_back("ok");
                              }).ok());
  while (order.size() < 2 && uv_run(&loop_, UV_RUN_ONCE)) {
  }
  ASSERT_EQ(order, (std::vector<std::string>{"ok", "hang"}));
  ASSERT_FALSE(hung.ok());
  EXPECT_EQ(hung.error().code, Errc::Timeout) << hung.error().message();
}

TEST_F(OcspFetcherTest, CancelAndStopWithFetchesInFlight) {
  bool called = false;
  auto a = fetcher_->fetch(OcspHttpRequest{responder_.url("/hang"), false, {}}, 5s, 1024,
                           [&](Result<std::vector<uint8_t>>) { called = true; });
  auto b = fetcher_->fetch(OcspHttpRequest{responder_.url("/hang"), false, {}}, 5s, 1024,
                           [&](Result<std::vector<uint8_t>>) { called = true; });
  ASSERT_TRUE(a.ok() && b.ok());
  run_until([&] { return responder_.accepted() >= 2; });
  fetcher_->cancel(*a);
  EXPECT_EQ(fetcher_->active_for_test(), 1u);
  fetcher_->stop();  // TearDown then requires uv_loop_close() == 0
  EXPECT_EQ(fetcher_->active_for_test(), 0u);
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace tlsfront::tls
