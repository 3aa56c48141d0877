// [tls.session_cache] store = "redis": two tlsfront nodes (A and B, session
// tickets off) sharing TLS 1.2 session-ID sessions through a real
// redis-server on a free port. A session made on A resumes on B; Redis down,
// Redis too slow, or a garbage value in Redis means a full handshake on B,
// never a failed one. The same over TLS to Redis (redis_tls, with AUTH and a
// client certificate), and a Redis whose certificate does not verify.
// Skipped when redis-server / redis-cli are not installed.
#include <openssl/ssl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "redis_nodes.h"
#include "shared/redis_server.h"

namespace tlsfront::itest {
namespace {

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;


// One request on a fresh connection (`version`) resuming by session ID only
// (TLS 1.3: a stateful ticket, the server's tickets being off), offering
// `session` (may be nullptr). Returns the session, whether it was resumed and
// how long the handshake took.
SessionPtr request(int port, SSL_SESSION* session, bool* reused, const std::string& path,
                   milliseconds* handshake = nullptr, int version = TLS1_2_VERSION) {
  TlsClient c;
  TlsOptions o;
  o.min_version = o.max_version = version;
  o.no_ticket = true;
  o.session = session;
  const auto start = Clock::now();
  if (!c.connect(port, o)) {
    ADD_FAILURE() << "connect: " << c.error();
    *reused = false;
    return nullptr;
  }
  if (handshake) *handshake = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  *reused = c.session_reused();
  EXPECT_TRUE(c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  auto r = c.read_response();
  EXPECT_TRUE(r.has_value());
  if (r) EXPECT_EQ(r->status, 200);
  c.read_all(milliseconds(5'000));
  return SessionPtr(c.take_session());
}

class RedisSessionCache : public RedisNodesTest {
 protected:
  std::string tls_extra() const {
    return "session_tickets = false\n[tls.session_cache]\nstore = \"redis\"\nredis = \"127.0.0.1:" +
           std::to_string(redis_.port()) + "\"\nredis_timeout = \"50ms\"\n";
  }

  bool start_nodes(const std::string& extra = "") {
    ProxyOptions a;
    a.tls_extra = extra.empty() ? tls_extra() : extra;
    if (!start_proxy(a)) return false;
    ProxyOptions b;
    b.tls_extra = extra.empty() ? tls_extra() : extra;
    b.upstream_servers = {backend_.address()};
    return proxy_b_.start(b);
  }

  // The hex session ID the server stored `s` under: the session ID for TLS
  // 1.2; for TLS 1.3 the stateful ticket, which is the server's session ID
  // (the client keys its copy by a hash of it).
  static std::string stored_id_hex(SSL_SESSION* s) {
    const unsigned char* id = nullptr;
    size_t len = 0;
    if (SSL_SESSION_get_protocol_version(s) >= TLS1_3_VERSION) {
      SSL_SESSION_get0_ticket(s, &id, &len);
    } else {
      unsigned int n = 0;
      id = SSL_SESSION_get_id(s, &n);
      len = n;
    }
    std::string hex;
    for (size_t i = 0; i < len; ++i) {
      char b[3];
      std::snprintf(b, sizeof(b), "%02x", id[i]);
      hex += b;
    }
    return hex;
  }

  // A full handshake on A whose session reaches Redis; its Redis key in `key`.
  SessionPtr session_from_a(int version = TLS1_2_VERSION, std::string* key = nullptr) {
    bool reused = true;
    SessionPtr s = request(proxy_.port(), nullptr, &reused, "/a", nullptr, version);
    EXPECT_FALSE(reused);
    if (!s || !SSL_SESSION_is_resumable(s.get())) {
      ADD_FAILURE() << "node A issued no resumable session";
      return nullptr;
    }
    const std::string hex = stored_id_hex(s.get());
    std::string found;
    EXPECT_TRUE(wait_until([&] {
      for (const auto& k : redis_.keys("tlsfront:sess:*")) {
        if (k.size() >= hex.size() && k.substr(k.size() - hex.size()) == hex) found = k;
      }
      return !found.empty();
    })) << "session " << hex << " not written to redis";
    if (key) *key = found;
    return s;
  }

  // The access-log "ssl_resumption" of B's next request to `path`, after `send`.
  std::string b_resumption(size_t logged) {
    auto lines = proxy_b_.wait_log_lines(logged + 1);
    return lines.size() > logged ? json_string(lines.back(), "ssl_resumption").value_or("?") : "(no line)";
  }
};

TEST_F(RedisSessionCache, Tls12SessionIdFromNodeAResumesOnNodeB) {
  ASSERT_TRUE(redis_.start({"--enable-debug-command", "local"}));
  ASSERT_TRUE(start_nodes());
  // The key names the session ID (hex) under the prefix; the value is its DER.
  std::string key;
  SessionPtr s = session_from_a(TLS1_2_VERSION, &key);
  ASSERT_TRUE(s);
  const long long ttl = std::atoll(redis_.cli({"PTTL", key}).out.c_str());
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 24LL * 3600 * 1000);

  for (int i = 0; i < 4; ++i) {  // whichever of B's workers takes it
    const size_t logged = proxy_b_.wait_log_lines(0, milliseconds(0)).size();
    bool reused = false;
    request(proxy_b_.port(), s.get(), &reused, "/b" + std::to_string(i));
    EXPECT_TRUE(reused) << "attempt " << i << "\n" << proxy_b_.process().err();
    EXPECT_EQ(b_resumption(logged), "cache");
  }
}

// TLS 1.3 with tickets off: OpenSSL's stateful ticket is the session ID, which
// B finds in Redis from the PSK identity of the ClientHello.
TEST_F(RedisSessionCache, Tls13StatefulSessionFromNodeAResumesOnNodeB) {
  ASSERT_TRUE(redis_.start({"--enable-debug-command", "local"}));
  ASSERT_TRUE(start_nodes());
  SessionPtr s = session_from_a(TLS1_3_VERSION);
  ASSERT_TRUE(s);
  const size_t logged = proxy_b_.wait_log_lines(0, milliseconds(0)).size();
  bool reused = false;
  SessionPtr again = request(proxy_b_.port(), s.get(), &reused, "/b13", nullptr, TLS1_3_VERSION);
  EXPECT_TRUE(reused) << proxy_b_.process().err();
  EXPECT_EQ(b_resumption(logged), "cache");
}

TEST_F(RedisSessionCache, RedisDownIsAFullHandshake) {
  ASSERT_TRUE(redis_.start({"--enable-debug-command", "local"}));
  ASSERT_TRUE(start_nodes());
  SessionPtr s = session_from_a();
  ASSERT_TRUE(s);
  redis_.stop();
  for (int i = 0; i < 4; ++i) {
    bool reused = true;
    milliseconds took{0};
    const size_t logged = proxy_b_.wait_log_lines(0, milliseconds(0)).size();
    request(proxy_b_.port(), s.get(), &reused, "/down" + std::to_string(i), &took);
    EXPECT_FALSE(reused);
    EXPECT_LT(took, milliseconds(1'000)) << "attempt " << i;
    EXPECT_EQ(b_resumption(logged), "none");
  }
  EXPECT_TRUE(wait_until([&] { return proxy_b_.process().err().find("sessions are not shared") != std::string::npos; }))
      << proxy_b_.process().err();
}

// Redis stuck (DEBUG SLEEP): B's lookup times out after redis_timeout and
// B gives a full handshake instead of waiting for Redis.
TEST_F(RedisSessionCache, SlowRedisTimesOutIntoAFullHandshake) {
  ASSERT_TRUE(redis_.start({"--enable-debug-command", "local"}));
  ASSERT_TRUE(start_nodes());
  SessionPtr s = session_from_a();
  ASSERT_TRUE(s);
  // Warm B's connections to Redis so the timeout, not the connect, is measured.
  bool reused = true;
  request(proxy_b_.port(), nullptr, &reused, "/warm1");
  request(proxy_b_.port(), nullptr, &reused, "/warm2");
  Process sleeper;
  ASSERT_TRUE(sleeper.start(redis_.cli_argv({"DEBUG", "SLEEP", "2"}), dir_.file("sleep.out"), dir_.file("sleep.err")));
  usleep(200'000);  // let the DEBUG SLEEP reach redis
  milliseconds took{0};
  request(proxy_b_.port(), s.get(), &reused, "/slow", &took);
  EXPECT_FALSE(reused);
  EXPECT_LT(took, milliseconds(1'000)) << "waited for redis instead of timing out";
  EXPECT_TRUE(wait_until([&] { return proxy_b_.process().err().find("no answer within 50 ms") != std::string::npos; }))
      << proxy_b_.process().err();
  sleeper.wait_exit(milliseconds(5'000));
}

// Redis restarted empty under a node that only stores (every handshake on A
// is a full one): each of A's workers notices the lost connection on its
// next SET, backs off, and reconnects by itself; the sessions A issues
// afterwards reach the new Redis, and B resumes them.
TEST_F(RedisSessionCache, StoreOnlyNodeReconnectsAfterRedisRestart) {
  ASSERT_TRUE(redis_.start({"--enable-debug-command", "local"}));
  ASSERT_TRUE(start_nodes());
  ASSERT_TRUE(session_from_a());
  redis_.stop();
  ASSERT_TRUE(redis_.start({"--enable-debug-command", "local"}, "", /*same_port=*/true));
  ASSERT_TRUE(redis_.keys("tlsfront:sess:*").empty());
  // Full handshakes on A until its sessions reach Redis again (bounded: the
  // backoff is 200 ms doubling; a node that never reconnects fails here).
  SessionPtr last;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline && redis_.keys("tlsfront:sess:*").size() < 4) {
    bool reused = true;
    last = request(proxy_.port(), nullptr, &reused, "/store-only");
    EXPECT_FALSE(reused);
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_GE(redis_.keys("tlsfront:sess:*").size(), 4u) << proxy_.process().err();
  // Every worker of A is connected again (its gauge), whichever took the handshakes.
  EXPECT_TRUE(wait_until([&] {
    bool reused = true;
    request(proxy_.port(), nullptr, &reused, "/store-only");
    const std::string m = plain_request(proxy_.admin_port(), "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
    return m.find("tlsfront_session_store_connected{worker=\"0\"} 1") != std::string::npos &&
           m.find("tlsfront_session_store_connected{worker=\"1\"} 1") != std::string::npos;
  })) << plain_request(proxy_.admin_port(), "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
}

TEST_F(RedisSessionCache, GarbageValueIsAFullHandshake) {
  ASSERT_TRUE(redis_.start({"--enable-debug-command", "local"}));
  ASSERT_TRUE(start_nodes());
  SessionPtr s = session_from_a();
  ASSERT_TRUE(s);
  for (const auto& k : redis_.keys("tlsfront:sess:*")) {
    ASSERT_EQ(redis_.cli({"SET", k, "\x30\x82garbage-not-a-session"}).out, "OK\n");
  }
  for (int i = 0; i < 3; ++i) {
    bool reused = true;
    const size_t logged = proxy_b_.wait_log_lines(0, milliseconds(0)).size();
    request(proxy_b_.port(), s.get(), &reused, "/garbage" + std::to_string(i));
    EXPECT_FALSE(reused);
    EXPECT_EQ(b_resumption(logged), "none");
  }
  EXPECT_TRUE(proxy_b_.process().running());
}

// TLS to Redis (redis_tls): Redis with a TLS port that requires a client
// certificate (tls-auth-clients yes) and a password; both nodes reach it
// with trusted_ca, a client certificate and AUTH, and a session made on A
// resumes on B.
std::string tls_redis_extra(int tls_port, const std::string& password_file, const std::string& trusted_ca) {
  return "session_tickets = false\n[tls.session_cache]\nstore = \"redis\"\nredis = \"127.0.0.1:" +
         std::to_string(tls_port) + "\"\nredis_timeout = \"500ms\"\nredis_password_file = \"" + password_file +
         "\"\n[tls.session_cache.redis_tls]\ntrusted_ca = \"" + trusted_ca + "\"\ncertificate = \"" +
         pki("client.chain.pem") + "\"\nkey = \"" + pki("client.key") + "\"\n";
}

RedisServer::Tls redis_tls_files(bool auth_clients) {
  return {pki("localhost.chain.pem"), pki("localhost.key"), pki("root.pem"), auth_clients};
}

TEST_F(RedisSessionCache, OverTlsWithAuthAndAClientCertificateNodeAResumesOnNodeB) {
  ASSERT_TRUE(redis_.start_tls(redis_tls_files(/*auth_clients=*/true), {"--requirepass", "pw"}, "pw"));
  const std::string password_file = dir_.file("redis.pw");
  write_file(password_file, "pw\n");
  ::chmod(password_file.c_str(), 0600);
  ASSERT_TRUE(start_nodes(tls_redis_extra(redis_.tls_port(), password_file, pki("root.pem"))));
  SessionPtr s = session_from_a(TLS1_2_VERSION);
  ASSERT_TRUE(s) << proxy_.process().err();
  for (int i = 0; i < 4; ++i) {  // whichever of B's workers takes it
    const size_t logged = proxy_b_.wait_log_lines(0, milliseconds(0)).size();
    bool reused = false;
    request(proxy_b_.port(), s.get(), &reused, "/tls" + std::to_string(i));
    EXPECT_TRUE(reused) << "attempt " << i << "\n" << proxy_b_.process().err();
    EXPECT_EQ(b_resumption(logged), "cache");
  }
  // Every connection of the nodes went over the TLS port, authenticated.
  const std::string clients = redis_.cli({"CLIENT", "LIST"}).out;
  EXPECT_EQ(proxy_b_.process().err().find("redis 127.0.0.1"), std::string::npos) << proxy_b_.process().err();
  EXPECT_NE(clients.find("laddr=127.0.0.1:" + std::to_string(redis_.tls_port())), std::string::npos) << clients;
}

// A Redis whose certificate does not verify (the nodes trust another root):
// each worker logs why, once, and handshakes go on as full ones (the
// documented fallback), without a crash or a busy loop of reconnects.
TEST_F(RedisSessionCache, OverTlsAnUntrustedRedisIsLoggedAndHandshakesAreFull) {
  ASSERT_TRUE(redis_.start_tls(redis_tls_files(/*auth_clients=*/false)));
  const std::string password_file = dir_.file("redis.pw");
  write_file(password_file, "pw\n");
  ::chmod(password_file.c_str(), 0600);
  ASSERT_TRUE(start_nodes(tls_redis_extra(redis_.tls_port(), password_file, pki("other-root.pem"))));
  for (int i = 0; i < 6; ++i) {
    bool reused = true;
    SessionPtr s = request(proxy_.port(), nullptr, &reused, "/untrusted" + std::to_string(i));
    EXPECT_FALSE(reused);
    EXPECT_TRUE(s);
  }
  const std::string why = "redis 127.0.0.1:" + std::to_string(redis_.tls_port()) +
                          ": cannot connect to 127.0.0.1:" + std::to_string(redis_.tls_port()) +
                          ": certificate verify failed: unable to get local issuer certificate; sessions are not "
                          "shared until it answers";
  EXPECT_TRUE(wait_until([&] { return proxy_.process().err().find(why) != std::string::npos; }))
      << proxy_.process().err();
  EXPECT_TRUE(redis_.keys("tlsfront:sess:*").empty());
  // One line per worker at most (the state is logged on a change), however many handshakes.
  const std::string err = proxy_.process().err();
  size_t lines = 0;
  for (size_t at = err.find(why); at != std::string::npos; at = err.find(why, at + 1)) ++lines;
  EXPECT_LE(lines, 2u) << err;
  // Redis saw no client of ours get through (a refused handshake never becomes a client).
  const std::string clients = redis_.cli({"CLIENT", "LIST"}).out;
  EXPECT_EQ(clients.find("laddr=127.0.0.1:" + std::to_string(redis_.tls_port())), std::string::npos) << clients;
  EXPECT_TRUE(proxy_.process().running());
}

}  // namespace
}  // namespace tlsfront::itest
