#include "server/generation.h"

namespace tlsfront::server {

Result<std::shared_ptr<const Generation>> Generation::create(config::Config cfg) {
  auto ctx = tls::TlsContext::create(cfg.tls);
  if (!ctx) return ctx.take_error();
  return std::shared_ptr<const Generation>(new Generation(std::move(cfg), std::move(ctx).value()));
}

}  // namespace tlsfront::server
