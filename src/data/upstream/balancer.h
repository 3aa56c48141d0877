// Balancer: one upstream group's choice of server, for one worker. It owns
// selection (which server an attempt goes to, given those the exchange
// already tried), what the group learns from outcomes (a server that
// failed a connect is skipped for fail_timeout, nginx's max_fails=1), and
// the retry policy (retry_policy.h): an exchange reports each failed
// attempt and gets back where to try next, if anywhere.
// Implementations: RoundRobinBalancer (round_robin_balancer.h).
// Thread affinity: owning worker only.
#pragma once

#include <memory>
#include <vector>

#include "config/config.h"
#include "data/upstream/retry_policy.h"

namespace tlsfront::upstream {

class UpstreamPool;

class Balancer {
 public:
  virtual ~Balancer() = default;

  // The server for an exchange's next attempt, never one in `tried`; when
  // every untried server is out, one of them anyway (nginx too retries
  // when all its peers are marked down). nullptr when all were tried.
  virtual UpstreamPool* pick(const std::vector<UpstreamPool*>& tried) = 0;
  // Outcomes: an attempt's response completed after `response_ms`; an
  // attempt on `server` failed as `attempt` says.
  virtual void on_success(UpstreamPool* server, double response_ms) {}
  virtual void on_failure(UpstreamPool* server, const FailedAttempt& attempt) = 0;

  struct Retry {
    RetryKind kind = RetryKind::None;
    UpstreamPool* server = nullptr;  // where the retry goes (null with None)
  };
  // Records the failure of an attempt on `server` (on_failure) and decides
  // the retry (retry_kind; NextServer: pick(tried), None when no server is
  // left); a retry is counted in the server's metrics.
  Retry after_failure(UpstreamPool* server, const FailedAttempt& attempt, const std::vector<UpstreamPool*>& tried);
};

// The balancer `cfg` asks for, over `servers` (borrowed: the group's pools,
// which outlive it).
std::unique_ptr<Balancer> make_balancer(const config::Upstream& cfg, std::vector<UpstreamPool*> servers);

}  // namespace tlsfront::upstream
