// TOML -> Config for [tls] session resumption keys: [tls.session_cache]
// (memory and redis stores) and [tls.ticket_keys] (auto, files, redis).
#include <gtest/gtest.h>

#include "config/loader.h"
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

TEST(Loader, SessionCacheAndTicketKeys) {
  auto c = load_string(with("[tls.session_cache]\nsize = \"1m\"\ntimeout = \"5m\"\n"
                            "[tls.ticket_keys]\nsource = \"files\"\nfiles = [\"/k/a.key\", \"/k/b.key\"]\n"),
                       "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().detail;
  EXPECT_TRUE(c->tls.session_cache.enabled);
  EXPECT_EQ(c->tls.session_cache.size_bytes, 1024u * 1024);
  EXPECT_EQ(c->tls.session_cache.timeout, std::chrono::minutes(5));
  EXPECT_EQ(c->tls.ticket_keys.source, TicketKeySource::Files);
  EXPECT_EQ(c->tls.ticket_keys.files, (std::vector<std::string>{"/k/a.key", "/k/b.key"}));
  EXPECT_EQ(c->tls.ticket_keys.files_origin, "t.toml:19:1");

  auto d = load_string(kMinimal, "t.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->tls.session_tickets);
  EXPECT_EQ(d->tls.session_ticket_count, 1);
  EXPECT_EQ(d->tls.session_cache.size_bytes, 10u * 1024 * 1024);
  EXPECT_EQ(d->tls.session_cache.timeout, std::chrono::hours(24));
  EXPECT_EQ(d->tls.ticket_keys.source, TicketKeySource::Auto);
  EXPECT_EQ(d->tls.ticket_keys.rotate_every, std::chrono::hours(1));
}

TEST(Loader, SessionCacheAndTicketKeyErrors) {
  EXPECT_EQ(load_error(with("[tls.session_cache]\ntimeout = \"8d\"\n")),
            "t.toml:15:1: tls.session_cache.timeout: must be at most 7d (RFC 8446 §4.6.1)");
  EXPECT_EQ(load_error(with("[tls.session_cache]\nstore = \"disk\"\n")),
            "t.toml:15:1: tls.session_cache.store: unknown store \"disk\" (expected \"memory\" or \"redis\")");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"files\"\n")),
            "t.toml:15:1: tls.ticket_keys.source: source = \"files\" needs at least one file in files");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nfiles = [\"/k\"]\n")),
            "t.toml:15:1: tls.ticket_keys.files: only used with source = \"files\"");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nbogus = 1\n")),
            "t.toml:15:1: tls.ticket_keys.bogus: unknown key \"bogus\"");
}

TEST(Loader, SessionIdContext) {
  EXPECT_EQ(load_ok(kMinimal).tls.session_id_context, SessionIdContext::Tlsfront);
  const auto with_tls_key = [](const std::string& line) {
    std::string text(kMinimal);
    text.insert(text.find("certificate"), line + "\n");
    return text;
  };
  EXPECT_EQ(load_ok(with_tls_key("session_id_context = \"nginx\"")).tls.session_id_context, SessionIdContext::Nginx);
  EXPECT_EQ(load_error(with_tls_key("session_id_context = \"apache\"")),
            "t.toml:5:1: tls.session_id_context: unknown value \"apache\" (expected \"tlsfront\" or \"nginx\")");
}

