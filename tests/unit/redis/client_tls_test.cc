// redis::Client over TLS against a real redis-server with a TLS port
// (tests/shared/redis_server.h, the test PKI): commands, AUTH, the blocking
// start-up exchange, a server certificate that does not verify (the error
// and the log say why, once; commands are refused during the backoff; no
// busy loop), a name that does not match, and mutual TLS (tls-auth-clients
// yes), TLS to the cleartext port. Plus redis::TlsContext's file errors. "No busy loop" is checked by
// counting connection attempts, never by timing.
#include <string>
#include <vector>

#include "client_fixture.h"
#include "redis/tls_context.h"

namespace tlsfront::redis {
namespace {

std::string pki(const std::string& file) { return std::string(TLSFRONT_TEST_PKI_DIR) + "/" + file; }

class RedisClientTls : public RedisClientFixture {
 protected:
  bool start_redis(bool auth_clients, std::vector<std::string> extra = {}, std::string password = "") {
    RedisServer::Tls t;
    t.certificate = pki("localhost.chain.pem");
    t.key = pki("localhost.key");
    t.ca = pki("root.pem");
    t.auth_clients = auth_clients;
    return redis_.start_tls(t, std::move(extra), std::move(password));
  }

  static std::shared_ptr<const TlsContext> tls(config::RedisTls cfg) {
    cfg.enabled = true;
    auto ctx = TlsContext::create(cfg, "test.redis_tls");
    EXPECT_TRUE(ctx) << (ctx ? "" : ctx.error().message());
    return ctx ? *ctx : nullptr;
  }
  static config::RedisTls trusting(const std::string& ca) {
    config::RedisTls cfg;
    cfg.trusted_ca = pki(ca);
    return cfg;
  }

  // The fixture's options for the server's TLS port, with `t`.
  Options options(std::shared_ptr<const TlsContext> t) {
    Options o = RedisClientFixture::options(redis_.tls_port());
    o.tls = std::move(t);
    o.timeout = milliseconds(2'000);
    return o;
  }
};

TEST_F(RedisClientTls, CommandsOverTls) {
  ASSERT_TRUE(start_redis(false));
  std::vector<bool> changes;
  Options o = options(tls(trusting("root.pem")));
  o.on_connected = [&](bool up) { changes.push_back(up); };
  Client& c = make_client(std::move(o));
  Got got;
  ASSERT_TRUE(call({"SET", "k", std::string_view("v\0w", 3)}, got));
  ASSERT_FALSE(got.error) << got.error->message();
  EXPECT_EQ(got.str, "OK");
  ASSERT_TRUE(call({"GET", "k"}, got));
  ASSERT_FALSE(got.error) << got.error->message();
  EXPECT_EQ(got.str, std::string("v\0w", 3));
  // Written over TLS, read back over the cleartext port: the same Redis.
  EXPECT_EQ(redis_.cli({"--raw", "STRLEN", "k"}).out, "3\n");
  EXPECT_EQ(c.connects(), 1u);
  EXPECT_EQ(changes, (std::vector<bool>{true}));
  // Closing the client reports the connection down (the session store's
  // gauge), before `changes` goes out of scope.
  client_.reset();
  EXPECT_EQ(changes, (std::vector<bool>{true, false}));
}

TEST_F(RedisClientTls, AuthOverTls) {
  ASSERT_TRUE(start_redis(false, {"--requirepass", "pw"}, "pw"));
  Options o = options(tls(trusting("root.pem")));
  o.password = Secret("pw");
  make_client(std::move(o));
  Got got;
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_FALSE(got.error) << got.error->message();
  EXPECT_EQ(got.str, "PONG");

  Options wrong = options(tls(trusting("root.pem")));
  wrong.password = Secret("nope");
  make_client(std::move(wrong));
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_TRUE(got.error);
  EXPECT_NE(got.error->message().find("AUTH refused"), std::string::npos) << got.error->message();
}

TEST_F(RedisClientTls, UntrustedServerIsTroubleWithItsReasonAndNoBusyLoop) {
  ASSERT_TRUE(start_redis(false));
  testing::internal::CaptureStderr();
  Client& c = make_client(options(tls(trusting("other-root.pem"))));
  const std::string expected = "cannot connect to 127.0.0.1:" + std::to_string(redis_.tls_port()) +
                               ": certificate verify failed: unable to get local issuer certificate";
  Got got;
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, Errc::Closed);
  EXPECT_EQ(got.error->detail, expected);
  EXPECT_TRUE(c.failing());
  EXPECT_GT(c.retry_in().count(), 0);
  EXPECT_FALSE(c.command({"PING"}, [](Result<Reply>) {})) << "refused during the backoff";
  // Nobody asks: nothing happens (no reconnect by itself).
  run_for(milliseconds(400));
  EXPECT_EQ(c.connects(), 1u);
  // Asked again after the backoff: one more attempt, the same reason.
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->detail, expected);
  EXPECT_EQ(c.connects(), 2u);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(log, "unit: redis 127.0.0.1:" + std::to_string(redis_.tls_port()) + ": " +
                           expected.substr(expected.find("cannot")) + "; carrying on"),
            1u)
      << log;
}

