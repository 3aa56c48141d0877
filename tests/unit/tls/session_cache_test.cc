// SessionCache: the plain byte-bounded LRU API with a FakeClock, then real TLS
// 1.2 / 1.3 resumption over memory BIOs through the OpenSSL callbacks.
#include "tls/session_cache.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <random>
#include <thread>
#include <vector>

#include "support/fake_clock.h"
#include "support/memory_tls_client.h"
#include "support/test_pki.h"
#include "tls/tls_context.h"
#include "tls/tls_stream.h"

namespace tlsfront::tls {
namespace {

using namespace std::chrono_literals;
using testing::MemoryTlsClient;
using testing::pump_handshake;
constexpr size_t kOverhead = SessionCache::kEntryOverheadBytes;

config::SessionCache cache_config(uint64_t size_bytes, config::Millis timeout = 3600s) {
  config::SessionCache c;
  c.size_bytes = size_bytes;
  c.timeout = timeout;
  return c;
}

// ---------------------------------------------------------------- plain API

TEST(SessionCache, PutGetRemove) {
  FakeClock clock;
  SessionCache cache(cache_config(1 << 20), clock);
  const std::string key = SessionCache::make_key("ctx", "id-1");
  EXPECT_FALSE(cache.get(key));
  cache.put(key, "der-bytes", clock.now() + 10s);
  auto got = cache.get(key);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "der-bytes");
  cache.put(key, "replaced", clock.now() + 10s);
  EXPECT_EQ(cache.get(key).value_or(""), "replaced");
  cache.remove(key);
  EXPECT_FALSE(cache.get(key));
  cache.remove(key);  // absent: no-op

  auto st = cache.stats();
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.stores, 2u);
  EXPECT_EQ(st.entries, 0u);
  EXPECT_EQ(st.bytes, 0u);
  EXPECT_EQ(st.evictions, 0u);
}

TEST(SessionCache, ShardCountFollowsSize) {
  EXPECT_EQ(SessionCache::shard_count_for(10 * 1024 * 1024), SessionCache::kMaxShards);
  EXPECT_EQ(SessionCache::shard_count_for(4096), 1u);
  EXPECT_EQ(SessionCache::shard_count_for(0), 1u);
  EXPECT_EQ(SessionCache::shard_count_for(2 * SessionCache::kMinShardBytes), 2u);
  FakeClock clock;
  SessionCache big(config::SessionCache{}, clock);
  EXPECT_EQ(big.shard_count_for_test(), SessionCache::kMaxShards);
}

TEST(SessionCache, ByteAccounting) {
  FakeClock clock;
  SessionCache cache(cache_config(1 << 20), clock);
  const std::string a = SessionCache::make_key("ctx", "a");
  const std::string b = SessionCache::make_key("ctx", "bb");
  cache.put(a, std::string(100, 'x'), clock.now() + 1h);
  EXPECT_EQ(cache.stats().bytes, a.size() + 100 + kOverhead);
  cache.put(b, std::string(300, 'y'), clock.now() + 1h);
  EXPECT_EQ(cache.stats().bytes, a.size() + 100 + b.size() + 300 + 2 * kOverhead);
  cache.put(a, std::string(10, 'z'), clock.now() + 1h);  // replace shrinks
  EXPECT_EQ(cache.stats().bytes, a.size() + 10 + b.size() + 300 + 2 * kOverhead);
  EXPECT_EQ(cache.stats().entries, 2u);
  cache.remove(b);
  EXPECT_EQ(cache.stats().bytes, a.size() + 10 + kOverhead);
  cache.remove(a);
  EXPECT_EQ(cache.stats().bytes, 0u);
}

