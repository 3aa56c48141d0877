// response_headers / request_headers, tls.hsts and $request_id end to end:
// curl over HTTP/1.1 and HTTP/2 -> tlsfront -> the recording backend (or a
// fake upstream), checking what the client and the backend each received.
#include <curl/curl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "h2_frames.h"
#include "harness.h"

namespace tlsfront::itest {
namespace {

using Headers = ProxyTest;
using Values = std::vector<std::string>;

// The header values of the final response `r` named `name`.
Values response_values(const HttpResponse& r, std::string_view name) {
  size_t start = 0;
  for (size_t p = 0; (p = r.headers.find("HTTP/", p)) != std::string::npos; p += 5) {
    if (p == 0 || r.headers[p - 1] == '\n') start = p;
  }
  return header_values(std::string_view(r.headers).substr(start), name);
}

HttpResponse get(int port, const std::string& path, bool h2, std::vector<std::string> headers = {}) {
  HttpRequest req;
  req.path = path;
  req.http2 = h2;
  req.headers = std::move(headers);
  return http(port, req);
}

bool is_hex32(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Defaults, then the route: set replaces what the upstream sent, add
// appends, remove deletes; the route adds to the defaults.
TEST_F(Headers, ResponseSetAddRemoveWithDefaultsH1AndH2) {
  ProxyOptions o;
  o.extra = R"([response_headers]
set = { "X-Backend-Req" = "replaced", "X-Frame-Options" = "DENY" }
add = { "X-Added" = "default" }
remove = ["X-Backend-Conn"]
)";
  o.routes = R"([[route]]
path_prefix = "/"
upstream = "backend"
response_headers = { add = { "X-Added" = ["route-1", "route-2"] }, set = { "X-Route" = "$scheme://$host:$server_port" } }
)";
  ASSERT_TRUE(start_proxy(o));
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    HttpResponse r = get(port(), "/headers", h2);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(r.http_version, h2 ? CURL_HTTP_VERSION_2_0 : CURL_HTTP_VERSION_1_1);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(response_values(r, "X-Backend-Req"), Values{"replaced"}) << r.headers;
    EXPECT_EQ(response_values(r, "X-Frame-Options"), Values{"DENY"}) << r.headers;
    EXPECT_EQ(response_values(r, "X-Backend-Conn"), Values{}) << r.headers;
    EXPECT_EQ(response_values(r, "X-Added"), (Values{"default", "route-1", "route-2"})) << r.headers;
    EXPECT_EQ(response_values(r, "X-Route"), Values{"https://localhost:" + std::to_string(port())}) << r.headers;
    EXPECT_EQ(response_values(r, "Content-Type"), Values{"text/plain"}) << r.headers;  // untouched
    if (h2) {
      // HTTP/2 field names are lowercase on the wire (RFC 9113 §8.2.1).
      EXPECT_NE(r.headers.find("\r\nx-frame-options: DENY\r\n"), std::string::npos) << r.headers;
    } else {
      EXPECT_NE(r.headers.find("\r\nX-Frame-Options: DENY\r\n"), std::string::npos) << r.headers;
    }
  }
}

// set replaces every field of that name the upstream sent, not just one.
TEST_F(Headers, SetReplacesEveryUpstreamField) {
  FakeUpstream fake("HTTP/1.1 200 OK\r\nX-Dup: a\r\nX-Dup: b\r\nX-Gone: 1\r\nX-Gone: 2\r\nContent-Length: 2\r\n\r\nok");
  ProxyOptions o;
  o.upstream_servers = {fake.address()};
  o.extra = "[response_headers]\nset = { X-Dup = \"c\" }\nremove = [\"x-gone\"]\n";
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = get(port(), "/", false);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(response_values(r, "X-Dup"), Values{"c"}) << r.headers;
  EXPECT_EQ(response_values(r, "X-Gone"), Values{}) << r.headers;
  EXPECT_EQ(r.body, "ok");
}

// inherit = false: that route's rules only; its neighbour still inherits.
TEST_F(Headers, InheritFalseDropsTheDefaults) {
  ProxyOptions o;
  o.extra = R"([response_headers]
set = { "X-Default" = "1" }
[request_headers]
set = { "X-Default-Up" = "1" }
)";
  o.routes = R"([[route]]
