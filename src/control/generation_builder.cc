#include "control/generation_builder.h"

#include "control/ocsp_manager.h"

namespace tlsfront::control {

Result<std::shared_ptr<const data::Generation>> build_generation(config::Config cfg, tls::SessionCache* session_cache,
                                                               tls::TicketKeyStore* tickets, OcspManager* ocsp,
                                                               size_t workers, const data::Generation* previous) {
  // The index borrows the config's certificate entries: build it from the
  // copy the Generation keeps.
  auto gen = std::make_shared<data::Generation>(std::move(cfg));
  auto index = tls::CertIndex::create(gen->config.tls, session_cache, tickets);
  if (!index) return index.take_error();
  gen->tls = std::move(index).value();
  for (const config::Upstream& u : gen->config.upstreams) {
    if (!u.tls.enabled) {
      gen->upstream_tls.emplace_back();
      continue;
    }
    auto ctx = tls::UpstreamTlsContext::create(u);
    if (!ctx) return ctx.take_error();
    gen->upstream_tls.push_back(std::move(ctx).value());
  }
  if (ocsp) {
    if (auto st = ocsp->prepare(*gen->tls, gen->config.tls.ocsp_cache_dir, gen->ocsp); !st) return st.take_error();
  }
  std::vector<std::string> listeners, routes;
  for (const config::Listener& l : gen->config.listeners) listeners.push_back(l.label());
  for (const config::Route& r : gen->config.routes) routes.push_back(r.name);
  gen->requests = metrics::RequestCounterTable::for_labels(std::move(listeners), std::move(routes), workers,
                                                           previous ? previous->requests : nullptr);
  return std::shared_ptr<const data::Generation>(std::move(gen));
}

}  // namespace tlsfront::control
