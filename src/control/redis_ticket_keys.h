// RedisTicketKeys: the I/O half of [tls.ticket_keys] source = "redis" — a
// redis::Client on the control loop that keeps this node's ticket key ring
// in step with the cluster's ring in Redis. The protocol and
// its states are in src/tls/TICKET_ROTATION.md; slot math, value format and
// ring building in tls/ticket_key_source_redis.h.
//
// Every poll (and right after each slot boundary) it pipelines, on one
// connection (authenticated by the client when a password file is
// configured): SET <slot key>
// <value> NX PX <ttl> for the current and the next slot (a fresh key for a
// slot it does not hold yet, else the held one, which restores a slot Redis
// lost; exactly one value per slot wins cluster-wide), and one MGET of the
// slots it needs. Decoded keys are merged into the ring,
// which is handed to `publish` when it changed. Redis trouble (unreachable,
// timeout, AUTH refused, undecodable values) never empties the ring: the node
// keeps the keys it holds, logs once per change of trouble, and retries with
// a backoff (1 s doubling up to the poll interval), reconnecting as needed
// (the client's logging, backoff and reconnects; this class plans the rounds
// and reads the replies).
// A node that holds no key able to encrypt (Redis down at start-up, or for
// longer than the ring lasts) makes a local one so it keeps issuing tickets.
//
// Trust: Redis contents are untrusted (see ticket_key_source_redis.h). The
// password and the wrap key are read once, kept in cleansed buffers, and
// never logged.
// Thread affinity: control loop only; load_initial() before any worker
// starts (it blocks for at most about 2 × redis_timeout).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "redis/client.h"
#include "tls/ticket_key_ring.h"
#include "tls/ticket_key_source_redis.h"
#include "util/result.h"
#include "util/secret.h"
#include "util/uv_handle.h"

namespace tlsfront::control {

class RedisTicketKeys {
 public:
  // Receives each new ring and why it changed ("fetched from redis", ...).
  using PublishFn = std::function<void(tls::TicketKeyRing ring, const char* why)>;

  // Reads redis_password_file and wrap_key_file of `tls.ticket_keys` (warnings,
  // e.g. file modes, are logged). `clock` is borrowed and must outlive this.
  // Errors: Errc::Config naming the file (unreadable, empty, wrong size).
  [[nodiscard]] static Result<std::unique_ptr<RedisTicketKeys>> create(const config::Tls& tls, const Clock* clock,
                                                                       PublishFn publish);
  ~RedisTicketKeys();  // stop()
  RedisTicketKeys(const RedisTicketKeys&) = delete;
  RedisTicketKeys& operator=(const RedisTicketKeys&) = delete;

  // Start-up, before the workers: one blocking round (hiredis sync API,
  // connect and I/O bounded by redis_timeout each) and a first publish. When
  // Redis cannot be used the error is logged and a local key is published
  // instead; the cluster ring replaces it on the first good poll.
  // Errors: Errc::Tls when the DRBG fails (never for Redis trouble).
  [[nodiscard]] Status load_initial();

  // Starts polling on `loop` (borrowed; must outlive stop()).
  void start(uv_loop_t* loop);
  // Closes the timer and the connection (through uv_close, so the loop must
  // still run afterwards). Idempotent.
  void stop();

  // True while the last round failed (for tests and logs).
  bool failing_for_test() const { return client_.failing(); }

 private:
  enum class Kind { Set, Mget };

  // What one round sends: SET NX for `set_slots`, MGET of `mget_slots`.
  struct Plan {
    std::vector<int64_t> set_slots;
    std::vector<int64_t> mget_slots;
    std::vector<std::vector<std::string>> commands;  // argv of each command
    std::vector<Kind> kinds;                         // parallel to `commands`
  };

  RedisTicketKeys(const config::Tls& tls, const Clock* clock, PublishFn publish, tls::RedisTicketKeyCodec codec,
                  Secret password, std::shared_ptr<const redis::TlsContext> redis_tls);

  // The commands of the next round at `now`. Errors: Errc::Tls (DRBG, wrap).
  [[nodiscard]] Result<Plan> plan_round(tls::TimePoint now);
  // Reply handlers shared by the sync and async paths. An MGET error fails
  // the round; a SET error is only remembered in `soft_problem_`.
  void on_set_reply(redis::Reply reply);
  [[nodiscard]] Status on_mget_reply(const Plan& plan, redis::Reply reply);
  // Ends a round (its outcome already told to the client): prunes, fills in
  // a local key if nothing encrypts, publishes on change.
  void finish_round();

  // Async path.
  void poll_now();
  void arm_timer(std::chrono::milliseconds wait);
  void on_async_reply(Result<redis::Reply> reply, uint64_t round, Kind kind);
  // The running round failed (the client has logged why and backs off):
  // the next one fetches everything, after the backoff.
  void fail_round();

  config::TicketKeys keys_;
  const Clock* clock_;
  PublishFn publish_;
  tls::RedisTicketKeyCodec codec_;
  tls::RedisTicketKeyState state_;
  redis::Client client_;  // after state_: its log lines count the keys held

  UvHandle<uv_timer_t> timer_;       // next poll or retry
  bool full_fetch_ = true;           // fetch the whole live window in the next round
  uint64_t round_ = 0;               // id of the running round (0: none)
  uint64_t next_round_ = 1;
  Plan plan_;                        // the running round's plan
  std::string soft_problem_;         // a SET error in the running round
  bool changed_ = false;             // the state changed since the last publish
};

}  // namespace tlsfront::control
