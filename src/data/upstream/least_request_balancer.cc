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

}  // namespace tlsfront::upstream
