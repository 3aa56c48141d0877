// [[limit_req]] store = "redis" against a real redis-server on loopback: two
// tlsfront nodes (2 workers each) share one limit; a Redis killed mid-test
// lets requests through (fail open), counted and logged once.
#include <sys/stat.h>

#include <chrono>
#include <string>

#include "harness.h"
#include "redis_nodes.h"
#include "shared/redis_server.h"

namespace tlsfront::itest {
namespace {

class LimitsRedis : public RedisNodesTest {
 protected:
  // A zone of `rate` with `burst`, nodelay, in Redis, on every route.
  // `auth`: more of the zone's keys (redis_user, redis_password_file).
  bool start_nodes(const std::string& rate, int burst, const std::string& auth = "") {
    const std::string zone =
        "[[limit_req]]\nname = \"shared\"\nrate = \"" + rate + "\"\nburst = " + std::to_string(burst) +
        "\nnodelay = true\nstore = \"redis\"\nredis = \"127.0.0.1:" + std::to_string(redis_.port()) +
        "\"\nredis_timeout = \"100ms\"\n" + auth;
    ProxyOptions a;
    a.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_req = [\"shared\"]\n";
    a.extra = zone;
    if (!start_proxy(a)) return false;
    ProxyOptions b = a;
    b.upstream_servers = {backend_.address()};
    return proxy_b_.start(b);
  }

  static int get(int port, const std::string& source) {
    TlsClient c;
    TlsOptions o;
    o.source_ip = source;
    if (!c.connect(port, o)) return 0;
    c.write("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    auto r = c.read_response();
    return r ? r->status : 0;
  }
};

// One budget for both nodes: 1 + burst requests in all, alternating nodes.
TEST_F(LimitsRedis, TwoNodesShareOneLimit) {
  ASSERT_TRUE(redis_.start());
  ASSERT_TRUE(start_nodes("1r/m", 3));
  int ok = 0, refused = 0;
  for (int i = 0; i < 8; ++i) {
    const int s = get(i % 2 == 0 ? port() : proxy_b_.port(), "127.0.0.2");
    ok += s == 200;
    refused += s == 429;
  }
  EXPECT_EQ(ok, 4);  // alone, each node would have let 8 through
  EXPECT_EQ(refused, 4);
  EXPECT_EQ(get(proxy_b_.port(), "127.0.0.3"), 200);  // another client
  EXPECT_EQ(redis_.keys("tlsfront:lreq:shared:*").size(), 2u);
  const auto a = scrape_metrics(proxy_.admin_port());
  const auto b = scrape_metrics(proxy_b_.admin_port());
  const std::string rejected = "tlsfront_limit_req_requests_total{zone=\"shared\",result=\"rejected\"}";
  EXPECT_EQ(a.at(rejected) + b.at(rejected), 4);
  EXPECT_EQ(a.at("tlsfront_limit_redis_errors_total") + b.at("tlsfront_limit_redis_errors_total"), 0);
}

// At twice the zone's rate over both nodes, about half are refused.
TEST_F(LimitsRedis, TwiceTheRateOverTwoNodes) {
  ASSERT_TRUE(redis_.start());
  ASSERT_TRUE(start_nodes("10r/s", 0));
  int ok = 0, refused = 0;
  const auto start = Clock::now();
  for (int i = 0; i < 40; ++i) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(50 * i));
    const int s = get(i % 2 == 0 ? port() : proxy_b_.port(), "127.0.0.2");
    ok += s == 200;
    refused += s == 429;
  }
  std::printf("limit_req 10r/s in redis, client at 20r/s over 2 nodes: %d passed, %d refused of 40\n", ok, refused);
  EXPECT_EQ(ok + refused, 40);
  EXPECT_GE(refused, 10);
  EXPECT_LE(refused, 30);
}

// Through an ACL user with a password file, and after Redis lost the script
// (SCRIPT FLUSH, as after a restart or failover): EVALSHA's NOSCRIPT is
// answered by one EVAL, the limit still holds, and nothing fails open.
TEST_F(LimitsRedis, AclUserAndAFlushedScriptCache) {
  ASSERT_TRUE(redis_.start({"--requirepass", "default-pw"}, "default-pw"));
  ASSERT_EQ(redis_.cli({"ACL", "SETUSER", "edge", "on", ">edge-pw", "~tlsfront:lreq:*", "+@all"}).out, "OK\n");
  write_file(dir_.file("edge.pw"), "edge-pw\n");
  ::chmod(dir_.file("edge.pw").c_str(), 0600);
  ASSERT_TRUE(start_nodes("1r/m", 1, "redis_user = \"edge\"\nredis_password_file = \"" + dir_.file("edge.pw") + "\"\n"));
  EXPECT_EQ(get(port(), "127.0.0.2"), 200);
  EXPECT_EQ(get(proxy_b_.port(), "127.0.0.2"), 200);  // the burst
  EXPECT_EQ(get(port(), "127.0.0.2"), 429);
  ASSERT_EQ(redis_.cli({"SCRIPT", "FLUSH"}).out, "OK\n");
  EXPECT_EQ(get(port(), "127.0.0.2"), 429);
  EXPECT_EQ(get(proxy_b_.port(), "127.0.0.2"), 429);
  EXPECT_EQ(get(proxy_b_.port(), "127.0.0.3"), 200);  // another client
  EXPECT_EQ(redis_.keys("tlsfront:lreq:shared:*").size(), 2u);
  for (Proxy* p : {&proxy_, &proxy_b_}) {
    const auto m = scrape_metrics(p->admin_port());
    EXPECT_EQ(m.at("tlsfront_limit_redis_errors_total"), 0) << p->process().err();
    EXPECT_EQ(m.at("tlsfront_limit_req_requests_total{zone=\"shared\",result=\"failed_open\"}"), 0);
  }
}

TEST_F(LimitsRedis, RedisKilledFailsOpenCountedAndLoggedOnce) {
  ASSERT_TRUE(redis_.start());
  ASSERT_TRUE(start_nodes("1r/m", 0));
  EXPECT_EQ(get(port(), "127.0.0.2"), 200);
  EXPECT_EQ(get(port(), "127.0.0.2"), 429);
  redis_.stop();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(get(port(), "127.0.0.2"), 200) << i;  // fail open
  const auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_GE(m.at("tlsfront_limit_redis_errors_total"), 6);
  EXPECT_GE(m.at("tlsfront_limit_req_requests_total{zone=\"shared\",result=\"failed_open\"}"), 6);
  // One trouble line per worker that saw it, not one per request.
  const std::string err = proxy_.process().err();
  size_t lines = 0;
  for (size_t at = err.find("limit_req: redis"); at != std::string::npos; at = err.find("limit_req: redis", at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 2u) << err;
}

}  // namespace
}  // namespace tlsfront::itest
