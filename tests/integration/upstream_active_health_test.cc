// Active health checks, weights and backups against real backends under
// load: a killed server is marked down within fall × interval and comes
// back after rise; a reload keeps the verdict; the gRPC health-checking
// protocol against a real grpcio service; weights shared within ±5 % over
// 10,000 requests; a backup used only while every primary is out.
#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <thread>

#include "grpc_peer.h"
#include "harness.h"
#include "load.h"

namespace tlsfront::itest {
namespace {

using Clock = std::chrono::steady_clock;

class ActiveHealth : public ::testing::Test {
 protected:
  ActiveHealth() : a_(dir_, "127.0.0.1", 0, "-a"), b_(dir_, "127.0.0.1", 0, "-b"), proxy_(dir_) {}
  bool start(std::vector<std::string> servers, const std::string& upstream_extra) {
    if (!a_.start() || !b_.start()) return false;
    ProxyOptions o;
    for (auto& s : servers) {
      for (auto [from, to] : {std::pair{"A", a_.address()}, std::pair{"B", b_.address()}}) {
        if (auto at = s.find(from); at != std::string::npos) s.replace(at, 1, to);
      }
    }
    o.upstream_servers = std::move(servers);
    o.upstream_extra = upstream_extra;
    return proxy_.start(o);
  }
  bool stderr_has(const std::string& s, milliseconds timeout = kDefaultDeadline) {
    return wait_until([&] { return proxy_.process().err().find(s) != std::string::npos; }, timeout);
  }
  std::string upstreams() {
    return plain_request(proxy_.admin_port(), "GET /upstreams HTTP/1.1\r\nHost: admin\r\n\r\n");
  }
  std::string labels(const Backend& b) { return "upstream=\"backend\",server=\"" + b.address() + "\""; }

