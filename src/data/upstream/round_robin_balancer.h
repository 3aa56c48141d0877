// RoundRobinBalancer: nginx's default: the servers in turn, skipping those
// out (Balancer) and those the exchange tried; weighted, nginx's smooth
// weighted round robin (a weight-3 server gets 3 of every 4 requests
// against a weight-1 one, spread out: a a b a, not a a a b).
// Thread affinity: owning worker only.
#pragma once

#include <cstdint>
#include <vector>

#include "data/upstream/balancer.h"

namespace tlsfront::upstream {

class RoundRobinBalancer : public Balancer {
 public:
  explicit RoundRobinBalancer(const config::Upstream& cfg) : Balancer(cfg) {}

 protected:
  UpstreamPool* choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic) override;
  void servers_changed() override;

 private:
  size_t next_ = 0;
  std::vector<int64_t> current_;  // weighted: each server's current weight, parallel to servers_
};

}  // namespace tlsfront::upstream
