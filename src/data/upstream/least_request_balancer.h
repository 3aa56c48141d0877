// LeastRequestBalancer: the server with the fewest requests outstanding
// (from this worker) of two chosen at random among those eligible — the
// power of two choices (Mitzenmacher; Envoy's LEAST_REQUEST default): close
// to the best server's load at the cost of two random draws, without the
// herd that always taking the global least-loaded one causes. A slow server
// accumulates outstanding requests and so receives fewer. With `random`
// (balance = "random"): one uniform choice instead. Weighted (weighted_):
// the draws fall in proportion to the servers' weights, and the one with
// fewer outstanding requests per unit of weight wins.
// Thread affinity: owning worker only.
#pragma once

#include <cstdint>

#include "data/upstream/balancer.h"

namespace tlsfront::upstream {

class LeastRequestBalancer : public Balancer {
 public:
  LeastRequestBalancer(const config::Upstream& cfg, bool random = false);

 protected:
  UpstreamPool* choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic) override;

 protected:
  uint64_t next_random();  // xorshift64*, seeded per balancer

 private:
  UpstreamPool* choose_weighted(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic);

  bool random_;
  uint64_t state_;
};

}  // namespace tlsfront::upstream
