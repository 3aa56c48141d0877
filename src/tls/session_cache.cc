#include "tls/session_cache.h"

#include <openssl/err.h>

#include <algorithm>
#include <functional>
#include <iterator>

#include "tls/openssl_error.h"
#include "tls/session_lookup.h"

namespace tlsfront::tls {
namespace {

// What an SSL_CTX's ex_data slot holds: the cache and the session ID context
// the ctx was given, which OpenSSL 3.0 cannot report back. Owned by the
// SSL_CTX: binding_free_cb deletes it when the SSL_CTX is freed.
struct Binding {
  SessionCache* cache;
  std::string sid_ctx;
};

void binding_free_cb(void* /*parent*/, void* ptr, CRYPTO_EX_DATA*, int, long, void*) noexcept {
  delete static_cast<Binding*>(ptr);
}

// One process-wide index, allocated on first use (thread-safe static init).
int binding_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, binding_free_cb);
  return index;
}

Binding* binding_of(const SSL_CTX* ctx) {
  if (ctx == nullptr) return nullptr;
  return static_cast<Binding*>(SSL_CTX_get_ex_data(ctx, binding_index()));
}

std::string_view as_view(const unsigned char* p, size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

// SSL_CTX_sess_set_new_cb: returning 0 tells OpenSSL we kept no reference, so
// it drops the one it took for us.
int new_session_cb(SSL* ssl, SSL_SESSION* session) noexcept {
  if (Binding* b = binding_of(SSL_get_SSL_CTX(ssl))) b->cache->on_new_session(ssl, session);
  return 0;
}

// SSL_CTX_sess_set_get_cb (OpenSSL 3.0 signature, const id): *copy = 0 hands
// OpenSSL the only reference to the freshly decoded session. The key uses the
// session ID context of the SSL's current SSL_CTX, which is the SSL's own
// (SSL_set_SSL_CTX carries it along); OpenSSL re-checks it after we return.
SSL_SESSION* get_session_cb(SSL* ssl, const unsigned char* id, int id_len, int* copy) noexcept {
  *copy = 0;
  Binding* b = binding_of(SSL_get_SSL_CTX(ssl));
  if (b == nullptr || id_len <= 0) return nullptr;
  return b->cache->on_get_session(b->sid_ctx, as_view(id, static_cast<size_t>(id_len))).release();
}

// SSL_CTX_sess_set_remove_cb: OpenSSL drops a session it deems bad (failed
// handshake, connection freed without close_notify sent, TLS 1.3 stateful
// session used once).
void remove_session_cb(SSL_CTX* ctx, SSL_SESSION* session) noexcept {
  if (Binding* b = binding_of(ctx)) b->cache->on_remove_session(session);
}

// Spreads std::hash's bits so shard choice and the shard's bucket choice
// (hash mod a prime) do not correlate.
size_t mix(size_t h) {
  uint64_t x = h;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<size_t>(x);
}

}  // namespace

SessionCache::SessionCache(const config::SessionCache& cfg, const Clock& clock)
    : clock_(clock),
      timeout_(cfg.timeout),
      remote_(cfg.store == config::SessionStore::Redis),
      shard_count_(shard_count_for(cfg.size_bytes)),
      shard_budget_(cfg.size_bytes / shard_count_),
      shards_(std::make_unique<Shard[]>(shard_count_)) {}

SessionCache::~SessionCache() = default;

size_t SessionCache::shard_count_for(uint64_t size_bytes) {
  return static_cast<size_t>(std::clamp<uint64_t>(size_bytes / kMinShardBytes, 1, kMaxShards));
}

std::string SessionCache::make_key(std::string_view sid_ctx, std::string_view session_id) {
  std::string key;
  key.reserve(1 + sid_ctx.size() + session_id.size());
  key.push_back(static_cast<char>(sid_ctx.size()));
  key.append(sid_ctx);
  key.append(session_id);
  return key;
}

SessionCache::Shard& SessionCache::shard_for(std::string_view key) const {
  return shards_[mix(std::hash<std::string_view>{}(key)) % shard_count_];
}

void SessionCache::Shard::erase(std::list<Entry>::iterator it) {
  index.erase(std::string_view(it->key));
  bytes -= it->cost();
  lru.erase(it);
}

