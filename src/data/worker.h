// Worker: one thread running one libuv loop with its own listening sockets,
// client connections, upstream keepalive pools and access-log buffer. Workers
// share nothing mutable but the current Generation (atomic shared_ptr) and the
// log writer; the control thread talks to a worker only through its inbox
// (uv_async_send is the only libuv call made from another thread).
//
// At a resource limit (accept fails with EMFILE, ENFILE, ENOBUFS, ENOMEM, or
// anything else) the worker stops accepting on all its listeners for
// kAcceptBackoff, as nginx disables its accept events for 500 ms, and then
// resumes by itself; a listener is paused by stopping its poll
// (util/acceptor.h), so a paused worker sleeps, while its loop keeps running
// the connections it has, their timers and closes, and its inbox (reloads,
// stop). At a resource limit it also closes up to kIdleReclaim idle
// connections (keepalive between requests, HTTP/2 without streams), the ones
// nginx would reuse first. One warning per kAcceptReportInterval says why,
// the open-files limit and how many accepts failed; /metrics counts each
// failure by errno, each pause, the paused workers and the reclaimed idle
// connections (metrics/counters.h). At [limits] max_connections client
// connections the worker stops accepting the same way until one closes
// (accepting_allowed() is the one rule for all three: stopping, backoff,
// limit).
// Thread affinity: constructed and started/stopped/joined from the control
// thread; everything else runs on the worker's own thread.
#pragma once

#include <uv.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "data/generation.h"
#include "data/http/compression_budget.h"
#include "data/http/session_env.h"
#include "data/quic/quic_endpoint.h"
#include "data/redis_rate_limiter.h"
#include "data/redis_session_store.h"
#include "data/upstream/upstream_pool.h"
#include "log/access_log.h"
#include "log/log_throttle.h"
#include "metrics/counters.h"
#include "util/acceptor.h"
#include "util/loop_context.h"
#include "util/unique_fd.h"
#include "util/uv_handle.h"

namespace tlsfront::log {
class LogWriter;
}

namespace tlsfront::data {

class Connection;

// What a worker builds for one Generation: its upstream groups, indexed like
// the generation's Config::upstreams. A group whose [[upstream]] table did not
// change is shared with the previous generation, so its keepalive pool
// survives a reload; the others start empty. Held by the worker while current
// and by each connection of the generation; the last holder's release hands
// the groups to the loop's deferred delete, after the exchanges freed in the
// same pass (they may still point into the pools).
// Thread affinity: the worker's thread.
// A bound listening socket for one [[listen]] address, handed to a worker.
struct ListenSocket {
  config::Listener listener;
  UniqueFd fd;
  UniqueFd quic_fd;    // its UDP twin (quic = true: control/quic_socket.h); invalid when none
  size_t workers = 1;  // how many workers share the address (QUIC's steering modulus)
};

struct WorkerGeneration {
  std::shared_ptr<const Generation> gen;
  std::vector<std::shared_ptr<upstream::UpstreamGroup>> upstreams;
  LoopContext* loop_ctx = nullptr;
  // What this generation's sessions borrow (the worker's parts and this
  // generation's config, router, header plan and upstreams): one per
  // generation, so a session holds a reference, not a 72-octet copy.
  http::SessionEnv env;
  ~WorkerGeneration();
};

using GenerationSlot = std::atomic<std::shared_ptr<const Generation>>;

class Worker {
 public:
  static constexpr std::chrono::milliseconds kAcceptBackoff{500};
  static constexpr std::chrono::seconds kAcceptReportInterval{10};
  static constexpr size_t kIdleReclaim = 32;  // per failed accept, as nginx's ngx_drain_connections

  // `current`, `next_connection_id` and `log_writer` (null = no access log)
  // are borrowed from the Server and outlive the worker.
  // `counters` too (this worker's; the admin endpoint reads them).
  // `directory` and `health` (may be null) too: what the [[upstream]]
  // names resolve to, and what every worker knows of each server's health.
  Worker(int index, const GenerationSlot* current, std::atomic<uint64_t>* next_connection_id,
         log::LogWriter* log_writer, metrics::WorkerCounters* counters,
         const upstream::ServerDirectory* directory = nullptr, upstream::HealthBoard* health = nullptr);
  ~Worker();

  // Starts the thread, which adopts `sockets`. Control thread only.
  void start(std::vector<ListenSocket> sockets);
  // Reload: start accepting on `socket` / stop accepting on `address` (its
  // socket is closed; accepted connections are unaffected). Any thread.
  void add_listener(ListenSocket socket);
  void remove_listener(const config::Endpoint& address);
  // Asks the worker to stop accepting, finish in-flight requests within
  // `drain`, and exit its loop. Any thread.
  void request_stop(std::chrono::milliseconds drain);
  // The ServerDirectory changed: the upstream groups take its addresses
  // (UpstreamGroup::refresh_servers). Any thread.
  void refresh_upstreams();
  void join();

