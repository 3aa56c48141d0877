#include "server/generation.h"

namespace tlsfront::server {

Result<std::shared_ptr<const Generation>> Generation::create(config::Config cfg, tls::SessionCache* session_cache,
                                                            tls::TicketKeyStore* tickets) {
  auto ctx = tls::TlsContext::create(cfg.tls, session_cache, tickets);
  if (!ctx) return ctx.take_error();
  return std::shared_ptr<const Generation>(new Generation(std::move(cfg), std::move(ctx).value()));
}

}  // namespace tlsfront::server
