// HTTP/3 over QUIC ([[listen]] quic = true) with a real client: ngtcp2's
// gtlsclient (Debian's ngtcp2-client) sends requests over QUIC to
// tlsfront, which proxies them to the recording backend like any other
// request; the access log says HTTP/3.0. The TCP side advertises it with
// Alt-Svc.
#include <string>
#include <vector>

#include "harness.h"
#include "shared/json_body.h"

namespace tlsfront::itest {
namespace {

constexpr const char* kGtlsclient = "/usr/bin/gtlsclient";

class Http3 : public ProxyTest {
 protected:
  bool start_quic(std::string listen_extra = "quic = true") {
    ProxyOptions o;
    o.listen_extra = std::move(listen_extra);
    return start_proxy(o);
  }
  // gtlsclient fetching `uris` (paths) on one connection; its exit status
  // and output (HTTP dump on stderr).
  RunResult fetch(const std::vector<std::string>& paths, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{kGtlsclient, "--exit-on-all-streams-close", "--no-quic-dump", "--timeout=5s",
                                  "--download=" + dir_.path()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("127.0.0.1");
    argv.push_back(std::to_string(port()));
    for (const auto& p : paths) argv.push_back("https://localhost:" + std::to_string(port()) + p);
    return run_command(dir_, argv, milliseconds(20'000));
  }
};

TEST_F(Http3, AGetIsProxiedAndLoggedAsHttp3) {
  ASSERT_TRUE(start_quic());
  RunResult r = fetch({"/json/100"});
  EXPECT_TRUE(r.status.exited && r.status.code == 0) << r.err;
  EXPECT_NE(r.err.find(":status: 200"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(dir_.file("100")), testdata::json_body(100));
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "protocol"), "HTTP/3.0") << lines[0];
  EXPECT_EQ(json_string(lines[0], "path"), "/json/100");
  EXPECT_EQ(json_string(lines[0], "alpn"), "h3") << lines[0];
  EXPECT_EQ(json_raw(lines[0], "status"), "200");
  auto requests = backend_.wait_requests(1);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_NE(requests[0].find("GET /json/100 HTTP/1.1"), std::string::npos) << requests[0];
  EXPECT_NE(requests[0].find("ost: localhost"), std::string::npos) << requests[0];
}

TEST_F(Http3, SeveralStreamsOnOneConnection) {
  ASSERT_TRUE(start_quic());
  RunResult r = fetch({"/json/10", "/json/2000", "/json/70000"});
  EXPECT_TRUE(r.status.exited && r.status.code == 0) << r.err;
  EXPECT_EQ(read_file(dir_.file("10")), testdata::json_body(10));
  EXPECT_EQ(read_file(dir_.file("2000")), testdata::json_body(2000));
  EXPECT_EQ(read_file(dir_.file("70000")), testdata::json_body(70000));
  auto lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) EXPECT_EQ(json_string(l, "protocol"), "HTTP/3.0") << l;
  // One connection: the same connection ID on every line.
  EXPECT_EQ(json_raw(lines[0], "connection_id"), json_raw(lines[1], "connection_id"));
  EXPECT_EQ(json_raw(lines[0], "connection_id"), json_raw(lines[2], "connection_id"));
}

TEST_F(Http3, ANoRouteAnswerIsLocal) {
  ProxyOptions o;
  o.listen_extra = "quic = true";
  o.routes = "[[route]]\npath_prefix = \"/api/\"\nupstream = \"backend\"\n";
  ASSERT_TRUE(start_proxy(o));
  RunResult r = fetch({"/elsewhere"});
  EXPECT_NE(r.err.find(":status: 404"), std::string::npos) << r.err;
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), "404");
  EXPECT_EQ(backend_.count("req"), 0u);
}

TEST_F(Http3, TcpResponsesAdvertiseIt) {
  ASSERT_TRUE(start_quic());
  HttpResponse h1 = http_get(port(), "/json/5");
  EXPECT_EQ(h1.status, 200);
  EXPECT_EQ(h1.header("alt-svc").value_or(""), "h3=\":" + std::to_string(port()) + "\"; ma=86400");
  HttpRequest req;
  req.path = "/json/5";
  req.http2 = true;
  HttpResponse h2 = http(port(), req);
  EXPECT_EQ(h2.status, 200);
  EXPECT_EQ(h2.header("alt-svc").value_or(""), "h3=\":" + std::to_string(port()) + "\"; ma=86400");
}

TEST_F(Http3, NoAdvertisementWithoutQuicOrWithMaxAgeZero) {
  ASSERT_TRUE(start_quic("quic = true\nalt_svc_max_age = 0"));
  EXPECT_FALSE(http_get(port(), "/json/5").header("alt-svc").has_value());
  RunResult r = fetch({"/json/5"});  // HTTP/3 itself still answers
  EXPECT_NE(r.err.find(":status: 200"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
