// import-nginx: servers by name (with or without `resolve`), `resolver` and
// `resolver_timeout` → [resolver].
#include <gtest/gtest.h>

#include "nginx_import_support.h"

namespace tlsfront::tools::nginx::test {
namespace {

TEST(NginxImportResolver, NamedServersAndTheResolverCarryOver) {
  Outcome r = run(server("location /api/ { proxy_pass http://api; }",
                         "upstream api { server api-backend.internal:8080 resolve; server 10.0.0.7:8080; }\n"
                         "resolver 127.0.0.53 [::1]:5353 valid=30s ipv6=off status_zone=z;\n"
                         "resolver_timeout 5s;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_FALSE(r.cfg.upstreams.empty());
  const auto& servers = r.cfg.upstreams[0].servers;
  ASSERT_EQ(servers.size(), 2u) << r.toml;
  EXPECT_EQ(servers[0].to_string(), "api-backend.internal:8080");
  ASSERT_EQ(r.cfg.resolver.addresses.size(), 2u) << r.toml;
  EXPECT_EQ(r.cfg.resolver.addresses[0].to_string(), "127.0.0.53:53");  // nginx's default port, written out
  EXPECT_EQ(r.cfg.resolver.addresses[1].to_string(), "[::1]:5353");
  EXPECT_EQ(r.cfg.resolver.valid, std::optional<config::Millis>(config::Millis{30'000}));
  EXPECT_FALSE(r.cfg.resolver.ipv6);
  EXPECT_EQ(r.cfg.resolver.timeout, config::Millis{5'000});
  EXPECT_REPORTS(r, "n.conf:3: resolver: parameter status_zone=z not carried over");
  EXPECT_EQ(r.report.find("server: parameter resolve"), std::string::npos) << r.report;
}

TEST(NginxImportResolver, WithoutAResolverTheSystemsIsUsed) {
  Outcome r = run(server("location /api/ { proxy_pass http://api-backend.internal:8080; }"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.cfg.resolver.addresses.empty());
  bool found = false;
  for (const auto& u : r.cfg.upstreams) {
    for (const auto& s : u.servers) found |= s.to_string() == "api-backend.internal:8080";
  }
  EXPECT_TRUE(found) << r.toml;
}

}  // namespace
}  // namespace tlsfront::tools::nginx::test
