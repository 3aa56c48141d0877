// UpstreamPool: the keepalive connections of one worker to one upstream server
// (nginx's `keepalive N`); for an HTTP/2 upstream (h2c or h2), its H2Pool of
// multiplexed connections instead. With TLS, the pool keeps the context and
// the last session the server gave (TlsTarget) for its connections. Idle connections are reused LIFO (the warmest
// first), closed after `keepalive_timeout` idle or `keepalive_requests`
// requests, and dropped as soon as the backend closes them.
// `keepalive` bounds the idle connections kept past a burst: one released
// while `keepalive` are idle already stays kSurplusIdle (1 s) at most, where
// nginx closes it at once. Under a load of more concurrent requests than
// `keepalive` nginx's rule opens and closes a connection every few requests
// (measured here: 0.4 connects per request at 200 in flight and keepalive
// 64), each a handshake for the backend and a TIME_WAIT socket for us; the
// linger reuses them, and the pool is back to `keepalive` idle connections
// a second after the load drops. (HAProxy's pool-purge-delay does the same
// over 5 s.) At most `keepalive` idle connections have the long timer, as
// only a release below the bound gives it.
// Thread affinity: owning worker only (no locks: every worker has its own).
#pragma once

#include <netinet/in.h>
#include <uv.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/upstream/balancer.h"
#include "data/upstream/h2_pool.h"
#include "data/upstream/request_head.h"
#include "data/upstream/server_directory.h"
#include "data/upstream/server_health.h"
#include "data/upstream/upstream_channel.h"
#include "data/upstream/upstream_connection.h"
#include "data/upstream/upstream_tls.h"
#include "metrics/counters.h"
#include "util/result.h"

namespace tlsfront::upstream {

// Pools are shared: the group holds its servers' pools, and an exchange
// holds the pool of its current attempt (ProxyExchange::pool_), so a pool
// whose address left the group (drain()) lives until its last exchange
// ends; connections never outlive their pool's exchanges or the pool.
class UpstreamPool : public std::enable_shared_from_this<UpstreamPool> {
 public:
  // How long a connection released beyond `keepalive` idle ones stays idle
  // (keepalive_timeout when that is shorter).
  static constexpr std::chrono::milliseconds kSurplusIdle{1000};

  // `cfg` is borrowed and must outlive the pool (its UpstreamGroup owns both);
  // so is `counters` (this server's in the worker's metrics; null: none).
  // `tls`: the group's client TLS context (null: cleartext). `server` as
  // configured (an IP literal: connected to; a name: TLS verifies it and
  // sends it as SNI), `target` the address connected to (a name's resolved
  // one), which names the pool in logs and metrics.
  UpstreamPool(uv_loop_t* loop, const config::Upstream& cfg, const config::Endpoint& server,
               metrics::UpstreamServerCounters* counters = nullptr,
               std::shared_ptr<const tls::UpstreamTlsContext> tls = nullptr);
  // `health`: the server's, shared with the other workers (HealthBoard);
  // null: one of its own.
  UpstreamPool(uv_loop_t* loop, const config::Upstream& cfg, const config::Endpoint& server,
               const ResolvedAddress& target, metrics::UpstreamServerCounters* counters,
               std::shared_ptr<const tls::UpstreamTlsContext> tls, std::shared_ptr<ServerHealth> health = nullptr);
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  struct Lease {
    std::unique_ptr<UpstreamConnection> conn;
    bool reused = false;
  };

  // An idle connection (reused = true) when `allow_reuse`, else a new one
  // already connecting. Idle connections are read while parked, so a close
  // by the backend is seen at the next poll; `check_open` also peeks
  // (recv MSG_PEEK) for a close that arrived since, one syscall per reuse —
  // for requests that could not be retried on a new connection. A
  // connection that is not Idle is never handed out (an idle one that
  // fails, e.g. a write of a TLS answer, leaves the pool: remove_idle).
  // Errors: Errc::Upstream.
  [[nodiscard]] Result<Lease> acquire(bool allow_reuse, bool check_open = true);

  // A reload built a new TLS context for the group (its files may have
  // changed): new connections use it, and the session kept for the old one
  // is dropped (it was verified under the old settings). Open connections
  // keep theirs.
  void set_tls(std::shared_ptr<const tls::UpstreamTlsContext> tls);

  struct ChannelLease {
    std::unique_ptr<UpstreamChannel> channel;
    bool reused = false;  // a pooled connection, or a stream on an open HTTP/2 connection
  };
  // An exchange's attempt on this server: `head` opened for `handler` as
  // the group's protocol carries it. HTTP/1.1: acquire(allow_reuse,
  // check_open) (never a pooled connection for an Upgrade), attached and
  // the head queued; HTTP/2: a new stream on one of the server's
  // multiplexed connections (H2Pool::open_stream). The body and the end
  // follow through the channel. No handler call happens in here. HTTP/2
  // points at `head`'s fields uncopied: `head` (and the client's head its
  // fields view) must outlive the channel. Errors: Errc::Upstream.
  [[nodiscard]] Result<ChannelLease> open(UpstreamHandler* handler, const UpstreamRequestHead& head, bool allow_reuse,
                                          bool check_open);

