// The admin listener's GET /upstreams: every [[upstream]] of the current
// configuration and each of its servers as the process sees them now, as
// JSON (what HAProxy's stats page and Envoy's /clusters give an operator):
//   {"upstreams":[{"name":..., "balance":..., "servers_in":N, "servers":M,
//     "panic":bool, "servers":[{"server":"api.internal:8080" (configured),
//       "address":"10.0.0.7:8080" (connected to; null while a name has
//       none), "dns":"resolved"|"failing"|"unresolved"|null (an IP literal),
//       "dns_error":..., "state":"in"|"ejected", "ejected_for_ms":N,
//       "consecutive_failures":N, "ejections":N, "responses":N,
//       "response_ms_avg":X, "attempt_failures":{reason:N}, "retries":N,
//       "panic_requests":N, "connections_created":N, "idle_connections":N}]}]}
// Counters are summed over the workers; health is the shared HealthBoard's.
// Thread affinity: the control thread (reads what workers publish).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "control/upstream_resolver.h"
#include "data/upstream/server_directory.h"
#include "data/upstream/server_health.h"
#include "metrics/counters.h"

namespace tlsfront::control {

// `resolver` may be null (no names configured).
std::string upstreams_json(const config::Config& cfg, const upstream::ServerDirectory& directory,
                           const upstream::HealthBoard& health, const std::vector<const metrics::WorkerCounters*>& workers,
                           const UpstreamResolver* resolver);

}  // namespace tlsfront::control
