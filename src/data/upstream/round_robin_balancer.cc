#include "data/upstream/round_robin_balancer.h"

namespace tlsfront::upstream {

void RoundRobinBalancer::set_servers(std::vector<UpstreamPool*> servers) {
  Balancer::set_servers(std::move(servers));
  if (next_ >= servers_.size()) next_ = 0;
}

UpstreamPool* RoundRobinBalancer::choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic) {
  const size_t n = servers_.size();
  for (size_t i = 0; i < n; ++i) {
    UpstreamPool* p = servers_[(next_ + i) % n];
    if (!eligible(p, tried, now, panic)) continue;
    next_ = (next_ + i + 1) % n;
    return p;
  }
  return nullptr;
}

}  // namespace tlsfront::upstream
