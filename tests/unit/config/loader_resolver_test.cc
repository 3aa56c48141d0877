// [[upstream]] servers by DNS name and the [resolver] table: what loads
// (names lowercased, positions kept for start-up errors), the defaults, and
// each error with its position.
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

constexpr std::string_view kNamed = R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "api"
servers = ["127.0.0.1:9000",
           "API-Backend.internal:8080"]
[[route]]
upstream = "api"
[[upstream]]
name = "more"
servers = ["127.0.0.1:9001"]
)";

TEST(LoaderResolver, ServersMayBeDnsNames) {
  Config c = load_ok(std::string(kNamed), "t.toml");
  ASSERT_EQ(c.upstreams[0].servers.size(), 2u);
  EXPECT_EQ(c.upstreams[0].servers[1].host, "api-backend.internal");
  EXPECT_EQ(c.upstreams[0].servers[1].port, 8080);
  ASSERT_EQ(c.upstreams[0].server_positions.at.size(), 2u);
  EXPECT_EQ(c.upstreams[0].server_positions.at[1], "t.toml:9:12");
  EXPECT_TRUE(c.upstreams[0].resolve_at_start);
  // [resolver] defaults: the system's servers, TTLs clamped to 1 s..5 min.
  EXPECT_TRUE(c.resolver.addresses.empty());
  EXPECT_FALSE(c.resolver.valid.has_value());
  EXPECT_EQ(c.resolver.min_ttl, 1s);
  EXPECT_EQ(c.resolver.max_ttl, 300s);
  EXPECT_TRUE(c.resolver.ipv4 && c.resolver.ipv6);
}

TEST(LoaderResolver, PositionsAreNotPartOfTheUpstream) {
  // A reload that only moves lines keeps the group (and its pools).
  Config a = load_ok(std::string(kNamed), "t.toml");
  Config b = load_ok("\n\n" + std::string(kNamed), "t.toml");
  EXPECT_NE(a.upstreams[0].server_positions.at[1], b.upstreams[0].server_positions.at[1]);
  EXPECT_EQ(a.upstreams[0], b.upstreams[0]);
}

TEST(LoaderResolver, ResolverTable) {
  Config c = load_ok(std::string(kNamed) + R"(resolve_at_start = false
[resolver]
addresses = ["127.0.0.53:53", "[::1]:5353"]
valid = "30s"
min_ttl = "2s"
max_ttl = "1m"
timeout = "500ms"
ipv6 = false
)");
  EXPECT_FALSE(c.upstreams[1].resolve_at_start);  // the table it was written in
  ASSERT_EQ(c.resolver.addresses.size(), 2u);
  EXPECT_EQ(c.resolver.addresses[1].to_string(), "[::1]:5353");
  EXPECT_EQ(c.resolver.valid, std::optional<Millis>(30s));
  EXPECT_EQ(c.resolver.min_ttl, 2s);
  EXPECT_EQ(c.resolver.max_ttl, 60s);
  EXPECT_EQ(c.resolver.timeout, 500ms);
  EXPECT_FALSE(c.resolver.ipv6);
}

TEST(LoaderResolver, Errors) {
  EXPECT_EQ(load_error(std::string(kNamed) + "[resolver]\naddresses = [\"dns.internal:53\"]\n"),
            R"(t.toml:16:14: resolver.addresses[0]: invalid address "dns.internal:53" (host must be an IP literal or "localhost"; names are not resolved))");
  EXPECT_EQ(load_error(std::string(kNamed) + "[resolver]\nmin_ttl = \"10m\"\n"),
            "t.toml:16:1: resolver.min_ttl: must not be above max_ttl");
  EXPECT_EQ(load_error(std::string(kNamed) + "[resolver]\nipv4 = false\nipv6 = false\n"),
            "t.toml:17:1: resolver.ipv6: ipv4 and ipv6 cannot both be false");
  EXPECT_EQ(load_error(std::string(kNamed) + "[resolver]\nvalids = \"1s\"\n"),
            R"(t.toml:16:1: resolver.valids: unknown key "valids")");
  std::string bad(kNamed);
  bad.replace(bad.find("API-Backend.internal"), 20, "api.backend.123");
  EXPECT_EQ(load_error(bad),
            R"(t.toml:9:12: upstream[0].servers[1]: invalid address "api.backend.123:8080" (host must be an IP literal or a DNS name (labels of letters, digits, "-" and "_")))");
}

}  // namespace
}  // namespace tlsfront::config