TEST(SessionCache, LruEvictsOldestFirstAndGetRefreshes) {
  FakeClock clock;
  auto key = [](int i) { return SessionCache::make_key("ctx", "key" + std::to_string(i)); };
  const size_t cost = key(1).size() + 100 + kOverhead;
  SessionCache cache(cache_config(3 * cost), clock);  // room for exactly three
  ASSERT_EQ(cache.shard_count_for_test(), 1u);        // one LRU order to check
  for (int i = 1; i <= 3; ++i) cache.put(key(i), std::string(100, 'a' + i), clock.now() + 1h);
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_EQ(cache.stats().bytes, 3 * cost);

  ASSERT_TRUE(cache.get(key(1)));  // 1 becomes the most recent: order 1,3,2
  cache.put(key(4), std::string(100, 'e'), clock.now() + 1h);
  EXPECT_FALSE(cache.get(key(2)));  // oldest untouched one went first
  EXPECT_TRUE(cache.get(key(1)));
  EXPECT_TRUE(cache.get(key(3)));
  EXPECT_TRUE(cache.get(key(4)));  // order now 4,3,1

  cache.put(key(5), std::string(100, 'f'), clock.now() + 1h);
  EXPECT_FALSE(cache.get(key(1)));
  EXPECT_TRUE(cache.get(key(5)));
  auto st = cache.stats();
  EXPECT_EQ(st.evictions, 2u);
  EXPECT_EQ(st.entries, 3u);
  EXPECT_LE(st.bytes, 3 * cost);
}

TEST(SessionCache, ExpiredEntriesAreNotReturned) {
  FakeClock clock;
  SessionCache cache(cache_config(1 << 20), clock);
  const std::string key = SessionCache::make_key("ctx", "id");
  cache.put(key, "der", clock.now() + 10s);
  clock.advance(9s);
  EXPECT_TRUE(cache.get(key));
  clock.advance(1s);  // expiry instant itself is expired
  EXPECT_FALSE(cache.get(key));
  auto st = cache.stats();
  EXPECT_EQ(st.expired, 1u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.entries, 0u);
  EXPECT_EQ(st.bytes, 0u);
}

TEST(SessionCache, ExpiredTailIsCountedAsExpiredNotEvicted) {
  FakeClock clock;
  auto key = [](int i) { return SessionCache::make_key("ctx", "k" + std::to_string(i)); };
  const size_t cost = key(1).size() + 50 + kOverhead;
  SessionCache cache(cache_config(2 * cost), clock);
  cache.put(key(1), std::string(50, 'a'), clock.now() + 1s);
  cache.put(key(2), std::string(50, 'b'), clock.now() + 1h);
  clock.advance(2s);
  cache.put(key(3), std::string(50, 'c'), clock.now() + 1h);
  auto st = cache.stats();
  EXPECT_EQ(st.expired, 1u);
  EXPECT_EQ(st.evictions, 0u);
  EXPECT_TRUE(cache.get(key(2)));
}

TEST(SessionCache, RefusesAlreadyExpiredAndOversizedEntries) {
  FakeClock clock;
  SessionCache cache(cache_config(4096), clock);
  cache.put(SessionCache::make_key("c", "past"), "der", clock.now());
  cache.put(SessionCache::make_key("c", "huge"), std::string(5000, 'x'), clock.now() + 1h);
  auto st = cache.stats();
  EXPECT_EQ(st.stores, 0u);
  EXPECT_EQ(st.entries, 0u);
  EXPECT_FALSE(cache.get(SessionCache::make_key("c", "past")));
}

TEST(SessionCache, KeysWithDifferentSessionIdContextsDoNotCollide) {
  FakeClock clock;
  SessionCache cache(cache_config(1 << 20), clock);
  const std::string id(32, '\x07');
  cache.put(SessionCache::make_key("context-A", id), "session-A", clock.now() + 1h);
  cache.put(SessionCache::make_key("context-B", id), "session-B", clock.now() + 1h);
  EXPECT_EQ(cache.get(SessionCache::make_key("context-A", id)).value_or(""), "session-A");
  EXPECT_EQ(cache.get(SessionCache::make_key("context-B", id)).value_or(""), "session-B");
  EXPECT_FALSE(cache.get(SessionCache::make_key("context-C", id)));
  // The length prefix keeps (ctx, id) splits apart.
  EXPECT_NE(SessionCache::make_key("ab", "c"), SessionCache::make_key("a", "bc"));
}

