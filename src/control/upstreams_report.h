// The admin listener's GET /upstreams: every [[upstream]] of the current
// configuration and each of its servers as the process sees them now, as
// JSON (what HAProxy's stats page and Envoy's /clusters give an operator):
//   {"upstreams":[{"name":..., "balance":..., "servers_in":N, "servers":M,
//     "panic":bool, "servers":[{"server":"api.internal:8080" (configured),
//       "address":"10.0.0.7:8080" (connected to; null while a name has
//       none), "dns":"resolved"|"failing"|"unresolved"|null (an IP literal),
//       "dns_error":..., "weight":N, "backup":bool,
//       "state":"in"|"ejected"|"down", "ejected_for_ms":N,
//       "consecutive_failures":N, "ejections":N, "responses":N,
//       "response_ms_avg":X, "attempt_failures":{reason:N}, "retries":N,
//       "panic_requests":N, "connections_created":N, "idle_connections":N,
//       "health_check":{"passes_in_a_row":N, "fails_in_a_row":N,
//       "last":"status 200"} (checked servers only)}]}]}
// Counters are summed over the workers; health is the shared HealthBoard's.
// Thread affinity: the control thread (reads what workers publish).
#pragma once

#include <string>
#include <vector>

#include <map>
#include <utility>

#include "config/config.h"
#include "control/health_checker.h"
#include "control/upstream_resolver.h"
#include "data/upstream/server_directory.h"
#include "data/upstream/server_health.h"
#include "metrics/counters.h"

namespace tlsfront::control {

using HealthChecks = std::map<std::pair<std::string, std::string>, HealthChecker::Verdict>;

// `resolver` may be null (no names configured); `checks`: the health
// checker's verdicts, by (upstream, address).
std::string upstreams_json(const config::Config& cfg, const upstream::ServerDirectory& directory,
                           const upstream::HealthBoard& health, const std::vector<const metrics::WorkerCounters*>& workers,
                           const UpstreamResolver* resolver, const HealthChecks& checks);

// Prometheus text: tlsfront_upstream_server_up{upstream,server} (1 while it
// may be chosen, 0 while ejected or down) and
// tlsfront_upstream_servers_healthy{upstream}, from the same board.
std::string upstream_state_metrics(const config::Config& cfg, const upstream::ServerDirectory& directory,
                                   const upstream::HealthBoard& health);

}  // namespace tlsfront::control
