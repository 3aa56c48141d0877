// OcspFetcher on a real uv loop against a hostile HTTP responder on
// 127.0.0.1:0 (a thread): huge, garbage, error status, header flood, one
// that never answers (timeout) and does not delay another fetch; stop() with
// fetches in flight leaves a loop that closes cleanly.
#include "tls/ocsp_fetcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

namespace tlsfront::tls {
namespace {

using namespace std::chrono_literals;

// Answers each connection by the request path: /ok, /huge, /huge-chunked,
// /status500, /headers, /hang (never answers); /echo-post echoes the body length.
class HostileResponder {
 public:
  HostileResponder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ::listen(fd_, 16);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    EXPECT_EQ(::pipe2(wake_, O_CLOEXEC), 0);
    thread_ = std::thread([this] { run(); });
  }
  ~HostileResponder() {
    (void)!::write(wake_[1], "x", 1);
    thread_.join();
    ::close(fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  int accepted() const { return accepted_.load(); }

 private:
  void run() {
    std::vector<int> held;  // /hang connections, closed at the end
    while (true) {
      pollfd p[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) continue;
      if (p[1].revents) break;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++accepted_;
      std::string in;
      char buf[4096];
      while (in.find("\r\n\r\n") == std::string::npos) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
      }
      std::string path = in.substr(in.find(' ') + 1);
      path = path.substr(0, path.find(' '));
      std::string out;
      if (path == "/hang") {
        held.push_back(c);
        continue;
      } else if (path == "/ok") {
        out = "HTTP/1.1 200 OK\r\nContent-Type: application/ocsp-response\r\nContent-Length: 5\r\n\r\nhello";
      } else if (path == "/status500") {
        out = "HTTP/1.1 500 Oops\r\nContent-Length: 5\r\n\r\nhello";
      } else if (path == "/huge") {
        out = "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n" + std::string(100000, 'x');
      } else if (path == "/huge-chunked") {
        out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (int i = 0; i < 20; ++i) out += "2000\r\n" + std::string(0x2000, 'y') + "\r\n";
        out += "0\r\n\r\n";
      } else if (path == "/headers") {
        out = "HTTP/1.1 200 OK\r\n";
        for (int i = 0; i < 2000; ++i) out += "X-Junk-" + std::to_string(i) + ": " + std::string(50, 'z') + "\r\n";
        out += "Content-Length: 2\r\n\r\nok";
      } else if (path == "/garbage") {
        out = std::string(5000, '\x01');
      } else {
        out = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
      }
      (void)!::send(c, out.data(), out.size(), MSG_NOSIGNAL);
      ::shutdown(c, SHUT_WR);
      ::close(c);
    }
    for (int c : held) ::close(c);
  }

  int fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

class OcspFetcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    auto f = OcspFetcher::create(&loop_);
    ASSERT_TRUE(f.ok()) << f.error().message();
    fetcher_ = std::move(f).value();
  }
  void TearDown() override {
    if (fetcher_) fetcher_->stop();
    fetcher_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
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

  uv_loop_t loop_{};
  HostileResponder responder_;
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
  while (responder_.accepted() < 1 && uv_run(&loop_, UV_RUN_NOWAIT) >= 0) std::this_thread::sleep_for(1ms);
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
  while (responder_.accepted() < 2 && uv_run(&loop_, UV_RUN_NOWAIT) >= 0) std::this_thread::sleep_for(1ms);
  fetcher_->cancel(*a);
  EXPECT_EQ(fetcher_->active_for_test(), 1u);
  fetcher_->stop();  // TearDown then requires uv_loop_close() == 0
  EXPECT_EQ(fetcher_->active_for_test(), 0u);
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace tlsfront::tls
