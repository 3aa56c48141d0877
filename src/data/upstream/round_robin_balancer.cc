#include "data/upstream/round_robin_balancer.h"

#include "data/upstream/upstream_pool.h"

namespace tlsfront::upstream {

void RoundRobinBalancer::servers_changed() {
  if (next_ >= servers_.size()) next_ = 0;
  current_.assign(servers_.size(), 0);
}

UpstreamPool* RoundRobinBalancer::choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic) {
  const size_t n = servers_.size();
  if (weighted_) {
    // nginx's smooth weighted round robin: every eligible server gains its
    // weight, the highest is chosen and pays back the total.
    int64_t total = 0;
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (!eligible(servers_[i], tried, now, panic)) continue;
      const auto w = static_cast<int64_t>(weight_of(servers_[i], now));
      current_[i] += w;
      total += w;
      if (best == n || current_[i] > current_[best]) best = i;
    }
    if (best == n) return nullptr;
    current_[best] -= total;
    return servers_[best];
  }
  for (size_t i = 0; i < n; ++i) {
    UpstreamPool* p = servers_[(next_ + i) % n];
    if (!eligible(p, tried, now, panic)) continue;
    next_ = (next_ + i + 1) % n;
    return p;
  }
  return nullptr;
}

}  // namespace tlsfront::upstream