TEST(Loader, Ocsp) {
  auto d = load_string(kMinimal, "t.toml");
  ASSERT_TRUE(d.ok());
  const Ocsp& o = d->tls.certificates.at(0).ocsp;
  EXPECT_TRUE(o.stapling);
  EXPECT_TRUE(o.responder.empty());
  EXPECT_TRUE(o.response_file.empty());
  EXPECT_EQ(o.staple_policy, StaplePolicy::Lenient);
  EXPECT_EQ(o.refresh_at_percent, 50);
  EXPECT_EQ(o.refresh_jitter_percent, 10);
  EXPECT_EQ(o.fetch_timeout, 10s);
  EXPECT_EQ(o.max_response_bytes, 64u * 1024);
  EXPECT_TRUE(d->tls.ocsp_cache_dir.empty());

  // [tls] keys come before sub-tables: insert ocsp_cache_dir right after [tls].
  std::string text(kMinimal);
  text.insert(text.find("certificate"), "ocsp_cache_dir = \"state/ocsp\"\n");
  text += "[tls.ocsp]\nstapling = false\nresponder = \"http://ocsp.example:8080/x\"\nstaple_policy = \"must_staple\"\n"
          "refresh_at_percent = 25\nrefresh_jitter_percent = 0\nfetch_timeout = \"2s\"\nmax_response_bytes = \"8k\"\n";
  Config c = load_ok(text, "/etc/tlsfront/t.toml");
  EXPECT_EQ(c.tls.ocsp_cache_dir, "/etc/tlsfront/state/ocsp");
  EXPECT_FALSE(c.tls.certificates.at(0).ocsp.stapling);
  EXPECT_EQ(c.tls.certificates.at(0).ocsp.responder, "http://ocsp.example:8080/x");
  EXPECT_EQ(c.tls.certificates.at(0).ocsp.staple_policy, StaplePolicy::MustStaple);
  EXPECT_EQ(c.tls.certificates.at(0).ocsp.refresh_at_percent, 25);
  EXPECT_EQ(c.tls.certificates.at(0).ocsp.refresh_jitter_percent, 0);
  EXPECT_EQ(c.tls.certificates.at(0).ocsp.fetch_timeout, 2s);
  EXPECT_EQ(c.tls.certificates.at(0).ocsp.max_response_bytes, 8u * 1024);
  EXPECT_EQ(c.tls.certificates.at(0).ocsp.origin, "/etc/tlsfront/t.toml:15:1");

  Config f = load_ok(with("[tls.ocsp]\nresponse_file = \"resp.der\"\nstaple_policy = \"strict\"\n"));
  EXPECT_EQ(f.tls.certificates.at(0).ocsp.response_file, "/etc/tlsfront/resp.der");
  EXPECT_EQ(f.tls.certificates.at(0).ocsp.staple_policy, StaplePolicy::Strict);
}

TEST(Loader, OcspErrors) {
  EXPECT_EQ(load_error(with("[tls.ocsp]\nstaple_policy = \"always\"\n")),
            "t.toml:15:1: tls.ocsp.staple_policy: unknown policy \"always\" (expected \"lenient\", \"strict\" or "
            "\"must_staple\")");
  EXPECT_EQ(load_error(with("[tls.ocsp]\nresponder = \"https://ocsp.example/\"\n")),
            "t.toml:15:1: tls.ocsp.responder: expected an http:// URL with a host, got \"https://ocsp.example/\"");
  EXPECT_EQ(load_error(with("[tls.ocsp]\nresponder = \"http://a/\"\nresponse_file = \"r.der\"\n")),
            "t.toml:15:1: tls.ocsp.responder: not used with response_file (the response is not fetched)");
  EXPECT_EQ(load_error(with("[tls.ocsp]\nrefresh_at_percent = 95\n")).find("tls.ocsp.refresh_at_percent"), 13u);
  EXPECT_EQ(load_error(with("[tls.ocsp]\nfetch_timeout = \"2m\"\n")),
            "t.toml:15:1: tls.ocsp.fetch_timeout: must be at most 60s");
  EXPECT_EQ(load_error(with("[tls.ocsp]\nmax_response_bytes = \"2m\"\n")).find("tls.ocsp.max_response_bytes"), 13u);
  EXPECT_EQ(load_error(with("[tls.ocsp]\nssl_stapling = true\n")),
            "t.toml:15:1: tls.ocsp.ssl_stapling: unknown key \"ssl_stapling\"");
}

