#include "data/upstream/hash_balancer.h"

#include <algorithm>
#include <string>

#include "data/upstream/hash_key.h"
#include "data/upstream/upstream_pool.h"

namespace tlsfront::upstream {

void HashBalancer::servers_changed() {
  ring_.clear();
  uint64_t weights = 0;
  for (const UpstreamPool* p : servers_) weights += p->weight();
  const uint64_t per_weight = std::max<uint64_t>(1, std::min<uint64_t>(kPointsPerWeight, kMaxPoints / std::max<uint64_t>(1, weights)));
  for (UpstreamPool* p : servers_) {
    const uint64_t points = per_weight * p->weight();
    for (uint64_t i = 0; i < points; ++i) ring_.emplace_back(ring_hash(p->address() + "-" + std::to_string(i)), p);
  }
  std::sort(ring_.begin(), ring_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
}

UpstreamPool* HashBalancer::choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic) {
  if (!hash_ || ring_.empty()) return LeastRequestBalancer::choose(tried, now, panic);
  auto start = std::lower_bound(ring_.begin(), ring_.end(), *hash_,
                                [](const auto& point, uint64_t h) { return point.first < h; });
  const size_t first = static_cast<size_t>(start - ring_.begin());
  for (size_t i = 0; i < ring_.size(); ++i) {
    UpstreamPool* p = ring_[(first + i) % ring_.size()].second;
    if (eligible(p, tried, now, panic)) return p;
  }
  return nullptr;
}

}  // namespace tlsfront::upstream
