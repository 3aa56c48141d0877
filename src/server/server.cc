#include "server/server.h"

#include <signal.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

#include <cstdio>
#include <thread>

#include "log/log.h"
#include "log/log_writer.h"
#include "server/listener.h"
#include "tls/ticket_key_source_file.h"
#include "tls/ticket_key_source_redis.h"
#include "util/uv_handle.h"

namespace tlsfront::server {
namespace {

constexpr std::chrono::milliseconds kShutdownDrain{10'000};

struct ControlLoop {
  uv_loop_t loop{};
  std::vector<std::unique_ptr<Worker>>* workers = nullptr;
  log::LogWriter* log_writer = nullptr;
  TicketKeyManager* ticket_keys = nullptr;
  std::vector<std::unique_ptr<tls::OcspStapler>>* ocsp_staplers = nullptr;
  int stop_signals = 0;
  UvHandle<uv_signal_t> sig_term, sig_int, sig_quit, sig_hup, sig_usr1;
  UvHandle<uv_async_t> all_stopped;
};

void on_signal(uv_signal_t* h, int signum) {
  if (!h->data) return;
  auto* c = static_cast<ControlLoop*>(h->data);
  switch (signum) {
    case SIGTERM:
    case SIGINT:
    case SIGQUIT:
      if (++c->stop_signals > 1) {
        log::warn("second stop signal: exiting at once");
        std::_Exit(1);
      }
      log::info("signal {}: stopping gracefully (up to {} s)", signum, kShutdownDrain.count() / 1000);
      sd_notify(0, "STOPPING=1\nSTATUS=draining connections");
      for (auto& w : *c->workers) w->request_stop(kShutdownDrain);
      break;
    case SIGUSR1:
      log::info("SIGUSR1: reopening the access log");
      if (c->log_writer) c->log_writer->reopen();
      break;
    case SIGHUP:
      log::info("SIGHUP: re-reading ticket key files and OCSP response files (configuration reload is not "
                "implemented yet)");
      c->ticket_keys->reload();
      for (auto& s : *c->ocsp_staplers) s->reload();
      break;
    default:
      break;
  }
}

// store = "redis": the password file must be readable at start-up (each
// worker reads it again for its own connection).
Status check_session_store_files(const config::SessionCache& sc) {
  if (!sc.enabled || sc.store != config::SessionStore::Redis || sc.redis_password_file.empty()) return {};
  auto secret = tls::load_redis_password_file(sc.redis_password_file);
  if (!secret) return secret.take_error();
  if (!secret->warning.empty()) log::warn("session cache: {}", secret->warning);
  return {};
}

// The stapler of the generation's certificate (null: not stapled), with its
// initial response (response_file or cache) loaded.
Result<std::unique_ptr<tls::OcspStapler>> make_stapler(const Generation& gen, const Clock* clock) {
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(gen.tls->get(), &chain);
  auto stapler = tls::OcspStapler::create(gen.tls->leaf(), chain, gen.config.tls.ocsp, gen.config.tls.ocsp_cache_dir,
                                          clock);
  if (!stapler || !*stapler) return stapler;
  if (auto st = (*stapler)->load_initial(); !st) return st.take_error();
  return stapler;
}

}  // namespace

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
  }
  if (auto st = check_session_store_files(cfg.tls.session_cache); !st) return st;
  auto gen = Generation::create(std::move(cfg), nullptr, nullptr);
  if (!gen) return gen.take_error();
  const tls::ChainReport& chain = (*gen)->tls->chain_report();
  for (const auto& line : chain.lines()) std::fprintf(stderr, "tlsfront: %s\n", line.c_str());
  for (const auto& w : chain.warnings) std::fprintf(stderr, "tlsfront: warning: %s\n", w.c_str());
  SystemClock clock;
  auto stapler = make_stapler(**gen, &clock);
  if (!stapler) return stapler.take_error();
  if (*stapler) std::fprintf(stderr, "tlsfront: %s\n", (*stapler)->describe().c_str());
  const std::string& access_log = (*gen)->config.log.access_log;
  if (!access_log.empty()) return log::LogWriter::check_writable(access_log);
  return {};
}

Server::Server() = default;
Server::~Server() = default;

