// RedisSessionStore: the Redis half of [tls.session_cache] store = "redis".
// Sessions resumed by session ID are written to Redis (SET <key> <DER> PX
// <ttl>, fire-and-forget) when issued, and read back (GET) when a ClientHello
// offers an ID the local SessionCache lacks (tls/session_lookup.h pauses that
// handshake meanwhile). Keys are "<prefix>:sess:<hex of the cache key>" (the
// cache key already holds the session ID context, so nodes with different
// certificates never share sessions).
//
// One hiredis async connection per worker, on the worker's own loop: a lookup
// answer arrives on the thread whose connection waits for it, so no
// cross-thread handoff is needed, and no worker ever waits on a Redis round
// trip (nothing blocks; only the one paused handshake waits, and at most
// redis_timeout). Ticket keys, by contrast, stay on the control loop
// (redis_ticket_keys.h).
//
// Trouble (refused connection, lost connection, a reply slower than
// redis_timeout, an error reply) makes every waiting lookup a miss (a full
// handshake, never an error), drops the connection and backs off (200 ms
// doubling to 5 s) during which lookups and stores are skipped at once. It is
// logged once per change of state ("redis ... is in use again" on recovery).
//
// Trust: values read from Redis are untrusted; SessionCache::adopt() decodes
// and checks them. The password is read once and never logged.
// Thread affinity: owning worker only.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "tls/remote_session_store.h"
#include "tls/ticket_key_source_redis.h"
#include "util/result.h"
#include "util/uv_handle.h"

struct redisAsyncContext;
struct redisReply;

namespace tlsfront::data {

class RedisSessionStore final : public tls::RemoteSessionStore {
 public:
  // A store for `cfg` on `loop` (borrowed; must run until close()'s handles
  // are closed). `worker` only names the worker in logs. Reads
  // cfg.redis_password_file. Connects lazily, on the first lookup or store.
  // Errors: Errc::Config naming the password file.
  [[nodiscard]] static Result<std::unique_ptr<RedisSessionStore>> create(const config::SessionCache& cfg,
                                                                         uv_loop_t* loop, int worker);
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

  // The Redis key for SessionCache key `cache_key`: "<prefix>:sess:<lowercase hex>".
  static std::string redis_key(std::string_view prefix, std::string_view cache_key);

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  enum class Kind : uintptr_t { Get = 0, Set = 1, Auth = 2 };
  struct Pending {
    SteadyTime deadline;
    LookupDone done;
  };

  RedisSessionStore(const config::SessionCache& cfg, uv_loop_t* loop, int worker, tls::Secret password);

  // True when commands can be sent now (connecting if needed and allowed).
  bool ensure_connected();
  void drop_connection();
  // Marks the connection unusable, backs off and logs `problem` on change.
  void trouble(const std::string& problem);
  void healthy();
  void on_reply(redisReply* reply, uint64_t id, Kind kind, const std::string& error);
  void on_timer();
  void arm_timer();
  void complete(uint64_t id, std::optional<std::string> der);
  // Queues one command on ac_ (argv borrowed for the call); false if refused.
  bool send_command(uint64_t id, Kind kind, std::initializer_list<std::string_view> args);
  std::string where() const { return cfg_.redis.to_string(); }

  static void reply_cb(redisAsyncContext* ac, void* reply, void* privdata) noexcept;
  static void connect_cb(const redisAsyncContext* ac, int status) noexcept;
  static void disconnect_cb(const redisAsyncContext* ac, int status) noexcept;

  config::SessionCache cfg_;
  uv_loop_t* loop_;
  int worker_;
  tls::Secret password_;
  UvHandle<uv_timer_t> timer_;       // the earliest pending lookup's deadline
  redisAsyncContext* ac_ = nullptr;  // owned: freed by drop_connection() or by hiredis on disconnect
  bool usable_ = false;              // ac_ takes commands
  bool closed_ = false;
  int in_callback_ = 0;              // inside a hiredis callback: never free ac_ here
  SteadyTime retry_at_{};
  std::chrono::milliseconds backoff_{0};
  std::map<uint64_t, Pending> pending_;  // by id = by deadline (one timeout for all)
  uint64_t next_id_ = 1;
  std::string problem_;  // the trouble last logged ("" = healthy)
  uint64_t lookups_ = 0, hits_ = 0, failures_ = 0, store_errors_ = 0;
};

}  // namespace tlsfront::data
