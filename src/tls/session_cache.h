// SessionCache: the server-side TLS session cache, kept by tlsfront instead of
// OpenSSL's per-SSL_CTX cache so that one cache serves every worker thread and
// every SSL_CTX generation: a config reload builds new SSL_CTXs, attaches the
// same cache, and clients resume sessions made before the reload.
//
// Sessions are stored as DER (i2d_SSL_SESSION), keyed by (session ID context,
// session ID) so a session is only ever found under the certificate context it
// was made for (RFC 8446 §4.6.1, RFC 5246 §7.4.1.2). The cache is bounded in
// bytes (config `size`, nginx's shared:SSL:10m) with LRU eviction, and entries
// expire after min(config `timeout`, the session's own timeout).
//
// It holds TLS 1.2 session-ID sessions and TLS 1.3 stateful sessions (server
// SSL_OP_NO_TICKET). TLS 1.3 sessions issued as stateless tickets are not
// stored: clients resume those from the ticket and never look them up by ID.
//
// Layout: shards selected by key hash, each with its own std::mutex, LRU list,
// hash map and byte budget (size / shards), so workers rarely contend.
// With store = "redis" the cache is the local tier of a shared store: new
// sessions are also written to the connection's worker's RemoteSessionStore,
// and a ClientHello whose session ID misses here pauses its handshake while
// that store is asked (tls/session_lookup.h; the client hello callback).
//
// Trust: the DER handed to OpenSSL is DER this process produced or DER read
// from the shared store, which is decoded and checked by adopt() before it is
// cached; keys looked up come from the peer's ClientHello.
//
// Thread affinity: every member is safe to call from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "config/config.h"
#include "util/clock.h"
#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tls {

class SessionCache {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  // Bytes counted per entry on top of key.size() + der.size(): the LRU list node
  // (key and DER std::string headers, expiry, two links: ~88 bytes), the hash
  // map node (string_view key, list iterator, link, cached hash: ~40 bytes)
  // and its share of the bucket array. An approximation of the heap cost on
  // 64-bit libstdc++, fixed so that accounting is deterministic.
  static constexpr size_t kEntryOverheadBytes = 128;
  // Upper bound on shards; a small cache uses fewer (see shard_count_for()).
  static constexpr size_t kMaxShards = 16;
  // A shard is never given less budget than this unless the whole cache is
  // smaller (then there is one shard), so a shard holds a useful number of
  // sessions (~40..300 at 200..1500 bytes each).
  static constexpr size_t kMinShardBytes = 64 * 1024;

  // Counters since construction. Each shard keeps its own under its mutex;
  // stats() sums them shard by shard, so the result is a consistent snapshot of
  // each shard, not of the whole cache at one instant.
  struct Stats {
    uint64_t hits = 0;       // get() returned a live entry
    uint64_t misses = 0;     // get() returned nothing (absent or expired)
    uint64_t evictions = 0;  // live entries dropped to make room (LRU order)
    uint64_t expired = 0;    // entries dropped because they had expired
    uint64_t stores = 0;     // put() calls that stored (or replaced) an entry
    uint64_t entries = 0;    // entries held now
    uint64_t bytes = 0;      // accounted bytes held now (≤ the configured size)
  };

  // `cfg.size_bytes` bounds the accounted bytes; `cfg.timeout` caps every
  // entry's lifetime. `clock` is borrowed and must outlive the cache; it is
  // read on every put/get. `cfg.enabled` and `cfg.store` are the caller's
  // business (see disable()). Thread affinity: any thread.
  SessionCache(const config::SessionCache& cfg, const Clock& clock);
  ~SessionCache();

  SessionCache(const SessionCache&) = delete;
  SessionCache& operator=(const SessionCache&) = delete;
  SessionCache(SessionCache&&) = delete;  // its address lives in SSL_CTX ex_data
  SessionCache& operator=(SessionCache&&) = delete;

  // The cache key for a session: one length byte, `sid_ctx`, then
  // `session_id`. `sid_ctx` must be at most SSL_MAX_SID_CTX_LENGTH (32) bytes.
  static std::string make_key(std::string_view sid_ctx, std::string_view session_id);

  // Stores `der` under `key` until `expires` (clock time), replacing any entry
  // with that key and making it the most recently used. Evicts least recently
  // used entries of the key's shard until it fits. Does nothing if `expires`
  // is not after now, or if the entry alone exceeds a shard's budget.
  void put(std::string_view key, std::string der, TimePoint expires);

