// SessionEnv: what a client session (HTTP/1.1 or HTTP/2) and its exchanges
// borrow from their worker and the connection's generation. Plain struct of
// borrowed pointers; everything it points to outlives the session.
// Thread affinity: owning worker only.
#pragma once

#include <uv.h>

#include <memory>
#include <vector>

#include "config/config.h"
#include "data/http/header_plan.h"
#include "data/http/router.h"
#include "data/upstream/upstream_pool.h"
#include "metrics/request_counters.h"
#include "tls/cert_index.h"

namespace tlsfront::metrics {
struct WorkerCounters;
}

namespace tlsfront::tls {
class AcmeChallenges;
}

namespace tlsfront::log {
class AccessLog;
}

namespace tlsfront::http {

class CompressionBudget;
struct RequestLimits;
class RemoteLimiter;

// What a session borrows from its worker and generation; all outlive it.
struct SessionEnv {
  uv_loop_t* loop = nullptr;
  const config::Config* config = nullptr;
  const Router* router = nullptr;
  const HeaderPlan* headers = nullptr;  // null: no header rules (unit tests)
  // Indexed like Config::upstreams.
  const std::vector<std::shared_ptr<upstream::UpstreamGroup>>* upstreams = nullptr;
  log::AccessLog* access_log = nullptr;  // null: access log off
  metrics::WorkerCounters* counters = nullptr;  // null: not counted (unit tests)
  // This worker's block of the generation's tlsfront_requests_total
  // (metrics/request_counters.h); empty: not counted (unit tests).
  metrics::RequestSlots requests;
  bool* shutting_down = nullptr;         // worker draining: answer with Connection: close
  CompressionBudget* compression_budget = nullptr;  // the worker's; null: unbounded (unit tests)
  // The generation's [[limit_req]] / [[limit_conn]] zones (node-wide);
  // null: zones are not checked (unit tests).
  const RequestLimits* limits = nullptr;
  // The worker's store = "redis" zone checks; null: none (they fail open).
  RemoteLimiter* remote_limiter = nullptr;
  // The generation's certificates when their names differ in client
  // certificate policy (tls::CertIndex::mixed_client_auth), so admission
  // checks each request's host against its connection's; null otherwise.
  const tls::CertIndex* client_auth_names = nullptr;
  // With [acme]: the HTTP-01 tokens a cleartext listener answers
  // (tls/acme_challenges.h); null otherwise.
  const tls::AcmeChallenges* acme = nullptr;
};

}  // namespace tlsfront::http
