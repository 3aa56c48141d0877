#include "data/upstream/round_robin_balancer.h"

#include <algorithm>

#include "data/upstream/upstream_pool.h"

namespace tlsfront::upstream {

RoundRobinBalancer::RoundRobinBalancer(std::vector<UpstreamPool*> servers, std::chrono::milliseconds fail_timeout)
    : fail_timeout_(fail_timeout) {
  servers_.reserve(servers.size());
  for (UpstreamPool* p : servers) servers_.push_back(Server{p});
}

UpstreamPool* RoundRobinBalancer::pick(const std::vector<UpstreamPool*>& tried) {
  const auto now = std::chrono::steady_clock::now();
  const size_t n = servers_.size();
  UpstreamPool* fallback = nullptr;
  for (size_t i = 0; i < n; ++i) {
    const Server& s = servers_[(next_ + i) % n];
    if (std::find(tried.begin(), tried.end(), s.pool) != tried.end()) continue;
    if (now >= s.down_until) {
      next_ = (next_ + i + 1) % n;
      return s.pool;
    }
    if (!fallback) fallback = s.pool;
  }
  if (fallback) next_ = (next_ + 1) % n;
  return fallback;
}

void RoundRobinBalancer::on_failure(UpstreamPool* server, const FailedAttempt& attempt) {
  // A stream refused unprocessed says nothing of the server's health.
  if (!attempt.nothing_sent || attempt.failure == UpstreamFailure::Unprocessed) return;
  auto it = std::find_if(servers_.begin(), servers_.end(), [server](const Server& s) { return s.pool == server; });
  if (it == servers_.end()) return;
  it->down_until = std::chrono::steady_clock::now() + fail_timeout_;
  server->count_failure();
}

}  // namespace tlsfront::upstream