  // The DER stored under `key`, copied, and the entry becomes the most recently
  // used; std::nullopt if absent. An expired entry is removed and is a miss.
  std::optional<std::string> get(std::string_view key);

  // Drops the entry under `key`, if any.
  void remove(std::string_view key);

  // True if a live entry is held under `key`; touches neither LRU order nor stats.
  bool contains(std::string_view key) const;

  // Caches `der` read from the shared store under `key` if it decodes as a
  // session (untrusted bytes), expiring at the session's own start time plus
  // min(cfg.timeout, its timeout). Returns whether it was cached.
  bool adopt(std::string_view key, std::string der);

  Stats stats() const;

  // Installs this cache on `ctx`: SSL_CTX_set_session_id_context(ctx,
  // `session_id_context`) (the cache keys by it and OpenSSL checks it again
  // after a lookup, so one call sets both), the new/get/remove session
  // callbacks, SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL, and
  // SSL_CTX_set_timeout(ctx, cfg.timeout rounded up to seconds; this is also
  // the ticket lifetime hint). OpenSSL 3.0 has no getter for an SSL's session
  // ID context, hence the explicit argument: pass the bytes TlsContext derives
  // from the leaf certificate.
  // With cfg.store == Redis it also installs the client hello callback that
  // starts remote lookups (only for SSLs with a tls::SessionLookup attached).
  // `ctx` is borrowed; this cache must outlive it (and any SSL made from it).
  // Attaching the same ctx again replaces the earlier binding. Every SSL_CTX an
  // SSL may be switched to by SNI (SSL_set_SSL_CTX) must be attached too, or
  // lookups made while on it miss.
  // Errors: Errc::InvalidArgument if `session_id_context` is empty or longer
  // than SSL_MAX_SID_CTX_LENGTH; Errc::Tls if OpenSSL refuses the ex_data.
  // Thread affinity: any thread, before `ctx` is shared with workers.
  [[nodiscard]] Status attach(SSL_CTX* ctx, std::string_view session_id_context);

  // The SSL_CTX_set_client_hello_cb callback `attach` installs for
  // store = "redis" (SSL_CLIENT_HELLO_SUCCESS, or SSL_CLIENT_HELLO_RETRY while
  // a lookup runs). A client hello callback installed over it (CertIndex's)
  // must call it last, after any SSL_set_SSL_CTX. Worker thread of `ssl`.
  static int on_client_hello(SSL* ssl, int* alert, void* arg) noexcept;

  // For [tls.session_cache] enabled = false: SSL_SESS_CACHE_OFF on borrowed
  // `ctx`, so no session ID is issued or looked up. Session tickets still work
  // unless turned off elsewhere. Thread affinity: any thread, before sharing.
  static void disable(SSL_CTX* ctx);

  // The lifetime given to a session newly issued by OpenSSL: min(cfg.timeout,
  // `session_timeout`).
  std::chrono::milliseconds lifetime_for(std::chrono::seconds session_timeout) const;

  // Shards used for a cache of `size_bytes`: size / kMinShardBytes clamped to
  // [1, kMaxShards].
  static size_t shard_count_for(uint64_t size_bytes);
  size_t shard_count_for_test() const { return shard_count_; }

  // Called by the OpenSSL trampolines (session_cache.cc); not for other use.
  // on_new_session: serialises `session` (borrowed) and stores it; never takes
  // a reference. on_get_session: returns a new SSL_SESSION (ownership
  // transferred to the caller) or nullptr. on_remove_session: drops `session`.
  void on_new_session(SSL* ssl, SSL_SESSION* session);
  SslSessionPtr on_get_session(std::string_view sid_ctx, std::string_view session_id);
  void on_remove_session(SSL_SESSION* session);

 private:
  struct Entry {
    std::string key;
    std::string der;
    TimePoint expires;
    size_t cost() const { return key.size() + der.size() + kEntryOverheadBytes; }
  };

  // alignas keeps each shard's mutex and counters on their own cache lines.
  struct alignas(64) Shard {
    mutable std::mutex mu;
    std::list<Entry> lru;  // front = most recently used
    // Keys are views of Entry::key inside `lru`; list nodes never move.
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index;
    uint64_t bytes = 0;
    uint64_t hits = 0, misses = 0, evictions = 0, expired = 0, stores = 0;

    void erase(std::list<Entry>::iterator it);
  };

  Shard& shard_for(std::string_view key) const;

  const Clock& clock_;
  const std::chrono::milliseconds timeout_;
  const bool remote_;  // cfg.store == Redis
  const size_t shard_count_;
  const uint64_t shard_budget_;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace tlsfront::tls
