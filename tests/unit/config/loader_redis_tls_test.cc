// TOML -> Config for redis_tls, the TLS to Redis of every table with a Redis
// ([tls.session_cache], [tls.ticket_keys], [tls.store], [[limit_req]]): the
// boolean and table forms, the defaults, and errors with file:line:column
// and the key.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

TEST(LoaderRedisTls, TableForm) {
  auto c = load_string(with("[tls.session_cache]\nstore = \"redis\"\nredis = \"127.0.0.1:6380\"\n"
                            "[tls.session_cache.redis_tls]\nserver_name = \"Redis.Internal\"\ntrusted_ca = \"/k/ca.pem\"\n"
                            "certificate = \"/k/c.pem\"\nkey = \"/k/c.key\"\nprotocols = [\"TLSv1.3\"]\n"),
                       "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().detail;
  const RedisTls& t = c->tls.session_cache.redis_tls;
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.server_name, "redis.internal");
  EXPECT_TRUE(t.verify);
  EXPECT_EQ(t.trusted_ca, "/k/ca.pem");
  EXPECT_EQ(t.certificate, "/k/c.pem");
  EXPECT_EQ(t.key, "/k/c.key");
  EXPECT_EQ(t.protocols, (std::vector<TlsVersion>{TlsVersion::Tls13}));
  EXPECT_EQ(t.origin, "t.toml:17:20");  // the header's redis_tls
}

TEST(LoaderRedisTls, BooleanAndInlineFormsInEveryTable) {
  auto c = load_string(
      with("[tls.session_cache]\nstore = \"redis\"\nredis_tls = true\n"
           "[tls.ticket_keys]\nsource = \"redis\"\nredis_tls = { trusted_ca = \"/k/ca.pem\" }\n"
           "[tls.store]\nregion = \"eu\"\nseal_key_files = [\"/k/s\"]\nredis_tls = { verify = false }\n"
           "[[limit_req]]\nname = \"z\"\nrate = \"1r/s\"\nstore = \"redis\"\nredis_tls = { enabled = false, trusted_ca = \"/x\" }\n"),
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().detail;
  EXPECT_TRUE(c->tls.session_cache.redis_tls.enabled);
  EXPECT_TRUE(c->tls.session_cache.redis_tls.verify);
  EXPECT_TRUE(c->tls.session_cache.redis_tls.trusted_ca.empty());
  EXPECT_TRUE(c->tls.ticket_keys.redis_tls.enabled);
  EXPECT_EQ(c->tls.ticket_keys.redis_tls.trusted_ca, "/k/ca.pem");
  EXPECT_TRUE(c->tls.store.redis_tls.enabled);
  EXPECT_FALSE(c->tls.store.redis_tls.verify);
  ASSERT_EQ(c->limit_req.size(), 1u);
  EXPECT_FALSE(c->limit_req[0].redis_tls.enabled);

  auto d = load_string(with("[tls.session_cache]\nstore = \"redis\"\n"), "t.toml");
  ASSERT_TRUE(d.ok()) << d.error().detail;
  EXPECT_FALSE(d->tls.session_cache.redis_tls.enabled) << "cleartext unless asked";
}

TEST(LoaderRedisTls, Errors) {
  EXPECT_EQ(load_error(with("[tls.session_cache]\nredis_tls = true\n")),
            "t.toml:15:1: tls.session_cache.redis_tls: only used with store = \"redis\"");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nredis_tls = true\n")),
            "t.toml:15:1: tls.ticket_keys.redis_tls: only used with source = \"redis\"");
  EXPECT_EQ(load_error(with("[[limit_req]]\nname = \"z\"\nrate = \"1r/s\"\nredis_tls = true\n")),
            "t.toml:17:1: limit_req[0].redis_tls: only used with store = \"redis\"");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"redis\"\nredis = \"unix:/r.sock\"\nredis_tls = true\n")),
            "t.toml:17:1: tls.ticket_keys.redis_tls: has no use with redis = \"unix:...\" (Redis speaks TLS on a TCP "
            "port, its tls-port)");
  EXPECT_EQ(load_error(with("[tls.session_cache]\nstore = \"redis\"\nredis_tls = \"yes\"\n")).substr(0, 53),
            "t.toml:16:13: tls.session_cache.redis_tls: expected a");
  EXPECT_EQ(load_error(with("[tls.session_cache]\nstore = \"redis\"\nredis_tls = { session_reuse = true }\n"))
                .substr(0, 56),
            "t.toml:16:15: tls.session_cache.redis_tls.session_reuse:");
  EXPECT_EQ(load_error(with("[tls.store]\nregion = \"eu\"\nseal_key_files = [\"/k\"]\n[tls.store.redis_tls]\n"
                            "certificate = \"/k/c.pem\"\n")),
            "t.toml:18:1: tls.store.redis_tls.certificate: a client certificate needs both certificate and key");
  EXPECT_EQ(load_error(with("[tls.store]\nregion = \"eu\"\nseal_key_files = [\"/k\"]\n[tls.store.redis_tls]\n"
                            "verify = false\ntrusted_ca = \"/k/ca.pem\"\n")),
            "t.toml:19:1: tls.store.redis_tls.trusted_ca: has no use with verify = false (no certificate is checked)");
  EXPECT_EQ(load_error(with("[tls.session_cache]\nstore = \"redis\"\n[tls.session_cache.redis_tls]\n"
                            "protocols = [\"TLSv1.1\"]\n")).substr(0, 52),
            "t.toml:17:14: tls.session_cache.redis_tls.protocols[");
  EXPECT_EQ(load_error(with("[tls.session_cache]\nstore = \"redis\"\n[tls.session_cache.redis_tls]\n"
                            "server_name = \"bad name\"\n")).substr(0, 53),
            "t.toml:17:1: tls.session_cache.redis_tls.server_name:");
}

}  // namespace
}  // namespace tlsfront::config
