// Generation: one immutable, validated configuration with everything built
// from it that is shared by the workers: the certificates with their TLS
// contexts (chosen by SNI) and the router.
// Built off-loop (control thread), published through an atomic shared_ptr;
// each connection holds the generation it was accepted under until it closes.
// Thread affinity: immutable after create(), readable from any thread.
#pragma once

#include <memory>

#include "config/config.h"
#include "http/router.h"
#include "tls/cert_index.h"
#include "tls/ocsp_stapler.h"
#include "util/result.h"

namespace tlsfront::server {

class OcspManager;

struct Generation {
  config::Config config;
  std::unique_ptr<tls::CertIndex> tls;
  // The OCSP staplers of these certificates (owned by the Server's
  // OcspManager), attached to every SSL_CTX of `tls`.
  tls::OcspRegistry ocsp;
  http::Router router;

  // Loads certificates and keys and builds the router; the TLS context uses
  // the process-wide `session_cache` and `tickets` (borrowed, outlive every
  // generation; null in --test) and gets its OCSP staplers from `ocsp`
  // (borrowed, outlives every generation; null: no stapling). Errors:
  // Errc::Config, Errc::Tls (with the file named).
  [[nodiscard]] static Result<std::shared_ptr<const Generation>> create(config::Config cfg,
                                                                        tls::SessionCache* session_cache,
                                                                        tls::TicketKeyStore* tickets,
                                                                        OcspManager* ocsp);

 private:
  Generation(config::Config cfg, std::unique_ptr<tls::CertIndex> ctx)
      : config(std::move(cfg)), tls(std::move(ctx)), router(config) {}
};

}  // namespace tlsfront::server