TEST_F(RedisClientTls, NameMismatchIsRefused) {
  ASSERT_TRUE(start_redis(false));
  config::RedisTls cfg = trusting("root.pem");
  cfg.server_name = "other.example";
  make_client(options(tls(cfg)));
  Got got;
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_TRUE(got.error);
  EXPECT_NE(got.error->detail.find("certificate verify failed: hostname mismatch (expected other.example)"),
            std::string::npos)
      << got.error->detail;
  // The certificate's DNS name works.
  cfg.server_name = "localhost";
  make_client(options(tls(cfg)));
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_FALSE(got.error) << got.error->message();
}

TEST_F(RedisClientTls, MutualTls) {
  ASSERT_TRUE(start_redis(/*auth_clients=*/true));
  make_client(options(tls(trusting("root.pem"))));  // no client certificate
  Got got;
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_TRUE(got.error) << "a server that requires a client certificate refused us";
  EXPECT_EQ(got.error->code, Errc::Closed) << got.error->message();

  config::RedisTls cfg = trusting("root.pem");
  cfg.certificate = pki("client.chain.pem");
  cfg.key = pki("client.key");
  make_client(options(tls(cfg)));
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_FALSE(got.error) << got.error->message();
  EXPECT_EQ(got.str, "PONG");
}

TEST_F(RedisClientTls, BlockingExchangeOverTls) {
  ASSERT_TRUE(start_redis(true, {"--requirepass", "pw"}, "pw"));
  config::RedisTls cfg = trusting("root.pem");
  cfg.certificate = pki("client.chain.pem");
  cfg.key = pki("client.key");
  Options o = options(tls(cfg));
  o.password = Secret("pw");
  Client c(std::move(o));  // not started: the blocking path needs no loop
  const std::vector<std::vector<std::string>> commands{{"SET", "a", "1"}, {"MGET", "a", "b"}};
  std::vector<std::string> seen;
  Status st = c.call_blocking(commands, [&](size_t i, Reply r) -> Status {
    seen.push_back(std::to_string(i) + ":" + (r.type() == Reply::Type::Array ? std::string(r[0].str()) : std::string(r.str())));
    return {};
  });
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(seen, (std::vector<std::string>{"0:OK", "1:1"}));

  Options untrusted = options(tls(trusting("other-root.pem")));
  st = Client(std::move(untrusted)).call_blocking(commands, [](size_t, Reply) -> Status { return {}; });
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("certificate verify failed"), std::string::npos) << st.error().message();
  EXPECT_FALSE(c.failing()) << "the blocking path changes no state";
}

// TLS to Redis' cleartext port: Redis takes the ClientHello for the start of
// an inline command and waits for its end, so the handshake gets no answer:
// the command times out (docs/operations.md says what that points to), the
// connection is dropped and the backoff starts.
TEST_F(RedisClientTls, TheCleartextPortTimesOut) {
  ASSERT_TRUE(start_redis(false));
  Options o = options(tls(trusting("root.pem")));
  o.address.port = static_cast<uint16_t>(redis_.port());
  o.timeout = milliseconds(300);
  Client& c = make_client(std::move(o));
  Got got;
  ASSERT_TRUE(call({"PING"}, got));
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, Errc::Timeout);
  EXPECT_EQ(got.error->detail, "no answer within 300 ms");
  EXPECT_TRUE(c.failing());
  EXPECT_EQ(c.connects(), 1u);
}

TEST(RedisTlsContext, FileErrorsNameTheKey) {
  config::RedisTls cfg;
  cfg.enabled = true;
  cfg.origin = "t.toml:3:1";
  cfg.trusted_ca = "/nonexistent/ca.pem";
  auto ctx = TlsContext::create(cfg, "tls.store.redis_tls");
  ASSERT_FALSE(ctx);
  EXPECT_EQ(ctx.error().message().rfind("t.toml:3:1: tls.store.redis_tls.trusted_ca: cannot load /nonexistent/ca.pem", 0), 0u)
      << ctx.error().message();

  cfg.trusted_ca = pki("root.pem");
  cfg.certificate = pki("client.chain.pem");
  cfg.key = pki("mismatch.key");
  ctx = TlsContext::create(cfg, "tls.store.redis_tls");
  ASSERT_FALSE(ctx);
  EXPECT_NE(ctx.error().message().find("tls.store.redis_tls.key: does not match the certificate"), std::string::npos)
      << ctx.error().message();

  cfg.enabled = false;
  ctx = TlsContext::create(cfg, "tls.store.redis_tls");
  ASSERT_TRUE(ctx);
  EXPECT_EQ(*ctx, nullptr) << "no TLS unless enabled";
}

}  // namespace
}  // namespace tlsfront::redis