  TempDir dir_;
  Backend a_;
  Backend b_;
  Proxy proxy_;
};

// Passive health off (max_fails = 0): only the checks take a out.
constexpr const char* kChecks =
    "max_fails = 0\nhealth_check = { path = \"/healthz\", interval = \"200ms\", timeout = \"100ms\", rise = 2, "
    "fall = 2 }\n";

TEST_F(ActiveHealth, AKilledServerIsDownWithinFallTimesIntervalAndBackAfterRise) {
  ASSERT_TRUE(start({"A", "B"}, std::string(kChecks) + "slow_start = \"3s\"\n"));
  Load load(proxy_.port(), 2);
  ASSERT_TRUE(wait_until([&] { return a_.count("req") >= 10 && b_.count("req") >= 10; }));
  const auto killed = Clock::now();
  a_.stop();
  ASSERT_TRUE(stderr_has("server " + a_.address() + " is down after 2 failed health check(s), the last: refused"));
  const auto down_after = std::chrono::duration_cast<milliseconds>(Clock::now() - killed);
  // Down: no request is even tried on a any more (at most the two in
  // flight when the verdict came met its refused connect).
  const std::string refused = "tlsfront_upstream_attempt_failures_total{" + labels(a_) + ",reason=\"refused\"}";
  const double refused_at_down = scrape_metrics(proxy_.admin_port())[refused];
  const size_t b_at_down = b_.count("req");
  ASSERT_TRUE(wait_until([&] { return b_.count("req") >= b_at_down + 200; }));
  EXPECT_LE(scrape_metrics(proxy_.admin_port())[refused], refused_at_down + 2);
  EXPECT_NE(upstreams().find("\"address\":\"" + a_.address() + "\",\"dns\":null,\"weight\":1,\"backup\":false,"
                             "\"state\":\"down\""),
            std::string::npos)
      << upstreams();
  auto metrics = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(metrics["tlsfront_upstream_server_up{" + labels(a_) + "}"], 0.0);
  EXPECT_EQ(metrics["tlsfront_upstream_server_up{" + labels(b_) + "}"], 1.0);
  EXPECT_EQ(metrics["tlsfront_upstream_servers_healthy{upstream=\"backend\"}"], 1.0);
  EXPECT_GE(metrics["tlsfront_upstream_health_checks_total{" + labels(a_) + ",result=\"failed\"}"], 2.0);
  EXPECT_GE(metrics["tlsfront_upstream_health_checks_total{" + labels(b_) + ",result=\"passed\"}"], 2.0);

  // Back: two passed checks, then requests reach it again.
  const size_t a_before = a_.count("req");
  ASSERT_TRUE(a_.start());
  ASSERT_TRUE(stderr_has("server " + a_.address() + " is up after 2 passed health check(s)"));
  const auto up = Clock::now();
  // slow_start: a's share of the next 300 requests starts near 10 % of its
  // weight (weights 10..20 against b's 100), and is about half once the
  // ramp is over.
  auto share_of_next = [&](size_t n) {
    const size_t a0 = a_.count("req"), b0 = b_.count("req");
    EXPECT_TRUE(wait_until([&] { return a_.count("req") + b_.count("req") >= a0 + b0 + n; }));
    const double a = static_cast<double>(a_.count("req") - a0);
    return a / (a + static_cast<double>(b_.count("req") - b0));
  };
  const double early = share_of_next(300);
  const auto early_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - up).count();
  std::this_thread::sleep_until(up + milliseconds(3'200));
  const double late = share_of_next(600);
  EXPECT_GT(a_.count("req"), a_before);
  EXPECT_LT(early, 0.3);
  EXPECT_GT(late, 0.35);
  load.finish();
  // Every request that met a dead a moved to b (refused: nothing sent).
  EXPECT_EQ(load.failed.load(), 0) << load.ok.load() << " succeeded";
  std::printf("active checks: down %lld ms after the kill (fall 2 x interval 200 ms, timeout 100 ms); "
              "slow_start 3 s: share %.3f in its first %lld ms back, %.3f after the ramp\n",
              static_cast<long long>(down_after.count()), early, static_cast<long long>(early_ms), late);
}

TEST_F(ActiveHealth, AReloadKeepsTheVerdictOfTheServersThatStay) {
  ASSERT_TRUE(start({"A", "B"}, kChecks));
  a_.stop();
  ASSERT_TRUE(stderr_has("is down after 2 failed health check(s)"));
  // A reload that changes the group's settings: the checker makes its
  // group anew, and the server's verdict stays down (no second "down").
  std::string text = read_file(proxy_.config_path());
  text.replace(text.find("max_fails = 0"), 13, "max_fails = 0\nread_timeout = \"30s\"");
  write_file(proxy_.config_path(), text);
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(stderr_has("generation 2 is live"));
  std::this_thread::sleep_for(milliseconds(600));  // three rounds of checks
  const std::string err = proxy_.process().err();
  size_t downs = 0;
  for (size_t at = err.find("is down after"); at != std::string::npos; at = err.find("is down after", at + 1)) ++downs;
  EXPECT_EQ(downs, 1u) << err;
  EXPECT_NE(upstreams().find("\"state\":\"down\""), std::string::npos) << upstreams();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(http_get(proxy_.port(), "/x").status, 200);
  // Checks off: the verdict is lifted with them.
  text = read_file(proxy_.config_path());
  const size_t hc = text.find("health_check = {");
  text.erase(hc, text.find('\n', hc) - hc);
  write_file(proxy_.config_path(), text);
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(stderr_has("generation 3 is live"));
  EXPECT_TRUE(wait_until([&] { return upstreams().find("\"state\":\"down\"") == std::string::npos; }));
}

TEST_F(ActiveHealth, WeightsShareTheRequestsWithinFivePercent) {
  ASSERT_TRUE(start({"{ address = \"A\", weight = 3 }", "B"}, ""));
  Load load(proxy_.port(), 8);
  ASSERT_TRUE(wait_until([&] { return a_.count("req") + b_.count("req") >= 10'000; }, milliseconds(120'000)));
  load.finish();
  EXPECT_EQ(load.failed.load(), 0);
  const double a = static_cast<double>(a_.count("req"));
  const double share = a / (a + static_cast<double>(b_.count("req")));
  EXPECT_NEAR(share, 0.75, 0.05) << "weight 3 of 4";
  std::printf("weights 3:1 (least_request, 8 clients): %.3f of %.0f requests to the weight-3 server\n", share,
              a + static_cast<double>(b_.count("req")));
}

TEST_F(ActiveHealth, ABackupTakesRequestsOnlyWhileEveryPrimaryIsOut) {
  ASSERT_TRUE(start({"A", "{ address = \"B\", backup = true }"}, kChecks));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(http_get(proxy_.port(), "/x").status, 200);
  EXPECT_EQ(b_.count("req"), 0u);
  a_.stop();
  ASSERT_TRUE(stderr_has("is down after 2 failed health check(s)"));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(http_get(proxy_.port(), "/x").status, 200);
  EXPECT_EQ(b_.count("req"), 20u);
  ASSERT_TRUE(a_.start());
  ASSERT_TRUE(stderr_has("is up after 2 passed health check(s)"));
  // (A restarted backend numbers its records from 1 again: b's count says
  // where these went.)
  for (int i = 0; i < 20; ++i) EXPECT_EQ(http_get(proxy_.port(), "/x").status, 200);
  EXPECT_EQ(b_.count("req"), 20u);
}

TEST_F(ActiveHealth, AHashKeyAlwaysReachesTheSameServer) {
  ASSERT_TRUE(start({"A", "B"}, "balance = \"hash\"\nhash = \"$header_x_user\"\n"));
  auto get_as = [&](const std::string& user) {
    HttpRequest req;
    req.path = "/x";
    req.headers = {"X-User: " + user};
    return CurlClient(proxy_.port()).perform(req).status;
  };
  for (int i = 0; i < 20; ++i) ASSERT_EQ(get_as("alice"), 200);
  // All of alice's requests on one server.
  EXPECT_TRUE((a_.count("req") == 20 && b_.count("req") == 0) || (a_.count("req") == 0 && b_.count("req") == 20));
  // Many users: both servers get some.
  const size_t a_before = a_.count("req"), b_before = b_.count("req");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(get_as("user-" + std::to_string(i)), 200);
  EXPECT_GT(a_.count("req") - a_before, 20u);
  EXPECT_GT(b_.count("req") - b_before, 20u);
}

// The gRPC health protocol against a real grpcio service: h2c, or h2 (TLS
// with the group's own verification).
class ActiveHealthGrpc : public ::testing::TestWithParam<bool> {};

TEST_P(ActiveHealthGrpc, TheGrpcHealthProtocolAgainstARealService) {
  const bool tls = GetParam();
  TempDir dir;
  Process server;
  const std::string port_file = dir.file("grpc.port");
  std::vector<std::string> args;
  if (tls) args = {"--tls", pki("localhost.chain.pem"), pki("localhost.key")};
  const int grpc_port = start_grpc_server(server, dir, port_file, args);
  ASSERT_NE(grpc_port, 0);
  Proxy proxy(dir);
  ProxyOptions o;
  o.upstream_servers = {"127.0.0.1:" + std::to_string(grpc_port)};
  o.upstream_extra = std::string(tls ? "protocol = \"h2\"\ntls = { trusted_ca = \"" + pki("root.pem") + "\" }\n"
                                     : "protocol = \"h2c\"\n") +
                     "max_fails = 0\nhealth_check = { type = \"grpc\", service = \"test.Echo\", "
                     "interval = \"200ms\", timeout = \"150ms\", rise = 1, fall = 2 }\n";
  ASSERT_TRUE(proxy.start(o));
  const std::string labels = "upstream=\"backend\",server=\"127.0.0.1:" + std::to_string(grpc_port) + "\"";
  ASSERT_TRUE(wait_until([&] {
    return scrape_metrics(proxy.admin_port())["tlsfront_upstream_health_checks_total{" + labels +
                                              ",result=\"passed\"}"] >= 2.0;
  })) << proxy.process().err();
  EXPECT_NE(read_file(port_file + ".checks").find("test.Echo\n"), std::string::npos);
  write_file(port_file + ".health", "NOT_SERVING");
  ASSERT_TRUE(wait_until([&] {
    return proxy.process().err().find("is down after 2 failed health check(s), the last: not SERVING") !=
           std::string::npos;
  }));
  write_file(port_file + ".health", "SERVING");
  EXPECT_TRUE(wait_until(
      [&] { return proxy.process().err().find("is up after 1 passed health check(s)") != std::string::npos; }));
  proxy.stop();
  server.stop();
}

INSTANTIATE_TEST_SUITE_P(Protocols, ActiveHealthGrpc, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "h2" : "h2c"; });

}  // namespace
}  // namespace tlsfront::itest
