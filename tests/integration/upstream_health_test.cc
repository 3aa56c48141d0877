// Passive health and balancing against real backends under load: a backend
// hung with SIGSTOP is ejected after one read timeout and no client request
// fails (idempotent requests move to the other server); a killed backend is
// ejected and comes back after fail_timeout; least_request sends fewer
// requests to a slow backend (the share measured, not assumed).
#include <csignal>
#include <memory>
#include <string>
#include <thread>

#include "harness.h"
#include "load.h"

namespace tlsfront::itest {
namespace {

class UpstreamHealth : public ::testing::Test {
 protected:
  UpstreamHealth() : a_(dir_, "127.0.0.1", 0, "-a"), b_(dir_, "127.0.0.1", 0, "-b"), proxy_(dir_) {}
  void TearDown() override {
    a_.process().signal(SIGCONT);  // a stopped process takes its SIGTERM once continued
  }
  bool start(const std::string& upstream_extra) {
    if (!a_.start() || !b_.start()) return false;
    ProxyOptions o;
    o.upstream_servers = {a_.address(), b_.address()};
    o.upstream_extra = upstream_extra;
    return proxy_.start(o);
  }
  // How many access-log lines name `error` among their upstream_error(s).
  size_t lines_with(const std::string& error) {
    size_t n = 0;
    for (const auto& line : proxy_.wait_log_lines(1)) {
      n += json_string(line, "upstream_error").value_or("").find(error) != std::string::npos;
    }
    return n;
  }

  TempDir dir_;
  Backend a_;
  Backend b_;
  Proxy proxy_;
};

TEST_F(UpstreamHealth, AHungBackendCostsOneTimeoutPerRequestInFlightAndIsEjected) {
  ASSERT_TRUE(start("read_timeout = \"1s\"\nfail_timeout = \"60s\"\n"));
  Load load(proxy_.port(), 2);
  ASSERT_TRUE(wait_until([&] { return a_.count("req") >= 10 && b_.count("req") >= 10; }));

  a_.process().signal(SIGSTOP);  // hung: connections accepted, nothing answered
  const std::string outstanding_a = "tlsfront_upstream_outstanding_requests{upstream=\"backend\",server=\"" +
                                    a_.address() + "\"}";
  EXPECT_TRUE(wait_until([&] { return scrape_metrics(proxy_.admin_port())[outstanding_a] >= 1.0; }));
  // The requests caught at a wait out read_timeout, then go to b.
  ASSERT_TRUE(wait_until([&] { return lines_with("timeout_read") >= 1; }));
  // Three more read_timeouts of load: with a ejected, none of it waits.
  std::this_thread::sleep_for(milliseconds(3'000));
  load.finish();

  EXPECT_EQ(load.failed.load(), 0) << load.ok.load() << " succeeded";
  // At most the requests in flight at a when it hung waited out the
  // timeout (one per client connection); then a was out for every worker.
  const size_t timeouts = lines_with("timeout_read");
  EXPECT_GE(timeouts, 1u);
  EXPECT_LE(timeouts, 2u);
  auto metrics = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(metrics["tlsfront_upstream_ejections_total{upstream=\"backend\",server=\"" + a_.address() + "\"}"], 1.0);
  EXPECT_EQ(metrics[outstanding_a], 0.0);  // the load is over
  // Every failure by its reason, and the response times of the server that answered.
  const std::string a_labels = "upstream=\"backend\",server=\"" + a_.address() + "\"";
  const std::string b_labels = "upstream=\"backend\",server=\"" + b_.address() + "\"";
  EXPECT_EQ(metrics["tlsfront_upstream_attempt_failures_total{" + a_labels + ",reason=\"timeout_read\"}"],
            static_cast<double>(timeouts));
  EXPECT_GT(metrics["tlsfront_upstream_response_seconds_count{" + b_labels + "}"], 100.0);
  EXPECT_EQ(metrics["tlsfront_upstream_response_seconds_bucket{" + b_labels + ",le=\"+Inf\"}"],
            metrics["tlsfront_upstream_response_seconds_count{" + b_labels + "}"]);
  const std::string err = proxy_.process().err();
  EXPECT_NE(err.find("server " + a_.address() + " ejected for 60000 ms"), std::string::npos) << err;
  // The admin listener's view: a out, b in, why a failed.
  const std::string upstreams =
      plain_request(proxy_.admin_port(), "GET /upstreams HTTP/1.1\r\nHost: admin\r\n\r\n");
  EXPECT_NE(upstreams.find("HTTP/1.1 200"), std::string::npos) << upstreams;
  EXPECT_NE(upstreams.find("\"servers_in\":1,\"servers_total\":2,\"panic\":false"), std::string::npos) << upstreams;
  EXPECT_NE(upstreams.find("\"server\":\"" + a_.address() + "\",\"address\":\"" + a_.address() +
                           "\",\"dns\":null,\"weight\":1,\"backup\":false,\"state\":\"ejected\""),
            std::string::npos)
      << upstreams;
  EXPECT_NE(upstreams.find("\"attempt_failures\":{\"timeout_read\":"), std::string::npos) << upstreams;
  EXPECT_NE(upstreams.find("\"server\":\"" + b_.address() + "\",\"address\":\"" + b_.address() +
                           "\",\"dns\":null,\"weight\":1,\"backup\":false,\"state\":\"in\""),
            std::string::npos)
      << upstreams;
}

TEST_F(UpstreamHealth, AKilledBackendIsEjectedAndComesBackAfterFailTimeout) {
  ASSERT_TRUE(start("fail_timeout = \"1s\"\n"));
  Load load(proxy_.port(), 2);
  ASSERT_TRUE(wait_until([&] { return a_.count("req") >= 10; }));
  a_.stop();  // refused from now on
  const size_t b_at_stop = b_.count("req");
  ASSERT_TRUE(wait_until([&] { return b_.count("req") >= b_at_stop + 100; }));
  const size_t a_before = a_.count("req");
  ASSERT_TRUE(a_.start());  // the same port
  // Back after its ejection: requests reach it again.
  EXPECT_TRUE(wait_until([&] { return a_.count("req") >= a_before + 10; }));
  load.finish();
  EXPECT_EQ(load.failed.load(), 0) << load.ok.load() << " succeeded";
  // Whichever it met first (a reset pooled connection, a refused connect):
  // named in the log.
  EXPECT_GE(lines_with("refused") + lines_with("reset") + lines_with("closed"), 1u);
}

TEST_F(UpstreamHealth, LeastRequestSendsFewerRequestsToASlowBackend) {
  a_.set_args({"--delay-ms", "50"});  // a answers in 50 ms, b at once
  ASSERT_TRUE(start(""));
  Load load(proxy_.port(), 8);
  ASSERT_TRUE(wait_until([&] { return a_.count("req") + b_.count("req") >= 2000; }, milliseconds(30'000)));
  load.finish();
  EXPECT_EQ(load.failed.load(), 0);
  const double share = static_cast<double>(a_.count("req")) / static_cast<double>(a_.count("req") + b_.count("req"));
  // Round robin would give it half; least_request gives it what it can
  // take (8 clients: a few requests in flight at a at a time).
  EXPECT_LT(share, 0.25) << "slow backend's share " << share;
  std::printf("least_request: the slow backend's share %.3f of %zu requests\n", share,
              a_.count("req") + b_.count("req"));
}

}  // namespace
}  // namespace tlsfront::itest