void SessionCache::put(std::string_view key, std::string der, TimePoint expires) {
  const TimePoint now = clock_.now();
  if (expires <= now) return;
  // Build the node outside the lock; splicing it in allocates nothing.
  std::list<Entry> node;
  node.push_back(Entry{std::string(key), std::move(der), expires});
  const size_t cost = node.front().cost();
  if (cost > shard_budget_) return;

  Shard& s = shard_for(key);
  std::lock_guard lock(s.mu);
  if (auto found = s.index.find(key); found != s.index.end()) s.erase(found->second);
  while (s.bytes + cost > shard_budget_ && !s.lru.empty()) {
    auto victim = std::prev(s.lru.end());
    ++(victim->expires <= now ? s.expired : s.evictions);
    s.erase(victim);
  }
  s.lru.splice(s.lru.begin(), node);
  s.index.emplace(std::string_view(s.lru.front().key), s.lru.begin());
  s.bytes += cost;
  ++s.stores;
}

std::optional<std::string> SessionCache::get(std::string_view key) {
  const TimePoint now = clock_.now();
  Shard& s = shard_for(key);
  std::lock_guard lock(s.mu);
  auto found = s.index.find(key);
  if (found == s.index.end()) {
    ++s.misses;
    return std::nullopt;
  }
  auto it = found->second;
  if (it->expires <= now) {
    ++s.expired;
    ++s.misses;
    s.erase(it);
    return std::nullopt;
  }
  s.lru.splice(s.lru.begin(), s.lru, it);
  ++s.hits;
  return it->der;
}

void SessionCache::remove(std::string_view key) {
  Shard& s = shard_for(key);
  std::lock_guard lock(s.mu);
  if (auto found = s.index.find(key); found != s.index.end()) s.erase(found->second);
}

bool SessionCache::contains(std::string_view key) const {
  const TimePoint now = clock_.now();
  Shard& s = shard_for(key);
  std::lock_guard lock(s.mu);
  auto found = s.index.find(key);
  return found != s.index.end() && found->second->expires > now;
}

bool SessionCache::adopt(std::string_view key, std::string der) {
  ERR_set_mark();
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  SslSessionPtr session(d2i_SSL_SESSION(nullptr, &p, static_cast<long>(der.size())));
  ERR_pop_to_mark();
  if (!session || p != reinterpret_cast<const unsigned char*>(der.data()) + der.size()) return false;
  const auto lifetime = lifetime_for(std::chrono::seconds(SSL_SESSION_get_timeout(session.get())));
  const TimePoint started{std::chrono::seconds(SSL_SESSION_get_time(session.get()))};
  const TimePoint expires = std::chrono::time_point_cast<TimePoint::duration>(started + lifetime);
  if (expires <= clock_.now()) return false;
  put(key, std::move(der), expires);
  return contains(key);
}

SessionCache::Stats SessionCache::stats() const {
  Stats out;
  for (size_t i = 0; i < shard_count_; ++i) {
    const Shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    out.hits += s.hits;
    out.misses += s.misses;
    out.evictions += s.evictions;
    out.expired += s.expired;
    out.stores += s.stores;
    out.entries += s.lru.size();
    out.bytes += s.bytes;
  }
  return out;
}

std::chrono::milliseconds SessionCache::lifetime_for(std::chrono::seconds session_timeout) const {
  return std::min<std::chrono::milliseconds>(timeout_, session_timeout);
}

Status SessionCache::attach(SSL_CTX* ctx, std::string_view session_id_context) {
  if (session_id_context.empty() || session_id_context.size() > SSL_MAX_SID_CTX_LENGTH) {
    return make_error(Errc::InvalidArgument, "session ID context must be 1.." +
                                                 std::to_string(SSL_MAX_SID_CTX_LENGTH) + " bytes, got " +
                                                 std::to_string(session_id_context.size()));
  }
  const int index = binding_index();
  if (index < 0) return openssl_error(Errc::Tls, "SSL_CTX_get_ex_new_index");
  ERR_clear_error();
  if (!SSL_CTX_set_session_id_context(ctx, reinterpret_cast<const unsigned char*>(session_id_context.data()),
                                      static_cast<unsigned int>(session_id_context.size()))) {
    return openssl_error(Errc::Tls, "SSL_CTX_set_session_id_context");
  }
  auto binding = std::make_unique<Binding>(Binding{this, std::string(session_id_context)});
  Binding* previous = binding_of(ctx);
  if (!SSL_CTX_set_ex_data(ctx, index, binding.get())) return openssl_error(Errc::Tls, "SSL_CTX_set_ex_data");
  binding.release();  // now owned by ctx, freed by binding_free_cb
  delete previous;

  SSL_CTX_sess_set_new_cb(ctx, new_session_cb);
  SSL_CTX_sess_set_get_cb(ctx, get_session_cb);
  SSL_CTX_sess_set_remove_cb(ctx, remove_session_cb);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL);
  if (remote_) SSL_CTX_set_client_hello_cb(ctx, on_client_hello, nullptr);
  const auto secs = std::chrono::ceil<std::chrono::seconds>(timeout_).count();
  SSL_CTX_set_timeout(ctx, static_cast<long>(std::max<decltype(secs)>(secs, 1)));
  return {};
}

