// HTTP/1.1 client -> tlsfront -> HTTP/1.1 backend, the upstream side:
// keepalive pools, upstream failures (502/504) and the retry of a request
// on a dead pooled connection.
#include <curl/curl.h>

#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

using H1H1 = ProxyTest;

TEST_F(H1H1, KeepaliveUpstreamReused) {
  ASSERT_TRUE(start_proxy());
  // One client connection, so both requests are served by the same worker
  // (and its pool).
  CurlClient client(port());
  HttpRequest req;
  req.path = "/one";
  HttpResponse r1 = client.perform(req);
  ASSERT_EQ(r1.curl_code, CURLE_OK) << r1.error;
  req.path = "/two";
  HttpResponse r2 = client.perform(req);
  ASSERT_EQ(r2.curl_code, CURLE_OK) << r2.error;
  EXPECT_EQ(r1.status, 200);
  EXPECT_EQ(r2.status, 200);
  EXPECT_EQ(r2.body, "ok GET /two\n");
  ASSERT_TRUE(r1.header("X-Backend-Conn").has_value());
  EXPECT_EQ(r1.header("X-Backend-Conn"), r2.header("X-Backend-Conn"));
  EXPECT_EQ(r2.header("X-Backend-Req"), "2");

  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_raw(lines[0], "upstream_connection_reused"), std::string("false")) << lines[0];
  EXPECT_EQ(json_raw(lines[1], "upstream_connection_reused"), std::string("true")) << lines[1];
}

TEST_F(H1H1, BackendClosesIdlePooledConnection) {
  ASSERT_TRUE(start_proxy());
  CurlClient client(port());
  // /drop-after closes the backend connection right after a keep-alive
  // response, so the proxy pools a connection that is about to die. The next
  // request must not see it as a 502 (fresh connection or retry).
  for (int i = 0; i < 5; ++i) {
    HttpRequest req;
    req.path = "/drop-after";
    HttpResponse r = client.perform(req);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    ASSERT_EQ(r.status, 200);
    req.path = "/after-drop";
    r = client.perform(req);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(r.status, 200) << "iteration " << i;
    EXPECT_EQ(r.body, "ok GET /after-drop\n");
  }
  // And on a new client connection too.
  HttpResponse r = http_get(port(), "/new-conn");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
}

TEST_F(H1H1, BackendDownIs502) {
  ProxyOptions o;
  o.upstream_servers = {"127.0.0.1:" + std::to_string(free_port())};
  o.upstream_extra = "connect_timeout = \"2s\"\n";
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = http_get(port(), "/down");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("502")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "path"), std::string("/down"));
  // The server that failed is named, as nginx's $upstream_addr does; it sent no status.
  EXPECT_EQ(json_string(lines[0], "upstream_addr"), o.upstream_servers[0]) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "upstream_status"), std::string("null")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("refused")) << lines[0];
}

TEST_F(H1H1, RefusedServerThenWorkingOneLogsBoth) {
  ProxyOptions o;
  const std::string down = "127.0.0.1:" + std::to_string(free_port());
  o.upstream_servers = {down, backend_.address()};
  o.upstream_extra = "balance = \"round_robin\"\n";
  ASSERT_TRUE(start_proxy(o));
  // Each worker's round robin starts at the first server: of two requests,
  // one at least starts at the down server (it is then ejected for
  // fail_timeout, for every worker).
  for (int i = 0; i < 2; ++i) {
    HttpResponse r = http_get(port(), "/rr");
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(r.status, 200);
  }
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  int retried = 0;
  for (const auto& line : lines) {
    EXPECT_EQ(json_raw(line, "upstream_status"), std::string("200")) << line;
    if (json_string(line, "upstream_addr") == backend_.address()) {
      EXPECT_EQ(json_raw(line, "upstream_error"), std::string("null")) << line;
      continue;
    }
    ++retried;
    EXPECT_EQ(json_string(line, "upstream_addr"), down + ", " + backend_.address()) << line;
    EXPECT_EQ(json_string(line, "upstream_error"), std::string("refused")) << line;
  }
  EXPECT_GE(retried, 1);
}

TEST_F(H1H1, BackendResetIs502) {
  ASSERT_TRUE(start_proxy());
  HttpResponse r = http_get(port(), "/reset");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("reset")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "upstream_addr"), backend_.address()) << lines[0];
  // The proxy is fine afterwards.
  r = http_get(port(), "/fine");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
}

TEST_F(H1H1, BackendSlowIs504) {
  ProxyOptions o;
  o.upstream_extra = "read_timeout = \"500ms\"\n";
  ASSERT_TRUE(start_proxy(o));
  auto start = Clock::now();
  HttpResponse r = http_get(port(), "/slow/3000");
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 504);
  EXPECT_GE(took.count(), 400);
  EXPECT_LT(took.count(), 2'500);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("504")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("timeout_read")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "upstream_status"), std::string("null")) << lines[0];
  EXPECT_NE(json_raw(lines[0], "upstream_connect_ms"), std::string("null")) << lines[0];
}

TEST_F(H1H1, BadUpstreamResponseIs502) {
  FakeUpstream bad("this is not HTTP\r\n\r\n");
  ProxyOptions o;
  o.upstream_servers = {bad.address()};
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = http_get(port(), "/garbage");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("502")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("invalid_response")) << lines[0];
}

