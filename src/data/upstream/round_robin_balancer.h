// RoundRobinBalancer: nginx's default: the servers in turn, skipping one
// that failed a connect (refused, unreachable, TLS to it failed, timed out
// connecting) until its fail_timeout has passed.
// Thread affinity: owning worker only.
#pragma once

#include <chrono>
#include <vector>

#include "data/upstream/balancer.h"

namespace tlsfront::upstream {

class RoundRobinBalancer : public Balancer {
 public:
  // `servers` borrowed; `fail_timeout`: how long a failed server is skipped.
  RoundRobinBalancer(std::vector<UpstreamPool*> servers, std::chrono::milliseconds fail_timeout);

  UpstreamPool* pick(const std::vector<UpstreamPool*>& tried) override;
  void on_failure(UpstreamPool* server, const FailedAttempt& attempt) override;

 private:
  struct Server {
    UpstreamPool* pool;
    std::chrono::steady_clock::time_point down_until{};
  };
  std::vector<Server> servers_;
  std::chrono::milliseconds fail_timeout_;
  size_t next_ = 0;
};

}  // namespace tlsfront::upstream
