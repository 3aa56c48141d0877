// Generation: one immutable, validated configuration with everything built
// from it that is shared by the workers: the certificates with their TLS
// contexts (chosen by SNI), the router, the compiled header rules and the
// TLS contexts towards upstreams, and the table its requests are counted in.
// Built off-loop by the control thread (control/generation_builder.h),
// published through an atomic shared_ptr; each connection holds the
// generation it was accepted under until it closes.
// Thread affinity: immutable once built, readable from any thread.
#pragma once

#include <memory>
#include <vector>

#include "config/config.h"
#include "data/http/header_plan.h"
#include "data/http/request_limits.h"
#include "data/http/router.h"
#include "data/quic/quic_tls.h"
#include "metrics/request_counters.h"
#include "tls/acme_challenges.h"
#include "tls/cert_index.h"
#include "tls/ocsp_stapler.h"
#include "tls/upstream_tls_context.h"
#include "util/result.h"

namespace tlsfront::data {

struct Generation {
  config::Config config;
  std::unique_ptr<tls::CertIndex> tls;
  // The OCSP staplers of these certificates (owned by the Server's
  // OcspManager), attached to every SSL_CTX of `tls`.
  tls::OcspRegistry ocsp;
  http::Router router;
  http::HeaderPlan headers;  // response_headers / request_headers, compiled
  // The client TLS context of each [[upstream]], indexed like
  // config.upstreams; null where its tls is off.
  std::vector<std::shared_ptr<const tls::UpstreamTlsContext>> upstream_tls;
  // tlsfront_requests_total by this config's listener and route labels, a
  // block per worker; shared with the generation before when the labels
  // are the same (metrics/request_counters.h).
  std::shared_ptr<metrics::RequestCounterTable> requests;
  // The state of config.limit_req / limit_conn zones, shared by every
  // worker (and kept across reloads: control/generation_builder.cc).
  http::RequestLimits limits;
  // The QUIC listeners' TLS credentials (GnuTLS: data/quic/quic_tls.h), the
  // certificates of `tls` again; null when no listener has quic = true.
  std::shared_ptr<const quic::ServerCredentials> quic;
  // With [acme]: the challenges this node answers (tls/acme_challenges.h;
  // the Server's, refreshed by its ACME manager); null otherwise.
  std::shared_ptr<const tls::AcmeChallenges> acme;

  // `tls` is set by the builder right after construction (the index
  // borrows this copy of the config's certificate entries).
  explicit Generation(config::Config cfg) : config(std::move(cfg)), router(config), headers(config) {}
};

}  // namespace tlsfront::data
