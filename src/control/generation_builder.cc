#include "control/generation_builder.h"

#include <algorithm>

#include <map>
#include <mutex>

#include "control/ocsp_manager.h"

namespace tlsfront::control {
namespace {

// The zones of the generations alive, by name: a reload whose zone has the
// same name and size takes the same state (keys, counts, counters), so a
// client limited before SIGHUP stays limited after it; a zone left out of
// the configuration goes with the last generation using it.
template <typename Zone>
std::shared_ptr<Zone> shared_zone(std::map<std::string, std::weak_ptr<Zone>>& zones, const std::string& name,
                                  uint64_t size, std::map<std::string, uint64_t>& sizes) {
  auto it = zones.find(name);
  if (it != zones.end() && sizes[name] == size) {
    if (auto zone = it->second.lock()) return zone;
  }
  auto zone = std::make_shared<Zone>(size);
  zones[name] = zone;
  sizes[name] = size;
  return zone;
}

void build_limits(const config::Config& cfg, http::RequestLimits& out) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<http::RateZone>> rate_zones;
  static std::map<std::string, std::weak_ptr<http::ConnZone>> conn_zones;
  static std::map<std::string, uint64_t> rate_sizes, conn_sizes;
  std::lock_guard lock(mu);
  for (const auto& z : cfg.limit_req) out.req.push_back(shared_zone(rate_zones, z.name, z.size_bytes, rate_sizes));
  for (const auto& z : cfg.limit_conn) out.conn.push_back(shared_zone(conn_zones, z.name, z.size_bytes, conn_sizes));
}

}  // namespace

Result<std::shared_ptr<const data::Generation>> build_generation(config::Config cfg, tls::SessionCache* session_cache,
                                                               tls::TicketKeyStore* tickets, OcspManager* ocsp,
                                                               size_t workers, const data::Generation* previous,
                                                               tls::StoreSnapshot store,
                                                               std::shared_ptr<const tls::AcmeChallenges> acme) {
  // The index borrows the config's certificate entries: build it from the
  // copy the Generation keeps.
  auto gen = std::make_shared<data::Generation>(std::move(cfg));
  auto index = tls::CertIndex::create(gen->config.tls, session_cache, tickets, std::chrono::system_clock::now(),
                                      std::move(store));
  if (!index) return index.take_error();
  gen->tls = std::move(index).value();
  gen->acme = std::move(acme);
  gen->tls->answer_acme(gen->acme.get());
  build_limits(gen->config, gen->limits);
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
  if (std::any_of(gen->config.listeners.begin(), gen->config.listeners.end(),
                  [](const config::Listener& l) { return l.quic; })) {
    // The QUIC listeners' GnuTLS credentials: the same certificates (files
    // and store), stapled by the same staplers.
    auto quic = quic::ServerCredentials::load(gen->config.tls, gen->tls->certificates(), tickets, &gen->ocsp);
    if (!quic) return quic.take_error();
    gen->quic = std::move(quic).value();
  }
  std::vector<std::string> listeners, routes;
  for (const config::Listener& l : gen->config.listeners) listeners.push_back(l.label());
  for (const config::Route& r : gen->config.routes) routes.push_back(r.name);
  gen->requests = metrics::RequestCounterTable::for_labels(std::move(listeners), std::move(routes), workers,
                                                           previous ? previous->requests : nullptr);
  return std::shared_ptr<const data::Generation>(std::move(gen));
}

}  // namespace tlsfront::control
