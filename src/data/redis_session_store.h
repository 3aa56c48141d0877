// RedisSessionStore: the Redis half of [tls.session_cache] store = "redis".
// Sessions resumed by session ID are written to Redis (SET <key> <DER> PX
// <ttl>, fire-and-forget) when issued, and read back (GET) when a ClientHello
// offers an ID the local SessionCache lacks (tls/session_lookup.h pauses that
// handshake meanwhile). Keys are "<prefix>:sess:<hex of the cache key>" (the
// cache key already holds the session ID context, so nodes with different
// certificates never share sessions).
//
// One Redis connection per worker (redis::Client), on the worker's own
// loop: a lookup answer arrives on the thread whose connection waits for it,
// so no cross-thread handoff is needed, and no worker ever waits on a Redis
// round trip (nothing blocks; only the one paused handshake waits, and at
// most redis_timeout). Ticket keys, by contrast, stay on the control loop
// (control/redis_ticket_keys.h).
//
// Trouble (refused connection, lost connection, a reply slower than
// redis_timeout, an error reply) makes every waiting lookup a miss (a full
// handshake, never an error), drops the connection and backs off (200 ms
// doubling to 5 s) during which lookups and stores are skipped at once. It is
// logged once per change of state ("redis ... is in use again" on recovery):
// all of that is the client's; this class only says what it asks (GET, SET)
// and what the replies mean.
//
// Trust: values read from Redis are untrusted; SessionCache::adopt() decodes
// and checks them. The password is read once and never logged.
// Thread affinity: owning worker only.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "metrics/counters.h"
#include "redis/client.h"
#include "tls/remote_session_store.h"
#include "util/result.h"
#include "util/secret.h"

namespace tlsfront::data {

class RedisSessionStore final : public tls::RemoteSessionStore {
 public:
  // A store for `cfg` on `loop` (borrowed; must run until close()'s handles
  // are closed). `worker` only names the worker in logs. `counters` (may be
  // null; borrowed, outlives the store) gets the session_store gauges. Reads
  // cfg.redis_password_file. Connects lazily, on the first lookup or store.
  // Errors: Errc::Config naming the password file.
  [[nodiscard]] static Result<std::unique_ptr<RedisSessionStore>> create(const config::SessionCache& cfg,
                                                                         uv_loop_t* loop, int worker,
                                                                         metrics::WorkerCounters* counters = nullptr);
  ~RedisSessionStore() override;  // close()
  RedisSessionStore(const RedisSessionStore&) = delete;
  RedisSessionStore& operator=(const RedisSessionStore&) = delete;

  // Drops the connection and the timer (closed through uv_close: the loop must
  // run afterwards); pending lookups are forgotten without being called.
  // Later calls are refused. Idempotent.
  void close();

  // tls::RemoteSessionStore
  bool lookup(const std::string& key, LookupDone done) override;
  void store(const std::string& key, std::string_view der, std::chrono::milliseconds ttl) override;
  // SET "<prefix>:early:<hex key>" 1 NX PX <ttl>: OK is First, nil is Seen.
  bool claim(const std::string& key, std::chrono::milliseconds ttl, ClaimDone done) override;

  // The Redis key for SessionCache key `cache_key`: "<prefix>:<kind>:<lowercase hex>"
  // (kind "sess"; "early" for the early-data replay records).
  static std::string redis_key(std::string_view prefix, std::string_view cache_key, std::string_view kind = "sess");

 private:
  RedisSessionStore(const config::SessionCache& cfg, uv_loop_t* loop, int worker, Secret password,
                    std::shared_ptr<const redis::TlsContext> redis_tls, metrics::WorkerCounters* counters);

  void on_get_reply(Result<redis::Reply> reply, LookupDone& done);

  config::SessionCache cfg_;
  int worker_;
  redis::Client client_;
  bool closed_ = false;
  uint64_t lookups_ = 0, hits_ = 0, failures_ = 0, store_errors_ = 0;
};

}  // namespace tlsfront::data
