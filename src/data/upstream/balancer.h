// Balancer: one upstream group's choice of server, for one worker. It owns
// selection (which server an attempt goes to, given those the exchange
// already tried), what the group learns from outcomes (passive health:
// max_fails consecutive failures eject a server, data/upstream/
// server_health.h, shared by every worker), and the retry policy
// (retry_policy.h): an exchange reports each failed attempt and gets back
// where to try next, if anywhere.
// A server out (ejected, or down by the active checks) is not chosen while
// another untried one is in; backup servers only when no untried primary
// is in (nginx's `backup`); when every untried server is out, one of them
// is chosen anyway ("panic", as Envoy: a check that flaps never takes the
// whole API down), counted and logged at most once a minute per group.
// Weights: each policy shares the requests in proportion to the servers'
// `weight`, a server in its slow_start ramping from 10 % of it (weight_of).
// Policies (make_balancer): LeastRequestBalancer (least_request_balancer.h,
// which also does random), RoundRobinBalancer (round_robin_balancer.h) and
// HashBalancer (hash_balancer.h).
// Thread affinity: owning worker only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/upstream/retry_policy.h"
#include "log/log_throttle.h"

namespace tlsfront::upstream {

class UpstreamPool;

class Balancer {
 public:
  using Clock = std::chrono::steady_clock;

  // `cfg` borrowed (the group's; outlives the balancer).
  explicit Balancer(const config::Upstream& cfg);
  virtual ~Balancer() = default;

  // The server for an exchange's next attempt, never one in `tried`: a
  // primary that is in if any untried one is, else a backup that is in,
  // else (panic) an untried one that is out. nullptr when all were tried.
  // `hash`: the request's key (balance = "hash"; upstream/hash_key.h).
  UpstreamPool* pick(const std::vector<UpstreamPool*>& tried, std::optional<uint64_t> hash = std::nullopt);
  // The group's servers are now `servers` (its DNS names resolved to other
  // addresses, or first set): what a policy keeps per server follows.
  void set_servers(std::vector<UpstreamPool*> servers);
  // Outcomes: an attempt's response completed after `response_ms`; an
  // attempt on `server` failed as `attempt` says (max_fails consecutive
  // failures that count, counts_against_server, eject it).
  // A response with one of cfg.failure_statuses (`status`) is a failure.
  void on_success(UpstreamPool* server, double response_ms, int status = 200);
  void on_failure(UpstreamPool* server, const FailedAttempt& attempt);

  struct Retry {
    RetryKind kind = RetryKind::None;
    UpstreamPool* server = nullptr;  // where the retry goes (null with None)
  };
  // Records the failure of an attempt on `server` (on_failure) and decides
  // the retry (retry_kind; NextServer: pick(tried, hash), None when no
  // server is left); a retry is counted in the server's metrics.
  Retry after_failure(UpstreamPool* server, const FailedAttempt& attempt, const std::vector<UpstreamPool*>& tried,
                      std::optional<uint64_t> hash = std::nullopt);

 protected:
  // The policy's choice among the eligible servers; nullptr when there is
  // none.
  virtual UpstreamPool* choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic) = 0;
  // servers_ changed (set_servers).
  virtual void servers_changed() {}
  // Whether `p` may be chosen now: not tried, of the tier being tried
  // (primaries, then backups), and in unless `panic`.
  bool eligible(const UpstreamPool* p, const std::vector<UpstreamPool*>& tried, Clock::time_point now,
                bool panic) const;
  // `p`'s share against the others' (weighted_ only): its weight × 100,
  // times 10..100 % while in its slow_start.
  uint64_t weight_of(const UpstreamPool* p, Clock::time_point now) const;

  const config::Upstream& cfg_;
  std::vector<UpstreamPool*> servers_;
  // Whether weights differ or slow_start is set: policies take the weighted
  // path only then (the unweighted one draws less).
  bool weighted_ = false;
  std::optional<uint64_t> hash_;  // the key of the pick under way

 private:
  bool has_backup_ = false;
  bool backup_tier_ = false;  // the tier of the pick under way

  // Whether one more server may be ejected (max_ejected_percent).
  bool may_eject(const UpstreamPool* server, Clock::time_point now) const;
  log::LogThrottle panic_log_{std::chrono::seconds(60)};
};

// The balancer `cfg` asks for (its balance), over `servers` (borrowed: the
// group's pools, which outlive it).
std::unique_ptr<Balancer> make_balancer(const config::Upstream& cfg, std::vector<UpstreamPool*> servers);

}  // namespace tlsfront::upstream
