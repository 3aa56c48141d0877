// HTTP/1.1 client -> tlsfront -> HTTP/1.1 backend: proxying, header rewrite,
// body framing both ways, pipelining (the upstream side: h1_upstream_test.cc).
#include <curl/curl.h>

#include <algorithm>
#include <csignal>
#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

using H1H1 = ProxyTest;

TEST_F(H1H1, GetProxied) {
  ASSERT_TRUE(start_proxy());
  HttpRequest req;
  req.path = "/headers";
  req.headers = {"X-Custom: kept",
                 "Connection: X-Hop",
                 "X-Hop: secret",
                 "Keep-Alive: timeout=5",
                 "Proxy-Connection: keep-alive",
                 "TE: trailers",
                 "Trailer: X-Trailer",
                 "Upgrade: websocket"};
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.header("X-Backend-Conn").has_value()) << r.headers;

  // /headers echoes the request head the backend received.
  const std::string& head = r.body;
  EXPECT_EQ(head.rfind("GET /headers HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_EQ(header_values(head, "Host"), std::vector<std::string>{"localhost:" + std::to_string(port())}) << head;
  EXPECT_EQ(header_values(head, "X-Forwarded-For"), std::vector<std::string>{"127.0.0.1"}) << head;
  EXPECT_EQ(header_values(head, "X-Real-IP"), std::vector<std::string>{"127.0.0.1"}) << head;
  EXPECT_EQ(header_values(head, "X-Forwarded-Proto"), std::vector<std::string>{"https"}) << head;
  EXPECT_EQ(header_values(head, "X-Custom"), std::vector<std::string>{"kept"}) << head;
  EXPECT_EQ(header_values(head, "User-Agent"), std::vector<std::string>{"tlsfront-itest/1"}) << head;
  for (const char* hop : {"X-Hop", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Upgrade",
                          "Transfer-Encoding"}) {
    EXPECT_TRUE(header_values(head, hop).empty()) << hop << " was forwarded:\n" << head;
  }
  // Whatever Connection the proxy sends upstream, it is its own, not the client's.
  for (const auto& v : header_values(head, "Connection")) {
    EXPECT_EQ(v.find("X-Hop"), std::string::npos) << head;
  }

  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0], head);

  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "method"), std::string("GET"));
  EXPECT_EQ(json_string(lines[0], "path"), std::string("/headers"));
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("200"));
  EXPECT_EQ(json_raw(lines[0], "upstream_status"), std::string("200"));
  EXPECT_EQ(json_string(lines[0], "upstream_addr"), backend_.address());
  EXPECT_EQ(json_string(lines[0], "remote_addr"), std::string("127.0.0.1"));
  EXPECT_EQ(json_string(lines[0], "protocol"), std::string("HTTP/1.1"));
  EXPECT_EQ(json_string(lines[0], "user_agent"), std::string("tlsfront-itest/1"));
  EXPECT_EQ(json_raw(lines[0], "connection_requests"), std::string("1"));
}

TEST_F(H1H1, XForwardedForAppended) {
  ASSERT_TRUE(start_proxy());
  HttpRequest req;
  req.path = "/headers";
  req.headers = {"X-Forwarded-For: 203.0.113.7"};
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(header_values(r.body, "X-Forwarded-For"), std::vector<std::string>{"203.0.113.7, 127.0.0.1"})
      << r.body;
}

TEST_F(H1H1, PostContentLengthByteExact) {
  ASSERT_TRUE(start_proxy());
  HttpRequest req;
  req.method = "POST";
  req.path = "/echo";
  req.body = binary_body(300 * 1024 + 17);
  req.headers = {"Expect:", "Content-Type: application/octet-stream"};
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == *req.body) << "echoed body differs (size " << r.body.size() << ")";

  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  auto [head, body] = split_head(reqs[0]);
  EXPECT_EQ(header_values(head, "Content-Length"), std::vector<std::string>{std::to_string(req.body->size())})
      << head;
  EXPECT_TRUE(header_values(head, "Transfer-Encoding").empty()) << head;
  EXPECT_EQ(body.size(), req.body->size());
  EXPECT_TRUE(body == *req.body) << "recorded body differs";
}

