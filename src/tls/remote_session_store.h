// RemoteSessionStore: the interface the TLS layer uses to reach a session
// store shared by several nodes ([tls.session_cache] store = "redis"; the
// implementation is data/redis_session_store.h). Keys are SessionCache
// keys (SessionCache::make_key); values are session DER (i2d_SSL_SESSION).
// Every call is asynchronous and never blocks: a lookup answers later through
// its callback, stores and removes are fire-and-forget.
// Trust: values read back are untrusted bytes; callers decode and check them.
// Thread affinity: one instance per worker; owning worker only.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tlsfront::tls {

class RemoteSessionStore {
 public:
  // The DER found, or std::nullopt on a miss, an error or a timeout.
  using LookupDone = std::function<void(std::optional<std::string> der)>;

  virtual ~RemoteSessionStore() = default;

  // Starts looking up `key`. Returns false when the store cannot be asked now
  // (down, backing off): `done` is then never called. Otherwise `done` is
  // called exactly once, later (never from inside lookup()), from the loop.
  virtual bool lookup(const std::string& key, LookupDone done) = 0;
  // Stores `der` under `key` for `ttl` (milliseconds); errors are counted and logged.
  virtual void store(const std::string& key, std::string_view der, std::chrono::milliseconds ttl) = 0;

  // What a claim found (tls/EARLY_DATA_REPLAY.md).
  enum class Claim { First, Seen, Unavailable };
  using ClaimDone = std::function<void(Claim)>;
  // Records `key` for `ttl` unless it is recorded already, atomically across
  // every node sharing the store: First when this call recorded it, Seen when
  // it was there, Unavailable on an error or a timeout. Returns false when the
  // store cannot be asked now (`done` is then never called); otherwise `done`
  // is called exactly once, later, from the loop. Default: cannot be asked.
  virtual bool claim(const std::string& /*key*/, std::chrono::milliseconds /*ttl*/, ClaimDone /*done*/) {
    return false;
  }
};

}  // namespace tlsfront::tls
