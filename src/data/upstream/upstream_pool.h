// UpstreamPool: the keepalive connections of one worker to one upstream server
// (nginx's `keepalive N`); for an HTTP/2 upstream (h2c or h2), its H2Pool of
// multiplexed connections instead. With TLS, the pool keeps the context and
// the last session the server gave (TlsTarget) for its connections. Idle connections are reused LIFO (the warmest
// first), bounded by `keepalive`, closed after `keepalive_timeout` idle or
// `keepalive_requests` requests, and dropped as soon as the backend closes them.
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
#include "data/upstream/upstream_channel.h"
#include "data/upstream/upstream_connection.h"
#include "data/upstream/upstream_tls.h"
#include "metrics/counters.h"
#include "util/result.h"

namespace tlsfront::upstream {

class UpstreamPool {
 public:
  // `cfg` is borrowed and must outlive the pool (its UpstreamGroup owns both);
  // so is `counters` (this server's in the worker's metrics; null: none).
  // `tls`: the group's client TLS context (null: cleartext).
  UpstreamPool(uv_loop_t* loop, const config::Upstream& cfg, const config::Endpoint& server,
               metrics::UpstreamServerCounters* counters = nullptr,
               std::shared_ptr<const tls::UpstreamTlsContext> tls = nullptr);
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
  // follow through the channel. No handler call happens in here.
  // Errors: Errc::Upstream.
  [[nodiscard]] Result<ChannelLease> open(UpstreamHandler* handler, const UpstreamRequestHead& head, bool allow_reuse,
                                          bool check_open);

  // Takes back a connection after its exchange. Parks it idle when it is
  // reusable and the pool has room, otherwise closes it.
  void release(std::unique_ptr<UpstreamConnection> conn);

  // Called by an idle connection that closed itself (EOF, timeout, junk, a
  // failed write).
  void remove_idle(UpstreamConnection* conn);

  // Metrics: the balancer marked this server failed; an exchange is
  // retrying after an error on it.
  void count_failure();
  void count_retry();

  const std::string& address() const { return address_; }
  size_t idle_count() const { return idle_.size(); }
  // Closes every idle connection (shutdown).
  void close_idle();

 private:
  uv_loop_t* loop_;
  const config::Upstream& cfg_;
  std::string address_;
  sockaddr_storage addr_{};
  bool addr_ok_ = false;
  std::vector<std::unique_ptr<UpstreamConnection>> idle_;
  TlsTarget tls_;               // its ctx is null for a cleartext upstream
  std::unique_ptr<H2Pool> h2_;  // protocol = "h2c" or "h2" only
  metrics::UpstreamServerCounters* counters_;
  void update_idle_gauge();
};

// UpstreamGroup: one [[upstream]] in one worker: its servers' pools and the
// Balancer that chooses among them.
class UpstreamGroup {
 public:
  // `counters` (borrowed, may be null): the worker's metrics, where each
  // server's counters are found by upstream name and address.
  // `tls`: the client TLS context built for `cfg` (null when cfg.tls is off).
  UpstreamGroup(uv_loop_t* loop, config::Upstream cfg, metrics::WorkerCounters* counters = nullptr,
                std::shared_ptr<const tls::UpstreamTlsContext> tls = nullptr);
  Balancer& balancer() { return *balancer_; }
  const config::Upstream& config() const { return cfg_; }
  // The group is kept across a reload: the new generation's TLS context
  // (UpstreamPool::set_tls) for each server.
  void set_tls(const std::shared_ptr<const tls::UpstreamTlsContext>& tls);
  void close_idle();

 private:
  config::Upstream cfg_;
  std::vector<std::unique_ptr<UpstreamPool>> pools_;
  std::unique_ptr<Balancer> balancer_;  // over pools_
};

}  // namespace tlsfront::upstream
