// RedisRateLimiter: a worker's checks of [[limit_req]] zones with
// store = "redis" (http::RemoteLimiter), so that every node using the same
// Redis and redis_prefix enforces one limit for a key.
//
// One check is one round trip: EVALSHA of kGcraScript (the GCRA of
// util/gcra_table.h, done atomically inside Redis on the key
// "<prefix>:lreq:<zone>:<key>", with Redis's own clock, TIME, so nodes need
// no common clock); the first check after Redis lost its scripts gets
// NOSCRIPT and is sent again as EVAL (which loads it). The key expires when
// its queue would have drained, so idle keys cost Redis nothing.
// Asynchronous (redis::Client on the worker's loop): the request waits for
// the answer in ProxyExchange Phase::Delayed, never the loop.
// Failing open: a check that Redis does not answer within the zone's
// redis_timeout, or answers with an error, lets the request through;
// counted (tlsfront_limit_redis_errors_total, and the zone's failed_open),
// and logged by redis::Client once per change of state ("... is in use
// again" when it answers again). During its backoff checks are refused at
// once (no round trip) and fail open the same way.
// Connections: one per distinct Redis (address, user, password file,
// timeout) among the zones, opened on first use; the password file is read
// then.
// Thread affinity: the worker's loop.
#pragma once

#include <uv.h>

#include <map>
#include <memory>
#include <string>

#include "data/http/request_limits.h"
#include "metrics/counters.h"
#include "redis/client.h"

namespace tlsfront::data {

class RedisRateLimiter final : public http::RemoteLimiter {
 public:
  // `loop` and `counters` (may be null) are borrowed and outlive it.
  RedisRateLimiter(uv_loop_t* loop, int worker, metrics::WorkerCounters* counters);
  ~RedisRateLimiter() override;  // close()
  // Drops the connections (through uv_close: the loop must run afterwards);
  // pending checks are forgotten. Idempotent.
  void close();

  bool check(const config::LimitReqZone& zone, std::string_view key, Done done) override;

  // The script: KEYS[1] the key; ARGV: emission interval (µs), burst,
  // delay (-1: nodelay). Returns {1, wait µs} (passed) or {0, retry µs}.
  static const char* const kGcraScript;

 private:
  redis::Client* client_for(const config::LimitReqZone& zone);
  // EVALSHA (EVAL when `eval`) with `args`: the key, then ARGV. Copies
  // everything it needs: a zone may be gone (a reload) before the answer.
  // False (and `done` not called) when the client refused it at once.
  bool send(redis::Client* client, std::vector<std::string> args, bool eval, Done done);
  void failed(redis::Client* client, const std::string& problem, Done& done);

  uv_loop_t* loop_;
  int worker_;
  metrics::WorkerCounters* counters_;
  std::string sha_;  // SHA-1 of kGcraScript, hex
  std::map<std::string, std::unique_ptr<redis::Client>> clients_;
  bool closed_ = false;
};

}  // namespace tlsfront::data
