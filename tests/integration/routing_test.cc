// Routing through the real binary: the request target normalized before
// matching (message/request_path.h), what each backend then received (the
// target as sent, or normalized under pass_normalized), and the matching keys
// (path_prefix, path_exact, path_regex, methods, hosts and their wildcards,
// a trailing dot), over HTTP/1.1 and HTTP/2 from curl and from raw clients.
#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "h2_frames.h"
#include "harness.h"

namespace tlsfront::itest {
namespace {

// Upstream names, one recording backend each.
const char* const kUpstreams[] = {"slow", "api", "exact", "regex", "writes", "norm", "local", "wild", "rest"};

constexpr const char* kRoutes = R"(
[[route]]
path_prefix = "/admin/"
return = { status = 403, body = "no" }

[[route]]
path_prefix = "/api/slow/"
upstream = "slow"

[[route]]
path_prefix = "/api/"
upstream = "api"

[[route]]
path_exact = "/health"
upstream = "exact"

[[route]]
path_regex = '/users/[0-9]+'
methods = ["GET", "HEAD"]
upstream = "regex"

[[route]]
path_prefix = "/users/"
methods = ["POST"]
upstream = "writes"

[[route]]
path_prefix = "/norm/"
pass_normalized = true
upstream = "norm"

[[route]]
host = "localhost"
path_prefix = "/local/"
upstream = "local"

[[route]]
host = "*.example.test"
upstream = "wild"

[[route]]
upstream = "rest"
)";

struct Row {
  std::string target;
  std::string route;     // upstream expected, or "400" / "403" / "404"
  std::string received;  // the backend's request-target ("" = as sent)
};

// The normalization table (docs/configuration.md "The path routes match", docs/security.md "Request paths").
const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
      {"/api/x", "api", ""},
      {"/api/slow/x", "slow", ""},
      {"/api/slow/../../x", "rest", ""},  // was routed to slow
      {"/api/slow/../x", "api", ""},
      {"//api/x", "api", ""},  // missed /api/
      {"/api//slow/x", "slow", ""},
      {"/api/./slow/x", "slow", ""},
      {"/api/slow/.", "slow", ""},
      {"/api/slow/..", "api", ""},
      {"///", "rest", ""},
      {"/api/%2e%2e/x", "rest", ""},
      {"/api/.%2E/api/slow/y", "slow", ""},
      {"/api/slow/%2E%2e/%2e%2E/x", "rest", ""},
      {"/%61pi/x", "api", ""},
      {"/%61%70%69%2f", "400", ""},
      {"/API/x", "rest", ""},
      {"/api%2Fslow/x", "400", ""},
      {"/api%2fx", "400", ""},
      {"/api/%5Cx", "400", ""},
      {"/api/%5cx", "400", ""},
      {"/api/%00", "400", ""},
      {"/api/%zz", "400", ""},
      {"/api/%", "400", ""},
      {"/api/%4", "400", ""},
      {"/api/%C0%AE%C0%AE/x", "400", ""},  // overlong "."
      {"/api/%c0%af", "400", ""},          // overlong "/"
      {"/api/%ED%A0%80", "400", ""},       // surrogate
      {"/api/%c3%a9", "api", ""},
      {"/api/caf%C3%A9", "api", ""},
      {"/../x", "400", ""},
      {"/api/../../x", "400", ""},
      {"/api/%2e%2e/%2E%2E/x", "400", ""},
      {"/api/x?next=/../../etc&q=%2F", "api", ""},
      {"/?to=/api/", "rest", ""},
      {"/health", "exact", ""},
      {"/health/", "rest", ""},
      {"/./health", "exact", ""},
      {"/health?full=1", "exact", ""},
      {"/users/42", "regex", ""},
      {"/users/42/", "rest", ""},
      {"/users/%34%32", "regex", ""},
      {"/x/users/42", "rest", ""},
      {"/norm/a/../b//c", "norm", "/norm/b/c"},
      {"/norm/%7e%2a?q=/../", "norm", "/norm/~%2A?q=/../"},
      {"/norm/plain?x=1", "norm", "/norm/plain?x=1"},
      {"/norm/../api/x", "api", ""},
      // ".." removing an empty segment: RFC 3986 §5.2.4 and WHATWG resolve
      // "/admin//../x" to "/admin/x", nginx (merging slashes first) to "/x";
      // routed "/x", they reached the catch-all past the 403.
      {"/admin/x", "403", ""},
      {"/admin//../x", "400", ""},
      {"/admin//%2e%2e/x", "400", ""},
      {"/admin//%2E%2e/x", "400", ""},
      {"/admin//./../x", "400", ""},
      {"/admin//.%2e/x", "400", ""},
      {"/x//../admin/y", "400", ""},  // "/x/admin/y" to RFC 3986, "/admin/y" to nginx
      {"/api/x//y/../z", "api", ""},  // ".." after "y": both orders read "/api/x/z" (up to "//")
      {"/admin/../api//x", "api", ""},
  };
  return rows;
}

