#include "server/generation.h"

#include "server/ocsp_manager.h"

namespace tlsfront::server {

Result<std::shared_ptr<const Generation>> Generation::create(config::Config cfg, tls::SessionCache* session_cache,
                                                            tls::TicketKeyStore* tickets, OcspManager* ocsp) {
  // The index borrows the config's certificate entries: build it from the
  // copy the Generation keeps.
  std::shared_ptr<Generation> gen(new Generation(std::move(cfg), nullptr));
  auto index = tls::CertIndex::create(gen->config.tls, session_cache, tickets);
  if (!index) return index.take_error();
  gen->tls = std::move(index).value();
  if (ocsp) {
    if (auto st = ocsp->prepare(*gen->tls, gen->config.tls.ocsp_cache_dir, gen->ocsp); !st) return st.take_error();
  }
  return std::shared_ptr<const Generation>(std::move(gen));
}

}  // namespace tlsfront::server