Result<int> Server::run(config::Config cfg) {
  ::signal(SIGPIPE, SIG_IGN);
  if (auto lvl = log::parse_level(cfg.log.level); lvl) log::set_level(*lvl);
  const int nworkers = resolve_workers(cfg.workers);
  if (auto st = check_session_store_files(cfg.tls.session_cache); !st) return st.take_error();
  session_cache_ = std::make_unique<tls::SessionCache>(cfg.tls.session_cache, clock_);
  tickets_ = std::make_unique<tls::TicketKeyStore>(&clock_);
  ticket_keys_ = std::make_unique<TicketKeyManager>(cfg.tls, tickets_.get());
  if (auto st = ticket_keys_->load_initial(); !st) return st.take_error();
  auto gen = Generation::create(std::move(cfg), session_cache_.get(), tickets_.get());
  if (!gen) return gen.take_error();
  const tls::ChainReport& chain = (*gen)->tls->chain_report();
  for (const auto& line : chain.lines()) log::info("{}", line);
  for (const auto& w : chain.warnings) log::warn("{}", w);
  auto stapler = make_stapler(**gen, &clock_);
  if (!stapler) return stapler.take_error();
  if (*stapler) {
    log::info("{}", (*stapler)->describe());
    ocsp_registry_.add(stapler->get());
    ocsp_staplers_.push_back(std::move(stapler).value());
    tls::attach_ocsp((*gen)->tls->get(), &ocsp_registry_);
  }
  const config::Config& c = (*gen)->config;
  if (!c.log.access_log.empty()) {
    auto writer = log::LogWriter::open(c.log.access_log);
    if (!writer) return writer.take_error();
    log_writer_ = std::move(writer).value();
  }

  for (const auto& l : c.listeners) {
    if (auto st = check_address_free(l); !st) return st.take_error();
  }
  std::vector<std::vector<UniqueFd>> fds(nworkers);
  for (int w = 0; w < nworkers; ++w) {
    for (const auto& l : c.listeners) {
      auto fd = bind_listener(l);
      if (!fd) return fd.take_error();
      fds[w].push_back(std::move(fd).value());
    }
  }
  current_.store(*gen);

  ControlLoop ctl;
  uv_loop_init(&ctl.loop);
  ctl.workers = &workers_;
  ctl.log_writer = log_writer_.get();
  ctl.ticket_keys = ticket_keys_.get();
  ctl.ocsp_staplers = &ocsp_staplers_;
  if (!ocsp_staplers_.empty()) {
    auto fetcher = tls::OcspFetcher::create(&ctl.loop);
    if (!fetcher) {
      uv_run(&ctl.loop, UV_RUN_DEFAULT);
      uv_loop_close(&ctl.loop);
      return fetcher.take_error();
    }
    ocsp_fetcher_ = std::move(fetcher).value();
    for (auto& s : ocsp_staplers_) s->start(&ctl.loop, ocsp_fetcher_.get());
  }
  ticket_keys_->start(&ctl.loop);
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

  for (int w = 0; w < nworkers; ++w) {
    workers_.push_back(std::make_unique<Worker>(w, &current_, &next_connection_id_, log_writer_.get()));
  }
  for (int w = 0; w < nworkers; ++w) workers_[w]->start(std::move(fds[w]));
  for (const auto& l : c.listeners) log::info("listening on {} ({} workers)", l.address.to_string(), nworkers);
  // Type=notify (systemd/tlsfront.service): the listening sockets are bound
  // and queue connections, and every worker loop is starting on them. A no-op
  // without $NOTIFY_SOCKET.
  sd_notifyf(0, "READY=1\nSTATUS=serving on %zu address(es) with %d workers", c.listeners.size(), nworkers);

  // A helper thread waits for the workers so the control loop stays free for signals.
  std::thread waiter([this, &ctl] {
    for (auto& w : workers_) w->join();
    uv_async_send(ctl.all_stopped.get());
  });
  uv_run(&ctl.loop, UV_RUN_DEFAULT);
  waiter.join();
  workers_.clear();

  ctl.sig_term.close();
  ctl.sig_int.close();
  ctl.sig_quit.close();
  ctl.sig_hup.close();
  ctl.sig_usr1.close();
  ctl.all_stopped.close();
  ticket_keys_->stop();
  for (auto& s : ocsp_staplers_) s->stop();
  if (ocsp_fetcher_) ocsp_fetcher_->stop();
  uv_run(&ctl.loop, UV_RUN_DEFAULT);
  uv_loop_close(&ctl.loop);
  if (log_writer_) log_writer_->flush_and_stop();
  current_.store(nullptr);
  const auto cache = session_cache_->stats();
  const auto tickets = tickets_->counters();
  log::info("session cache: {} hits, {} misses, {} stored, {} evicted, {} expired, {} entries ({} bytes); "
            "tickets: {} issued, {} resumed, {} renewed, {} rejected",
            cache.hits, cache.misses, cache.stores, cache.evictions, cache.expired, cache.entries, cache.bytes,
            tickets.issued, tickets.decrypted_current, tickets.decrypted_renewed, tickets.failed);
  for (const auto& s : ocsp_staplers_) {
    const tls::OcspStatus st = s->status();
    log::info("ocsp \"{}\": {} fetched, {} failed fetches, {} revoked; handshakes: {} stapled, {} without a staple, "
              "{} refused; {}",
              s->name(), st.counters.fetch_ok, st.counters.fetch_failed, st.counters.revoked, st.counters.stapled,
              st.counters.unstapled, st.counters.refused,
              st.stapling ? fmt::format("staple age {} s, nextUpdate in {} s", st.staple_age_s, st.next_update_in_s)
                          : std::string("no valid staple"));
  }
  log::info("stopped");
  return 0;
}

}  // namespace tlsfront::server