class Routing : public ProxyTest {
 protected:
  void SetUp() override {
    ProxyTest::SetUp();
    for (const char* name : kUpstreams) {
      dirs_.push_back(std::make_unique<TempDir>());
      backends_.push_back(std::make_unique<Backend>(*dirs_.back()));
      ASSERT_TRUE(backends_.back()->start()) << name;
    }
  }
  void TearDown() override {
    ProxyTest::TearDown();
    for (auto& b : backends_) b->stop();
  }
  bool start() {
    ProxyOptions o;
    o.routes = kRoutes;
    for (size_t i = 0; i < backends_.size(); ++i) {
      o.routes += std::string("\n[[upstream]]\nname = \"") + kUpstreams[i] + "\"\nservers = [\"" +
                  backends_[i]->address() + "\"]\n";
    }
    return start_proxy(o);
  }
  std::vector<size_t> counts() const {
    std::vector<size_t> out;
    for (const auto& b : backends_) out.push_back(b->count("req"));
    return out;
  }
  // Which backend got one more request than in `before` (and its request
  // line's target), or "" when none did.
  std::pair<std::string, std::string> routed_since(const std::vector<size_t>& before) const {
    for (size_t i = 0; i < backends_.size(); ++i) {
      auto names = backends_[i]->records("req");
      if (names.size() == before[i]) continue;
      std::string raw = backends_[i]->read_record(names.back());
      std::string line = raw.substr(0, raw.find("\r\n"));
      size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
      return {kUpstreams[i], line.substr(sp1 + 1, sp2 - sp1 - 1)};
    }
    return {"", ""};
  }
  void check_table(bool http2) {
    for (const Row& row : table()) {
      auto before = counts();
      HttpRequest req;
      req.path = row.target;
      req.http2 = http2;
      HttpResponse r = http(port(), req);
      ASSERT_EQ(r.curl_code, CURLE_OK) << row.target << ": " << r.error;
      EXPECT_EQ(r.http_version, http2 ? CURL_HTTP_VERSION_2_0 : CURL_HTTP_VERSION_1_1);
      auto [routed, received] = routed_since(before);
      if (row.route == "400" || row.route == "403" || row.route == "404") {
        EXPECT_EQ(std::to_string(r.status), row.route) << row.target;
        EXPECT_EQ(routed, "") << row.target << " reached a backend as " << received;
        continue;
      }
      EXPECT_EQ(r.status, 200) << row.target;
      EXPECT_EQ(routed, row.route) << row.target;
      EXPECT_EQ(received, row.received.empty() ? row.target : row.received) << row.target;
    }
  }

  std::vector<std::unique_ptr<TempDir>> dirs_;
  std::vector<std::unique_ptr<Backend>> backends_;
};

TEST_F(Routing, NormalizationTableHttp1) {
  ASSERT_TRUE(start());
  check_table(false);
}

TEST_F(Routing, NormalizationTableHttp2) {
  ASSERT_TRUE(start());
  check_table(true);
}

