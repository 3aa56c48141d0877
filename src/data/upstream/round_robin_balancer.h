// RoundRobinBalancer: nginx's default: the servers in turn, skipping those
// ejected (Balancer) and those the exchange tried.
// Thread affinity: owning worker only.
#pragma once

#include "data/upstream/balancer.h"

namespace tlsfront::upstream {

class RoundRobinBalancer : public Balancer {
 public:
  explicit RoundRobinBalancer(const config::Upstream& cfg) : Balancer(cfg) {}
  void set_servers(std::vector<UpstreamPool*> servers) override;

 protected:
  UpstreamPool* choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic) override;

 private:
  size_t next_ = 0;
};

}  // namespace tlsfront::upstream
