#include "data/upstream/balancer.h"

#include <algorithm>

#include "data/upstream/hash_balancer.h"
#include "data/upstream/least_request_balancer.h"
#include "data/upstream/round_robin_balancer.h"
#include "data/upstream/upstream_pool.h"
#include "log/log.h"

namespace tlsfront::upstream {
namespace {
// The longest ejection, unless fail_timeout itself is longer (Envoy's
// max_ejection_time default).
constexpr std::chrono::milliseconds kMaxEjection{300'000};
}  // namespace

Balancer::Balancer(const config::Upstream& cfg) : cfg_(cfg) {}

void Balancer::set_servers(std::vector<UpstreamPool*> servers) {
  servers_ = std::move(servers);
  has_backup_ = std::any_of(servers_.begin(), servers_.end(), [](const UpstreamPool* p) { return p->backup(); });
  weighted_ = cfg_.slow_start.count() > 0 ||
              std::any_of(servers_.begin(), servers_.end(), [](const UpstreamPool* p) { return p->weight() != 1; });
  servers_changed();
}

bool Balancer::eligible(const UpstreamPool* p, const std::vector<UpstreamPool*>& tried, Clock::time_point now,
                        bool panic) const {
  if (p->backup() != backup_tier_) return false;
  if (std::find(tried.begin(), tried.end(), p) != tried.end()) return false;
  return panic || !p->health().out(now);
}

uint64_t Balancer::weight_of(const UpstreamPool* p, Clock::time_point now) const {
  const uint64_t full = uint64_t{p->weight()} * 100;
  if (cfg_.slow_start.count() <= 0) return full;
  const auto since = now - p->health().returned_at();
  if (since >= cfg_.slow_start) return full;
  const uint64_t percent = static_cast<uint64_t>(since.count() > 0 ? since * 100 / cfg_.slow_start : 0);
  return full * std::max<uint64_t>(10, percent) / 100;
}

UpstreamPool* Balancer::pick(const std::vector<UpstreamPool*>& tried, std::optional<uint64_t> hash) {
  const auto now = Clock::now();
  hash_ = hash;
  backup_tier_ = false;
  if (UpstreamPool* p = choose(tried, now, false)) return p;
  if (has_backup_) {
    backup_tier_ = true;
    if (UpstreamPool* p = choose(tried, now, false)) return p;
    backup_tier_ = false;
  }
  UpstreamPool* p = choose(tried, now, true);
  if (p == nullptr && has_backup_) {
    backup_tier_ = true;
    p = choose(tried, now, true);
  }
  if (p == nullptr) return nullptr;
  p->count_panic();
  if (uint64_t n = panic_log_.count(now)) {
    log::warn("upstream {}: every server left to try is ejected; trying {} anyway (panic; {} such request(s))",
              cfg_.name, p->address(), n);
  }
  return p;
}

void Balancer::on_success(UpstreamPool* server, double response_ms, int status) {
  server->observe_response(response_ms);
  if (!cfg_.failure_statuses.empty() &&
      std::find(cfg_.failure_statuses.begin(), cfg_.failure_statuses.end(), status) != cfg_.failure_statuses.end()) {
    FailedAttempt attempt;
    attempt.failure = UpstreamFailure::FailureStatus;
    on_failure(server, attempt);
    return;
  }
  server->health().record_success();
}

bool Balancer::may_eject(const UpstreamPool* server, Clock::time_point now) const {
  const size_t out = std::count_if(servers_.begin(), servers_.end(), [&](const UpstreamPool* p) {
    return p != server && p->health().ejected(now);
  });
  return (out + 1) * 100 <= servers_.size() * static_cast<size_t>(cfg_.max_ejected_percent);
}

void Balancer::on_failure(UpstreamPool* server, const FailedAttempt& attempt) {
  server->count_attempt_failure(to_string(attempt.failure));
  if (!counts_against_server(attempt)) return;
  server->count_failure();
  const uint32_t failures = server->health().record_failure();
  if (cfg_.max_fails == 0 || failures < static_cast<uint64_t>(cfg_.max_fails)) return;
  const auto now = Clock::now();
  if (server->health().ejected(now)) return;  // another worker did
  if (!may_eject(server, now)) return;
  const auto time = server->health().eject(now, cfg_.fail_timeout, std::max(kMaxEjection, cfg_.fail_timeout));
  server->count_ejection();
  log::warn("upstream {}: server {} ejected for {} ms after {} consecutive failure(s), the last {}", cfg_.name,
            server->address(), time.count(), failures, to_string(attempt.failure));
}

Balancer::Retry Balancer::after_failure(UpstreamPool* server, const FailedAttempt& attempt,
                                        const std::vector<UpstreamPool*>& tried, std::optional<uint64_t> hash) {
  on_failure(server, attempt);
  Retry retry{retry_kind(attempt), server};
  if (retry.kind == RetryKind::NextServer) retry.server = pick(tried, hash);
  if (retry.server == nullptr) retry.kind = RetryKind::None;
  if (retry.kind == RetryKind::None) {
    retry.server = nullptr;
  } else {
    server->count_retry();
  }
  return retry;
}

std::unique_ptr<Balancer> make_balancer(const config::Upstream& cfg, std::vector<UpstreamPool*> servers) {
  std::unique_ptr<Balancer> b;
  switch (cfg.balance) {
    case config::Balance::LeastRequest: b = std::make_unique<LeastRequestBalancer>(cfg); break;
    case config::Balance::RoundRobin: b = std::make_unique<RoundRobinBalancer>(cfg); break;
    case config::Balance::Random: b = std::make_unique<LeastRequestBalancer>(cfg, /*random=*/true); break;
    case config::Balance::Hash: b = std::make_unique<HashBalancer>(cfg); break;
  }
  b->set_servers(std::move(servers));
  return b;
}

}  // namespace tlsfront::upstream