TEST_F(Routing, MethodsSelectTheRoute) {
  ASSERT_TRUE(start());
  for (bool http2 : {false, true}) {
    auto before = counts();
    HttpRequest post;
    post.method = "POST";
    post.path = "/users/42";
    post.body = "x";
    post.http2 = http2;
    HttpResponse r = http(port(), post);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(routed_since(before).first, "writes");  // the regex route is GET and HEAD only

    before = counts();
    HttpRequest del;
    del.method = "DELETE";
    del.path = "/users/42";
    del.http2 = http2;
    r = http(port(), del);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(routed_since(before).first, "rest");

    before = counts();
    HttpRequest head;
    head.method = "HEAD";
    head.no_body = true;
    head.path = "/users/7";
    head.http2 = http2;
    r = http(port(), head);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(routed_since(before).first, "regex");
  }
}

// What curl will not send: a fragment, a raw backslash or non-ASCII byte,
// the asterisk-form, absolute-form, other hosts.
TEST_F(Routing, RawTargets) {
  ASSERT_TRUE(start());
  struct RawRow {
    std::string request_line;
    std::string host;
    int status;
    std::string route;
    std::string received;
  };
  const RawRow rows[] = {
      {"GET /api/x#frag HTTP/1.1", "localhost", 400, "", ""},
      {"GET /api\\x HTTP/1.1", "localhost", 400, "", ""},
      {"GET /api/caf\xc3\xa9 HTTP/1.1", "localhost", 400, "", ""},
      {"OPTIONS * HTTP/1.1", "localhost", 404, "", ""},
      {"GET https://localhost//api/./x?y=1 HTTP/1.1", "other", 200, "api", "//api/./x?y=1"},
      {"GET https://localhost/api/../../x HTTP/1.1", "other", 400, "", ""},
      // RFC 3986: the scheme is case-insensitive; an empty path before a query is "/".
      {"GET HTTPS://localhost/api/x HTTP/1.1", "other", 200, "api", "/api/x"},
      {"GET http://a.example.test?y=1 HTTP/1.1", "other", 200, "wild", "/?y=1"},
      {"GET /x HTTP/1.1", "a.example.test", 200, "wild", "/x"},
      {"GET /x HTTP/1.1", "A.Example.Test:8443", 200, "wild", "/x"},
      {"GET /x HTTP/1.1", "a.example.test.", 200, "wild", "/x"},  // one trailing dot: the same name
      {"GET https://A.example.test./x HTTP/1.1", "other", 200, "wild", "/x"},
      {"GET https://a.example.test../x HTTP/1.1", "other", 400, "", ""},
      {"GET /x HTTP/1.1", "a.b.example.test", 200, "rest", "/x"},
      {"GET /x HTTP/1.1", "example.test", 200, "rest", "/x"},
  };
  for (const RawRow& row : rows) {
    auto before = counts();
    TlsClient c;
    ASSERT_TRUE(c.connect(port())) << c.error();
    ASSERT_TRUE(c.write(row.request_line + "\r\nHost: " + row.host + "\r\nConnection: close\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value()) << row.request_line;
    EXPECT_EQ(r->status, row.status) << row.request_line;
    auto [routed, received] = routed_since(before);
    EXPECT_EQ(routed, row.route) << row.request_line;
    EXPECT_EQ(received, row.received) << row.request_line;
  }
}

// Host (HTTP/1.1) and :authority (HTTP/2) ending in one dot, the absolute
// form of the same name: stripped (as nginx and tlsfront's SNI match do)
// for routing and from the Host the upstream receives, the same on both
// protocols; two dots or an empty label are 400. On HTTP/1.1 "localhost."
// skipped the host route and reached the catch-all with the dotted Host; on
// HTTP/2 it was 421 (the certificate check was given the dot).
TEST_F(Routing, HostTrailingDotIsStrippedOnHttp1AndHttp2) {
  ASSERT_TRUE(start());
  struct HostRow {
    std::string host;
    int status;
    std::string route;      // "" for none
    std::string forwarded;  // the Host the backend got
  };
  const std::string p = std::to_string(port());
  const HostRow rows[] = {
      {"localhost", 200, "local", "localhost"},
      {"localhost.", 200, "local", "localhost"},
      {"LocalHost.:" + p, 200, "local", "LocalHost:" + p},
      {"127.0.0.1.", 200, "rest", "127.0.0.1"},  // the host route names localhost only
      {"localhost..", 400, "", ""},
      {"localhost..:" + p, 400, "", ""},
      {".localhost", 400, "", ""},
      {"local..host", 400, "", ""},
  };
  for (bool http2 : {false, true}) {
    for (const HostRow& row : rows) {
      SCOPED_TRACE((http2 ? "HTTP/2 :authority " : "HTTP/1.1 Host ") + row.host);
      auto before = counts();
      int status = 0;
      if (http2) {
        h2::Client c;
        ASSERT_TRUE(c.connect(port()));
        ASSERT_TRUE(c.send_headers(1, h2::get_request("/local/x", row.host), true));
        status = c.wait_status(1);
      } else {
        TlsClient c;
        ASSERT_TRUE(c.connect(port())) << c.error();
        ASSERT_TRUE(c.write("GET /local/x HTTP/1.1\r\nHost: " + row.host + "\r\nConnection: close\r\n\r\n"));
        auto r = c.read_response();
        ASSERT_TRUE(r.has_value());
        status = r->status;
      }
      EXPECT_EQ(status, row.status);
      auto [routed, received] = routed_since(before);
      EXPECT_EQ(routed, row.route);
      if (routed.empty() || routed != row.route) continue;
      const size_t i = std::find(std::begin(kUpstreams), std::end(kUpstreams), routed) - std::begin(kUpstreams);
      const auto names = backends_[i]->records("req");
      auto [head, body] = split_head(backends_[i]->read_record(names.back()));
      EXPECT_EQ(header_values(head, "Host"), std::vector<std::string>{row.forwarded}) << head;
    }
  }
}

TEST_F(Routing, TestPrintsTheRouteTableAndWarnsAboutDeadRoutes) {
  ProxyOptions o;
  o.upstream_servers = {backend_.address()};
  o.routes = R"(
[[route]]
path_prefix = "/api/"
upstream = "backend"

[[route]]
path_exact = "/api/health"
methods = ["GET"]
upstream = "backend"

[[route]]
path_prefix = "/static//"
upstream = "backend"
)";
  write_file(dir_.file("t.toml"), make_config(o, kAnyPort, dir_.file("access.log")));
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", dir_.file("t.toml")});
  ASSERT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 0) << r.err;
  const std::string& err = r.err;
  const std::string conf = dir_.file("t.toml");
  EXPECT_NE(err.find("tlsfront: route[0] (" + conf + ":"), std::string::npos) << err;
  EXPECT_NE(err.find("): host any, methods any, path_prefix \"/api/\" -> upstream \"backend\"; metrics route=\"*/api/\"\n"), std::string::npos)
      << err;
  EXPECT_NE(err.find("): host any, methods GET, path_exact \"/api/health\" -> upstream \"backend\"; "
                     "metrics route=\"*=/api/health GET\"\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("tlsfront: warning: route[1] (" + conf + ":"), std::string::npos) << err;
  EXPECT_NE(err.find(") can never match: route[0] (" + conf + ":"), std::string::npos) << err;
  EXPECT_NE(err.find("tlsfront: warning: route[2] (" + conf + ":"), std::string::npos) << err;
  EXPECT_NE(err.find("path_prefix \"/static//\" can never match: paths are matched after normalization (it "
                     "normalizes to \"/static/\")"),
            std::string::npos)
      << err;
}

TEST_F(Routing, BadPatternRefusedAtLoad) {
  ProxyOptions o;
  o.upstream_servers = {backend_.address()};
  o.routes = "[[route]]\npath_regex = \"/a[b\"\nupstream = \"backend\"\n";
  const std::string config = make_config(o, kAnyPort, dir_.file("access.log"));
  write_file(dir_.file("t.toml"), config);
  // The line of path_regex in the generated file.
  size_t line = 1 + std::count(config.begin(), config.begin() + config.find("path_regex"), '\n');
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", dir_.file("t.toml")});
  ASSERT_TRUE(r.status.exited);
  EXPECT_NE(r.status.code, 0);
  EXPECT_NE(r.err.find(dir_.file("t.toml") + ":" + std::to_string(line) +
                         ":1: route[0].path_regex: invalid regular expression \"/a[b\" at character 3 of the "
                         "pattern: missing ]: [b (RE2 syntax)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
