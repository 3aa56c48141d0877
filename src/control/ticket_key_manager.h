// TicketKeyManager: keeps the process's ticket key ring (TicketKeyStore)
// current, on the control loop only. source = "auto": a new random key every
// rotate_every (uv timer); source = "files": the nginx-format key files are
// re-read on SIGHUP and whenever one changes (uv_fs_poll), and a failed read
// keeps the ring that is serving; source = "redis": the cluster's ring in
// Redis (RedisTicketKeys, src/tls/TICKET_ROTATION.md). Each change logs the
// key ids (never key material). Workers read the ring lock-free through the store.
// Thread affinity: control loop only (the store itself is any thread).
#pragma once

#include <uv.h>

#include <memory>
#include <vector>

#include "config/config.h"
#include "control/redis_ticket_keys.h"
#include "tls/ticket_key_ring.h"
#include "tls/ticket_key_source_local.h"
#include "util/result.h"
#include "util/uv_handle.h"

namespace tlsfront::control {

class TicketKeyManager {
 public:
  // `store` is borrowed and outlives the manager.
  TicketKeyManager(const config::Tls& tls, tls::TicketKeyStore* store);
  ~TicketKeyManager();

  // Publishes the first ring (before any worker starts; source = "redis"
  // blocks for at most about 2 × redis_timeout and falls back to a local key
  // when Redis is unreachable). Errors: Errc::Config for bad key, password or
  // wrap key files, Errc::Tls when the DRBG fails.
  [[nodiscard]] Status load_initial();

  // Starts the rotation timer / file watches on `loop`.
  void start(uv_loop_t* loop);
  // SIGHUP: re-read key files (source = "files"). Errors are logged.
  void reload();
  // Closes the handles (before the loop is drained).
  void stop();

 private:
  void rotate_now();
  void arm_rotation();
  void publish(tls::TicketKeyRing ring, const char* why);

  config::TicketKeys keys_;
  bool enabled_;
  tls::LocalTicketKeySource local_;
  tls::TicketKeyStore* store_;
  uv_loop_t* loop_ = nullptr;
  UvHandle<uv_timer_t> timer_;
  std::vector<std::unique_ptr<UvHandle<uv_fs_poll_t>>> watches_;
  // The store's clock (FakeClock in tests), as a Clock for RedisTicketKeys.
  struct StoreClock final : Clock {
    const tls::TicketKeyStore* store;
    explicit StoreClock(const tls::TicketKeyStore* s) : store(s) {}
    std::chrono::system_clock::time_point now() const override { return store->now(); }
  };
  StoreClock clock_{store_};
  std::unique_ptr<RedisTicketKeys> redis_;  // source = "redis"
  config::Tls tls_;                          // for RedisTicketKeys::create
};

}  // namespace tlsfront::control
