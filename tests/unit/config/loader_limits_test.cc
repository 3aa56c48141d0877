// access ([[listen]], [[route]]), [[limit_req]], [[limit_conn]], a route's
// limit_req / limit_conn and [limits] max_connections_per_client,
// max_full_handshakes_per_client: values, defaults and errors.
#include "config/loader.h"
#include "loader_test_support.h"

#include <gtest/gtest.h>

namespace tlsfront::config {
namespace {

TEST(LoaderLimits, Defaults) {
  const Config c = load_ok(std::string(kMinimal));
  EXPECT_TRUE(c.listeners[0].access.empty());
  EXPECT_TRUE(c.routes[0].access.empty());
  EXPECT_TRUE(c.limit_req.empty());
  EXPECT_EQ(c.limits.max_connections_per_client, 0u);
  EXPECT_EQ(c.limits.max_full_handshakes_per_client, 0u);
}

TEST(LoaderLimits, AccessRulesInOrder) {
  const Config c = load_ok(with(R"(access = ["deny 10.0.0.1", "allow 10.0.0.0/8", "allow ::1", "deny all"]
)"));
  const auto& rules = c.routes[0].access;
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_FALSE(rules[0].allow);
  EXPECT_EQ(rules[0].block.to_string(), "10.0.0.1/32");
  EXPECT_TRUE(rules[3].all);
  EXPECT_FALSE(access_allows(rules, *IpAddress::parse("10.0.0.1")));  // first match wins
  EXPECT_TRUE(access_allows(rules, *IpAddress::parse("10.2.3.4")));
  EXPECT_TRUE(access_allows(rules, *IpAddress::parse("::1")));
  EXPECT_FALSE(access_allows(rules, *IpAddress::parse("192.0.2.1")));
  EXPECT_TRUE(access_allows({}, *IpAddress::parse("192.0.2.1")));  // no rule: allowed
}

TEST(LoaderLimits, Zones) {
  const Config c = load_ok(with(R"(limit_req = ["b", "a"]
limit_conn = ["perip"]

[[limit_req]]
name = "a"
rate = "10r/s"
burst = 20
delay = 5
size = "1m"

[[limit_req]]
name = "b"
key = "$header_x_api_key"
rate = "30r/m"
nodelay = true

[[limit_conn]]
name = "perip"
key = "$host"
max = 4

[[limit_conn]]
name = "partner"
key = "$ssl_client_fingerprint"
max = 2

[limits]
max_connections_per_client = 16
max_full_handshakes_per_client = 30
)"));
  ASSERT_EQ(c.limit_req.size(), 2u);
  EXPECT_EQ(c.limit_req[0].emission_ns, 100'000'000u);
  EXPECT_EQ(c.limit_req[0].burst, 20u);
  EXPECT_EQ(c.limit_req[0].delay, 5u);
  EXPECT_EQ(c.limit_req[0].size_bytes, 1u << 20);
  EXPECT_EQ(c.limit_req[0].key, LimitKey::RemoteAddr);
  EXPECT_EQ(c.limit_req[1].emission_ns, 2'000'000'000u);
  EXPECT_EQ(c.limit_req[1].key, LimitKey::Header);
  EXPECT_EQ(c.limit_req[1].header, "x-api-key");
  EXPECT_EQ(c.limit_req[1].delay, LimitReqZone::kNoDelay);
  EXPECT_EQ(c.limit_conn[0].key, LimitKey::Host);
  EXPECT_EQ(c.limit_conn[0].max, 4u);
  EXPECT_EQ(c.limit_conn[1].key, LimitKey::ClientFingerprint);
  EXPECT_EQ(c.routes[0].limit_req, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(c.routes[0].limit_conn, (std::vector<size_t>{0}));
  EXPECT_EQ(c.limits.max_connections_per_client, 16u);
  EXPECT_EQ(c.limits.max_full_handshakes_per_client, 30u);
}

TEST(LoaderLimits, Errors) {
  EXPECT_EQ(load_error(with("access = [\"permit 10.0.0.0/8\"]\n")),
            "t.toml:14:11: route[0].access[0]: \"permit 10.0.0.0/8\": expected \"allow <CIDR>\", \"deny <CIDR>\", "
            "\"allow all\" or \"deny all\"");
  EXPECT_EQ(load_error(with("access = [\"allow 10.0.0.1/8\"]\n")),
            "t.toml:14:11: route[0].access[0]: \"10.0.0.1/8\": host bits set (the network is 10.0.0.0/8)");
  EXPECT_EQ(load_error(with("access = []\n")),
            "t.toml:14:1: route[0].access: must not be empty (omit it to allow everyone)");
  EXPECT_EQ(load_error(with("limit_req = [\"nope\"]\n")),
            "t.toml:14:14: route[0].limit_req[0]: no [[limit_req]] named \"nope\"");
  EXPECT_EQ(load_error(with("\n[[limit_req]]\nname = \"a\"\nrate = \"10r/h\"\n")),
            "t.toml:17:1: limit_req[0].rate: must be \"<N>r/s\" or \"<N>r/m\" with N in 1..1000000, got \"10r/h\"");
  EXPECT_EQ(load_error(with("\n[[limit_req]]\nname = \"a\"\n")),
            "t.toml:15:1: limit_req[0].rate: missing required key");
  EXPECT_EQ(load_error(with("\n[[limit_req]]\nname = \"a\"\nrate = \"1r/s\"\nburst = 2\ndelay = 3\n")),
            "t.toml:19:1: limit_req[0].delay: must be at most burst (2)");
  EXPECT_EQ(load_error(with("\n[[limit_req]]\nname = \"a\"\nrate = \"1r/s\"\nkey = \"$cookie_x\"\n")),
            "t.toml:18:1: limit_req[0].key: must be \"$remote_addr\", \"$host\", \"$header_<name>\" or \"$ssl_client_fingerprint\", got "
            "\"$cookie_x\"");
  EXPECT_EQ(load_error(with("\n[[limit_conn]]\nname = \"a\"\n")),
            "t.toml:15:1: limit_conn[0].max: missing required key");
  EXPECT_EQ(load_error(with("\n[[limit_conn]]\nname = \"a\"\nmax = 1\n[[limit_conn]]\nname = \"a\"\nmax = 1\n")),
            "t.toml:19:1: limit_conn[1].name: duplicate zone name \"a\"");
}

}  // namespace
}  // namespace tlsfront::config