TEST(SessionCache, ConcurrentPutGetFromFourThreads) {
  FakeClock clock;
  const uint64_t size = 256 * 1024;
  SessionCache cache(cache_config(size), clock);
  ASSERT_GT(cache.shard_count_for_test(), 1u);
  constexpr int kThreads = 4, kOps = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&cache, &clock, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < kOps; ++i) {
        const std::string key = SessionCache::make_key("ctx", "id" + std::to_string(rng() % 4000));
        switch (rng() % 4) {
          case 0:
          case 1: cache.put(key, std::string(200 + rng() % 300, 'd'), clock.now() + 1h); break;
          case 2: (void)cache.get(key); break;
          case 3: if (i % 50 == 0) cache.remove(key); else (void)cache.get(key); break;
        }
        if (t == 0 && i % 1000 == 0) (void)cache.stats();
      }
    });
  }
  for (auto& th : threads) th.join();
  auto st = cache.stats();
  EXPECT_GT(st.stores, 0u);
  EXPECT_GT(st.hits, 0u);
  EXPECT_GT(st.evictions, 0u);  // ~4000 keys × ~480 bytes cannot fit in 256 KiB
  EXPECT_LE(st.bytes, size);
  EXPECT_GE(st.bytes, st.entries * (kOverhead + 200));
  EXPECT_LE(st.stores, static_cast<uint64_t>(kThreads) * kOps);
  EXPECT_EQ(st.expired, 0u);
}

TEST(SessionCache, AttachRejectsBadSessionIdContext) {
  FakeClock clock;
  SessionCache cache(config::SessionCache{}, clock);
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  auto empty = cache.attach(ctx.get(), "");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, Errc::InvalidArgument);
  auto too_long = cache.attach(ctx.get(), std::string(SSL_MAX_SID_CTX_LENGTH + 1, 'x'));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code, Errc::InvalidArgument);
  EXPECT_TRUE(cache.attach(ctx.get(), "ok").ok());
  EXPECT_TRUE(cache.attach(ctx.get(), "again").ok());  // rebinding frees the old binding
}

// ------------------------------------------------------- TLS over memory BIOs

// The session ID context TlsContext derives: SHA-256 of the leaf certificate.
std::string leaf_sid_ctx(X509* leaf) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EXPECT_EQ(X509_digest(leaf, EVP_sha256(), md, &n), 1);
  return std::string(reinterpret_cast<const char*>(md), std::min<unsigned>(n, SSL_MAX_SID_CTX_LENGTH));
}

class SessionCacheTls : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = std::make_unique<SessionCache>(config_, clock_);
    client_ctx_ = testing::verifying_client_ctx();
    ASSERT_TRUE(client_ctx_);
  }

  void client_versions(int version) {
    SSL_CTX_set_min_proto_version(client_ctx_.get(), version);
    SSL_CTX_set_max_proto_version(client_ctx_.get(), version);
  }

  // A server SSL_CTX for `name` ("localhost" or "rsa", both valid for
  // localhost) with this fixture's cache attached; tickets off unless asked.
  std::unique_ptr<TlsContext> server(const std::string& name, bool tickets = false) {
    auto ctx = TlsContext::create(testing::server_tls(name));
    EXPECT_TRUE(ctx.ok()) << ctx.error().message();
    if (!ctx.ok()) return nullptr;
    if (!tickets) SSL_CTX_set_options((*ctx)->get(), SSL_OP_NO_TICKET);
    auto st = cache_->attach((*ctx)->get(), leaf_sid_ctx((*ctx)->leaf()));
    EXPECT_TRUE(st.ok()) << st.error().message();
    return std::move(ctx).value();
  }

  // One connection with data both ways (delivering TLS 1.3 NewSessionTickets)
  // and a clean close from both sides. Returns the client's session.
  SslSessionPtr connect(SSL_CTX* server_ctx, SSL_SESSION* resume, bool* reused) {
    auto stream = TlsStream::create(server_ctx);
    EXPECT_TRUE(stream.ok());
    MemoryTlsClient c(client_ctx_.get(), resume);
    pump_handshake(c, *stream);
    EXPECT_TRUE(stream->handshake_done());
    EXPECT_TRUE(SSL_is_init_finished(c.ssl.get()));
    *reused = SSL_session_reused(stream->ssl()) == 1;
    EXPECT_EQ(SSL_session_reused(c.ssl.get()) == 1, *reused);

    c.send(*stream, "ping");
    char buf[64];
    auto got = stream->read(buf, sizeof(buf));
    EXPECT_TRUE(got.ok());
    EXPECT_TRUE(stream->write("pong").ok());
    stream->shutdown();  // close_notify sent: OpenSSL keeps the session (no remove_cb)
    EXPECT_EQ(c.receive(*stream), "pong");
    SSL_shutdown(c.ssl.get());
    stream->feed(c.take_output());
    (void)stream->read(buf, sizeof(buf));
    ERR_clear_error();
    return SslSessionPtr(SSL_get1_session(c.ssl.get()));
  }

  FakeClock clock_;
  config::SessionCache config_ = cache_config(1 << 20, 3600s);
  std::unique_ptr<SessionCache> cache_;
  SslCtxPtr client_ctx_;
};