path_prefix = "/alone"
upstream = "backend"
response_headers = { inherit = false, set = { "X-Own" = "1" } }
request_headers = { inherit = false, set = { "X-Own-Up" = "1" } }
[[route]]
path_prefix = "/"
upstream = "backend"
response_headers = { set = { "X-Own" = "2" } }
)";
  ASSERT_TRUE(start_proxy(o));
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    HttpResponse alone = get(port(), "/alone/headers", h2);
    ASSERT_EQ(alone.curl_code, CURLE_OK) << alone.error;
    EXPECT_EQ(response_values(alone, "X-Default"), Values{}) << alone.headers;
    EXPECT_EQ(response_values(alone, "X-Own"), Values{"1"}) << alone.headers;
    HttpResponse other = get(port(), "/headers", h2);
    ASSERT_EQ(other.curl_code, CURLE_OK) << other.error;
    EXPECT_EQ(response_values(other, "X-Default"), Values{"1"}) << other.headers;
    EXPECT_EQ(response_values(other, "X-Own"), Values{"2"}) << other.headers;
  }
  auto reqs = backend_.wait_requests(4);
  ASSERT_EQ(reqs.size(), 4u);
  for (const auto& raw : reqs) {
    const bool alone = raw.rfind("GET /alone/", 0) == 0;
    EXPECT_EQ(header_values(raw, "X-Default-Up"), alone ? Values{} : Values{"1"}) << raw;
    EXPECT_EQ(header_values(raw, "X-Own-Up"), alone ? Values{"1"} : Values{}) << raw;
  }
}

// always = true reaches tlsfront's own answers: a 404 (no route: the
// defaults only) and a 502 from a dead upstream (defaults and the route's);
// rules without it do not. tlsfront's Server field can be removed.
TEST_F(Headers, AlwaysAppliesToOwnAnswers) {
  ProxyOptions o;
  o.extra = R"([response_headers]
set = { "X-Always" = "yes", "X-Req" = "$request_id" }
remove = ["Server"]
always = true
)";
  o.routes = "[[upstream]]\nname = \"dead\"\nservers = [\"127.0.0.1:" + std::to_string(free_port()) +
             "\"]\nconnect_timeout = \"2s\"\n" + R"([[route]]
path_prefix = "/dead"
upstream = "dead"
response_headers = { set = { "X-Route-Always" = "yes" }, always = true }
[[route]]
path_prefix = "/never"
upstream = "dead"
response_headers = { set = { "X-Route-Never" = "yes" } }
[[route]]
path_prefix = "/ok"
upstream = "backend"
)";
  ASSERT_TRUE(start_proxy(o));
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    HttpResponse nf = get(port(), "/nowhere", h2);
    ASSERT_EQ(nf.curl_code, CURLE_OK) << nf.error;
    EXPECT_EQ(nf.status, 404);
    EXPECT_EQ(response_values(nf, "X-Always"), Values{"yes"}) << nf.headers;
    EXPECT_EQ(response_values(nf, "Server"), Values{}) << nf.headers;
    ASSERT_EQ(response_values(nf, "X-Req").size(), 1u) << nf.headers;
    EXPECT_TRUE(is_hex32(response_values(nf, "X-Req")[0])) << nf.headers;
    EXPECT_EQ(response_values(nf, "Content-Type"), Values{"text/plain"}) << nf.headers;

    HttpResponse dead = get(port(), "/dead", h2);
    ASSERT_EQ(dead.curl_code, CURLE_OK) << dead.error;
    EXPECT_EQ(dead.status, 502);
    EXPECT_EQ(response_values(dead, "X-Always"), Values{"yes"}) << dead.headers;
    EXPECT_EQ(response_values(dead, "X-Route-Always"), Values{"yes"}) << dead.headers;

    HttpResponse never = get(port(), "/never", h2);
    ASSERT_EQ(never.curl_code, CURLE_OK) << never.error;
    EXPECT_EQ(never.status, 502);
    EXPECT_EQ(response_values(never, "X-Always"), Values{"yes"}) << never.headers;
    EXPECT_EQ(response_values(never, "X-Route-Never"), Values{}) << never.headers;
  }
}

