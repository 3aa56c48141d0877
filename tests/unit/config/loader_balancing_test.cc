// [[upstream]] servers as tables (weight, backup), balance = "hash" with its
// key, slow_start and the health_check table: what loads, and each error
// with its position.
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

constexpr std::string_view kHead = R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[route]]
upstream = "api"
[[upstream]]
name = "api"
)";

std::string upstream_with(std::string_view upstream) { return std::string(kHead) + std::string(upstream); }

TEST(LoaderBalancing, ServersWithWeightAndBackup) {
  Config c = load_ok(upstream_with(R"(servers = ["127.0.0.1:9000", { address = "127.0.0.1:9001", weight = 3 },
           { address = "api.internal:9002", backup = true }]
slow_start = "30s"
)"),
                     "t.toml");
  const Upstream& u = c.upstreams[0];
  ASSERT_EQ(u.servers.size(), 3u);
  EXPECT_EQ(u.servers[1].port, 9001);
  EXPECT_EQ(u.options_of(0), ServerOptions{});
  EXPECT_EQ(u.options_of(1).weight, 3);
  EXPECT_FALSE(u.options_of(1).backup);
  EXPECT_TRUE(u.options_of(2).backup);
  EXPECT_EQ(u.server_positions.at[1], "t.toml:10:42");
  EXPECT_EQ(u.slow_start, std::chrono::seconds(30));
  EXPECT_TRUE(u.failure_statuses.empty());
  EXPECT_FALSE(u.health_check.enabled);
}

TEST(LoaderBalancing, HashKeys) {
  Config c = load_ok(upstream_with("servers = [\"127.0.0.1:9000\"]\nbalance = \"hash\"\nhash = \"$header_X_User\"\n"), "t.toml");
  EXPECT_EQ(c.upstreams[0].balance, Balance::Hash);
  EXPECT_EQ(c.upstreams[0].hash.kind, HashKey::Kind::Header);
  EXPECT_EQ(c.upstreams[0].hash.name, "x-user");
  c = load_ok(upstream_with("servers = [\"127.0.0.1:9000\"]\nbalance = \"hash\"\nhash = \"$cookie_Session\"\n"), "t.toml");
  EXPECT_EQ(c.upstreams[0].hash.kind, HashKey::Kind::Cookie);
  EXPECT_EQ(c.upstreams[0].hash.name, "Session");
  c = load_ok(upstream_with("servers = [\"127.0.0.1:9000\"]\nbalance = \"hash\"\nhash = \"$remote_addr\"\n"), "t.toml");
  EXPECT_EQ(c.upstreams[0].hash.kind, HashKey::Kind::RemoteAddr);
}

