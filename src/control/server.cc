#include "control/server.h"

#include <signal.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

#include <fcntl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <cstdio>

#include "config/units.h"
#include "control/certificate_metrics.h"
#include "control/file_roots.h"
#include "control/upstreams_report.h"
#include <thread>

#include "config/loader.h"
#include "log/log.h"
#include "log/log_writer.h"
#include "control/admin_server.h"
#include "control/fd_limit.h"
#include "control/port_privilege.h"
#include "control/limit_metrics.h"
#include "metrics/prometheus.h"
#include "control/listener.h"
#include "control/quic_socket.h"
#include "control/pid_file.h"
#include "control/restart_only.h"
#include "redis/tls_context.h"
#include "tls/ticket_key_source_file.h"
#include "tls/ticket_key_source_redis.h"
#include "util/uv_handle.h"

namespace tlsfront::control {
namespace {

// store = "redis": the password file (and redis_tls' files) must be readable at start-up (each
// worker reads it again for its own connection).
Status check_session_store_files(const config::SessionCache& sc) {
  if (!sc.enabled || sc.store != config::SessionStore::Redis) return {};
  if (auto redis_tls = redis::tls_of(sc, "tls.session_cache"); !redis_tls) return redis_tls.take_error();
  if (sc.redis_password_file.empty()) return {};
  auto secret = tls::load_redis_password_file(sc.redis_password_file);
  if (!secret) return secret.take_error();
  if (!secret->warning.empty()) log::warn("session cache: {}", secret->warning);
  return {};
}

bool listens_on(const std::vector<config::Listener>& listeners, const config::Endpoint& address) {
  return std::any_of(listeners.begin(), listeners.end(), [&](const auto& l) { return l.address == address; });
}

// An extra descriptor for a socket-activated listener, one per worker.
Result<UniqueFd> dup_fd(const UniqueFd& fd) {
  UniqueFd copy(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!copy.valid()) return make_error(Errc::Io, std::string("dup of a socket-activated listener: ") + std::strerror(errno));
  return copy;
}

uint64_t monotonic_usec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

}  // namespace

void Server::reload() {
  // systemd (Type=notify): RELOADING=1 with the CLOCK_MONOTONIC time, READY=1 when done.
  sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading", static_cast<unsigned long long>(monotonic_usec()));
  log::info("SIGHUP: reloading {}", config_path_);
  ticket_keys_->reload();
  ocsp_.reload();  // response_file of the certificates that stay
  auto fail = [this](const std::string& why) {
    log::error("reload failed, still serving generation {}: {}", generation_number_, why);
    sd_notifyf(0, "READY=1\nSTATUS=reload failed, serving generation %llu",
               static_cast<unsigned long long>(generation_number_));
  };
  auto cfg = config::load_file(config_path_);
  if (!cfg) return fail(cfg.error().message());
  if (pid_file_override_) cfg->pid_file = *pid_file_override_;
  const std::shared_ptr<const data::Generation> old = current_.load();
  const std::vector<std::string> kept = keep_restart_only_settings(old->config, *cfg);
  // New addresses are bound (one socket per worker) before anything is
  // published, so an address in use fails the reload, not half of it.
  // An address is its configured text: a kept port-0 address keeps its
  // socket and port; the workers' listeners are keyed by it too.
  std::vector<std::vector<data::ListenSocket>> added(workers_.size());
  std::map<std::string, config::Endpoint> added_bound;  // for bound_, once live
  for (const auto& l : cfg->listeners) {
    if (listens_on(old->config.listeners, l.address)) continue;
    auto fds = bind_listeners(l, workers_.size());
    if (!fds) return fail(fds.error().message());
    added_bound[l.address.to_string()] = bound_address(l.address, fds->front());
    config::Listener bound = l;  // QUIC on the port the TCP sockets got (port 0 too)
    bound.address = bound_address(l.address, fds->front());
    auto quic = l.quic ? bind_quic_sockets(bound, workers_.size()) : Result<std::vector<UniqueFd>>(std::vector<UniqueFd>{});
    if (!quic) return fail(quic.error().message());
    for (size_t w = 0; w < added.size(); ++w) {
      added[w].push_back(
          data::ListenSocket{l, std::move((*fds)[w]), l.quic ? std::move((*quic)[w]) : UniqueFd(), added.size()});
    }
  }
  auto gen = build_generation(std::move(cfg).value(), session_cache_.get(), tickets_.get(), &ocsp_, workers_.size(),
                              old.get(), store_snapshot(), acme_board_);
  if (!gen) return fail(gen.error().message());
  for (const auto& line : (*gen)->tls->report_lines()) log::info("{}", line);
  for (const auto* s : (*gen)->ocsp.staplers()) log::info("{}", s->describe());
  for (const auto& w : (*gen)->tls->warnings()) log::warn("{}", w);
  for (const auto& w : (*gen)->router.warnings()) log::warn("{}", w);
  for (const auto& w : file_root_warnings((*gen)->config)) log::warn("{}", w);
  for (const auto& w : (*gen)->ocsp.warnings()) log::warn("{}", w);
  for (const auto& name : kept) log::warn("reload: {} changed; it takes effect only after a restart", name);
  if (auto lvl = log::parse_level((*gen)->config.log.level); lvl) log::set_level(*lvl);
  current_.store(*gen);
  if (auto st = ocsp_.activate(control_loop_, (*gen)->ocsp); !st) log::error("ocsp: {}", st.error().message());
  // Names new in this configuration are asked now; until their first
  // answer their groups have only their other servers.
  if (auto st = configure_resolver((*gen)->config); !st) log::error("{}", st.error().message());
  health_checker_->configure(*gen);
  for (size_t w = 0; w < workers_.size(); ++w) {
    for (auto& socket : added[w]) workers_[w]->add_listener(std::move(socket));
  }
  bound_.merge(added_bound);
  for (const auto& l : (*gen)->config.listeners) {
    if (!listens_on(old->config.listeners, l.address)) log::info("reload: listening on {}", bound(l.address));
  }
  for (const auto& l : old->config.listeners) {
    if (listens_on((*gen)->config.listeners, l.address)) continue;
    log::info("reload: no longer listening on {}; its connections finish", bound(l.address));
    bound_.erase(l.address.to_string());
    for (auto& w : workers_) w->remove_listener(l.address);
  }
  ++generation_number_;
  log::info("reload: generation {} is live; connections accepted before keep theirs", generation_number_);
  sd_notifyf(0, "READY=1\nSTATUS=serving generation %llu", static_cast<unsigned long long>(generation_number_));
}

void Server::swap_store_certificates() {
  const std::shared_ptr<const data::Generation> old = current_.load();
  const tls::StoreSnapshot snapshot = cert_store_->snapshot();
  const size_t entries = snapshot.size();
  auto gen = build_generation(old->config, session_cache_.get(), tickets_.get(), &ocsp_, workers_.size(), old.get(),
                              snapshot, acme_board_);
  if (!gen) {
    cert_store_->note_swap(false);
    log::error("certificate store: changed entries not swapped in, still serving generation {}: {}",
               generation_number_, gen.error().message());
    return;
  }
  for (const auto& w : (*gen)->ocsp.warnings()) log::warn("{}", w);
  // Stapling of a new certificate starts before its first handshake.
  if (auto st = ocsp_.activate(control_loop_, (*gen)->ocsp); !st) log::error("ocsp: {}", st.error().message());
  current_.store(*gen);
  health_checker_->configure(*gen);
  ++generation_number_;
  cert_store_->note_swap(true);
  log::info("certificate store: generation {} is live with {} store entr{}; connections accepted before keep theirs",
            generation_number_, entries, entries == 1 ? "y" : "ies");
}

std::string Server::upstreams() {
  std::vector<const metrics::WorkerCounters*> workers;
  for (const auto& c : counters_) workers.push_back(c.get());
  return upstreams_json(current_.load()->config, directory_, health_, workers, resolver_.get(),
                        health_checker_ ? health_checker_->verdicts() : HealthChecks{});
}

Status Server::configure_resolver(const config::Config& cfg) {
  const bool names = std::any_of(cfg.upstreams.begin(), cfg.upstreams.end(), [](const config::Upstream& u) {
    return std::any_of(u.servers.begin(), u.servers.end(),
                       [](const config::Endpoint& s) { return !config::is_ip_literal(s.host); });
  });
  if (!names && !resolver_) return {};
  if (!resolver_) {
    resolver_ = std::make_unique<UpstreamResolver>(control_loop_, &directory_, [this] {
      for (auto& w : workers_) w->refresh_upstreams();
    });
  }
  return resolver_->configure(cfg);
}

std::string Server::bound(const config::Endpoint& address) const {
  auto it = bound_.find(address.to_string());
  return (it == bound_.end() ? address : it->second).to_string();
}

std::string Server::scrape() const {
  metrics::ProcessMetrics m;
  for (const auto& c : counters_) m.workers.push_back(c.get());
  m.generation = generation_number_;
  if (auto gen = current_.load()) m.requests = gen->requests;
  const auto cache = session_cache_->stats();
  m.session_cache_hits = cache.hits;
  m.session_cache_misses = cache.misses;
  m.session_cache_evictions = cache.evictions;
  m.session_cache_expired = cache.expired;
  m.session_cache_stores = cache.stores;
  m.session_cache_entries = cache.entries;
  m.session_cache_bytes = cache.bytes;
  const auto tickets = tickets_->counters();
  m.tickets_issued = tickets.issued;
  m.tickets_decrypted_current = tickets.decrypted_current;
  m.tickets_decrypted_renewed = tickets.decrypted_renewed;
  m.tickets_failed = tickets.failed;
  if (auto ring = tickets_->ring()) {
    m.ticket_keys = ring->size();
    const auto now = tickets_->now();
    if (const tls::TicketKey* key = ring->encryption_key(now)) {
      // A file key is active "always": its age is that of the file's content
      // (what a rotation job renews). A clock behind the file's mtime reads 0.
      const tls::TimePoint since =
          key->activates_at != tls::TimePoint::min() ? key->activates_at : key->file_modified_at;
      if (since != tls::TimePoint::min()) {
        m.ticket_key_age_seconds = std::max(0.0, std::chrono::duration<double>(now - since).count());
      }
    }
  }
  if (log_writer_) {
    m.access_log_bytes = log_writer_->bytes_written();
    m.access_log_dropped_batches = log_writer_->dropped_batches();
    m.access_log_dropped_lines = log_writer_->dropped_lines();
  }
  m.max_fds = open_files_soft_limit();
  m.open_fds = open_fd_count();
  m.extra = ocsp_.metrics();
  if (cert_store_) m.extra += cert_store_->metrics();
  m.extra += acme_ ? acme_->metrics() : AcmeManager::render_metrics(0, 0, 0, 0, 0, 0);
  if (health_checker_) m.extra += health_checker_->metrics();
  if (resolver_) m.extra += resolver_->metrics();
  if (auto gen = current_.load()) m.extra += upstream_state_metrics(gen->config, directory_, health_);
  if (auto gen = current_.load(); gen && gen->tls) {
    m.extra += certificate_metrics(*gen->tls, clock_.now());
    m.extra += limit_metrics(*gen);
  }
  return metrics::render_prometheus(m);
}

int resolve_workers(int configured) {
  if (configured > 0) return configured;
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

Status Server::test(config::Config cfg) {
  const config::TicketKeys& tk = cfg.tls.ticket_keys;
  if (cfg.tls.session_tickets && tk.source == config::TicketKeySource::Files) {
    auto keys = tls::load_ticket_key_files(tk);
    if (!keys) return keys.take_error();
    for (const auto& w : keys->warnings) log::warn("ticket keys: {}", w);
  }
  if (cfg.tls.session_tickets && tk.source == config::TicketKeySource::Redis) {
    // The files only: whether Redis answers is a run-time matter.
    for (const auto& [path, load] : {std::pair{tk.redis_password_file, &tls::load_redis_password_file},
                                     std::pair{tk.wrap_key_file, &tls::load_wrap_key_file}}) {
      if (path.empty()) continue;
      auto secret = load(path);
      if (!secret) return secret.take_error();
      if (!secret->warning.empty()) log::warn("ticket keys: {}", secret->warning);
    }
    if (auto redis_tls = redis::tls_of(tk, "tls.ticket_keys"); !redis_tls) return redis_tls.take_error();
  }
  if (auto st = check_session_store_files(cfg.tls.session_cache); !st) return st;
  for (const auto& zone : cfg.limit_req) {  // workers read these files when they first use the zone
    if (zone.store != config::SessionStore::Redis) continue;
    if (auto redis_tls = redis::tls_of(zone, "limit_req[" + zone.name + "]"); !redis_tls) return redis_tls.take_error();
  }
  if (auto w = fd_limit_warning(cfg, resolve_workers(cfg.workers), open_files_soft_limit())) {
    std::fprintf(stderr, "tlsfront: warning: %s\n", w->c_str());
  }
  if (auto w = privileged_port_warning(cfg, port_privilege())) std::fprintf(stderr, "tlsfront: warning: %s\n", w->c_str());
  SystemClock clock;
  OcspManager ocsp(&clock);  // staplers built and their files checked, nothing fetched
  tls::StoreSnapshot store;
  if (cfg.tls.store.enabled) {
    // The sealing keys must open; the entries come from Redis, else the disk cache.
    auto cert_store = CertStore::create(cfg.tls, /*keep_cache=*/false);
    if (!cert_store) return cert_store.take_error();
    (*cert_store)->load_initial();
    store = (*cert_store)->snapshot();
    std::fprintf(stderr, "tlsfront: certificate store: %zu entr%s for region \"%s\" and \"global\"\n", store.size(),
                 store.size() == 1 ? "y" : "ies", cfg.tls.store.region.c_str());
  }
  if (cfg.acme.enabled) {
    std::string names;
    for (const auto& n : cfg.acme.names) names += (names.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "tlsfront: acme: %s ordered from %s into region \"%s\" of the certificate store\n",
                 names.c_str(), cfg.acme.directory.c_str(), cfg.tls.store.region.c_str());
  }
  auto gen = build_generation(std::move(cfg), nullptr, nullptr, &ocsp, 0, nullptr, std::move(store));
  if (!gen) return gen.take_error();
  for (const auto& line : (*gen)->tls->report_lines()) std::fprintf(stderr, "tlsfront: %s\n", line.c_str());
  for (const auto* s : (*gen)->ocsp.staplers()) std::fprintf(stderr, "tlsfront: %s\n", s->describe().c_str());
  for (const auto& line : (*gen)->router.table()) std::fprintf(stderr, "tlsfront: %s\n", line.c_str());
  std::vector<std::string> warnings = (*gen)->tls->warnings();
  for (const auto& w : (*gen)->router.warnings()) warnings.push_back(w);
  for (const auto& w : file_root_warnings((*gen)->config)) warnings.push_back(w);
  for (const auto& w : (*gen)->ocsp.warnings()) warnings.push_back(w);
  for (const auto* s : (*gen)->ocsp.staplers()) {
    if (auto st = s->check_response_file(warnings); !st) return st;
  }
  for (const auto& w : warnings) std::fprintf(stderr, "tlsfront: warning: %s\n", w.c_str());
  if (auto st = check_pid_file_directory((*gen)->config.pid_file); !st) return st;
  const std::string& access_log = (*gen)->config.log.access_log;
  if (!access_log.empty()) return log::LogWriter::check_writable(access_log);
  return {};
}

// The control loop and what its callbacks reach: the signal handlers, the
// wake-up from the last worker, the admin listener.
struct Server::ControlLoop {
  uv_loop_t loop{};
  Server* server = nullptr;
  std::vector<std::unique_ptr<data::Worker>>* workers = nullptr;
  const data::GenerationSlot* current = nullptr;
  log::LogWriter* log_writer = nullptr;
  int stop_signals = 0;
  std::unique_ptr<AdminServer> admin;
  UvHandle<uv_signal_t> sig_term, sig_int, sig_quit, sig_hup, sig_usr1;
  UvHandle<uv_async_t> all_stopped;
};

// SIGTERM/SIGINT/SIGQUIT: graceful stop (a second one exits at once);
// SIGUSR1: reopen the access log; SIGHUP: reload.
void Server::on_signal(uv_signal_t* h, int signum) {
  if (!h->data) return;
  auto* c = static_cast<ControlLoop*>(h->data);
  switch (signum) {
    case SIGTERM:
    case SIGINT:
    case SIGQUIT: {
      if (++c->stop_signals > 1) {
        log::warn("second stop signal: exiting at once");
        std::_Exit(1);
      }
      const auto drain = c->current->load()->config.shutdown_timeout;
      log::info("signal {}: stopping gracefully (in-flight requests get up to {} ms)", signum, drain.count());
      sd_notify(0, "STOPPING=1\nSTATUS=draining connections");
      for (auto& w : *c->workers) w->request_stop(drain);
      break;
    }
    case SIGUSR1:
      log::info("SIGUSR1: reopening the access log");
      if (c->log_writer) c->log_writer->reopen();
      break;
    case SIGHUP:
      c->server->reload();
      break;
    default:
      break;
  }
}

Server::Server() = default;
Server::~Server() = default;

Result<int> Server::run(config::Config cfg, std::optional<std::string> pid_file_override) {
  ::signal(SIGPIPE, SIG_IGN);
  pid_file_override_ = std::move(pid_file_override);
  if (pid_file_override_) cfg.pid_file = *pid_file_override_;
  if (auto lvl = log::parse_level(cfg.log.level); lvl) log::set_level(*lvl);
  config_path_ = cfg.path;
  const int nworkers = resolve_workers(cfg.workers);
  auto gen = build_first_generation(std::move(cfg));
  if (!gen) return gen.take_error();
  const config::Config& c = (*gen)->config;
  if (auto w = fd_limit_warning(c, nworkers, open_files_soft_limit())) log::warn("{}", *w);
  if (auto st = open_access_log(c); !st) return st.take_error();
  auto sockets = open_listeners(c, nworkers);
  if (!sockets) return sockets.take_error();
  current_.store(*gen);

  ControlLoop ctl;
  start_control_loop(ctl);
  // Every upstream name answers (or fails) before a worker takes a request.
  Status resolved = configure_resolver(c);
  if (resolved.ok() && resolver_) resolved = resolver_->wait_first_answers(c);
  if (!resolved.ok()) {
    shut_down(ctl);
    return resolved.take_error();
  }
  // Once the signal handlers are installed: a `kill -HUP $(cat pid_file)`
  // right after the file appears reloads instead of killing the process
  // (SIGHUP's default action). Removed when run() returns.
  auto pid_file = PidFile::create(c.pid_file);
  if (!pid_file) {
    shut_down(ctl);
    return pid_file.take_error();
  }
  health_checker_->configure(current_.load());
  start_workers(ctl, std::move(sockets).value());
  run_until_stopped(ctl);
  shut_down(ctl);
  return 0;
}

// What outlives generations (the session cache, the ticket keys: their first
// ring comes from Redis or the key files now), then the first generation,
// whose certificate reports and warnings are logged.
Result<std::shared_ptr<const data::Generation>> Server::build_first_generation(config::Config cfg) {
  if (auto st = check_session_store_files(cfg.tls.session_cache); !st) return st.take_error();
  session_cache_ = std::make_unique<tls::SessionCache>(cfg.tls.session_cache, clock_);
  tickets_ = std::make_unique<tls::TicketKeyStore>(&clock_);
  ticket_keys_ = std::make_unique<TicketKeyManager>(cfg.tls, tickets_.get());
  if (auto st = ticket_keys_->load_initial(); !st) return st.take_error();
  if (cfg.tls.store.enabled) {
    auto store = CertStore::create(cfg.tls);
    if (!store) return store.take_error();
    cert_store_ = std::move(store).value();
    cert_store_->load_initial();
  }
  if (cfg.acme.enabled) {
    acme_board_ = std::make_shared<tls::AcmeChallenges>();
    auto manager = AcmeManager::create(cfg, acme_board_);
    if (!manager) return manager.take_error();
    acme_ = std::move(manager).value();
  }
  const auto workers = static_cast<size_t>(resolve_workers(cfg.workers));
  auto gen = build_generation(std::move(cfg), session_cache_.get(), tickets_.get(), &ocsp_, workers, nullptr,
                              store_snapshot(), acme_board_);
  if (!gen) return gen.take_error();
  for (const auto& line : (*gen)->tls->report_lines()) log::info("{}", line);
  for (const auto* s : (*gen)->ocsp.staplers()) log::info("{}", s->describe());
  for (const auto& w : (*gen)->tls->warnings()) log::warn("{}", w);
  for (const auto& w : (*gen)->router.warnings()) log::warn("{}", w);
  for (const auto& w : file_root_warnings((*gen)->config)) log::warn("{}", w);
  for (const auto& w : (*gen)->ocsp.warnings()) log::warn("{}", w);
  return gen;
}

// The access log writer (its background thread), when a path is configured.
Status Server::open_access_log(const config::Config& c) {
  if (c.log.access_log.empty()) return {};
  auto writer = log::LogWriter::open(c.log.access_log);
  if (!writer) return writer.take_error();
  log_writer_ = std::move(writer).value();
  return {};
}

// Every listening socket, one per listener and worker (SO_REUSEPORT), or
// duplicates of the ones systemd passed; fails while anything else listens
// on a configured address (the admin address too).
Result<std::vector<std::vector<data::ListenSocket>>> Server::open_listeners(const config::Config& c, int nworkers) {
  if (c.admin.enabled) {
    if (auto st = check_address_free(config::Listener{c.admin.address}); !st) {
      return make_error(Errc::Io, "admin listener: " + st.error().message() + " (set [admin] address, or enabled = false)");
    }
  }
  auto activated = adopt_activated_sockets(c.listeners);
  if (!activated) return activated.take_error();
  std::vector<std::vector<data::ListenSocket>> sockets(nworkers);
  for (size_t i = 0; i < c.listeners.size(); ++i) {
    const config::Listener& l = c.listeners[i];
    const UniqueFd& passed = (*activated)[i];
    std::vector<UniqueFd> fds;
    if (passed.valid()) {
      log::info("listening on {}: socket from systemd (socket activation)", l.address.to_string());
      for (int w = 0; w < nworkers; ++w) {
        auto fd = dup_fd(passed);
        if (!fd) return fd.take_error();
        fds.push_back(std::move(fd).value());
      }
    } else if (auto own = bind_listeners(l, nworkers); own) {
      fds = std::move(own).value();
    } else {
      return own.take_error();
    }
    bound_[l.address.to_string()] = bound_address(l.address, fds.front());
    std::vector<UniqueFd> quic;
    if (l.quic) {
      config::Listener bound = l;  // QUIC on the port the TCP sockets got (port 0 too)
      bound.address = bound_[l.address.to_string()];
      auto udp = bind_quic_sockets(bound, static_cast<size_t>(nworkers));
      if (!udp) return udp.take_error();
      quic = std::move(udp).value();
      log::info("HTTP/3 (QUIC) on UDP {}", bound.address.to_string());
    }
    for (int w = 0; w < nworkers; ++w) {
      sockets[w].push_back(data::ListenSocket{l, std::move(fds[w]), l.quic ? std::move(quic[w]) : UniqueFd(),
                                              static_cast<size_t>(nworkers)});
    }
  }
  return sockets;
}

// The control loop: OCSP fetching and ticket-key polling start on it, and
// it handles the signals and the last worker's wake-up.
void Server::start_control_loop(ControlLoop& ctl) {
  uv_loop_init(&ctl.loop);
  ctl.server = this;
  ctl.workers = &workers_;
  ctl.current = &current_;
  ctl.log_writer = log_writer_.get();
  control_loop_ = &ctl.loop;
  if (auto st = ocsp_.activate(&ctl.loop, current_.load()->ocsp); !st) {
    log::error("ocsp: {}; serving without fetching staples", st.error().message());
  }
  ticket_keys_->start(&ctl.loop);
  if (cert_store_) cert_store_->start(&ctl.loop, [this] { swap_store_certificates(); });
  if (acme_) acme_->start();
  auto add_signal = [&ctl](UvHandle<uv_signal_t>& h, int signum) {
    h.init([&ctl](uv_signal_t* s) { return uv_signal_init(&ctl.loop, s); }, &ctl);
    uv_signal_start(h.get(), on_signal, signum);
  };
  add_signal(ctl.sig_term, SIGTERM);
  add_signal(ctl.sig_int, SIGINT);
  add_signal(ctl.sig_quit, SIGQUIT);
  add_signal(ctl.sig_hup, SIGHUP);
  add_signal(ctl.sig_usr1, SIGUSR1);
  // Woken by the last worker to finish, so the control loop can end.
  ctl.all_stopped.init([&ctl](uv_async_t* a) { return uv_async_init(&ctl.loop, a, [](uv_async_t* h) {
                         if (h->data) uv_stop(h->loop);
                       }); },
                       &ctl);
}

// One data::Worker per socket set (each with its counters), the admin
// listener, then the workers' loops; tells systemd it is ready.
void Server::start_workers(ControlLoop& ctl, std::vector<std::vector<data::ListenSocket>> sockets) {
  const std::shared_ptr<const data::Generation> gen = current_.load();
  const config::Config& c = gen->config;
  const int nworkers = static_cast<int>(sockets.size());
  for (int w = 0; w < nworkers; ++w) {
    counters_.push_back(std::make_unique<metrics::WorkerCounters>());
    workers_.push_back(
        std::make_unique<data::Worker>(w, &current_, &next_connection_id_, log_writer_.get(), counters_.back().get(),
                                       &directory_, &health_));
  }
  if (c.admin.enabled) {
    auto admin = AdminServer::start(
        &ctl.loop, c.admin.address,
        {[this] { return scrape(); }, [&ctl] { return ctl.stop_signals == 0; }, [this] { return upstreams(); }});
    if (admin) {
      ctl.admin = std::move(admin).value();
      log::info("admin: http://{}/metrics and /healthz", ctl.admin->address().to_string());
    } else {
      log::error("{}; serving without it", admin.error().message());
    }
  }
  for (int w = 0; w < nworkers; ++w) workers_[w]->start(std::move(sockets[w]));
  for (const auto& l : c.listeners) {
    log::info("listening on {} ({} worker{}{})", bound(l.address), nworkers, nworkers == 1 ? "" : "s",
              l.tls              ? ""
              : l.redirect_https ? ", cleartext HTTP: redirects to https"
                                 : ", cleartext HTTP");
  }
  // Type=notify (systemd/tlsfront.service): the listening sockets are bound
  // and queue connections, and every worker loop is starting on them. A no-op
  // without $NOTIFY_SOCKET.
  sd_notifyf(0, "READY=1\nSTATUS=serving on %zu address(es) with %d workers", c.listeners.size(), nworkers);
}

// Runs the control loop until every worker has stopped (after a stop
// signal); a helper thread waits for the workers so the loop stays free for
// signals.
void Server::run_until_stopped(ControlLoop& ctl) {
  std::thread waiter([this, &ctl] {
    for (auto& w : workers_) w->join();
    uv_async_send(ctl.all_stopped.get());
  });
  uv_run(&ctl.loop, UV_RUN_DEFAULT);
  waiter.join();
  workers_.clear();
}

// Closes the control loop's handles and sources, flushes the access log and
// logs the session cache's and tickets' totals.
void Server::shut_down(ControlLoop& ctl) {
  ctl.sig_term.close();
  ctl.sig_int.close();
  ctl.sig_quit.close();
  ctl.sig_hup.close();
  ctl.sig_usr1.close();
  ctl.all_stopped.close();
  ctl.admin.reset();
  ticket_keys_->stop();
  if (acme_) acme_->stop();
  if (cert_store_) cert_store_->stop();
  ocsp_.stop();
  resolver_.reset();
  health_checker_.reset();
  uv_run(&ctl.loop, UV_RUN_DEFAULT);
  uv_loop_close(&ctl.loop);
  control_loop_ = nullptr;
  if (log_writer_) log_writer_->flush_and_stop();
  current_.store(nullptr);
  const auto cache = session_cache_->stats();
  const auto tickets = tickets_->counters();
  log::info("session cache: {} hits, {} misses, {} stored, {} evicted, {} expired, {} entries ({} bytes); "
            "tickets: {} issued, {} resumed, {} renewed, {} rejected",
            cache.hits, cache.misses, cache.stores, cache.evictions, cache.expired, cache.entries, cache.bytes,
            tickets.issued, tickets.decrypted_current, tickets.decrypted_renewed, tickets.failed);
  log::info("stopped");
}

}  // namespace tlsfront::control
