#include "data/upstream/least_request_balancer.h"

#include <random>

#include "data/upstream/upstream_pool.h"

namespace tlsfront::upstream {

LeastRequestBalancer::LeastRequestBalancer(const config::Upstream& cfg, bool random)
    : Balancer(cfg), random_(random), state_(std::random_device{}() | 1ULL << 32 | 1) {}

uint64_t LeastRequestBalancer::next_random() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return state_ * 0x2545F4914F6CDD1DULL;
}

UpstreamPool* LeastRequestBalancer::choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now,
                                           bool panic) {
  if (servers_.size() == 1) return eligible(servers_[0], tried, now, panic) ? servers_[0] : nullptr;
  if (weighted_) return choose_weighted(tried, now, panic);
  // Two (or one) uniform draws among the eligible servers, by reservoir
  // sampling in one pass: no allocation, and the group is small.
  UpstreamPool* first = nullptr;
  UpstreamPool* second = nullptr;
  uint64_t seen = 0;
  for (UpstreamPool* p : servers_) {
    if (!eligible(p, tried, now, panic)) continue;
    ++seen;
    if (seen == 1) {
      first = p;
    } else if (seen == 2 && !random_) {
      second = p;
    } else {
      const uint64_t slot = next_random() % seen;
      if (slot == 0) {
        first = p;
      } else if (slot == 1 && !random_) {
        second = p;
      }
    }
  }
  if (random_ || second == nullptr) return first;
  if (first->outstanding() != second->outstanding()) {
    return first->outstanding() < second->outstanding() ? first : second;
  }
  return next_random() & 1 ? first : second;
}

UpstreamPool* LeastRequestBalancer::choose_weighted(const std::vector<UpstreamPool*>& tried, Clock::time_point now,
                                                    bool panic) {
  // Two draws in proportion to the weights (two passes: the eligible total,
  // then the servers the draws fall on).
  uint64_t total = 0;
  for (UpstreamPool* p : servers_) {
    if (eligible(p, tried, now, panic)) total += weight_of(p, now);
  }
  if (total == 0) return nullptr;
  const uint64_t draw1 = next_random() % total;
  const uint64_t draw2 = random_ ? total : next_random() % total;
  UpstreamPool* first = nullptr;
  UpstreamPool* second = nullptr;
  uint64_t w1 = 0;
  uint64_t w2 = 0;
  uint64_t at = 0;
  for (UpstreamPool* p : servers_) {
    if (!eligible(p, tried, now, panic)) continue;
    const uint64_t w = weight_of(p, now);
    if (first == nullptr && draw1 < at + w) first = p, w1 = w;
    if (second == nullptr && draw2 < at + w) second = p, w2 = w;
    at += w;
  }
  if (second == nullptr || second == first) return first;
  // Fewer outstanding requests per unit of weight; a tie goes to the first
  // draw, so that idle servers share in proportion to their weights.
  return second->outstanding() * w1 < first->outstanding() * w2 ? second : first;
}

}  // namespace tlsfront::upstream
