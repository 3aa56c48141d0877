#include "data/worker.h"

#include "data/client_admission.h"

#include <sys/resource.h>

#include <cassert>

#include "log/log.h"
#include "data/connection.h"
#include "tls/handshake_budget.h"

namespace tlsfront::data {
namespace {

struct RetiredGroups final : Deletable {
  std::vector<std::shared_ptr<upstream::UpstreamGroup>> groups;
};
}  // namespace

WorkerGeneration::~WorkerGeneration() {
  if (loop_ctx == nullptr || upstreams.empty()) return;
  auto retired = std::make_unique<RetiredGroups>();
  retired->groups = std::move(upstreams);
  loop_ctx->defer_delete(std::move(retired));
}

Worker::Worker(int index, const GenerationSlot* current, std::atomic<uint64_t>* next_connection_id,
               log::LogWriter* log_writer, metrics::WorkerCounters* counters,
               const upstream::ServerDirectory* directory, upstream::HealthBoard* health)
    : index_(index),
      current_(current),
      next_connection_id_(next_connection_id),
      log_writer_(log_writer),
      counters_(counters),
      directory_(directory),
      health_(health),
      compression_budget_(counters) {
  uv_loop_init(&loop_);
  loop_ctx_ = std::make_unique<LoopContext>(&loop_);
  // The inbox exists before the thread starts so request_stop() is always safe.
  inbox_.init([this](uv_async_t* h) { return uv_async_init(&loop_, h, [](uv_async_t* a) {
                                         if (a->data) static_cast<Worker*>(a->data)->on_inbox();
                                       }); },
              this);
}

Worker::~Worker() {
  join();
  if (!stopped_) {
    // The thread never ran: release the handles made in the constructor.
    inbox_.close();
    loop_ctx_->close();
    uv_run(&loop_, UV_RUN_DEFAULT);
  }
  loop_ctx_.reset();
  if (int rc = uv_loop_close(&loop_); rc != 0) {
    // A handle outlived its owner: a bug, reported loudly in every build.
    log::error("worker {}: uv_loop_close: {}", index_, uv_strerror(rc));
    assert(false && "a libuv handle outlived its worker");
  }
}

void Worker::start(std::vector<ListenSocket> sockets) {
  thread_ = std::thread([this, s = std::move(sockets)]() mutable { run(std::move(s)); });
}

void Worker::add_listener(ListenSocket socket) {
  {
    std::lock_guard lock(inbox_mu_);
    config::Endpoint address = socket.listener.address;
    listener_changes_.push_back(ListenerChange{std::move(address), std::move(socket)});
  }
  uv_async_send(inbox_.get());
}

void Worker::remove_listener(const config::Endpoint& address) {
  {
    std::lock_guard lock(inbox_mu_);
    listener_changes_.push_back(ListenerChange{address, std::nullopt});
  }
  uv_async_send(inbox_.get());
}

// The socket is already listening (control/listener.cc: bound, listen()ed
// with its backlog).
void Worker::listen_on(ListenSocket socket) {
  auto acceptor = std::make_unique<Acceptor>();
  const config::Endpoint address = socket.listener.address;
  const int rc = acceptor->open(&loop_, std::move(socket.fd),
                                Acceptor::Callbacks{
                                    [this, address](UniqueFd fd) { on_accepted(address, std::move(fd)); },
                                    [this](int err) { on_accept_failed(err); },
                                });
  if (rc != 0) {
    log::error("worker {}: cannot listen on {}: {}", index_, address.to_string(), uv_strerror(rc));
  }
  if (!accepting_allowed()) acceptor->pause();  // resumed with the others
  std::unique_ptr<quic::QuicEndpoint> endpoint;
  if (socket.quic_fd.valid()) {
    endpoint = std::make_unique<quic::QuicEndpoint>(
        &loop_, index_, static_cast<int>(socket.workers), address, [this, address] { return quic_policy(address); },
        [this, address](const std::string& client, uint16_t port) { return quic_lease(address, client, port); },
        counters_);
    if (auto st = endpoint->open(std::move(socket.quic_fd)); !st) {
      log::error("worker {}: {}", index_, st.error().message());
      endpoint.reset();
    }
  }
  listeners_.push_back(Listening{address, std::move(acceptor), std::move(endpoint)});
}

void Worker::request_stop(std::chrono::milliseconds drain) {
  {
    std::lock_guard lock(inbox_mu_);
    stop_requested_ = true;
    drain_ = drain;
  }
  uv_async_send(inbox_.get());
}

void Worker::refresh_upstreams() {
  {
    std::lock_guard lock(inbox_mu_);
    refresh_requested_ = true;
  }
  uv_async_send(inbox_.get());
}

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const WorkerGeneration> Worker::current_generation() {
  std::shared_ptr<const Generation> gen = current_->load();
  if (generation_ && generation_->gen == gen) return generation_;
  auto next = std::make_shared<WorkerGeneration>();
  next->gen = gen;
  next->loop_ctx = loop_ctx_.get();
  for (size_t i = 0; i < gen->config.upstreams.size(); ++i) {
    const config::Upstream& u = gen->config.upstreams[i];
    const auto& tls = gen->upstream_tls.at(i);
    std::shared_ptr<upstream::UpstreamGroup> group;
    if (generation_) {
      for (const auto& old : generation_->upstreams) {
        if (old->config() == u) group = old;
      }
    }
    if (group) {
      group->set_tls(tls);  // the files were read again: new connections use what they say now
    } else {
      group = std::make_shared<upstream::UpstreamGroup>(&loop_, u, counters_, tls, directory_, health_);
    }
    next->upstreams.push_back(std::move(group));
  }
  next->env = env_;
  next->env.config = &gen->config;
  next->env.router = &gen->router;
  next->env.headers = &gen->headers;
  next->env.client_auth_names = gen->tls && gen->tls->mixed_client_auth() ? gen->tls.get() : nullptr;
  next->env.upstreams = &next->upstreams;
  next->env.limits = &gen->limits;
  next->env.acme = gen->acme.get();
  next->env.counters = counters_;
  if (gen->requests) next->env.requests = gen->requests->worker(static_cast<size_t>(index_));
  generation_ = std::move(next);
  return generation_;
}

void Worker::run(std::vector<ListenSocket> sockets) {
  access_log_ = std::make_unique<log::AccessLog>(log_writer_, &loop_);
  env_.loop = &loop_;
  env_.access_log = log_writer_ ? access_log_.get() : nullptr;
  env_.shutting_down = &shutting_down_;
  env_.compression_budget = &compression_budget_;
  rate_limiter_ = std::make_unique<RedisRateLimiter>(&loop_, index_, counters_);
  env_.remote_limiter = rate_limiter_.get();
  std::shared_ptr<const Generation> gen = current_generation()->gen;  // its env copies env_
  if (const auto& sc = gen->config.tls.session_cache; sc.enabled && sc.store == config::SessionStore::Redis) {
    auto store = RedisSessionStore::create(sc, &loop_, index_, counters_);
    if (store) {
      session_store_ = std::move(store).value();
    } else {
      log::error("worker {}: session cache: {}; sessions stay local", index_, store.error().message());
    }
  }

  accept_backoff_.init([this](uv_timer_t* h) { return uv_timer_init(&loop_, h); }, this);
  uv_unref(accept_backoff_.handle());

  for (auto& socket : sockets) listen_on(std::move(socket));
  gen.reset();

  uv_run(&loop_, UV_RUN_DEFAULT);

  // Teardown: free what was deferred, close the pools, then let every close
  // callback run so uv_loop_close() finds no handle left.
  loop_ctx_->run_deferred();
  connections_.clear();
  loop_ctx_->run_deferred();  // exchanges and upstream connections they held
  generation_.reset();        // defers the upstream groups
  loop_ctx_->run_deferred();
  if (session_store_) session_store_->close();
  rate_limiter_->close();
  access_log_->close();
  accept_backoff_.close();
  loop_ctx_->close();
  uv_run(&loop_, UV_RUN_DEFAULT);
  stopped_ = true;
}

void Worker::on_accepted(const config::Endpoint& address, UniqueFd fd) {
  uint64_t id = next_connection_id_->fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const WorkerGeneration> wgen = current_generation();
  auto conn = std::make_unique<Connection>(*this, wgen, id);
  // The generation's settings for the listener this came from (ALPN).
  if (auto st = conn->accept(std::move(fd), &address); !st) {
    log::warn("worker {}: {}", index_, st.error().message());
    conn->abort();
    loop_ctx_->defer_delete(std::move(conn));
    return;
  }
  if (conn->closed()) {  // refused at accept (proxy_protocol_from, access, max_connections_per_client)
    loop_ctx_->defer_delete(std::move(conn));
    return;
  }
  Connection* raw = conn.get();
  connections_.emplace(raw, std::move(conn));
  // A reload's [limits] max_connections applies from its first connection.
  max_connections_ = wgen->gen->config.limits.max_connections;
  if (max_connections_ != 0 && connections_.size() == max_connections_) {
    counters_->connection_limit_pauses.add();
    update_accepting();
  }
}

// Listeners are watched unless the worker is stopping, in an accept
// backoff, or at [limits] max_connections: the one place that decides.
bool Worker::accepting_allowed() const {
  if (shutting_down_ || uv_is_active(accept_backoff_.handle())) return false;
  return max_connections_ == 0 || connections_.size() < max_connections_;
}

void Worker::update_accepting() {
  const bool allowed = accepting_allowed();
  for (auto& l : listeners_) allowed ? l.acceptor->resume() : l.acceptor->pause();
  counters_->accept_paused.set(allowed || shutting_down_ ? 0 : 1);
}

void Worker::on_accept_failed(int err) {
  const bool limit = is_resource_limit(err);
  const size_t reclaimed = limit ? close_idle_connections(kIdleReclaim) : 0;
  counters_->accept_errors[static_cast<size_t>(metrics::accept_error(err))].add();
  counters_->accept_pauses.add();
  if (!uv_is_active(accept_backoff_.handle())) {
    uv_timer_start(
        accept_backoff_.get(),
        [](uv_timer_t* t) {
          if (t->data) static_cast<Worker*>(t->data)->update_accepting();
        },
        static_cast<uint64_t>(kAcceptBackoff.count()), 0);
  }
  update_accepting();
  const uint64_t failures = accept_report_.count(std::chrono::steady_clock::now());
  if (failures == 0) return;
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  const std::string fd_limit = rl.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(rl.rlim_cur);
  log::warn(
      "worker {}: accept failed: {} ({}); open files limit (RLIMIT_NOFILE soft) {}, {} connections on this worker, "
      "{} idle ones closed; not accepting for {} ms at a time; {} failed accept{} since the last report (at most one "
      "per {} s)",
      index_, uv_strerror(-err), uv_err_name(-err), fd_limit, connections_.size(), reclaimed, kAcceptBackoff.count(),
      failures, failures == 1 ? "" : "s", kAcceptReportInterval.count());
}

// Idle connections first: they cost the fewest clients anything (a client
// reconnects when it has its next request, as after timeouts.keepalive).
size_t Worker::close_idle_connections(size_t max) {
  std::vector<Connection*> all;
  for (auto& [raw, owned] : connections_) all.push_back(raw);
  size_t closed = 0;
  for (Connection* c : all) {  // close_if_idle() may remove() c from connections_
    if (closed == max) break;
    if (c->close_if_idle()) ++closed;
  }
  counters_->idle_reclaimed.add(closed);
  return closed;
}

void Worker::report_proxy_refusal(metrics::ProxyRefusal reason, std::string_view peer, uint16_t port,
                                  std::string_view why) {
  counters_->proxy_refused[static_cast<size_t>(reason)].add();
  // A load balancer's TCP health check connects and closes: counted only.
  if (reason == metrics::ProxyRefusal::Empty) {
    log::debug("worker {}: {}:{} closed before its PROXY protocol header", index_, peer, port);
    return;
  }
  const uint64_t n = proxy_report_.count(std::chrono::steady_clock::now());
  if (n == 0) return;
  log::warn("worker {}: closed a connection from {}:{} on a proxy_protocol listener: {} ({}); {} such connection{} "
            "since the last report (at most one per {} s)",
            index_, peer, port, why, metrics::kProxyRefusalNames[static_cast<size_t>(reason)], n, n == 1 ? "" : "s",
            kProxyReportInterval.count());
}

void Worker::report_connection_refusal(metrics::ConnectionRefusal reason, std::string_view peer, uint16_t port) {
  counters_->connections_refused[static_cast<size_t>(reason)].add();
  const uint64_t n = refusal_report_.count(std::chrono::steady_clock::now());
  if (n == 0) return;
  constexpr const char* why[] = {"its [[listen]] access rules deny it", "[limits] max_connections_per_client reached",
                                 "[limits] max_full_handshakes_per_client spent"};
  log::warn("worker {}: refused a connection from {}:{}: {} ({}); {} refused connection{} since the last report (at "
            "most one per {} s)",
            index_, peer, port, why[static_cast<size_t>(reason)],
            metrics::kConnectionRefusalNames[static_cast<size_t>(reason)], n, n == 1 ? "" : "s",
            kProxyReportInterval.count());
}

void Worker::remove(Connection* conn) {
  auto it = connections_.find(conn);
  if (it == connections_.end()) return;
  loop_ctx_->defer_delete(std::move(it->second));
  connections_.erase(it);
  if (max_connections_ != 0 && connections_.size() + 1 == max_connections_) update_accepting();
  if (shutting_down_ && connections_.empty() && !quic_busy()) {
    // Not from here: remove() runs inside a connection's callbacks, which may
    // themselves run inside an upstream connection's (a response completed,
    // the connection went back to the pool, the client connection closed at
    // once), and finish_stop() frees the pool's idle connections.
    if (drain_timer_.active()) {
      uv_timer_start(drain_timer_.get(), on_drain_timer, 0, 0);
    } else {
      finish_stop();
    }
  }
}

void Worker::on_drain_timer(uv_timer_t* t) {
  if (!t->data) return;
  auto* self = static_cast<Worker*>(t->data);
  std::vector<Connection*> left;
  for (auto& [raw, owned] : self->connections_) left.push_back(raw);
  for (Connection* c : left) c->abort();
  for (auto& endpoint : self->quic_draining_) endpoint->close();  // CONNECTION_CLOSE; in-flight streams logged
  if (self->connections_.empty()) self->finish_stop();
}

std::optional<quic::QuicEndpoint::Policy> Worker::quic_policy(const config::Endpoint& address) {
  std::shared_ptr<const WorkerGeneration> wgen = current_generation();
  if (!wgen->gen->quic) return std::nullopt;
  quic::QuicEndpoint::Policy policy;
  policy.credentials = wgen->gen->quic;
  for (const auto& l : wgen->gen->config.listeners) {
    if (l.address == address && l.quic) policy.retry = l.quic_retry;
  }
  return policy;
}

// The checks a TCP connection passes at accept (Connection::admit_client),
// for a QUIC one at its first Initial: the listener's access rules,
// [limits] max_connections_per_client (the same node-wide table: TCP and
// QUIC connections of one client count together) and max_connections.
std::optional<quic::QuicEndpoint::Lease> Worker::quic_lease(const config::Endpoint& address, const std::string& client,
                                                             uint16_t port) {
  if (shutting_down_) return std::nullopt;
  std::shared_ptr<const WorkerGeneration> wgen = current_generation();
  if (!wgen->gen->quic) return std::nullopt;
  const config::Listener* listener = nullptr;
  for (const auto& l : wgen->gen->config.listeners) {
    if (l.address == address && l.quic) listener = &l;
  }
  if (listener == nullptr) return std::nullopt;
  const config::Limits& limits = wgen->gen->config.limits;
  if (limits.max_connections != 0 && connections_.size() + quic_connections() >= limits.max_connections) {
    return std::nullopt;
  }
  const auto ip = IpAddress::parse(client);
  if (!listener->access.empty() && (!ip || !config::access_allows(listener->access, *ip))) {
    report_connection_refusal(metrics::ConnectionRefusal::Access, client, port);
    return std::nullopt;
  }
  if (limits.max_full_handshakes_per_client != 0 && ip &&
      !tls::HandshakeBudget::charge_quic_connection(
          std::string_view(reinterpret_cast<const char*>(ip->octets.data()), ip->size()),
          limits.max_full_handshakes_per_client)) {
    report_connection_refusal(metrics::ConnectionRefusal::HandshakeRate, client, port);
    return std::nullopt;
  }
  std::shared_ptr<void> slot;
  if (limits.max_connections_per_client != 0 && ip) {
    std::string key(reinterpret_cast<const char*>(ip->octets.data()), ip->size());
    if (client_connections()->acquire(key, limits.max_connections_per_client) != ConcurrencyTable::Acquire::Ok) {
      report_connection_refusal(metrics::ConnectionRefusal::PerClient, client, port);
      return std::nullopt;
    }
    slot = std::make_shared<ConcurrencySlot>(client_connections(), std::move(key));
  }
  quic::QuicEndpoint::Lease lease;
  lease.env = &wgen->env;
  lease.hold = wgen;
  lease.credentials = wgen->gen->quic.get();
  lease.listener = listener;
  lease.connection_id = next_connection_id_->fetch_add(1, std::memory_order_relaxed);
  lease.admission = std::move(slot);
  lease.session_store = session_store_.get();
  return lease;
}

size_t Worker::quic_connections() const {
  size_t n = 0;
  for (const auto& l : listeners_) n += l.quic ? l.quic->connections() : 0;
  for (const auto& endpoint : quic_draining_) n += endpoint->connections();
  return n;
}

bool Worker::quic_busy() const {
  for (const auto& endpoint : quic_draining_) {
    if (endpoint->connections() > 0) return true;
  }
  return false;
}

void Worker::on_connections_gone() {
  if (!shutting_down_ || !connections_.empty() || quic_busy()) return;
  // As in remove(): not from inside a connection's callbacks.
  if (drain_timer_.active()) {
    uv_timer_start(drain_timer_.get(), on_drain_timer, 0, 0);
  } else {
    finish_stop();
  }
}

void Worker::on_inbox() {
  bool stop;
  bool refresh;
  std::vector<ListenerChange> changes;
  {
    std::lock_guard lock(inbox_mu_);
    stop = stop_requested_;
    refresh = std::exchange(refresh_requested_, false);
    changes.swap(listener_changes_);
  }
  if (refresh && generation_) {
    for (auto& group : generation_->upstreams) group->refresh_servers();
  }
  for (auto& change : changes) {
    if (shutting_down_) break;  // the sockets close with their UniqueFd
    if (change.add) {
      listen_on(std::move(*change.add));
      continue;
    }
    std::erase_if(listeners_, [&](Listening& l) { return l.address == change.address; });
  }
  if (stop && !shutting_down_) begin_stop();
}

void Worker::begin_stop() {
  shutting_down_ = true;
  for (auto& l : listeners_) {
    if (l.quic) quic_draining_.push_back(std::move(l.quic));
  }
  listeners_.clear();  // each Acceptor closes its socket
  for (auto& endpoint : quic_draining_) endpoint->shutdown([this] { on_connections_gone(); });
  uv_timer_stop(accept_backoff_.get());
  counters_->accept_paused.set(0);
  // Idle connections close now; busy ones after their response.
  std::vector<Connection*> conns;
  for (auto& [raw, owned] : connections_) conns.push_back(raw);
  for (Connection* c : conns) c->shutdown();
  if (connections_.empty() && !quic_busy()) {
    finish_stop();
    return;
  }
  drain_timer_.init([this](uv_timer_t* h) { return uv_timer_init(&loop_, h); }, this);
  uv_timer_start(drain_timer_.get(), on_drain_timer, static_cast<uint64_t>(drain_.count()), 0);
}

void Worker::finish_stop() {
  if (stop_finished_) return;
  stop_finished_ = true;
  drain_timer_.close();
  for (auto& endpoint : quic_draining_) endpoint->close();
  if (generation_) {
    for (auto& g : generation_->upstreams) g->close_idle();
  }
  // Its Redis connection is a referenced handle: close it so uv_run can end.
  if (session_store_) session_store_->close();
  if (rate_limiter_) rate_limiter_->close();
  inbox_.close();
  // With no referenced handle left, uv_run returns and run() tears down.
}

}  // namespace tlsfront::data