// A session made on SSL_CTX A resumes on SSL_CTX B (same certificate, A already
// freed): what a config reload looks like.
TEST_F(SessionCacheTls, Tls12ResumesAcrossSslCtxRebuild) {
  client_versions(TLS1_2_VERSION);
  auto a = server("localhost");
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  EXPECT_FALSE(reused);
  ASSERT_TRUE(session);
  EXPECT_EQ(cache_->stats().stores, 1u);
  EXPECT_EQ(cache_->stats().entries, 1u);
  a.reset();  // the old generation goes away

  auto b = server("localhost");
  connect(b->get(), session.get(), &reused);
  EXPECT_TRUE(reused);
  EXPECT_EQ(cache_->stats().hits, 1u);
  // Session IDs resume repeatedly in TLS 1.2.
  connect(b->get(), session.get(), &reused);
  EXPECT_TRUE(reused);
  EXPECT_EQ(cache_->stats().hits, 2u);
}

TEST_F(SessionCacheTls, Tls13StatefulResumesAcrossSslCtxRebuild) {
  client_versions(TLS1_3_VERSION);
  auto a = server("localhost");
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  EXPECT_FALSE(reused);
  ASSERT_TRUE(session);
  EXPECT_TRUE(SSL_SESSION_is_resumable(session.get()));
  EXPECT_GE(cache_->stats().stores, 1u);  // one per NewSessionTicket
  a.reset();

  auto b = server("localhost");
  SslSessionPtr next = connect(b->get(), session.get(), &reused);
  EXPECT_TRUE(reused);
  EXPECT_EQ(cache_->stats().hits, 1u);
  // A TLS 1.3 stateful session is single-use (RFC 8446 §8.1 anti-replay):
  // OpenSSL removes it once used, the fresh one from this connection resumes.
  connect(b->get(), session.get(), &reused);
  EXPECT_FALSE(reused);
  connect(b->get(), next.get(), &reused);
  EXPECT_TRUE(reused);
}

TEST_F(SessionCacheTls, Tls12OtherCertificateDoesNotResume) {
  client_versions(TLS1_2_VERSION);
  auto a = server("localhost");
  auto other = server("rsa");
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  ASSERT_TRUE(session);
  connect(other->get(), session.get(), &reused);
  EXPECT_FALSE(reused);
  // A cache miss, not a hit that OpenSSL then refused: the key has the context.
  EXPECT_EQ(cache_->stats().hits, 0u);
  EXPECT_GE(cache_->stats().misses, 1u);
  // And the session is still good where it was made.
  connect(a->get(), session.get(), &reused);
  EXPECT_TRUE(reused);
}

TEST_F(SessionCacheTls, Tls13OtherCertificateDoesNotResume) {
  client_versions(TLS1_3_VERSION);
  auto a = server("localhost");
  auto other = server("rsa");
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  ASSERT_TRUE(session);
  connect(other->get(), session.get(), &reused);
  EXPECT_FALSE(reused);
  EXPECT_EQ(cache_->stats().hits, 0u);
  EXPECT_GE(cache_->stats().misses, 1u);
}

TEST_F(SessionCacheTls, Tls12ExpiredSessionIsNotResumed) {
  client_versions(TLS1_2_VERSION);
  auto a = server("localhost");
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  ASSERT_TRUE(session);
  clock_.advance(config_.timeout + 1s);
  connect(a->get(), session.get(), &reused);
  EXPECT_FALSE(reused);
  EXPECT_EQ(cache_->stats().expired, 1u);
  EXPECT_EQ(cache_->stats().hits, 0u);
}

