// Cleartext listeners (tls = false) end to end: the redirect to HTTPS (301
// and 308, the exact Location, 400 for a missing or unusable Host), HSTS
// never sent over plain HTTP, acme_upstream, redirect_https = false routing,
// HTTP/2 prior knowledge refused cleanly; and [[route]] return / redirect on
// HTTP/1.1 and HTTP/2. curl and raw sockets -> tlsfront -> the recording
// backend, checking what the client, the backend and the access log saw.
#include <curl/curl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {
namespace {

using Cleartext = ProxyTest;
using FixedAnswers = ProxyTest;
using Values = std::vector<std::string>;

HttpResponse plain(int port, const std::string& method, const std::string& path, std::vector<std::string> headers = {},
                   std::optional<std::string> body = std::nullopt) {
  HttpRequest req;
  req.cleartext = true;
  req.method = method;
  req.path = path;
  req.headers = std::move(headers);
  req.body = std::move(body);
  return http(port, req);
}

// The final response's values of `name`.
Values values(const HttpResponse& r, std::string_view name) {
  size_t start = 0;
  for (size_t p = 0; (p = r.headers.find("HTTP/", p)) != std::string::npos; p += 5) {
    if (p == 0 || r.headers[p - 1] == '\n') start = p;
  }
  return header_values(std::string_view(r.headers).substr(start), name);
}

// A raw request to the cleartext listener; the status of the answer (0: none).
int raw_status(int port, const std::string& request, std::string* response = nullptr) {
  std::string out = plain_request(port, request, milliseconds(5'000), kCleartextIp);
  if (response) *response = out;
  if (out.size() < 12 || out.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::atoi(out.substr(9, 3).c_str());
}

// What arrives on `fd` until the peer closes (`closed`) or `timeout` passes.
std::string read_until_close(int fd, milliseconds timeout, bool& closed) {
  std::string out;
  const auto deadline = Clock::now() + timeout;
  closed = false;
  char buf[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      closed = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// GET and HEAD get 301, anything else 308 (the method and body are kept);
// the Location is https://$host$request_uri exactly, query included; the
// backend sees none of it; the log says http, with no TLS fields.
TEST_F(Cleartext, RedirectsWith301ForGetAndHeadAnd308Otherwise) {
  ProxyOptions o;
  o.workers = 1;  // the access log in request order
  o.cleartext = "";
  ASSERT_TRUE(start_proxy(o));
  const int cp = proxy_.cleartext_port();
  ASSERT_GT(cp, 0);
  EXPECT_NE(proxy_.process().err().find(":" + std::to_string(cp) + " (1 worker, cleartext HTTP: redirects to https)"),
            std::string::npos)
      << proxy_.process().err();
  const std::string target = "/a/b%20c?q=a%2Fb&x=../y";

  HttpResponse get = plain(cp, "GET", target);
  ASSERT_EQ(get.curl_code, CURLE_OK) << get.error;
  EXPECT_EQ(get.status, 301);
  EXPECT_EQ(values(get, "Location"), Values{"https://localhost" + target}) << get.headers;
  EXPECT_EQ(get.body, "301 Moved Permanently\n");
  EXPECT_EQ(values(get, "Connection"), Values{}) << get.headers;  // keeps the connection

  HttpRequest head;
  head.cleartext = true;
  head.method = "HEAD";
  head.path = "/h";
  HttpResponse h = http(cp, head);
  ASSERT_EQ(h.curl_code, CURLE_OK) << h.error;
  EXPECT_EQ(h.status, 301);
  EXPECT_EQ(values(h, "Location"), Values{"https://localhost/h"});
  EXPECT_EQ(h.body, "");

  for (const char* method : {"POST", "PUT", "DELETE"}) {
    SCOPED_TRACE(method);
    HttpResponse r = plain(cp, method, "/api/items?id=7", {}, std::string(5000, 'x'));
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(r.status, 308);
    EXPECT_EQ(values(r, "Location"), Values{"https://localhost/api/items?id=7"});
    EXPECT_EQ(r.body, "308 Permanent Redirect\n");
    // The body was read and dropped, not forwarded: the connection closes after.
    EXPECT_EQ(values(r, "Connection"), Values{"close"}) << r.headers;
  }
  auto lines = proxy_.wait_log_lines(5);
  ASSERT_EQ(lines.size(), 5u);
  for (const auto& line : lines) {
    EXPECT_EQ(json_string(line, "scheme"), "http") << line;
    EXPECT_EQ(json_raw(line, "upstream_addr"), "null") << line;
    EXPECT_EQ(json_raw(line, "ssl_protocol"), "null") << line;
    EXPECT_EQ(json_raw(line, "ssl_session_reused"), "false") << line;
    EXPECT_EQ(json_raw(line, "tls_handshake_ms"), "null") << line;
    EXPECT_EQ(json_raw(line, "sni"), "null") << line;
  }
  EXPECT_EQ(json_raw(lines[0], "status"), "301");
  EXPECT_EQ(json_raw(lines[4], "status"), "308");
  EXPECT_EQ(backend_.count("req"), 0u);
  // The TLS listener still says https.
  HttpResponse tls = http_get(port(), "/x");
  EXPECT_EQ(tls.status, 200);
  auto all = proxy_.wait_log_lines(6);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(json_string(all[5], "scheme"), "https") << all[5];
}

// The Host's port is stripped (https_port names the TLS one), its case
// folded, one trailing dot dropped (the same name); an IPv6 literal keeps
// its brackets; an absolute-form target's authority is the host.
TEST_F(Cleartext, LocationHostAndPort) {
  ProxyOptions o;
  o.workers = 1;  // the access log in request order
  o.cleartext = "https_port = 8443\n";
  ASSERT_TRUE(start_proxy(o));
  const int cp = proxy_.cleartext_port();
  struct Case {
    std::string host, location;
  } cases[] = {
      {"Example.COM:8080", "https://example.com:8443/p?x=1"},
      {"Example.COM.:8080", "https://example.com:8443/p?x=1"},
      {"example.", "https://example:8443/p?x=1"},
      {"[::1]:8080", "https://[::1]:8443/p?x=1"},
      {"[2001:db8::1]", "https://[2001:db8::1]:8443/p?x=1"},
      {"192.0.2.7", "https://192.0.2.7:8443/p?x=1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.host);
    HttpResponse r = plain(cp, "GET", "/p?x=1", {"Host: " + c.host});
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(r.status, 301);
    EXPECT_EQ(values(r, "Location"), Values{c.location}) << r.headers;
  }
  std::string resp;
  EXPECT_EQ(raw_status(cp, "GET http://Other.Example:81/abs?q HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &resp),
            301);
  EXPECT_NE(resp.find("\r\nLocation: https://other.example:8443/abs?q\r\n"), std::string::npos) << resp;
}

// No Host, or one no redirect may name: 400, never a Location.
TEST_F(Cleartext, MissingOrInvalidHostIs400) {
  ProxyOptions o;
  o.workers = 1;  // the access log in request order
  o.cleartext = "";
  ASSERT_TRUE(start_proxy(o));
  const int cp = proxy_.cleartext_port();
  std::string resp;
  EXPECT_EQ(raw_status(cp, "GET /x HTTP/1.0\r\n\r\n", &resp), 400) << resp;  // HTTP/1.0: Host optional
  EXPECT_EQ(resp.find("Location"), std::string::npos) << resp;
  EXPECT_EQ(raw_status(cp, "GET /x HTTP/1.1\r\nConnection: close\r\n\r\n"), 400);
  for (const char* host : {"a_b.example", "%65vil.example", "-a.example", "a..example", "example..", ".example", "a~b",
                           "[fe80::1%25eth0]", "[::g]", "x.example:"}) {
    SCOPED_TRACE(host);
    EXPECT_EQ(raw_status(cp, std::string("GET /x HTTP/1.1\r\nHost: ") + host + "\r\nConnection: close\r\n\r\n", &resp),
              400)
        << resp;
    EXPECT_EQ(resp.find("Location"), std::string::npos) << resp;
  }
  EXPECT_EQ(backend_.count("req"), 0u);
}

// RFC 6797 §7.2: no Strict-Transport-Security over plain HTTP — not
// tls.hsts, not a configured always rule, not an upstream's — while the TLS
// listener sends it.
TEST_F(Cleartext, HstsNeverOnPlainHttp) {
  FakeUpstream fake("HTTP/1.1 200 OK\r\nStrict-Transport-Security: max-age=9\r\nContent-Length: 2\r\n\r\nok");
  ProxyOptions o;
  o.workers = 1;  // the access log in request order
  o.cleartext = "";
  o.tls_extra = "hsts = \"max-age=300\"\n";
  o.extra = R"([response_headers]
add = { "Strict-Transport-Security" = "max-age=1", "X-Always" = "yes" }
always = true
[[listen]]
address = "127.0.0.3:0"
tls = false
redirect_https = false
)";
  o.routes = "[[upstream]]\nname = \"fake\"\nservers = [\"" + fake.address() + "\"]\nkeepalive = 0\n" +
             "[[route]]\npath_prefix = \"/fake\"\nupstream = \"fake\"\n" +
             "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\n";
  ASSERT_TRUE(start_proxy(o));
  const int cp = proxy_.cleartext_port();

  HttpResponse redirect = plain(cp, "GET", "/");
  EXPECT_EQ(redirect.status, 301);
  EXPECT_EQ(values(redirect, "Strict-Transport-Security"), Values{}) << redirect.headers;
  EXPECT_EQ(values(redirect, "X-Always"), Values{"yes"}) << redirect.headers;  // other always rules apply

  for (bool h2 : {false, true}) {
    HttpRequest req;
    req.path = "/nowhere-but-routed";
    req.http2 = h2;
    HttpResponse tls = http(port(), req);
    EXPECT_EQ(tls.status, 200);
    EXPECT_EQ(values(tls, "Strict-Transport-Security"), (Values{"max-age=300", "max-age=1"})) << tls.headers;
  }

  // The routing cleartext listener: proxied answers lose the upstream's
  // field, tlsfront's own (a 502, always rules) never get one.
  const std::string err = proxy_.process().err();
  const auto routed = logged_port(err, "listening on 127.0.0.3:", " (");
  ASSERT_TRUE(routed) << err;
  const std::string resp = plain_request(*routed, "GET /fake HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
                                         milliseconds(5'000), "127.0.0.3");
  EXPECT_EQ(resp.rfind("HTTP/1.1 200", 0), 0u) << resp;
  EXPECT_EQ(resp.find("Strict-Transport-Security"), std::string::npos) << resp;
  EXPECT_NE(resp.find("X-Always: yes"), std::string::npos) << resp;
  HttpResponse tls_fake = http_get(port(), "/fake");
  EXPECT_EQ(values(tls_fake, "Strict-Transport-Security"), (Values{"max-age=300", "max-age=1"})) << tls_fake.headers;
}

// acme_upstream: the challenge path (normalized) reaches that upstream even
// while redirecting; a path that only looks like it is redirected.
TEST_F(Cleartext, AcmeChallengeReachesItsUpstream) {
  ProxyOptions o;
  o.workers = 1;  // the access log in request order
  o.cleartext = "acme_upstream = \"acme\"\n";
  o.upstream_extra = "[[upstream]]\nname = \"acme\"\nservers = [\"" + backend_.address() + "\"]\n";
  o.routes = "[[route]]\nreturn = { status = 403, body = \"no\" }\n";  // nothing else goes to the backend
  ASSERT_TRUE(start_proxy(o));
  const int cp = proxy_.cleartext_port();
  HttpResponse r = plain(cp, "GET", "/.well-known/acme-challenge/tok-123_X");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok GET /.well-known/acme-challenge/tok-123_X\n");
  for (const char* path :
       {"/.well-known/acme-challenge/../../admin", "/.well-known/acme-challenge", "/.well-known/other/x"}) {
    SCOPED_TRACE(path);
    HttpResponse red = plain(cp, "GET", path);
    EXPECT_EQ(red.status, 301);
    EXPECT_EQ(values(red, "Location"), Values{std::string("https://localhost") + path});
  }
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].rfind("GET /.well-known/acme-challenge/tok-123_X HTTP/1.1\r\n", 0), 0u) << reqs[0];
  EXPECT_EQ(header_values(reqs[0], "X-Forwarded-Proto"), Values{"http"}) << reqs[0];
  EXPECT_EQ(header_values(reqs[0], "Host"), Values{"localhost:" + std::to_string(cp)}) << reqs[0];
  auto lines = proxy_.wait_log_lines(4);
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_addr"), backend_.address()) << lines[0];
  EXPECT_EQ(backend_.count("req"), 1u);
}

// redirect_https = false: routed like a TLS listener; $scheme is http, the
// $ssl_* variables are empty.
TEST_F(Cleartext, RedirectOffRoutesWithHttpScheme) {
  ProxyOptions o;
  o.workers = 1;  // the access log in request order
  o.cleartext = "redirect_https = false\n";
  o.extra = R"([response_headers]
set = { "X-Vars" = "[$scheme|$ssl_protocol|$ssl_cipher|$ssl_session_reused|$server_port]" }
)";
  ASSERT_TRUE(start_proxy(o));
  const int cp = proxy_.cleartext_port();
  HttpResponse r = plain(cp, "POST", "/echo", {}, std::string("hello"));
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_1_1);
  EXPECT_EQ(values(r, "X-Vars"), Values{"[http||||" + std::to_string(cp) + "]"}) << r.headers;
  HttpResponse tls = http_get(port(), "/x");
  ASSERT_EQ(values(tls, "X-Vars").size(), 1u) << tls.headers;
  EXPECT_EQ(values(tls, "X-Vars")[0].rfind("[https|TLSv1.3|TLS_", 0), 0u) << tls.headers;
  auto reqs = backend_.wait_requests(2);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(header_values(reqs[0], "X-Forwarded-Proto"), Values{"http"}) << reqs[0];
  EXPECT_EQ(header_values(reqs[1], "X-Forwarded-Proto"), Values{"https"}) << reqs[1];
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_string(lines[0], "scheme"), "http") << lines[0];
  EXPECT_EQ(json_string(lines[0], "upstream_addr"), backend_.address()) << lines[0];
}

// HTTP/2 with prior knowledge on a cleartext listener (no h2c): the
// preface is answered 505 and the connection closed, not left hanging.
TEST_F(Cleartext, Http2PriorKnowledgeIsRefusedAndClosed) {
  ProxyOptions o;
  o.workers = 1;  // the access log in request order
  o.cleartext = "redirect_https = false\n";
  ASSERT_TRUE(start_proxy(o));
  const int cp = proxy_.cleartext_port();
  int fd = tcp_connect(cp, kCleartextIp);
  ASSERT_GE(fd, 0);
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  ASSERT_EQ(::write(fd, preface.data(), preface.size()), static_cast<ssize_t>(preface.size()));
  bool closed = false;
  const std::string got = read_until_close(fd, milliseconds(5'000), closed);
  ::close(fd);
  EXPECT_TRUE(closed) << got;
  EXPECT_EQ(got.rfind("HTTP/1.1 505 HTTP Version Not Supported\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("\r\nConnection: close\r\n"), std::string::npos) << got;

  HttpRequest req;
  req.cleartext = true;
  req.http2 = true;
  req.timeout = milliseconds(10'000);
  HttpResponse r = http(cp, req);
  EXPECT_NE(r.curl_code, CURLE_OK);
  EXPECT_NE(r.curl_code, CURLE_OPERATION_TIMEDOUT) << r.error;
  EXPECT_EQ(backend_.count("req"), 0u);
}

// return and redirect routes over HTTP/1.1 and HTTP/2: status, body,
// Content-Type, Location with variables, the route's response rules, HEAD
// without a body; logged with no upstream; the backend never asked.
TEST_F(FixedAnswers, ReturnAndRedirectRoutesH1AndH2) {
  ProxyOptions o;
  o.workers = 1;  // the access log in request order
  o.cleartext = "redirect_https = false\n";
  o.routes = R"([[route]]
path_exact = "/health"
return = { status = 200, body = "ok", content_type = "text/plain; charset=utf-8" }
response_headers = { set = { "Cache-Control" = "no-store", "X-Scheme" = "$scheme" } }
[[route]]
path_prefix = "/old/"
redirect = { status = 308, location = "https://new.example:9443${request_uri}#moved" }
[[route]]
path_prefix = "/gone"
return = { status = 503, body = "down for maintenance\n" }
[[route]]
path_prefix = "/empty"
return = { status = 204 }
[[route]]
upstream = "backend"
)";
  ASSERT_TRUE(start_proxy(o));
  size_t requests = 0;
  for (int mode = 0; mode < 3; ++mode) {  // HTTP/1.1, HTTP/2, cleartext HTTP/1.1
    SCOPED_TRACE(mode == 0 ? "HTTP/1.1" : mode == 1 ? "HTTP/2" : "cleartext");
    const int p = mode == 2 ? proxy_.cleartext_port() : port();
    auto req = [&](const std::string& method, const std::string& path) {
      HttpRequest r;
      r.method = method;
      r.path = path;
      r.http2 = mode == 1;
      r.cleartext = mode == 2;
      ++requests;
      return http(p, r);
    };
    HttpResponse health = req("GET", "/health");
    ASSERT_EQ(health.curl_code, CURLE_OK) << health.error;
    EXPECT_EQ(health.http_version, mode == 1 ? CURL_HTTP_VERSION_2_0 : CURL_HTTP_VERSION_1_1);
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, "ok");
    EXPECT_EQ(values(health, "Content-Type"), Values{"text/plain; charset=utf-8"}) << health.headers;
    EXPECT_EQ(values(health, "Content-Length"), Values{"2"}) << health.headers;
    EXPECT_EQ(values(health, "Cache-Control"), Values{"no-store"}) << health.headers;
    EXPECT_EQ(values(health, "X-Scheme"), Values{mode == 2 ? "http" : "https"}) << health.headers;

    HttpResponse head = req("HEAD", "/health");
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.body, "");
    EXPECT_EQ(values(head, "Content-Length"), Values{"2"}) << head.headers;

    HttpResponse moved = req("POST", "/old/a/../b?x=1&y=%20");
    EXPECT_EQ(moved.status, 308);
    EXPECT_EQ(values(moved, "Location"), Values{"https://new.example:9443/old/a/../b?x=1&y=%20#moved"})
        << moved.headers;
    EXPECT_EQ(moved.body, "308 Permanent Redirect\n");

    HttpResponse gone = req("GET", "/gone");
    EXPECT_EQ(gone.status, 503);
    EXPECT_EQ(gone.body, "down for maintenance\n");
    EXPECT_EQ(values(gone, "Content-Type"), Values{"text/plain"});

    HttpResponse empty = req("GET", "/empty");
    EXPECT_EQ(empty.status, 204);
    EXPECT_EQ(empty.body, "");
    EXPECT_EQ(values(empty, "Content-Length"), Values{}) << empty.headers;
  }
  auto lines = proxy_.wait_log_lines(requests);
  ASSERT_EQ(lines.size(), requests);
  for (const auto& line : lines) {
    EXPECT_EQ(json_raw(line, "upstream_addr"), "null") << line;
    EXPECT_EQ(json_raw(line, "response_complete"), "true") << line;
    EXPECT_NE(json_raw(line, "bytes_sent"), "0") << line;
  }
  EXPECT_EQ(json_raw(lines[0], "status"), "200");
  EXPECT_EQ(json_raw(lines[2], "status"), "308");
  EXPECT_EQ(backend_.count("req"), 0u);
}

}  // namespace
}  // namespace tlsfront::itest

namespace tlsfront::itest {
namespace {

// --test: the route table shows the fixed answers; a config naming an
// unknown acme_upstream, or a route with two actions, is refused with the
// position.
TEST(FixedAnswersCli, TestShowsTheTableAndRefusesBadConfigs) {
  TempDir dir;
  ProxyOptions o;
  o.upstream_servers = {"127.0.0.1:" + std::to_string(free_port())};
  o.cleartext = "";
  o.routes =
      "[[route]]\npath_exact = \"/health\"\nreturn = { status = 200, body = \"ok\" }\n"
      "[[route]]\nredirect = { status = 302, location = \"https://example.com$request_uri\" }\n";
  const std::string path = dir.file("tlsfront.toml");
  write_file(path, make_config(o, kAnyPort, dir.file("access.log")));
  RunResult ok = run_command(dir, {TLSFRONT_BINARY, "--test", "--config", path});
  EXPECT_EQ(ok.status.code, 0) << ok.err;
  EXPECT_NE(ok.err.find("path_exact \"/health\" -> return 200, text/plain, 2 bytes; metrics route=\"*=/health\"\n"), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("path_prefix \"/\" -> redirect 302 \"https://example.com${request_uri}\"; metrics route=\"*/\"\n"), std::string::npos)
      << ok.err;

  o.cleartext = "acme_upstream = \"certbot\"\n";
  std::string text = make_config(o, kAnyPort, dir.file("access.log"));
  write_file(path, text);
  RunResult acme = run_command(dir, {TLSFRONT_BINARY, "--test", "--config", path});
  EXPECT_EQ(acme.status.code, 1);
  const size_t line = std::count(text.begin(), text.begin() + text.find("acme_upstream"), '\n') + 1;
  EXPECT_NE(acme.err.find(path + ":" + std::to_string(line) +
                          ":1: listen[1].acme_upstream: unknown upstream \"certbot\" (no [[upstream]] has this name)"),
            std::string::npos)
      << acme.err;

  o.cleartext = "";
  o.routes = "[[route]]\nupstream = \"backend\"\nreturn = { status = 200 }\n";
  text = make_config(o, kAnyPort, dir.file("access.log"));
  write_file(path, text);
  RunResult two = run_command(dir, {TLSFRONT_BINARY, "--test", "--config", path});
  EXPECT_EQ(two.status.code, 1);
  const size_t at = std::count(text.begin(), text.begin() + text.find("return ="), '\n') + 1;
  EXPECT_NE(
      two.err.find(path + ":" + std::to_string(at) +
                   ":1: route[0].return: only one of upstream, return, redirect, root and alias per route (upstream is set too)"),
      std::string::npos)
      << two.err;
}

}  // namespace
}  // namespace tlsfront::itest