TEST_F(H1H1, PostChunkedByteExact) {
  ProxyOptions o;
  o.extra = "[limits]\nmax_body_bytes = \"16m\"\n";  // over the 1m default
  ASSERT_TRUE(start_proxy(o));
  HttpRequest req;
  req.method = "POST";
  req.path = "/echo";
  req.headers = {"Expect:"};
  std::string all = binary_body(1024 * 1024 + 333);
  // Uneven chunk sizes: 1 byte, a few bytes, 16 KiB - 1, 64 KiB, the rest.
  size_t sizes[] = {1, 7, 16383, 65536, 4096, 100000};
  size_t off = 0;
  for (size_t i = 0; off < all.size(); ++i) {
    size_t n = std::min(sizes[i % std::size(sizes)], all.size() - off);
    req.chunks.push_back(all.substr(off, n));
    off += n;
  }
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == all) << "echoed body differs (size " << r.body.size() << ")";

  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  auto [head, body] = split_head(reqs[0]);
  EXPECT_EQ(header_values(head, "Transfer-Encoding"), std::vector<std::string>{"chunked"}) << head;
  EXPECT_TRUE(header_values(head, "Content-Length").empty()) << head;
  EXPECT_TRUE(recorded_body(reqs[0]) == all) << "recorded (de-chunked) body differs";
}

TEST_F(H1H1, ChunkedRequestWithExtensionsAndTrailers) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
                      "Connection: close\r\n\r\n"
                      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello world");
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(recorded_body(reqs[0]), "hello world");
}

TEST_F(H1H1, LargeResponseStreamed) {
  ASSERT_TRUE(start_proxy());
  HttpResponse r = http_get(port(), "/bytes/8000000");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), 8000000u);
  EXPECT_TRUE(matches_pattern(r.body));
  EXPECT_EQ(r.header("Content-Length"), "8000000");
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("200"));
}

TEST_F(H1H1, ChunkedResponse) {
  ASSERT_TRUE(start_proxy());
  HttpResponse r = http_get(port(), "/bytes-chunked/100003");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), 100003u);
  EXPECT_TRUE(matches_pattern(r.body));
}

TEST_F(H1H1, ChunkedResponseWithTrailer) {
  ASSERT_TRUE(start_proxy());
  HttpRequest req;
  req.method = "POST";
  req.path = "/echo-chunked";
  req.body = binary_body(50'000);
  req.headers = {"Expect:"};
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == *req.body) << "echoed body differs (size " << r.body.size() << ")";
}

TEST_F(H1H1, CloseDelimitedResponse) {
  ASSERT_TRUE(start_proxy());
  CurlClient client(port());
  HttpRequest req;
  req.path = "/bytes-eof/200001";
  HttpResponse r = client.perform(req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), 200001u);
  EXPECT_TRUE(matches_pattern(r.body));
  // Whatever framing the proxy chose, the client connection stays usable or
  // is closed cleanly: a follow-up request works.
  req.path = "/after";
  r = client.perform(req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.body, "ok GET /after\n");
}

TEST_F(H1H1, Head) {
  ASSERT_TRUE(start_proxy());
  CurlClient client(port());
  HttpRequest req;
  req.method = "HEAD";
  req.path = "/bytes/1000";
  HttpResponse r = client.perform(req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Length"), "1000");
  EXPECT_TRUE(r.body.empty());
  // The connection is still in sync: no stray body bytes before the next response.
  HttpRequest get;
  get.path = "/next";
  r = client.perform(get);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.body, "ok GET /next\n");
  auto reqs = backend_.wait_requests(2);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].rfind("HEAD /bytes/1000 HTTP/1.1\r\n", 0), 0u) << reqs[0];
}

TEST_F(H1H1, HeadOfChunkedResponse) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("HEAD /bytes-chunked/1000 HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  auto head = c.read_response(/*head_request=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  ASSERT_TRUE(c.write("GET /next HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  auto next = c.read_response();
  ASSERT_TRUE(next.has_value()) << "no response after HEAD of a chunked resource";
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(next->body, "ok GET /next\n");
}

TEST_F(H1H1, NoContentAndNotModifiedHaveNoBody) {
  ASSERT_TRUE(start_proxy());
  // Raw client so stray body bytes would be seen as a broken next response.
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /status/204 HTTP/1.1\r\nHost: localhost\r\n\r\n"
                      "GET /status/304 HTTP/1.1\r\nHost: localhost\r\n\r\n"
                      "GET /last HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  std::string all = c.read_all();
  EXPECT_TRUE(c.closed());
  ParsedResponse a, b, d;
  size_t n1 = parse_response(all, true, false, a);
  ASSERT_GT(n1, 0u) << all;
  EXPECT_EQ(a.status, 204);
  EXPECT_FALSE(a.header("Transfer-Encoding").has_value()) << a.head;
  std::string_view rest = std::string_view(all).substr(n1);
  size_t n2 = parse_response(rest, true, false, b);
  ASSERT_GT(n2, 0u) << all;
  EXPECT_EQ(b.status, 304);
  rest = rest.substr(n2);
  size_t n3 = parse_response(rest, true, false, d);
  ASSERT_GT(n3, 0u) << all;
  EXPECT_EQ(d.status, 200);
  EXPECT_EQ(d.body, "ok GET /last\n");
  EXPECT_EQ(n3, rest.size()) << "bytes after the last response:\n" << all;
}

