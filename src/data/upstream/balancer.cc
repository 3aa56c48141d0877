#include "data/upstream/balancer.h"

#include "data/upstream/round_robin_balancer.h"
#include "data/upstream/upstream_pool.h"

namespace tlsfront::upstream {

Balancer::Retry Balancer::after_failure(UpstreamPool* server, const FailedAttempt& attempt,
                                        const std::vector<UpstreamPool*>& tried) {
  on_failure(server, attempt);
  Retry retry{retry_kind(attempt), server};
  if (retry.kind == RetryKind::NextServer) retry.server = pick(tried);
  if (retry.server == nullptr) retry.kind = RetryKind::None;
  if (retry.kind == RetryKind::None) {
    retry.server = nullptr;
  } else {
    server->count_retry();
  }
  return retry;
}

std::unique_ptr<Balancer> make_balancer(const config::Upstream& cfg, std::vector<UpstreamPool*> servers) {
  return std::make_unique<RoundRobinBalancer>(std::move(servers), cfg.fail_timeout);
}

}  // namespace tlsfront::upstream