// Without always, tlsfront's own answers carry none of the rules.
TEST_F(Headers, WithoutAlwaysOwnAnswersUntouched) {
  ProxyOptions o;
  o.extra = "[response_headers]\nset = { \"X-Only-Proxied\" = \"yes\" }\n";
  o.routes = "[[route]]\npath_prefix = \"/ok\"\nupstream = \"backend\"\n";
  ASSERT_TRUE(start_proxy(o));
  HttpResponse ok = get(port(), "/ok", false);
  EXPECT_EQ(response_values(ok, "X-Only-Proxied"), Values{"yes"}) << ok.headers;
  HttpResponse nf = get(port(), "/nowhere", false);
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(response_values(nf, "X-Only-Proxied"), Values{}) << nf.headers;
  EXPECT_EQ(response_values(nf, "Server"), Values{"tlsfront"}) << nf.headers;
  EXPECT_EQ(response_values(nf, "Strict-Transport-Security"), Values{}) << nf.headers;  // off by default
}

// request_headers: the defaults' and the route's, on the client's fields and
// tlsfront's own (X-Real-IP), with variables; the access log's request_id is
// the one the backend got.
TEST_F(Headers, RequestHeadersAndVariables) {
  ProxyOptions o;
  o.extra = R"([request_headers]
set = { "X-Client" = "$remote_addr", "X-Tls" = "$ssl_protocol/$ssl_cipher/$ssl_session_reused" }
add = { "X-Up" = "default" }
remove = ["User-Agent", "X-Drop"]
)";
  o.routes = R"([[route]]
path_prefix = "/"
upstream = "backend"
request_headers = { add = { "X-Up" = "route" }, set = { "X-Real-IP" = "hidden", Host = "internal.example", "X-Client-Port" = "$server_port" } }
)";
  ASSERT_TRUE(start_proxy(o));
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    HttpResponse r = get(port(), "/headers", h2, {"X-Drop: me", "X-Up: client", "X-Keep: me"});
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    const std::string& head = r.body;  // what the backend received
    EXPECT_EQ(header_values(head, "X-Client"), Values{"127.0.0.1"}) << head;
    EXPECT_EQ(header_values(head, "X-Up"), (Values{"client", "default", "route"})) << head;
    EXPECT_EQ(header_values(head, "X-Drop"), Values{}) << head;
    EXPECT_EQ(header_values(head, "User-Agent"), Values{}) << head;
    EXPECT_EQ(header_values(head, "X-Keep"), Values{"me"}) << head;
    EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"hidden"}) << head;
    EXPECT_EQ(header_values(head, "Host"), Values{"internal.example"}) << head;
    EXPECT_EQ(header_values(head, "X-Forwarded-For"), Values{"127.0.0.1"}) << head;
    EXPECT_EQ(header_values(head, "X-Client-Port"), Values{std::to_string(port())}) << head;
    ASSERT_EQ(header_values(head, "X-Tls").size(), 1u) << head;
    const std::string tls = header_values(head, "X-Tls")[0];
    EXPECT_EQ(tls.rfind("TLSv1.3/TLS_", 0), 0u) << tls;
    EXPECT_EQ(tls.substr(tls.size() - 2), "/.") << tls;  // a full handshake
    ASSERT_EQ(header_values(head, "X-Request-ID").size(), 1u) << head;
    EXPECT_TRUE(is_hex32(header_values(head, "X-Request-ID")[0])) << head;
  }
  auto reqs = backend_.wait_requests(2);
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  std::vector<std::string> logged, sent;
  for (const auto& l : lines) logged.push_back(json_string(l, "request_id").value_or("(none)"));
  for (const auto& raw : reqs) sent.push_back(header_values(raw, "X-Request-ID").at(0));
  std::sort(logged.begin(), logged.end());
  std::sort(sent.begin(), sent.end());
  EXPECT_EQ(logged, sent);
  EXPECT_NE(sent[0], sent[1]);
}

// A client's X-Request-ID is replaced unless the listener trusts it; a
// trusted but invalid one is replaced too.
TEST_F(Headers, RequestIdUntrustedIsReplaced) {
  ASSERT_TRUE(start_proxy());
  HttpResponse r = get(port(), "/headers", false, {"X-Request-ID: client-chosen"});
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  ASSERT_EQ(header_values(r.body, "X-Request-ID").size(), 1u) << r.body;
  EXPECT_TRUE(is_hex32(header_values(r.body, "X-Request-ID")[0])) << r.body;
  auto lines = proxy_.wait_log_lines(1);
  EXPECT_EQ(json_string(lines.at(0), "request_id"), header_values(r.body, "X-Request-ID")[0]);
}