TEST_F(H1H1, Expect100Continue) {
  ProxyOptions o;
  o.extra = "[limits]\nmax_body_bytes = \"16m\"\n";  // over the 1m default
  ASSERT_TRUE(start_proxy(o));
  HttpRequest req;
  req.method = "POST";
  req.path = "/echo";
  req.body = binary_body(2 * 1024 * 1024);
  req.headers = {"Expect: 100-continue"};
  // Long enough that a missing 100 would show as a timeout, not a fallback send.
  req.expect_100_timeout_ms = 15'000;
  auto start = Clock::now();
  HttpResponse r = http(port(), req);
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.headers.find("HTTP/1.1 100"), std::string::npos) << r.headers;
  EXPECT_LT(took.count(), 10'000);
  EXPECT_TRUE(r.body == *req.body) << "echoed body differs (size " << r.body.size() << ")";
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  auto [head, body] = split_head(reqs[0]);
  EXPECT_TRUE(header_values(head, "Expect").empty()) << head;
  EXPECT_TRUE(recorded_body(reqs[0]) == *req.body);
}

TEST_F(H1H1, EarlyHints) {
  ASSERT_TRUE(start_proxy());
  HttpResponse r = http_get(port(), "/early-hints");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hints\n");
  if (r.headers.find("HTTP/1.1 103") != std::string::npos) {
    EXPECT_NE(r.headers.find("Link: </x>; rel=preload"), std::string::npos) << r.headers;
  }
}

TEST_F(H1H1, Http10ClientGetsUnchunkedResponse) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  // HTTP/1.0 knows no chunked coding: the proxy must de-chunk the upstream's
  // chunked body (close-delimited or Content-Length).
  ASSERT_TRUE(c.write("GET /bytes-chunked/10000 HTTP/1.0\r\nHost: localhost\r\n\r\n"));
  std::string all = c.read_all();
  EXPECT_TRUE(c.closed());
  auto [head, body] = split_head(all);
  EXPECT_TRUE(head.rfind("HTTP/1.1 200", 0) == 0 || head.rfind("HTTP/1.0 200", 0) == 0) << head;
  EXPECT_TRUE(header_values(head, "Transfer-Encoding").empty()) << head;
  EXPECT_EQ(body.size(), 10000u) << head;
  EXPECT_TRUE(matches_pattern(body));
}

TEST_F(H1H1, NoRouteIs404) {
  ProxyOptions o;
  o.routes = "[[route]]\nhost = \"api.example\"\npath_prefix = \"/\"\nupstream = \"backend\"\n";
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = http_get(port(), "/nowhere");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(backend_.count("req"), 0u);
  // The access log names no route; a routed request's line names its route
  // by its match when it has no name.
  HttpRequest routed;
  routed.path = "/a";
  routed.headers = {"Host: api.example"};
  EXPECT_EQ(http(port(), routed).status, 200);
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& l : lines) {  // (two workers' lines may come in either order)
    if (json_string(l, "path") == std::string("/nowhere")) {
      EXPECT_EQ(json_raw(l, "route"), std::string("null")) << l;
    } else {
      EXPECT_EQ(json_string(l, "route"), std::string("api.example/")) << l;
    }
  }
}

TEST_F(H1H1, PipelinedRequestsAnsweredInOrder) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n"
                      "GET /bytes/30000 HTTP/1.1\r\nHost: localhost\r\n\r\n"
                      "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello"
                      "GET /c HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  std::vector<ParsedResponse> got;
  while (auto r = c.read_response()) got.push_back(*r);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].body, "ok GET /a\n");
  EXPECT_EQ(got[1].body.size(), 30000u);
  EXPECT_TRUE(matches_pattern(got[1].body));
  EXPECT_EQ(got[2].body, "hello");
  EXPECT_EQ(got[3].body, "ok GET /c\n");
  for (const auto& r : got) EXPECT_EQ(r.status, 200);
  c.read_all(milliseconds(5'000));
  EXPECT_TRUE(c.closed());
}

TEST_F(H1H1, ConnectionRequestsIncrements) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  std::vector<size_t> sent, received;
  for (int i = 1; i <= 3; ++i) {
    std::string req = "GET /n" + std::to_string(i) + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
    ASSERT_TRUE(c.write(req));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value()) << "no response " << i;
    EXPECT_EQ(r->body, "ok GET /n" + std::to_string(i) + "\n");
    sent.push_back(r->wire_bytes);
    received.push_back(req.size());
  }
  auto lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  std::sort(lines.begin(), lines.end(), [](const std::string& a, const std::string& b) {
    return json_raw(a, "connection_requests") < json_raw(b, "connection_requests");
  });
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(json_raw(lines[i], "connection_requests"), std::to_string(i + 1)) << lines[i];
    EXPECT_EQ(json_string(lines[i], "path"), "/n" + std::to_string(i + 1)) << lines[i];
    EXPECT_EQ(json_raw(lines[i], "connection_id"), json_raw(lines[0], "connection_id"));
    EXPECT_EQ(json_raw(lines[i], "bytes_sent"), std::to_string(sent[i])) << lines[i];
    EXPECT_EQ(json_raw(lines[i], "bytes_received"), std::to_string(received[i])) << lines[i];
  }
}

