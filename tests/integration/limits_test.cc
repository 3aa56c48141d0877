// Access rules and client limits against the real binary on loopback
// (docs/configuration.md, "Access and limits"): [[listen]] and [[route]]
// access (first match wins), [limits] max_connections_per_client with one
// client holding idle TLS connections, [[limit_req]] (rate, burst, delay,
// other clients unaffected, across 2 workers) and [[limit_conn]]. Clients
// come from distinct loopback addresses (127.0.0.2, .3, .4) to the proxy's
// 127.0.0.1. Counts are checked in wide bands where they depend on timing.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {
namespace {

using std::chrono::steady_clock;

struct Answer {
  int status = 0;  // 0: no response (the connection was refused or failed)
  std::string retry_after;
};

class Limits : public ProxyTest {
 protected:
  // One request on a new TLS connection from `source`.
  Answer get(const std::string& source, const std::string& path) {
    TlsClient c;
    TlsOptions o;
    o.source_ip = source;
    if (!c.connect(port(), o)) return {};
    c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    auto r = c.read_response();
    if (!r) return {};
    return {r->status, r->header("Retry-After").value_or("")};
  }
  std::map<std::string, double> scrape() { return scrape_metrics(proxy_.admin_port()); }
};

TEST_F(Limits, ListenerAccessFirstMatchWins) {
  ProxyOptions o;
  // 127.0.0.3 is inside the allowed /8, but its deny comes first.
  o.listen_extra = R"(access = ["deny 127.0.0.3", "allow 127.0.0.0/8", "deny all"])";
  ASSERT_TRUE(start_proxy(o));
  EXPECT_EQ(get("127.0.0.2", "/").status, 200);
  TlsClient refused;
  TlsOptions opts;
  opts.source_ip = "127.0.0.3";
  EXPECT_FALSE(refused.connect(port(), opts, std::chrono::milliseconds(3000)));
  EXPECT_EQ(get("127.0.0.4", "/").status, 200);
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_refused_total{reason=\"access\"}"] == 1; }));
  EXPECT_NE(proxy_.process().err().find("its [[listen]] access rules deny it"), std::string::npos);
}

// On a proxy_protocol listener the rules see the client the header names,
// not the load balancer.
TEST_F(Limits, ListenerAccessJudgesTheProxyProtocolClient) {
  ProxyOptions o;
  o.extra = R"(
[[listen]]
address = "127.0.0.3:0"
proxy_protocol = true
access = ["deny 192.0.2.66", "allow all"]
)";
  ASSERT_TRUE(start_proxy(o));
  std::optional<int> pp;
  ASSERT_TRUE(wait_until([&] {
    pp = logged_port(proxy_.process().err(), "listening on 127.0.0.3:", " (");
    return pp.has_value();
  }));
  auto via_lb = [&](const std::string& client) {
    TlsClient c;
    TlsOptions opts;
    opts.ip = "127.0.0.3";
    opts.preamble = "PROXY TCP4 " + client + " 127.0.0.3 40000 443\r\n";
    return c.connect(*pp, opts, std::chrono::milliseconds(3000));
  };
  EXPECT_TRUE(via_lb("192.0.2.7"));
  EXPECT_FALSE(via_lb("192.0.2.66"));
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_refused_total{reason=\"access\"}"] == 1; }));
}

TEST_F(Limits, RouteAccessAnswers403BeforeTheUpstream) {
  ProxyOptions o;
  o.workers = 1;
  o.routes = R"([[route]]
path_prefix = "/private/"
upstream = "backend"
access = ["allow 127.0.0.2", "deny all"]

[[route]]
path_prefix = "/"
upstream = "backend"
)";
  ASSERT_TRUE(start_proxy(o));
  EXPECT_EQ(get("127.0.0.2", "/private/a").status, 200);
  EXPECT_EQ(get("127.0.0.3", "/private/b").status, 403);
  EXPECT_EQ(get("127.0.0.3", "/public").status, 200);
  auto lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json_string(lines[1], "limit").value_or(""), "access");
  EXPECT_FALSE(json_string(lines[0], "limit"));
  EXPECT_EQ(backend_.wait_requests(2).size(), 2u);  // the refused one never went up
  EXPECT_EQ(scrape()["tlsfront_requests_refused_total{by=\"access\"}"], 1);
}