TEST_F(SessionCacheTls, Tls13ExpiredSessionIsNotResumed) {
  client_versions(TLS1_3_VERSION);
  auto a = server("localhost");
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  ASSERT_TRUE(session);
  clock_.advance(config_.timeout + 1s);
  connect(a->get(), session.get(), &reused);
  EXPECT_FALSE(reused);
  EXPECT_GE(cache_->stats().expired, 1u);
  EXPECT_EQ(cache_->stats().hits, 0u);
}

// Entries live min(config timeout, the session's own timeout).
TEST_F(SessionCacheTls, ShorterSessionTimeoutWins) {
  client_versions(TLS1_2_VERSION);
  auto a = server("localhost");
  SSL_CTX_set_timeout(a->get(), 60);  // sessions made now carry 60 s; config says 1 h
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  ASSERT_TRUE(session);
  clock_.advance(30s);
  connect(a->get(), session.get(), &reused);
  EXPECT_TRUE(reused);
  clock_.advance(31s);
  connect(a->get(), session.get(), &reused);
  EXPECT_FALSE(reused);
  EXPECT_EQ(cache_->stats().expired, 1u);
}

// OpenSSL's SSL_free drops ("clears as bad") the session of a connection that
// completed its handshake but never sent close_notify, through remove_cb.
// TlsStream marks a cleanly handshaken SSL shut down before freeing it (as
// nginx's ngx_ssl_shutdown does), so a client that just drops the TCP
// connection keeps its session; a raw SSL freed the same way loses it.
TEST_F(SessionCacheTls, Tls12UncleanCloseKeepsSessionThroughTlsStream) {
  client_versions(TLS1_2_VERSION);
  auto a = server("localhost");
  for (bool through_tls_stream : {false, true}) {
    SslSessionPtr session;
    {
      auto stream = TlsStream::create(a->get());
      ASSERT_TRUE(stream.ok());
      MemoryTlsClient c(client_ctx_.get(), nullptr);
      pump_handshake(c, *stream);
      ASSERT_TRUE(stream->handshake_done());
      session.reset(SSL_get1_session(c.ssl.get()));
      EXPECT_EQ(cache_->stats().entries, 1u);
      // The client side has the same rule (it would mark the session
      // not_resumable); only the server's choice is under test.
      SSL_set_shutdown(c.ssl.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
      // Without TlsStream's destructor: a bare SSL_free, as OpenSSL does it.
      if (!through_tls_stream) SSL_free(stream->release_ssl_for_test());
    }  // the stream (if it still owns its SSL) is freed here
    EXPECT_EQ(cache_->stats().entries, through_tls_stream ? 1u : 0u);
    bool reused = !through_tls_stream;
    connect(a->get(), session.get(), &reused);
    EXPECT_EQ(reused, through_tls_stream);
    cache_ = std::make_unique<SessionCache>(config_, clock_);
    a = server("localhost");
  }
}

TEST_F(SessionCacheTls, AttachSetsTimeoutFromConfig) {
  auto a = server("localhost");
  EXPECT_EQ(SSL_CTX_get_timeout(a->get()), 3600);
  EXPECT_EQ(SSL_CTX_get_session_cache_mode(a->get()), SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL);
}

// Stateless TLS 1.3 tickets resume from the ticket; the cache keeps nothing.
TEST_F(SessionCacheTls, Tls13StatelessTicketsAreNotStored) {
  client_versions(TLS1_3_VERSION);
  auto a = server("localhost", /*tickets=*/true);
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  ASSERT_TRUE(session);
  EXPECT_EQ(cache_->stats().stores, 0u);
  connect(a->get(), session.get(), &reused);
  EXPECT_TRUE(reused);
  EXPECT_EQ(cache_->stats().entries, 0u);
}

TEST_F(SessionCacheTls, DisabledCacheIssuesNoSessionId) {
  client_versions(TLS1_2_VERSION);
  auto a = server("localhost");
  SessionCache::disable(a->get());
  bool reused = true;
  SslSessionPtr session = connect(a->get(), nullptr, &reused);
  ASSERT_TRUE(session);
  unsigned int id_len = 99;
  SSL_SESSION_get_id(session.get(), &id_len);
  EXPECT_EQ(id_len, 0u);
  connect(a->get(), session.get(), &reused);
  EXPECT_FALSE(reused);
  EXPECT_EQ(cache_->stats().stores, 0u);
}

}  // namespace
}  // namespace tlsfront::tls