TEST(LoaderBalancing, HealthCheck) {
  Config c = load_ok(upstream_with(R"(servers = ["127.0.0.1:9000"]
health_check = { path = "/healthz", interval = "2s", timeout = "500ms", rise = 1, fall = 2, expect_status = "200-299", host = "api.internal" }
)"),
                     "t.toml");
  const HealthCheck& hc = c.upstreams[0].health_check;
  EXPECT_TRUE(hc.enabled);
  EXPECT_EQ(hc.kind, HealthCheck::Kind::Http);
  EXPECT_EQ(hc.path, "/healthz");
  EXPECT_EQ(hc.interval, std::chrono::seconds(2));
  EXPECT_EQ(hc.timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(hc.rise, 1);
  EXPECT_EQ(hc.fall, 2);
  EXPECT_EQ(hc.expect_min, 200);
  EXPECT_EQ(hc.expect_max, 299);
  EXPECT_EQ(hc.host, "api.internal");
  EXPECT_EQ(hc.origin, "t.toml:11:1");
  c = load_ok(upstream_with("servers = [\"127.0.0.1:9000\"]\nprotocol = \"h2c\"\nhealth_check = { type = \"grpc\", service = \"orders\" }\n"),
              "t.toml");
  EXPECT_EQ(c.upstreams[0].health_check.kind, HealthCheck::Kind::Grpc);
  EXPECT_EQ(c.upstreams[0].health_check.service, "orders");
  // The defaults: HAProxy's rise 2 / fall 3, nginx's 5 s and 2xx-3xx.
  c = load_ok(upstream_with("servers = [\"127.0.0.1:9000\"]\nhealth_check = {}\n"), "t.toml");
  EXPECT_EQ(c.upstreams[0].health_check.path, "/");
  EXPECT_EQ(c.upstreams[0].health_check.interval, std::chrono::seconds(5));
  EXPECT_EQ(c.upstreams[0].health_check.rise, 2);
  EXPECT_EQ(c.upstreams[0].health_check.fall, 3);
}

TEST(LoaderBalancing, Errors) {
  const std::string one = "servers = [\"127.0.0.1:9000\"]\n";
  EXPECT_EQ(load_error(upstream_with("servers = [{ address = \"127.0.0.1:9000\", weight = 0 }]\n")),
            "t.toml:10:42: upstream[0].servers[0].weight: must be between 1 and 1000, got 0");
  EXPECT_EQ(load_error(upstream_with("servers = [{ weight = 2 }]\n")),
            "t.toml:10:12: upstream[0].servers[0].address: missing required key");
  EXPECT_EQ(load_error(upstream_with("servers = [{ address = \"127.0.0.1:9000\", wieght = 2 }]\n")),
            "t.toml:10:42: upstream[0].servers[0].wieght: unknown key \"wieght\"");
  EXPECT_EQ(load_error(upstream_with("servers = [{ address = \"127.0.0.1:9000\", backup = true }]\n")),
            "t.toml:10:1: upstream[0].servers: every server is a backup: at least one must not be");
  EXPECT_EQ(load_error(upstream_with(one + "balance = \"hash\"\n")),
            "t.toml:11:1: upstream[0].balance: balance = \"hash\" needs a `hash` key");
  EXPECT_EQ(load_error(upstream_with(one + "hash = \"$remote_addr\"\n")),
            "t.toml:11:1: upstream[0].hash: needs balance = \"hash\"");
  EXPECT_EQ(load_error(upstream_with(one + "balance = \"hash\"\nhash = \"$uri\"\n")),
            "t.toml:12:1: upstream[0].hash: unknown hash key \"$uri\" (expected \"$remote_addr\", \"$header_NAME\" "
            "or \"$cookie_NAME\")");
  EXPECT_EQ(load_error(upstream_with("servers = [\"127.0.0.1:9000\", { address = \"127.0.0.1:9001\", backup = true }]\n"
                            "balance = \"hash\"\nhash = \"$remote_addr\"\n")),
            "t.toml:11:1: upstream[0].balance: balance = \"hash\" has no backup servers");
  EXPECT_EQ(load_error(upstream_with(one + "health_check = { type = \"grpc\" }\n")),
            "t.toml:11:18: upstream[0].health_check.type: gRPC health checks need protocol = \"h2c\" or \"h2\"");
  EXPECT_EQ(load_error(upstream_with(one + "health_check = { timeout = \"10s\" }\n")),
            "t.toml:11:18: upstream[0].health_check.timeout: must not be longer than interval");
  EXPECT_EQ(load_error(upstream_with(one + "health_check = { expect_status = \"2xx\" }\n")),
            "t.toml:11:18: upstream[0].health_check.expect_status: expected a status or a range of them, \"200\" or "
            "\"200-399\" (100..599)");
  EXPECT_EQ(load_error(upstream_with(one + "health_check = { path = \"healthz\" }\n")),
            "t.toml:11:18: upstream[0].health_check.path: must start with \"/\"");
  EXPECT_EQ(load_error(upstream_with(one + "failure_statuses = [503, 200]\n")),
            "t.toml:11:26: upstream[0].failure_statuses[1]: a status in 400..599, got 200");
  EXPECT_EQ(load_error(upstream_with(one + "failure_statuses = [503, 503]\n")),
            "t.toml:11:26: upstream[0].failure_statuses[1]: 503 is listed twice");
  EXPECT_EQ(load_error(upstream_with(one + "health_check = true\n")),
            "t.toml:11:16: upstream[0].health_check: expected a table, got boolean");
}

}  // namespace
}  // namespace tlsfront::config