  // Takes back a connection after its exchange. Parks it idle when it is
  // reusable (for kSurplusIdle when `keepalive` are idle already), otherwise
  // closes it.
  void release(std::unique_ptr<UpstreamConnection> conn);

  // Called by an idle connection that closed itself (EOF, timeout, junk, a
  // failed write).
  void remove_idle(UpstreamConnection* conn);

  // Metrics: a failure counted against the server; an exchange is retrying
  // after an error on it; the balancer ejected it; it was chosen while
  // ejected (panic).
  void count_failure();
  void count_retry();
  void count_ejection() {
    if (counters_) counters_->ejections.add();
  }
  void count_panic() {
    if (counters_) counters_->panics.add();
  }
  // `reason`: a static string (upstream_failure.h's to_string).
  void count_attempt_failure(std::string_view reason) {
    if (counters_) counters_->attempt_failures.add(reason.data(), "");
  }
  void observe_response(double ms) {
    if (counters_) counters_->response_time.observe(std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6)));
  }
  ServerHealth& health() const { return *health_; }
  // The configured server's weight and backup flag (config::ServerOptions);
  // set by its group once the pool is made.
  void set_options(const config::ServerOptions& options) { options_ = options; }
  uint32_t weight() const { return static_cast<uint32_t>(options_.weight); }
  bool backup() const { return options_.backup; }
  // Exchanges of this worker with an attempt on this server now (the
  // least_request balancer's load): ProxyExchange counts them.
  uint32_t outstanding() const { return outstanding_; }
  void begin_request() {
    ++outstanding_;
    if (counters_) counters_->outstanding.set(outstanding_);
  }
  void end_request() {
    --outstanding_;
    if (counters_) counters_->outstanding.set(outstanding_);
  }

  const std::string& address() const { return address_; }
  const config::Endpoint& server() const { return tls_.server; }
  // The address left the group (its name no longer resolves to it, or a
  // reload dropped it): no new exchange comes; idle connections close now,
  // busy ones at their release, HTTP/2 ones after their last stream.
  void drain();
  bool draining() const { return draining_; }
  size_t idle_count() const { return idle_.size(); }
  // Closes every idle connection (shutdown).
  void close_idle();

 private:
  uv_loop_t* loop_;
  const config::Upstream& cfg_;
  std::string address_;
  sockaddr_storage addr_{};
  bool addr_ok_ = false;
  bool draining_ = false;
  uint32_t outstanding_ = 0;
  config::ServerOptions options_;
  std::shared_ptr<ServerHealth> health_;
  std::vector<std::unique_ptr<UpstreamConnection>> idle_;
  TlsTarget tls_;               // its ctx is null for a cleartext upstream
  std::unique_ptr<H2Pool> h2_;  // protocol = "h2c" or "h2" only
  metrics::UpstreamServerCounters* counters_;
  void update_idle_gauge();
};

// UpstreamGroup: one [[upstream]] in one worker: its servers' pools and the
// Balancer that chooses among them. A server given by IP literal is one
// pool; one given by name is a pool per address the ServerDirectory holds
// for it (none until it first resolves), reshaped by refresh_servers().
class UpstreamGroup {
 public:
  // `counters` (borrowed, may be null): the worker's metrics, where each
  // server's counters are found by upstream name and address.
  // `tls`: the client TLS context built for `cfg` (null when cfg.tls is off).
  // `directory` (borrowed, may be null: names have no address) holds what
  // the names of cfg.servers resolve to.
  // `health` (borrowed, may be null: each pool its own) holds what every
  // worker knows of each server's health.
  UpstreamGroup(uv_loop_t* loop, config::Upstream cfg, metrics::WorkerCounters* counters = nullptr,
                std::shared_ptr<const tls::UpstreamTlsContext> tls = nullptr,
                const ServerDirectory* directory = nullptr, HealthBoard* health = nullptr);
  ~UpstreamGroup();
  // The directory changed: the servers become what it says now. Pools of
  // addresses that stay are kept (their connections, the balancer's
  // knowledge of them); new addresses get new pools; pools of addresses
  // gone drain (UpstreamPool::drain) and are let go (their exchanges hold
  // them until they end). Nothing happens when its version did not move.
  void refresh_servers();
  size_t server_count() const { return pools_.size(); }
  const std::vector<std::shared_ptr<UpstreamPool>>& pools() const { return pools_; }
  Balancer& balancer() { return *balancer_; }
  const config::Upstream& config() const { return cfg_; }
  // The group is kept across a reload: the new generation's TLS context
  // (UpstreamPool::set_tls) for each server.
  void set_tls(const std::shared_ptr<const tls::UpstreamTlsContext>& tls);
  void close_idle();

 private:
  config::Upstream cfg_;
  uv_loop_t* loop_;
  metrics::WorkerCounters* counters_;
  std::shared_ptr<const tls::UpstreamTlsContext> tls_;
  const ServerDirectory* directory_;
  HealthBoard* health_;
  uint64_t directory_version_ = UINT64_MAX;  // what refresh_servers() last applied
  std::vector<std::shared_ptr<UpstreamPool>> pools_;
  std::unique_ptr<Balancer> balancer_;  // over pools_
};

}  // namespace tlsfront::upstream
