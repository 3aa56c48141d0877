// SessionLookup: which ClientHello session IDs are looked up, and the whole
// pause/resume flow of store = "redis" over memory BIOs: node A issues a TLS
// 1.2 session (and writes it to a fake shared store), node B (its own empty
// SessionCache) pauses the handshake in the client hello callback, gets the
// DER from the store and resumes; garbage or a miss is a full handshake.
#include "tls/session_lookup.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <deque>
#include <map>

#include "support/fake_clock.h"
#include "support/memory_tls_client.h"
#include "support/test_pki.h"
#include "tls/session_cache.h"
#include "tls/tls_context.h"
#include "tls/tls_stream.h"

namespace tlsfront::tls {
namespace {

using namespace std::chrono_literals;
using testing::MemoryTlsClient;

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(SessionLookup, ResumableSessionId) {
  const std::string id(32, 'i');
  EXPECT_EQ(SessionLookup::resumable_session_id(id, "", true).value_or(""), id);
  EXPECT_FALSE(SessionLookup::resumable_session_id("", "", true));
  EXPECT_FALSE(SessionLookup::resumable_session_id(std::string(33, 'i'), "", true));
  // supported_versions offering TLS 1.3: the ID is the random legacy one.
  const std::string v13_12 = bytes({4, 0x03, 0x04, 0x03, 0x03});
  EXPECT_FALSE(SessionLookup::resumable_session_id(id, v13_12, true));
  // ... unless this server does not do TLS 1.3: then TLS 1.2 resumes by ID.
  EXPECT_TRUE(SessionLookup::resumable_session_id(id, v13_12, false));
  EXPECT_TRUE(SessionLookup::resumable_session_id(id, bytes({2, 0x03, 0x03}), true));
  // Truncated or lying lengths never read past the buffer.
  EXPECT_TRUE(SessionLookup::resumable_session_id(id, bytes({9, 0x03}), true));
  EXPECT_FALSE(SessionLookup::resumable_session_id(id, bytes({200, 0x03, 0x04}), true));
}

// TLS 1.3: the first PSK identity when it is a stateful ticket (a session ID).
TEST(SessionLookup, ResumableSessionIdFromPskIdentity) {
  const std::string v13 = bytes({2, 0x03, 0x04});
  auto psk = [](const std::string& identity) {
    std::string ids;
    ids.push_back(static_cast<char>(identity.size() >> 8));
    ids.push_back(static_cast<char>(identity.size() & 0xff));
    ids += identity + std::string(4, '\x01');  // obfuscated_ticket_age
    std::string ext;
    ext.push_back(static_cast<char>(ids.size() >> 8));
    ext.push_back(static_cast<char>(ids.size() & 0xff));
    return ext + ids + bytes({0, 33, 32}) + std::string(32, 'b');  // binders
  };
  const std::string legacy(32, 'r'), sid(32, 's');
  EXPECT_EQ(SessionLookup::resumable_session_id(legacy, v13, true, psk(sid)).value_or(""), sid);
  // A stateless ticket (longer than a session ID) is never looked up.
  EXPECT_FALSE(SessionLookup::resumable_session_id(legacy, v13, true, psk(std::string(200, 't'))));
  // No pre_shared_key: nothing (the legacy ID is random).
  EXPECT_FALSE(SessionLookup::resumable_session_id(legacy, v13, true, ""));
  // Truncated or lying lengths never read past the buffer.
  const std::string good = psk(sid);
  for (size_t n = 0; n < 4 + sid.size() + 4; ++n) {
    EXPECT_FALSE(SessionLookup::resumable_session_id(legacy, v13, true, good.substr(0, n))) << n;
  }
  EXPECT_FALSE(SessionLookup::resumable_session_id(legacy, v13, true, bytes({0xff, 0xff, 0, 32})));
  // A server without TLS 1.3 resumes the TLS 1.2 way, by the session ID.
  EXPECT_EQ(SessionLookup::resumable_session_id(legacy, v13, false, psk(sid)).value_or(""), legacy);
}

// A RemoteSessionStore in memory whose lookups the test answers by hand.
class FakeStore final : public RemoteSessionStore {
 public:
  bool lookup(const std::string& key, LookupDone done) override {
    if (down) return false;
    lookups.push_back(key);
    pending.push_back(std::move(done));
    return true;
  }
  void store(const std::string& key, std::string_view der, std::chrono::milliseconds ttl) override {
    stored[key] = std::string(der);
    last_ttl = ttl;
  }
  // Answers the oldest lookup from `stored` (or with `override_value`).
  void answer(std::optional<std::string> override_value = std::nullopt, bool miss = false) {
    ASSERT_FALSE(pending.empty());
    LookupDone done = std::move(pending.front());
    const std::string key = lookups[lookups.size() - pending.size()];
    pending.pop_front();
    if (miss) return done(std::nullopt);
    if (override_value) return done(override_value);
    auto it = stored.find(key);
    done(it == stored.end() ? std::nullopt : std::optional<std::string>(it->second));
  }