  // Worker-thread API for connections.
  uv_loop_t* loop() { return &loop_; }
  metrics::WorkerCounters& counters() { return *counters_; }
  // This worker's shared session store ([tls.session_cache] store = "redis"),
  // or nullptr. Borrowed; lives until the worker stops (after its connections).
  tls::RemoteSessionStore* session_store() { return session_store_.get(); }
  void remove(Connection* conn);
  // A connection on a proxy_protocol listener closed without a valid header
  // (data/connection.h): counted, and logged as a warning at most once per
  // kProxyReportInterval (the line says how many it stands for).
  void report_proxy_refusal(metrics::ProxyRefusal reason, std::string_view peer, uint16_t port, std::string_view why);
  static constexpr std::chrono::seconds kProxyReportInterval{10};
  // A connection refused by its client address (data/client_admission.h):
  // counted, and logged as a warning at most once per kProxyReportInterval.
  void report_connection_refusal(metrics::ConnectionRefusal reason, std::string_view peer, uint16_t port);

 private:
  void run(std::vector<ListenSocket> sockets);
  void listen_on(ListenSocket socket);
  void on_accepted(const config::Endpoint& address, UniqueFd fd);
  // Pauses every listener for kAcceptBackoff, reclaims idle connections at
  // a resource limit, counts and (throttled) logs `err` (an errno value).
  void on_accept_failed(int err);
  bool accepting_allowed() const;
  void update_accepting();  // pauses or resumes every listener per accepting_allowed()
  size_t close_idle_connections(size_t max);
  void on_inbox();
  // The WorkerGeneration of the Server's current Generation (built on first
  // use after a reload, reusing unchanged upstream groups).
  std::shared_ptr<const WorkerGeneration> current_generation();
  void begin_stop();
  void finish_stop();
  static void on_drain_timer(uv_timer_t* t);  // aborts what is left; finish_stop() once none is

  int index_;
  const GenerationSlot* current_;
  std::atomic<uint64_t>* next_connection_id_;
  log::LogWriter* log_writer_;
  metrics::WorkerCounters* counters_;
  const upstream::ServerDirectory* directory_;
  upstream::HealthBoard* health_;
  // Before every connection and the deferred deletes: their claims go first.
  http::CompressionBudget compression_budget_;
  std::thread thread_;
  uv_loop_t loop_{};
  std::unique_ptr<LoopContext> loop_ctx_;
  std::unique_ptr<log::AccessLog> access_log_;
  UvHandle<uv_async_t> inbox_;
  UvHandle<uv_timer_t> drain_timer_;
  UvHandle<uv_timer_t> accept_backoff_;  // active while accepting is paused
  uint64_t max_connections_ = 0;         // [limits] of the newest connection's generation
  log::LogThrottle accept_report_{kAcceptReportInterval};
  log::LogThrottle proxy_report_{kProxyReportInterval};
  log::LogThrottle refusal_report_{kProxyReportInterval};
  struct Listening {
    config::Endpoint address;
    std::unique_ptr<Acceptor> acceptor;
    std::unique_ptr<quic::QuicEndpoint> quic;  // quic = true; null otherwise
  };
  std::vector<Listening> listeners_;
  // QUIC endpoints of a stopping worker: their connections finish their
  // requests after GOAWAY (QuicEndpoint::shutdown).
  std::vector<std::unique_ptr<quic::QuicEndpoint>> quic_draining_;
  bool quic_busy() const;
  size_t quic_connections() const;
  // The current generation's QUIC credentials and the listener's quic_retry.
  std::optional<quic::QuicEndpoint::Policy> quic_policy(const config::Endpoint& address);
  std::optional<quic::QuicEndpoint::Lease> quic_lease(const config::Endpoint& address, const std::string& client,
                                                      uint16_t port);
  // The stop is over once no connection, TCP or QUIC, is left.
  void on_connections_gone();
  std::unordered_map<Connection*, std::unique_ptr<Connection>> connections_;
  std::shared_ptr<WorkerGeneration> generation_;
  http::SessionEnv env_;
  std::unique_ptr<RedisSessionStore> session_store_;
  std::unique_ptr<RedisRateLimiter> rate_limiter_;  // [[limit_req]] store = "redis" (connects on first use)
  bool shutting_down_ = false;
  bool stop_finished_ = false;
  bool stopped_ = false;

  std::mutex inbox_mu_;
  bool stop_requested_ = false;
  bool refresh_requested_ = false;
  // Listener changes in the order the control thread made them: an add and
  // a later remove of the same address (two quick reloads) must not be
  // applied the other way round.
  struct ListenerChange {
    config::Endpoint address;
    std::optional<ListenSocket> add;  // nullopt: remove `address`
  };
  std::vector<ListenerChange> listener_changes_;
  std::chrono::milliseconds drain_{0};
};

}  // namespace tlsfront::data