// ---- regressions from hostile-input testing ----------------------------------

TEST_F(H1H1, UpgradeRequestIsProxiedPlainAndPipelinedRequestAnswered) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /headers HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n"
                      "GET /b HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  std::vector<ParsedResponse> got;
  while (auto r = c.read_response()) got.push_back(*r);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(header_values(got[0].body, "Upgrade").empty()) << got[0].body;
  EXPECT_EQ(got[1].body, "ok GET /b\n");
  c.read_all(milliseconds(5'000));
  EXPECT_TRUE(c.closed());
}

TEST_F(H1H1, AbsoluteFormAuthorityReplacesHost) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET http://localhost/headers HTTP/1.1\r\nHost: admin.local\r\nConnection: close\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.rfind("GET /headers HTTP/1.1\r\n", 0), 0u) << r->body;
  EXPECT_EQ(header_values(r->body, "Host"), std::vector<std::string>{"localhost"}) << r->body;
}

TEST_F(H1H1, NoContentWithLengthFromUpstreamIsNotForwardedAsBody) {
  // A 204 that claims (and sends) a body: the client must get a bodiless 204
  // and its connection must stay in sync for the next response.
  FakeUpstream fake("HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\nEVIL");
  ProxyOptions o;
  o.upstream_servers = {fake.address()};
  ASSERT_TRUE(start_proxy(o));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->body, "");
  std::string rest = c.read_all(milliseconds(300));
  EXPECT_EQ(rest.find("EVIL"), std::string::npos) << rest;
}

TEST_F(H1H1, NotModifiedWithContentLengthCompletesAtOnce) {
  // RFC 9110 §8.6: a 304 may state the length of the representation.
  FakeUpstream fake("HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\n\r\n");
  ProxyOptions o;
  o.upstream_servers = {fake.address()};
  o.upstream_extra = "read_timeout = \"30s\"\n";
  ASSERT_TRUE(start_proxy(o));
  auto start = Clock::now();
  HttpResponse r = http_get(port(), "/cached");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 304);
  // Not waiting for 1234 body bytes until the 30 s read timeout.
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

TEST_F(H1H1, EndlessInformationalResponsesAre502) {
  std::string flood;
  for (int i = 0; i < 64; ++i) flood += "HTTP/1.1 102 Processing\r\nX-Pad: " + std::string(100, 'p') + "\r\n\r\n";
  FakeUpstream fake(flood);
  ProxyOptions o;
  o.upstream_servers = {fake.address()};
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = http_get(port(), "/flood");
  // The interim responses relayed so far precede a clean 502: no final head
  // had been sent, so the proxy can still answer properly.
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("502")) << lines[0];
  EXPECT_NE(proxy_.process().err().find("too many 1xx"), std::string::npos) << proxy_.process().err();
}

TEST_F(H1H1, InvalidUpstreamReasonPhraseIs502) {
  FakeUpstream fake("HTTP/1.1 200 OK\rX-Injected: 1\r\nContent-Length: 2\r\n\r\nok");
  ProxyOptions o;
  o.upstream_servers = {fake.address()};
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = http_get(port(), "/inject");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  EXPECT_FALSE(r.header("X-Injected").has_value());
  EXPECT_FALSE(r.header("-Injected").has_value());
}

TEST_F(H1H1, StopWithLastRequestInFlightExitsCleanly) {
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start_proxy(o));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /slow/300 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  ASSERT_EQ(backend_.wait_requests(1).size(), 1u);
  proxy_.process().signal(SIGTERM);
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  auto st = proxy_.process().wait_exit(milliseconds(5'000));
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->exited) << "signal " << st->signal << "\n" << proxy_.process().err();
  EXPECT_EQ(st->code, 0) << proxy_.process().err();
}

}  // namespace
}  // namespace tlsfront::itest
