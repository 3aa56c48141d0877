#include "data/upstream/upstream_pool.h"

#include <algorithm>

#include "config/units.h"

namespace tlsfront::upstream {

namespace {
// The address of `server` when it is an IP literal (addr.ss_family stays
// AF_UNSPEC otherwise).
ResolvedAddress literal_address(const config::Endpoint& server) {
  ResolvedAddress a;
  a.text = server.to_string();
  if (server.host.find(':') != std::string::npos) {
    if (uv_ip6_addr(server.host.c_str(), server.port, reinterpret_cast<sockaddr_in6*>(&a.addr)) != 0) a.addr = {};
  } else if (uv_ip4_addr(server.host.c_str(), server.port, reinterpret_cast<sockaddr_in*>(&a.addr)) != 0) {
    a.addr = {};
  }
  return a;
}
}  // namespace

UpstreamPool::UpstreamPool(uv_loop_t* loop, const config::Upstream& cfg, const config::Endpoint& server,
                           metrics::UpstreamServerCounters* counters,
                           std::shared_ptr<const tls::UpstreamTlsContext> tls)
    : UpstreamPool(loop, cfg, server, literal_address(server), counters, std::move(tls)) {}

UpstreamPool::UpstreamPool(uv_loop_t* loop, const config::Upstream& cfg, const config::Endpoint& server,
                           const ResolvedAddress& target, metrics::UpstreamServerCounters* counters,
                           std::shared_ptr<const tls::UpstreamTlsContext> tls, std::shared_ptr<ServerHealth> health)
    : loop_(loop),
      cfg_(cfg),
      address_(target.text),
      addr_(target.addr),
      health_(health ? std::move(health) : std::make_shared<ServerHealth>()),
      counters_(counters) {
  tls_.ctx = std::move(tls);
  tls_.server = server;
  tls_.counters = counters;
  addr_ok_ = addr_.ss_family == AF_INET || addr_.ss_family == AF_INET6;
  if (config::is_http2(cfg.protocol)) {
    h2_ = std::make_unique<H2Pool>(loop, cfg, addr_, address_, counters, &tls_);
  }
}

void UpstreamPool::drain() {
  draining_ = true;
  close_idle();
  if (h2_) h2_->drain();
}

void UpstreamPool::set_tls(std::shared_ptr<const tls::UpstreamTlsContext> tls) {
  if (tls_.ctx == tls) return;
  tls_.ctx = std::move(tls);
  tls_.session.session.reset();
  // What was verified under the old settings (a trust file since changed:
  // a CA removed) carries no new request: idle connections close, busy
  // ones at their release, HTTP/2 ones once their streams end.
  close_idle();
  if (h2_) h2_->drain();
}

Result<UpstreamPool::ChannelLease> UpstreamPool::open(UpstreamHandler* handler, const UpstreamRequestHead& head,
                                                      bool allow_reuse, bool check_open) {
  if (head.http2()) {
    if (!addr_ok_ || !h2_) return make_error(Errc::Upstream, "invalid upstream address " + address_);
    auto lease = h2_->open_stream(handler, head.fields(), head.has_body());
    if (!lease) return lease.take_error();
    return ChannelLease{std::move(lease->stream), lease->reused};
  }
  // An Upgrade may turn the connection into a tunnel: never a pooled one.
  auto lease = acquire(allow_reuse && !head.upgrade(), check_open);
  if (!lease) return lease.take_error();
  lease->conn->attach(handler, head.head_request(), head.upgrade(), head.chunked());
  lease->conn->send(head.text());
  return ChannelLease{std::move(lease->conn), lease->reused};
}

UpstreamPool::~UpstreamPool() { close_idle(); }

Result<UpstreamPool::Lease> UpstreamPool::acquire(bool allow_reuse, bool check_open) {
  while (allow_reuse && !idle_.empty()) {
    std::unique_ptr<UpstreamConnection> conn = std::move(idle_.back());
    idle_.pop_back();
    // Only an Idle one: a connection that closed itself is never handed out.
    if (conn->state() == UpstreamConnection::State::Idle && (!check_open || conn->still_open())) {
      update_idle_gauge();
      if (counters_) counters_->connections_reused.add();
      return Lease{std::move(conn), true};
    }
    conn->close();  // closed by the backend but not yet noticed by the loop
  }
  update_idle_gauge();
  if (!addr_ok_) return make_error(Errc::Upstream, "invalid upstream address " + address_);
  auto conn = std::make_unique<UpstreamConnection>(loop_, this, cfg_, &tls_);
  if (counters_) counters_->connections_created.add();
  if (auto st = conn->connect(addr_); !st) return st.take_error();
  return Lease{std::move(conn), false};
}

void UpstreamPool::release(std::unique_ptr<UpstreamConnection> conn) {
  if (!conn) return;
  conn->detach();
  if (draining_ || !conn->reusable() || !conn->tls_current() || cfg_.keepalive == 0) {
    conn->close();
    LoopContext::of(loop_).defer_delete(std::move(conn));
    return;
  }
  // Beyond `keepalive` idle ones, a connection stays only kSurplusIdle: a
  // load above `keepalive` concurrent requests reuses it instead of opening
  // and closing a connection every few requests (see the header).
  conn->park_idle(idle_.size() >= cfg_.keepalive ? std::min(kSurplusIdle, cfg_.keepalive_timeout)
                                                 : cfg_.keepalive_timeout);
  idle_.push_back(std::move(conn));
  update_idle_gauge();
}

void UpstreamPool::remove_idle(UpstreamConnection* conn) {
  auto it = std::find_if(idle_.begin(), idle_.end(), [conn](const auto& p) { return p.get() == conn; });
  if (it == idle_.end()) return;
  std::unique_ptr<UpstreamConnection> owned = std::move(*it);
  idle_.erase(it);
  update_idle_gauge();
  owned->close();
  LoopContext::of(loop_).defer_delete(std::move(owned));
}

void UpstreamPool::count_failure() {
  if (counters_) counters_->failures.add();
}

void UpstreamPool::count_retry() {
  if (counters_) counters_->retries.add();
}

void UpstreamPool::update_idle_gauge() {
  if (h2_) {
    h2_->update_idle_gauge();  // its sessions with no stream
  } else if (counters_) {
    counters_->idle.set(idle_.size());
  }
}

void UpstreamPool::close_idle() {
  if (h2_) h2_->close_idle();
  for (auto& c : idle_) c->close();
  idle_.clear();
  update_idle_gauge();
}

UpstreamGroup::UpstreamGroup(uv_loop_t* loop, config::Upstream cfg, metrics::WorkerCounters* counters,
                             std::shared_ptr<const tls::UpstreamTlsContext> tls, const ServerDirectory* directory,
                             HealthBoard* health)
    : cfg_(std::move(cfg)),
      loop_(loop),
      counters_(counters),
      tls_(std::move(tls)),
      directory_(directory),
      health_(health) {
  balancer_ = make_balancer(cfg_, {});
  refresh_servers();
}

UpstreamGroup::~UpstreamGroup() {
  for (auto& p : pools_) p->drain();  // exchanges still running keep theirs
}

void UpstreamGroup::refresh_servers() {
  const uint64_t version = directory_ != nullptr ? directory_->version() : 0;
  if (version == directory_version_) return;
  const bool joining = directory_version_ != UINT64_MAX;  // not the group's first servers
  directory_version_ = version;
  const auto now = ServerHealth::Clock::now();
  std::vector<std::shared_ptr<UpstreamPool>> next;
  auto add = [&](const config::Endpoint& server, const config::ServerOptions& options, const ResolvedAddress& target) {
    auto same = [&](const auto& p) { return p->server() == server && p->address() == target.text; };
    if (std::any_of(next.begin(), next.end(), same)) return;  // listed twice
    auto kept = std::find_if(pools_.begin(), pools_.end(), same);
    if (kept != pools_.end()) {
      next.push_back(*kept);
      return;
    }
    bool created = false;
    auto health = health_ ? health_->find_or_add(cfg_.name, target.text, &created) : nullptr;
    // An address a name's new answer added ramps up (slow_start) like a
    // server that came back.
    if (created && joining) health->mark_returned(now);
    next.push_back(std::make_shared<UpstreamPool>(
        loop_, cfg_, server, target, counters_ ? counters_->upstream(cfg_.name, target.text) : nullptr, tls_,
        std::move(health)));
    next.back()->set_options(options);
  };
  for (size_t i = 0; i < cfg_.servers.size(); ++i) {
    const config::Endpoint& server = cfg_.servers[i];
    if (config::is_ip_literal(server.host)) {
      add(server, cfg_.options_of(i), literal_address(server));
      continue;
    }
    if (directory_ == nullptr) continue;
    if (auto list = directory_->lookup(server.to_string())) {
      for (const auto& target : *list) add(server, cfg_.options_of(i), target);
    }
  }
  for (auto& p : pools_) {
    if (std::find(next.begin(), next.end(), p) == next.end()) p->drain();
  }
  pools_ = std::move(next);
  std::vector<UpstreamPool*> servers;
  for (auto& p : pools_) servers.push_back(p.get());
  balancer_->set_servers(std::move(servers));
}

void UpstreamGroup::set_tls(const std::shared_ptr<const tls::UpstreamTlsContext>& tls) {
  for (auto& p : pools_) p->set_tls(tls);
}

void UpstreamGroup::close_idle() {
  for (auto& p : pools_) p->close_idle();
}

}  // namespace tlsfront::upstream
