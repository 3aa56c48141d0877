// import-nginx of access rules and limits: allow/deny → a route's access;
// limit_req_zone + limit_req → [[limit_req]] and the route's limit_req (one
// zone per distinct use); limit_conn_zone + limit_conn → [[limit_conn]];
// what is not carried over is reported.
#include "nginx_import_support.h"

namespace tlsfront::tools::nginx::test {
namespace {

TEST(NginxImportLimits, AllowDenyBecomeTheRoutesAccess) {
  Outcome r = run(server("allow 10.0.0.0/8;\ndeny 10.1.2.3;\nallow unix:;\ndeny all;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  const auto& rules = r.cfg.routes[0].access;
  ASSERT_EQ(rules.size(), 3u) << r.toml;
  EXPECT_TRUE(rules[0].allow);
  EXPECT_EQ(rules[1].block.to_string(), "10.1.2.3/32");
  EXPECT_TRUE(rules[2].all);
  EXPECT_REPORTS(r, "no UNIX-domain listeners");
}

TEST(NginxImportLimits, LimitReqAndLimitConn) {
  const std::string http =
      "limit_req_zone $binary_remote_addr zone=api:10m rate=10r/s;\n"
      "limit_conn_zone $binary_remote_addr zone=perip:1m;\n"
      "limit_req_zone $cookie_x zone=odd:1m rate=1r/s;\n";
  Outcome r = run(
      "http {\n" + http +
      "server {\nlisten 443 ssl;\nssl_certificate c.pem;\nssl_certificate_key c.key;\n"
      "location /a/ { limit_req zone=api burst=20 nodelay; limit_conn perip 5; proxy_pass http://127.0.0.1:9000; }\n"
      "location /b/ { limit_req zone=api burst=5; limit_req zone=odd; proxy_pass http://127.0.0.1:9000; }\n"
      "}\n}\n");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.limit_req.size(), 2u) << r.toml;
  EXPECT_EQ(r.cfg.limit_req[0].name, "api");
  EXPECT_EQ(r.cfg.limit_req[0].burst, 20u);
  EXPECT_EQ(r.cfg.limit_req[0].delay, config::LimitReqZone::kNoDelay);
  EXPECT_EQ(r.cfg.limit_req[0].emission_ns, 100'000'000u);
  EXPECT_EQ(r.cfg.limit_req[1].name, "api_2");
  EXPECT_EQ(r.cfg.limit_req[1].burst, 5u);
  EXPECT_EQ(r.cfg.limit_req[1].delay, 0u);
  ASSERT_EQ(r.cfg.limit_conn.size(), 1u);
  EXPECT_EQ(r.cfg.limit_conn[0].max, 5u);
  EXPECT_REPORTS(r, "has a zone of its own");
  EXPECT_REPORTS(r, "nginx's default limit_req_status is 503");
  EXPECT_REPORTS(r, "$cookie_x is not one tlsfront has");
}

}  // namespace
}  // namespace tlsfront::tools::nginx::test