  bool down = false;
  std::vector<std::string> lookups;
  std::deque<LookupDone> pending;
  std::map<std::string, std::string> stored;
  std::chrono::milliseconds last_ttl{0};
};

// One server node: its own cache and SSL_CTX (same certificate on every node).
struct Node {
  Node(const Clock& clock, config::SessionCache cfg) : cache(cfg, clock) {
    config::Tls t = testing::server_tls();
    t.session_cache = cfg;
    auto created = TlsContext::create(t, &cache, nullptr);
    EXPECT_TRUE(created.ok()) << created.error().message();
    if (created.ok()) ctx = std::move(created).value();
    if (ctx) SSL_CTX_set_options(ctx->get(), SSL_OP_NO_TICKET);
  }
  SessionCache cache;
  std::unique_ptr<TlsContext> ctx;
};

class SessionLookupTls : public ::testing::Test {
 protected:
  SessionLookupTls() : clock_(std::chrono::system_clock::now()) {
    cfg_.store = config::SessionStore::Redis;
    cfg_.timeout = 3600s;
  }
  void SetUp() override {
    client_ctx_.reset(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_set_verify(client_ctx_.get(), SSL_VERIFY_NONE, nullptr);
    SSL_CTX_set_options(client_ctx_.get(), SSL_OP_NO_TICKET);
    SSL_CTX_set_min_proto_version(client_ctx_.get(), TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(client_ctx_.get(), TLS1_2_VERSION);
  }

  // Drives a handshake on `node`, letting the test answer lookups through
  // `answer` when the server pauses. Returns the client's session.
  SslSessionPtr connect(Node& node, SSL_SESSION* resume, bool* reused,
                        const std::function<void()>& answer = {}) {
    auto stream = TlsStream::create(node.ctx->get());
    EXPECT_TRUE(stream.ok());
    bool resumed_handshake = false;
    auto lookup = std::make_shared<SessionLookup>(&store_, [&] {
      resumed_handshake = true;
      auto r = stream->handshake();
      EXPECT_TRUE(r.ok());
    });
    EXPECT_TRUE(lookup->attach(stream->ssl()));
    MemoryTlsClient c(client_ctx_.get(), resume);
    paused_ = false;
    testing::pump_handshake(c, *stream, [&] {
      paused_ = true;
      EXPECT_EQ(lookup->state(), SessionLookup::State::Pending);
      // Calling again while pending stays paused and asks nothing more.
      const size_t asked = store_.lookups.size();
      EXPECT_FALSE(*stream->handshake());
      EXPECT_TRUE(stream->handshake_paused());
      EXPECT_EQ(store_.lookups.size(), asked);
      if (answer) answer();
      EXPECT_TRUE(resumed_handshake);
      EXPECT_FALSE(stream->handshake_paused());
    });
    EXPECT_TRUE(stream->handshake_done());
    *reused = SSL_session_reused(stream->ssl()) == 1;
    EXPECT_EQ(SSL_session_reused(c.ssl.get()) == 1, *reused);
    stream->shutdown();
    SSL_shutdown(c.ssl.get());  // else OpenSSL marks the client's session not resumable
    ERR_clear_error();
    return SslSessionPtr(SSL_get1_session(c.ssl.get()));
  }

  FakeClock clock_;
  config::SessionCache cfg_;
  FakeStore store_;
  SslCtxPtr client_ctx_;
  bool paused_ = false;
};

TEST_F(SessionLookupTls, Tls12SessionFromNodeAResumesOnNodeB) {
  Node a(clock_, cfg_), b(clock_, cfg_);
  bool reused = true;
  SslSessionPtr s = connect(a, nullptr, &reused);
  EXPECT_FALSE(reused);
  EXPECT_FALSE(paused_);  // no session ID offered: nothing to look up
  ASSERT_EQ(store_.stored.size(), 1u);
  EXPECT_EQ(store_.last_ttl, 3600s);
  unsigned int id_len = 0;
  const unsigned char* id = SSL_SESSION_get_id(s.get(), &id_len);
  const std::string& key = store_.stored.begin()->first;
  EXPECT_EQ(key.substr(key.size() - id_len), std::string(reinterpret_cast<const char*>(id), id_len));

  // A has it locally: no lookup.
  connect(a, s.get(), &reused);
  EXPECT_TRUE(reused);
  EXPECT_FALSE(paused_);
  EXPECT_TRUE(store_.lookups.empty());

  // B does not: it pauses, asks the store for exactly that key, and resumes.
  connect(b, s.get(), &reused, [&] { store_.answer(); });
  EXPECT_TRUE(paused_);
  ASSERT_EQ(store_.lookups.size(), 1u);
  EXPECT_EQ(store_.lookups[0], key);
  EXPECT_TRUE(reused);
  EXPECT_TRUE(b.cache.contains(key));
  // Now local on B: the next resumption asks nothing.
  connect(b, s.get(), &reused);
  EXPECT_TRUE(reused);
  EXPECT_EQ(store_.lookups.size(), 1u);
}

TEST_F(SessionLookupTls, MissGarbageAndDownAreFullHandshakes) {
  Node a(clock_, cfg_);
  bool reused = true;
  SslSessionPtr s = connect(a, nullptr, &reused);
  ASSERT_TRUE(s);
  {
    Node b(clock_, cfg_);
    connect(b, s.get(), &reused, [&] { store_.answer(std::nullopt, /*miss=*/true); });
    EXPECT_TRUE(paused_);
    EXPECT_FALSE(reused);
  }
  {
    Node b(clock_, cfg_);
    connect(b, s.get(), &reused, [&] { store_.answer(std::string("\x30\x03garbage", 9)); });
    EXPECT_TRUE(paused_);
    EXPECT_FALSE(reused);
    EXPECT_EQ(b.cache.stats().entries, 1u);  // only the new full-handshake session
  }
  {
    Node b(clock_, cfg_);
    store_.down = true;
    connect(b, s.get(), &reused);
    EXPECT_FALSE(paused_);
    EXPECT_FALSE(reused);
  }
}

TEST_F(SessionLookupTls, Tls13ClientHelloIsNotLookedUp) {
  Node a(clock_, cfg_), b(clock_, cfg_);
  SSL_CTX_set_max_proto_version(client_ctx_.get(), TLS1_3_VERSION);
  bool reused = true;
  SslSessionPtr s = connect(a, nullptr, &reused);
  connect(b, nullptr, &reused);  // TLS 1.3: random legacy session ID
  EXPECT_FALSE(paused_);
  EXPECT_TRUE(store_.lookups.empty());
}

TEST_F(SessionLookupTls, AdoptRejectsGarbageAndKeepsSessions) {
  Node a(clock_, cfg_);
  bool reused = true;
  SslSessionPtr session = connect(a, nullptr, &reused);
  ASSERT_TRUE(session);
  FakeClock& clock = clock_;
  SessionCache cache(config::SessionCache{}, clock);
  const std::string key = SessionCache::make_key("ctx", "id");
  EXPECT_FALSE(cache.adopt(key, "not DER"));
  EXPECT_FALSE(cache.adopt(key, ""));
  SSL_SESSION_set_time(session.get(), static_cast<long>(std::chrono::system_clock::to_time_t(clock.now())));
  SSL_SESSION_set_timeout(session.get(), 300);
  const int len = i2d_SSL_SESSION(session.get(), nullptr);
  ASSERT_GT(len, 0);
  std::string der(static_cast<size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  ASSERT_EQ(i2d_SSL_SESSION(session.get(), &p), len);
  EXPECT_FALSE(cache.adopt(key, der + "trailing"));
  EXPECT_TRUE(cache.adopt(key, der));
  EXPECT_TRUE(cache.contains(key));
  clock.advance(301s);  // the session's own timeout, not the cache's 1d
  EXPECT_FALSE(cache.contains(key));
}

}  // namespace
}  // namespace tlsfront::tls