TEST(Loader, RedisTicketKeys) {
  auto c = load_string(with("[tls.ticket_keys]\nsource = \"redis\"\nrotate_every = \"10m\"\n"
                            "redis = \"localhost:6380\"\nredis_user = \"edge\"\n"
                            "redis_password_file = \"/k/redis.pw\"\nredis_prefix = \"eu\"\n"
                            "redis_timeout = \"250ms\"\nwrap_key_file = \"/k/wrap.key\"\n"),
                       "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().detail;
  const TicketKeys& k = c->tls.ticket_keys;
  EXPECT_EQ(k.source, TicketKeySource::Redis);
  EXPECT_EQ(k.rotate_every, std::chrono::minutes(10));
  EXPECT_EQ(k.redis.to_string(), "127.0.0.1:6380");
  EXPECT_TRUE(k.redis_unix_socket.empty());
  EXPECT_EQ(k.redis_user, "edge");
  EXPECT_EQ(k.redis_password_file, "/k/redis.pw");
  EXPECT_EQ(k.redis_prefix, "eu");
  EXPECT_EQ(k.redis_timeout, 250ms);
  EXPECT_EQ(k.wrap_key_file, "/k/wrap.key");
  EXPECT_EQ(k.redis_origin, "t.toml:17:1");

  auto d = load_string(with("[tls.ticket_keys]\nsource = \"redis\"\n"), "t.toml");
  ASSERT_TRUE(d.ok()) << d.error().detail;
  EXPECT_EQ(d->tls.ticket_keys.redis.to_string(), "127.0.0.1:6379");
  EXPECT_EQ(d->tls.ticket_keys.redis_prefix, "tlsfront");
  EXPECT_EQ(d->tls.ticket_keys.redis_timeout, 500ms);
  EXPECT_TRUE(d->tls.ticket_keys.redis_password_file.empty());
  EXPECT_TRUE(d->tls.ticket_keys.wrap_key_file.empty());

  auto u = load_string(with("[tls.ticket_keys]\nsource = \"redis\"\nredis = \"unix:/run/redis.sock\"\n"), "t.toml");
  ASSERT_TRUE(u.ok()) << u.error().detail;
  EXPECT_EQ(u->tls.ticket_keys.redis_unix_socket, "/run/redis.sock");
}

TEST(Loader, RedisTicketKeyErrors) {
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nredis = \"127.0.0.1:6379\"\n")),
            "t.toml:15:1: tls.ticket_keys.redis: only used with source = \"redis\"");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"files\"\nfiles = [\"/k\"]\nwrap_key_file = \"/w\"\n")),
            "t.toml:17:1: tls.ticket_keys.wrap_key_file: only used with source = \"redis\"");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"redis\"\nredis = \"redis.local:6379\"\n")),
            "t.toml:16:1: tls.ticket_keys.redis: invalid address \"redis.local:6379\" (host must be an IP literal "
            "or \"localhost\"; names are not resolved)");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"redis\"\nredis = \"unix:\"\n")),
            "t.toml:16:1: tls.ticket_keys.redis: \"unix:\" needs a socket path");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"redis\"\nredis_user = \"edge\"\n")),
            "t.toml:16:1: tls.ticket_keys.redis_user: needs redis_password_file (AUTH takes a user and a password)");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"redis\"\nredis_prefix = \"a b\"\n")),
            "t.toml:16:1: tls.ticket_keys.redis_prefix: must not contain spaces or control characters");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"redis\"\nredis_timeout = \"2m\"\n")),
            "t.toml:16:1: tls.ticket_keys.redis_timeout: must be at most 60s");
  EXPECT_EQ(load_error(with("[tls.ticket_keys]\nsource = \"redis\"\nfiles = [\"/k\"]\n")),
            "t.toml:16:1: tls.ticket_keys.files: only used with source = \"files\"");
}

