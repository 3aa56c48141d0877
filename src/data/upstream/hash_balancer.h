// HashBalancer: balance = "hash": a request goes to the server its key
// (upstream/hash_key.h) falls on in a consistent-hash ring (Karger et al.;
// nginx's `hash ... consistent`, ketama): each server is 160 points per
// unit of weight, placed by the hash of its address, so that a server that
// leaves moves only its own keys (about 1/N of them) and one that joins
// takes about 1/(N+1); every node with the same servers places a key alike.
// A key whose server is out or tried goes to the next server clockwise.
// A request without a key (no such field or cookie) is balanced as
// least_request.
// Thread affinity: owning worker only.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "data/upstream/least_request_balancer.h"

namespace tlsfront::upstream {

class HashBalancer : public LeastRequestBalancer {
 public:
  explicit HashBalancer(const config::Upstream& cfg) : LeastRequestBalancer(cfg) {}

  static constexpr uint32_t kPointsPerWeight = 160;
  // The ring's size is bounded: weights scale down past this many points.
  static constexpr uint32_t kMaxPoints = 1 << 16;

 protected:
  UpstreamPool* choose(const std::vector<UpstreamPool*>& tried, Clock::time_point now, bool panic) override;
  void servers_changed() override;

 private:
  std::vector<std::pair<uint64_t, UpstreamPool*>> ring_;  // sorted by point
};

}  // namespace tlsfront::upstream