TEST_F(Headers, RequestIdTrustedIsKeptWhenValid) {
  ProxyOptions o;
  o.listen_extra = "trust_request_id = true\n";
  ASSERT_TRUE(start_proxy(o));
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    HttpResponse r = get(port(), "/headers", h2, {"X-Request-ID: trace-42"});
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(header_values(r.body, "X-Request-ID"), Values{"trace-42"}) << r.body;
    for (const std::string& bad : {std::string(129, 'a'), std::string("has space")}) {
      HttpResponse b = get(port(), "/headers", h2, {"X-Request-ID: " + bad});
      ASSERT_EQ(b.curl_code, CURLE_OK) << b.error;
      ASSERT_EQ(header_values(b.body, "X-Request-ID").size(), 1u) << b.body;
      EXPECT_TRUE(is_hex32(header_values(b.body, "X-Request-ID")[0])) << b.body;
    }
  }
  auto lines = proxy_.wait_log_lines(6);
  int trusted = 0;
  for (const auto& l : lines) trusted += json_string(l, "request_id") == std::string("trace-42");
  EXPECT_EQ(trusted, 2);
}

// request_id_header renames it; "" sends none (a client's own then passes
// as any other field).
TEST_F(Headers, RequestIdHeaderRenamedOrOff) {
  ProxyOptions o;
  o.top_level = "request_id_header = \"X-Trace\"\n";
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = get(port(), "/headers", false);
  ASSERT_EQ(header_values(r.body, "X-Trace").size(), 1u) << r.body;
  EXPECT_EQ(header_values(r.body, "X-Request-ID"), Values{}) << r.body;
  ExitStatus stopped = proxy_.stop();
  ASSERT_TRUE(stopped.exited && stopped.code == 0);

  o.top_level = "request_id_header = \"\"\n";
  ASSERT_TRUE(start_proxy(o));
  HttpResponse off = get(port(), "/headers", false, {"X-Request-ID: mine"});
  EXPECT_EQ(header_values(off.body, "X-Request-ID"), Values{"mine"}) << off.body;
  EXPECT_EQ(header_values(off.body, "X-Trace"), Values{}) << off.body;
}

// [tls] hsts: on proxied responses and on tlsfront's own (404, 502), both
// protocols, without any always.
TEST_F(Headers, HstsOnEveryTlsResponse) {
  ProxyOptions o;
  o.tls_extra = "hsts = \"max-age=300; includeSubDomains\"\n";
  o.routes = "[[upstream]]\nname = \"dead\"\nservers = [\"127.0.0.1:" + std::to_string(free_port()) +
             "\"]\n[[route]]\npath_prefix = \"/dead\"\nupstream = \"dead\"\n"
             "[[route]]\npath_prefix = \"/ok\"\nupstream = \"backend\"\n";
  ASSERT_TRUE(start_proxy(o));
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    for (const char* path : {"/ok", "/nowhere", "/dead"}) {
      HttpResponse r = get(port(), path, h2);
      ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
      EXPECT_EQ(r.status, std::string(path) == "/ok" ? 200 : std::string(path) == "/dead" ? 502 : 404);
      EXPECT_EQ(response_values(r, "Strict-Transport-Security"), Values{"max-age=300; includeSubDomains"})
          << path << "\n" << r.headers;
    }
  }
}

// HTTP/2: a configured field whose value has a variable changes with every
// response, so it goes never indexed (no HPACK dynamic-table churn on either
// side); constant ones stay indexable.
TEST_F(Headers, Http2VariableValuesAreNeverIndexed) {
  ProxyOptions o;
  o.extra = "[response_headers]\nset = { \"X-Id\" = \"$request_id\", \"X-Const\" = \"same\" }\n";
  ASSERT_TRUE(start_proxy(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/"), true));
  auto head = c.wait_for([](const h2::Frame& f) { return f.stream == 1 && f.type == h2::kHeaders; });
  ASSERT_TRUE(head.has_value());
  bool id = false, constant = false;
  for (const auto& [name, value] : head->fields) {
    id = id || (name == "x-id" && is_hex32(value));
    constant = constant || (name == "x-const" && value == "same");
  }
  EXPECT_TRUE(id && constant);
  EXPECT_EQ(head->never_indexed, std::vector<std::string>{"x-id"});
}

}  // namespace
}  // namespace tlsfront::itest