TEST(Loader, RedisSessionStore) {
  using namespace std::chrono_literals;
  auto c = load_string(with("[tls.session_cache]\nstore = \"redis\"\nredis = \"localhost:6380\"\n"
                            "redis_user = \"edge\"\nredis_password_file = \"/k/redis.pw\"\n"
                            "redis_prefix = \"eu\"\nredis_timeout = \"20ms\"\n"),
                       "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().detail;
  const SessionCache& s = c->tls.session_cache;
  EXPECT_EQ(s.store, SessionStore::Redis);
  EXPECT_EQ(s.redis.to_string(), "127.0.0.1:6380");
  EXPECT_EQ(s.redis_user, "edge");
  EXPECT_EQ(s.redis_password_file, "/k/redis.pw");
  EXPECT_EQ(s.redis_prefix, "eu");
  EXPECT_EQ(s.redis_timeout, 20ms);

  auto d = load_string(with("[tls.session_cache]\nstore = \"redis\"\n"), "t.toml");
  ASSERT_TRUE(d.ok()) << d.error().detail;
  EXPECT_EQ(d->tls.session_cache.redis.to_string(), "127.0.0.1:6379");
  EXPECT_EQ(d->tls.session_cache.redis_prefix, "tlsfront");
  EXPECT_EQ(d->tls.session_cache.redis_timeout, 50ms);
  EXPECT_TRUE(d->tls.session_cache.redis_password_file.empty());

  EXPECT_EQ(load_error(with("[tls.session_cache]\nredis = \"127.0.0.1:6379\"\n")),
            "t.toml:15:1: tls.session_cache.redis: only used with store = \"redis\"");
  EXPECT_EQ(load_error(with("[tls.session_cache]\nstore = \"redis\"\nredis_user = \"edge\"\n")),
            "t.toml:16:1: tls.session_cache.redis_user: needs redis_password_file (AUTH takes a user and a password)");
  EXPECT_EQ(load_error(with("[tls.session_cache]\nstore = \"redis\"\nredis_prefix = \"a b\"\n")),
            "t.toml:16:1: tls.session_cache.redis_prefix: must not contain spaces or control characters");
}

TEST(Loader, CertStore) {
  auto c = load_string(with("[tls.store]\nregion = \"cn-shanghai\"\nseal_key_files = [\"/k/new.key\", \"/k/old.key\"]\n"
                            "cache_dir = \"/var/lib/tlsfront/certs\"\npoll_interval = \"250ms\"\nredis = \"unix:/r.sock\"\n"),
                       "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().detail;
  const CertStore& s = c->tls.store;
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.region, "cn-shanghai");
  EXPECT_EQ(s.seal_key_files, (std::vector<std::string>{"/k/new.key", "/k/old.key"}));
  EXPECT_EQ(s.poll_interval, Millis{250});
  EXPECT_EQ(s.reconcile_interval, Millis{60'000});
  EXPECT_EQ(s.redis_unix_socket, "/r.sock");
  EXPECT_FALSE(load_string(kMinimal, "t.toml")->tls.store.enabled);
}

TEST(Loader, CertStoreErrors) {
  EXPECT_EQ(load_error(with("[tls.store]\nseal_key_files = [\"/k\"]\n")), "t.toml:14:1: tls.store.region: missing required key");
  EXPECT_EQ(load_error(with("[tls.store]\nregion = \"global\"\nseal_key_files = [\"/k\"]\n")),
            "t.toml:15:1: tls.store.region: \"global\" is the region every node serves; name this node's own");
  EXPECT_EQ(load_error(with("[tls.store]\nregion = \"EU\"\nseal_key_files = [\"/k\"]\n")),
            "t.toml:15:1: tls.store.region: must be 1 to 64 of a-z, 0-9, \".\", \"_\", \"-\"");
  EXPECT_EQ(load_error(with("[tls.store]\nregion = \"eu\"\nseal_key_files = []\n")),
            "t.toml:16:1: tls.store.seal_key_files: needs at least one key file (the first seals)");
  EXPECT_EQ(load_error(with("[tls.store]\nregion = \"eu\"\nseal_key_files = [\"/k\"]\npoll_interval = \"1ms\"\n")).substr(0, 38),
            "t.toml:17:1: tls.store.poll_interval: ");
}

}  // namespace
}  // namespace tlsfront::config