// The scenario that locked everyone out: one address holding idle TLS
// connections up to the worker's max_connections.
TEST_F(Limits, PerClientConnectionsKeepOthersIn) {
  ProxyOptions o;
  o.workers = 2;
  o.extra = "[limits]\nmax_connections = 6\nmax_connections_per_client = 3\n";
  ASSERT_TRUE(start_proxy(o));
  std::vector<std::unique_ptr<TlsClient>> idle;
  int open = 0;
  for (int i = 0; i < 6; ++i) {
    auto c = std::make_unique<TlsClient>();
    TlsOptions opts;
    opts.source_ip = "127.0.0.2";
    // A refused connection is closed before its handshake: connect fails.
    if (c->connect(port(), opts, std::chrono::milliseconds(3000))) ++open;
    idle.push_back(std::move(c));
  }
  EXPECT_EQ(open, 3);
  // Another client still gets in, on either worker.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(get("127.0.0.3", "/").status, 200);
  EXPECT_EQ(scrape()["tlsfront_connections_refused_total{reason=\"per_client\"}"], 3);
  // The slots come back when the connections close.
  idle.clear();
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_client_addresses"] == 0; }));
  EXPECT_EQ(get("127.0.0.2", "/").status, 200);
}

TEST_F(Limits, BurstIsHonouredThen429WithRetryAfter) {
  ProxyOptions o;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_req = [\"one\"]\n";
  o.extra = "[[limit_req]]\nname = \"one\"\nrate = \"1r/m\"\nburst = 3\nnodelay = true\n";
  ASSERT_TRUE(start_proxy(o));
  // 1 + burst at once (whichever worker takes each), then refused.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(get("127.0.0.2", "/").status, 200) << i;
  const Answer refused = get("127.0.0.2", "/");
  EXPECT_EQ(refused.status, 429);
  EXPECT_FALSE(refused.retry_after.empty());
  EXPECT_GE(std::stoi(refused.retry_after.empty() ? "0" : refused.retry_after), 1);
  // Another client has its own budget.
  EXPECT_EQ(get("127.0.0.3", "/").status, 200);
  const auto m = scrape();
  EXPECT_EQ((m.at("tlsfront_limit_req_requests_total{zone=\"one\",result=\"rejected\"}")), 1);
  EXPECT_EQ((m.at("tlsfront_limit_req_requests_total{zone=\"one\",result=\"passed\"}")), 5);
  EXPECT_EQ(m.at("tlsfront_limit_req_keys{zone=\"one\"}"), 2);
  EXPECT_EQ(m.at("tlsfront_requests_refused_total{by=\"limit_req\"}"), 1);
}

// A reload (SIGHUP) keeps a zone whose name and size are unchanged: a client
// that spent its budget does not get a new one by the reload, and the
// zone's counters go on; a zone of another size starts afresh.
TEST_F(Limits, AReloadKeepsTheZonesState) {
  ProxyOptions o;
  o.workers = 1;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_req = [\"one\"]\n";
  o.extra = "[[limit_req]]\nname = \"one\"\nrate = \"1r/m\"\nnodelay = true\n";
  ASSERT_TRUE(start_proxy(o));
  EXPECT_EQ(get("127.0.0.2", "/").status, 200);
  EXPECT_EQ(get("127.0.0.2", "/").status, 429);
  ASSERT_NO_FATAL_FAILURE(reload_proxy(o, 2));
  EXPECT_EQ(get("127.0.0.2", "/").status, 429);
  auto m = scrape();
  EXPECT_EQ((m.at("tlsfront_limit_req_requests_total{zone=\"one\",result=\"rejected\"}")), 2);
  ProxyOptions resized = o;
  resized.extra += "size = \"2m\"\n";
  ASSERT_NO_FATAL_FAILURE(reload_proxy(resized, 3));
  EXPECT_EQ(get("127.0.0.2", "/").status, 200);
  m = scrape();
  EXPECT_EQ((m.at("tlsfront_limit_req_requests_total{zone=\"one\",result=\"rejected\"}")), 0);
}

// Without nodelay the burst is spaced at the rate: the third of three
// requests sent together goes up two intervals later.
TEST_F(Limits, BurstIsDelayedToTheRate) {
  ProxyOptions o;
  o.workers = 1;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_req = [\"slow\"]\n";
  o.extra = "[[limit_req]]\nname = \"slow\"\nrate = \"4r/s\"\nburst = 2\n";
  ASSERT_TRUE(start_proxy(o));
  std::vector<HttpRequest> reqs(3);
  for (auto& r : reqs) r.http2 = true;
  const auto start = steady_clock::now();
  const auto answers = http2_parallel(port(), reqs);
  const auto took = steady_clock::now() - start;
  for (const auto& a : answers) EXPECT_EQ(a.status, 200);
  EXPECT_GE(took, std::chrono::milliseconds(490));  // 2 × 250 ms
  const auto m = scrape();
  EXPECT_EQ((m.at("tlsfront_limit_req_requests_total{zone=\"slow\",result=\"delayed\"}")), 2);
  auto lines = proxy_.wait_log_lines(3);
  int limited = 0;
  for (const auto& l : lines) limited += json_string(l, "limit").value_or("") == "slow";
  EXPECT_EQ(limited, 2);
}

// A client at twice the rate gets about half 429s; another client at a
// tenth of it is never refused. Both spread over 2 workers (a connection
// per request).
TEST_F(Limits, TwiceTheRateGetsAboutHalfRefused) {
  ProxyOptions o;
  o.workers = 2;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_req = [\"api\"]\n";
  o.extra = "[[limit_req]]\nname = \"api\"\nrate = \"10r/s\"\nnodelay = true\n";
  ASSERT_TRUE(start_proxy(o));
  int other_refused = 0;
  std::thread other([&] {
    for (int i = 0; i < 6; ++i) {
      if (get("127.0.0.3", "/").status != 200) ++other_refused;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  int ok = 0, refused = 0;
  const auto start = steady_clock::now();
  for (int i = 0; i < 60; ++i) {  // 20 per second for 3 s
    std::this_thread::sleep_until(start + std::chrono::milliseconds(50 * i));
    const int s = get("127.0.0.2", "/").status;
    ok += s == 200;
    refused += s == 429;
  }
  other.join();
  std::printf("limit_req 10r/s, client at 20r/s: %d passed, %d refused (429) of 60\n", ok, refused);
  EXPECT_EQ(ok + refused, 60);
  EXPECT_GE(refused, 15);
  EXPECT_LE(refused, 45);
  EXPECT_EQ(other_refused, 0);
}

TEST_F(Limits, LimitConnCountsRequestsInProgress) {
  ProxyOptions o;
  o.workers = 2;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_conn = [\"perip\"]\n";
  o.extra = "[[limit_conn]]\nname = \"perip\"\nmax = 2\n";
  ASSERT_TRUE(start_proxy(o));
  std::vector<std::thread> slow;
  std::vector<int> statuses(2);
  for (int i = 0; i < 2; ++i) {
    slow.emplace_back([&, i] { statuses[i] = get("127.0.0.2", "/slow/1500").status; });
  }
  ASSERT_TRUE(wait_until(
      [&] { return scrape()["tlsfront_limit_conn_requests_total{zone=\"perip\",result=\"passed\"}"] == 2; }));
  EXPECT_EQ(get("127.0.0.2", "/").status, 503);  // a third while two are in progress
  EXPECT_EQ(get("127.0.0.3", "/").status, 200);  // another key
  for (auto& t : slow) t.join();
  EXPECT_EQ(statuses[0], 200);
  EXPECT_EQ(statuses[1], 200);
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_limit_conn_keys{zone=\"perip\"}"] == 0; }));
  EXPECT_EQ(get("127.0.0.2", "/").status, 200);  // the slots came back
  EXPECT_EQ(scrape()["tlsfront_requests_refused_total{by=\"limit_conn\"}"], 1);
}

}  // namespace
}  // namespace tlsfront::itest