TEST_F(H1H1, ResponseHeadOverTheLimitAsAWholeIs502) {
  // Every field is under 64 KiB, the head is not (as H2Stream bounds it): it
  // must not be buffered and passed on whole (256 such fields: 16 MB).
  std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n";
  for (int i = 0; i < 3; ++i) head += "X-Big-" + std::to_string(i) + ": " + std::string(30'000, 'a') + "\r\n";
  FakeUpstream big(head + "\r\nok");
  ProxyOptions o;
  o.upstream_servers = {big.address()};
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = http_get(port(), "/big-head");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("invalid_response")) << lines[0];
}

TEST_F(H1H1, UpstreamClosesMidBodyIsNotAComplete200) {
  FakeUpstream truncating("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly 20 bytes here..");
  ProxyOptions o;
  o.upstream_servers = {truncating.address()};
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = http_get(port(), "/truncated");
  // Either nothing was sent yet (502), or the client connection is cut so the
  // client sees a short body: never a well-framed response with 20 bytes.
  bool clean_502 = r.curl_code == CURLE_OK && r.status == 502;
  bool cut = r.curl_code == CURLE_PARTIAL_FILE || r.curl_code == CURLE_RECV_ERROR;
  EXPECT_TRUE(clean_502 || cut) << "curl: " << r.error << ", status " << r.status << ", body \"" << r.body << "\"";
}

constexpr const char* kKeepaliveOk = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";

TEST_F(H1H1, IdempotentRequestRetriedOnDeadPooledConnection) {
  // Each upstream connection answers one request and then dies when the next
  // request arrives on it, before any response byte.
  FakeUpstream fake(kKeepaliveOk, /*drop_second_request=*/true);
  ProxyOptions o;
  o.upstream_servers = {fake.address()};
  ASSERT_TRUE(start_proxy(o));
  CurlClient client(port());
  HttpRequest req;
  req.path = "/first";
  HttpResponse r = client.perform(req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  ASSERT_TRUE(wait_until([&] { return fake.accepted() == 1; }));
  // Reuses the pooled connection, which dies: retried once on a new one.
  req.path = "/second";
  r = client.perform(req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  EXPECT_EQ(fake.accepted(), 2);
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  // Both attempts went to the one server; the first found the pooled connection closed.
  EXPECT_EQ(json_string(lines[1], "upstream_addr"), fake.address() + ", " + fake.address()) << lines[1];
  EXPECT_EQ(json_string(lines[1], "upstream_error"), std::string("closed")) << lines[1];
  EXPECT_EQ(json_raw(lines[1], "upstream_status"), std::string("200")) << lines[1];
}

TEST_F(H1H1, PostNotRetriedOnDeadPooledConnection) {
  FakeUpstream fake(kKeepaliveOk, /*drop_second_request=*/true);
  ProxyOptions o;
  o.upstream_servers = {fake.address()};
  ASSERT_TRUE(start_proxy(o));
  CurlClient client(port());
  HttpRequest req;
  req.path = "/first";
  HttpResponse r = client.perform(req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  HttpRequest post;
  post.method = "POST";
  post.path = "/second";
  post.body = "payload";
  post.headers = {"Expect:"};
  r = client.perform(post);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  // A non-idempotent request may have had effects upstream: not replayed.
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(fake.accepted(), 1);
}

TEST_F(H1H1, KeepaliveIdleTimeoutClosesClientConnection) {
  ProxyOptions o;
  o.extra = "[timeouts]\nkeepalive = \"1s\"\n";
  ASSERT_TRUE(start_proxy(o));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  ASSERT_TRUE(c.read_response().has_value());
  auto start = Clock::now();
  std::string rest = c.read_all(milliseconds(5'000));
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  EXPECT_TRUE(c.closed());
  EXPECT_EQ(rest, "") << "an idle keepalive close sends no response";
  EXPECT_GE(took.count(), 700);
  EXPECT_LT(took.count(), 4'000);
}

TEST_F(H1H1, UpstreamConnectionCloseKeepsClientConnection) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  // /close answers with Connection: close: that ends the upstream
  // connection, not the client's.
  ASSERT_TRUE(c.write("GET /close HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  auto r1 = c.read_response();
  ASSERT_TRUE(r1.has_value());
  EXPECT_EQ(r1->status, 200);
  EXPECT_EQ(r1->body, "close\n");
  ASSERT_TRUE(c.write("GET /again HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  auto r2 = c.read_response();
  ASSERT_TRUE(r2.has_value()) << "client connection closed after the upstream's Connection: close";
  EXPECT_EQ(r2->body, "ok GET /again\n");
  // The second request needed a new upstream connection.
  EXPECT_NE(r1->header("X-Backend-Conn"), r2->header("X-Backend-Conn"));
}

TEST_F(H1H1, ReadTimeoutOnReusedConnectionIsNotRetried) {
  ProxyOptions o;
  o.upstream_extra = "read_timeout = \"500ms\"\n";
  ASSERT_TRUE(start_proxy(o));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /warm HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  ASSERT_TRUE(c.read_response().has_value());
  ASSERT_TRUE(c.write("GET /slow/1500 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 504);
  // The slow request reached the backend once: a timeout may mean it is being processed.
  ASSERT_TRUE(wait_until([&] { return backend_.count("req") >= 2; }));
  std::this_thread::sleep_for(milliseconds(1'500));  // give a (wrong) retry time to arrive
  EXPECT_EQ(backend_.count("req"), 2u);
}


// A stop while the last request is in flight: its response completes (the
// upstream connection goes back to the pool from inside its own read
// callback), the client asked for Connection: close so its connection closes
// at once, the worker has no connection left and closes the pool's idle
// connections: not the one whose callback is still running (a heap
// use-after-free under ASan, a crash or worse without).

}  // namespace
}  // namespace tlsfront::itest