// Pauses the handshake with SSL_CLIENT_HELLO_RETRY while the connection's
// SessionLookup asks the shared store; OpenSSL keeps the ClientHello and calls
// this again on the next SSL_do_handshake.
int SessionCache::on_client_hello(SSL* ssl, int* /*alert*/, void* /*arg*/) noexcept {
  SessionLookup* lookup = SessionLookup::of(ssl);
  Binding* b = binding_of(SSL_get_SSL_CTX(ssl));
  if (lookup == nullptr || b == nullptr) return SSL_CLIENT_HELLO_SUCCESS;
  if (lookup->state() != SessionLookup::State::Idle) return lookup->on_client_hello(*b->cache, std::string());
  const unsigned char* id = nullptr;
  const size_t id_len = SSL_client_hello_get0_session_id(ssl, &id);
  const unsigned char* versions = nullptr;
  size_t versions_len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_supported_versions, &versions, &versions_len) != 1) versions_len = 0;
  const long max_version = SSL_get_max_proto_version(ssl);
  const bool server_allows_tls13 = max_version == 0 || max_version >= TLS1_3_VERSION;
  const unsigned char* psk = nullptr;
  size_t psk_len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_psk, &psk, &psk_len) != 1) psk_len = 0;
  auto sid = SessionLookup::resumable_session_id(as_view(id, id_len), as_view(versions, versions_len),
                                                 server_allows_tls13, as_view(psk, psk_len));
  if (!sid) return SSL_CLIENT_HELLO_SUCCESS;
  return lookup->on_client_hello(*b->cache, SessionCache::make_key(b->sid_ctx, *sid));
}

void SessionCache::disable(SSL_CTX* ctx) { SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF); }

void SessionCache::on_new_session(SSL* ssl, SSL_SESSION* session) {
  // A TLS 1.3 session sent as a stateless ticket is resumed from the ticket,
  // never by ID; storing it would only push out sessions that are.
  if (SSL_SESSION_get_protocol_version(session) >= TLS1_3_VERSION && (SSL_get_options(ssl) & SSL_OP_NO_TICKET) == 0) {
    return;
  }
  unsigned int id_len = 0, ctx_len = 0;
  const unsigned char* id = SSL_SESSION_get_id(session, &id_len);
  const unsigned char* sid_ctx = SSL_SESSION_get0_id_context(session, &ctx_len);
  if (id_len == 0) return;

  ERR_set_mark();  // an encoding failure must not leak into the handshake's error queue
  const int len = i2d_SSL_SESSION(session, nullptr);
  if (len <= 0) {
    ERR_pop_to_mark();
    return;
  }
  std::string der(static_cast<size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  if (i2d_SSL_SESSION(session, &p) != len) {
    ERR_pop_to_mark();
    return;
  }
  ERR_pop_to_mark();
  const auto lifetime = lifetime_for(std::chrono::seconds(SSL_SESSION_get_timeout(session)));
  std::string key = make_key(as_view(sid_ctx, ctx_len), as_view(id, id_len));
  // TLS 1.2 sessions and TLS 1.3 stateful ones (looked up by PSK identity,
  // tls/session_lookup.h) go to the shared store too.
  if (remote_) {
    if (SessionLookup* lookup = SessionLookup::of(ssl)) lookup->store()->store(key, der, lifetime);
  }
  put(key, std::move(der), clock_.now() + lifetime);
}

SslSessionPtr SessionCache::on_get_session(std::string_view sid_ctx, std::string_view session_id) {
  const std::string key = make_key(sid_ctx, session_id);
  std::optional<std::string> der = get(key);
  if (!der) return nullptr;
  ERR_set_mark();
  const auto* p = reinterpret_cast<const unsigned char*>(der->data());
  SslSessionPtr session(d2i_SSL_SESSION(nullptr, &p, static_cast<long>(der->size())));
  ERR_pop_to_mark();
  if (!session) remove(key);  // undecodable: never offer it again
  return session;
}

void SessionCache::on_remove_session(SSL_SESSION* session) {
  unsigned int id_len = 0, ctx_len = 0;
  const unsigned char* id = SSL_SESSION_get_id(session, &id_len);
  const unsigned char* sid_ctx = SSL_SESSION_get0_id_context(session, &ctx_len);
  if (id_len == 0) return;
  remove(make_key(as_view(sid_ctx, ctx_len), as_view(id, id_len)));
}

}  // namespace tlsfront::tls
