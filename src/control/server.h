// Server: the control thread. Builds the first Generation, opens the access
// log writer, binds every worker's listening sockets, starts the workers and
// runs the control loop: SIGTERM/SIGINT/SIGQUIT stop gracefully (a second one
// exits at once), SIGUSR1 reopens the access log (logrotate), SIGHUP reloads
// (reload() below), the admin listener serves /metrics and /healthz. It owns
// what outlives configuration generations: the session cache, the ticket
// keys, the OCSP staplers (fetched on the control loop) and the metrics.
// Thread affinity: control thread only.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "metrics/counters.h"
#include "control/acme_manager.h"
#include "control/cert_store.h"
#include "control/generation_builder.h"
#include "control/ocsp_manager.h"
#include "control/ticket_key_manager.h"
#include "control/upstream_resolver.h"
#include "control/health_checker.h"
#include "data/upstream/server_directory.h"
#include "tls/session_cache.h"
#include "tls/ticket_key_ring.h"
#include "util/clock.h"
#include "data/worker.h"
#include "util/result.h"

namespace tlsfront::log {
class LogWriter;
}

namespace tlsfront::control {

class Server {
 public:
  Server();
  ~Server();

  // Runs until stopped by a signal. Logs the certificate chain report at info
  // (its warnings at warn). Errors (bad certificate, address in use)
  // are returned before any worker starts. Returns the process exit status.
  // `pid_file_override` (--pid-file) replaces cfg.pid_file, also in every
  // reloaded config.
  [[nodiscard]] Result<int> run(config::Config cfg, std::optional<std::string> pid_file_override = {});

  // `--test`: builds the generation (certificates, keys, TLS settings) and
  // checks the access log can be opened, binding nothing. Prints the
  // certificate chain report (tls::ChainReport) and its warnings to stderr.
  // Errors as run().
  [[nodiscard]] static Status test(config::Config cfg);

  // SIGHUP (control thread): re-reads ticket key files, then the
  // configuration file, and builds a new Generation (certificates, keys, TLS
  // settings, routes, upstreams, limits, timeouts, log level) off the data
  // path. Only a Generation that built completely is published; any error is
  // logged and the current one keeps serving. Connections keep the
  // generation they were accepted under; new ones get the new one. The
  // session cache and ticket keys are the Server's and survive. New [[listen]]
  // addresses are bound before publishing (in use = the reload fails);
  // removed ones stop accepting; an address is compared as configured, so a
  // kept port-0 address keeps its socket and port. Settings that need a
  // restart (control/restart_only.h) are kept as they are, with a warning
  // naming them. sd_notify RELOADING=1 (+ MONOTONIC_USEC) before,
  // READY=1 after.
  void reload();

 private:
  // The certificate store's entries changed (control loop): a new Generation
  // from the current configuration and the new entries, swapped in like a
  // reload's; on failure the current one keeps serving.
  void swap_store_certificates();
  tls::StoreSnapshot store_snapshot() const { return cert_store_ ? cert_store_->snapshot() : tls::StoreSnapshot{}; }

  struct ControlLoop;  // server.cc
  static void on_signal(uv_signal_t* h, int signum);
  // The resolver follows `cfg`'s [[upstream]] names (made on first use:
  // none without names). Errors: c-ares could not be set up.
  [[nodiscard]] Status configure_resolver(const config::Config& cfg);
  // The admin listener's GET /upstreams body (control/upstreams_report.h).
  std::string upstreams();

  // run()'s steps, in order.
  [[nodiscard]] Result<std::shared_ptr<const data::Generation>> build_first_generation(config::Config cfg);
  [[nodiscard]] Status open_access_log(const config::Config& c);
  [[nodiscard]] Result<std::vector<std::vector<data::ListenSocket>>> open_listeners(const config::Config& c,
                                                                                   int nworkers);
  void start_control_loop(ControlLoop& ctl);
  void start_workers(ControlLoop& ctl, std::vector<std::vector<data::ListenSocket>> sockets);
  void run_until_stopped(ControlLoop& ctl);
  void shut_down(ControlLoop& ctl);

  std::string config_path_;
  std::optional<std::string> pid_file_override_;
  uint64_t generation_number_ = 1;
  // Declared before current_ so they outlive every generation's SSL_CTX.
  SystemClock clock_;
  std::unique_ptr<tls::SessionCache> session_cache_;
  std::unique_ptr<tls::TicketKeyStore> tickets_;
  std::unique_ptr<TicketKeyManager> ticket_keys_;
  // What [[upstream]] names resolve to (read by the workers) and the
  // resolver that writes it, on the control loop; null without names.
  upstream::ServerDirectory directory_;
  upstream::HealthBoard health_;  // every worker's view of each upstream server's health
  std::unique_ptr<UpstreamResolver> resolver_;
  // The active health checks (their own thread), writing to health_.
  std::unique_ptr<HealthChecker> health_checker_ = std::make_unique<HealthChecker>(&directory_, &health_);
  OcspManager ocsp_{&clock_};
  std::unique_ptr<CertStore> cert_store_;  // [tls.store]; null without
  // [acme]: the challenges this node answers (every generation shares it)
  // and the manager that orders, renews and fills it; null without.
  std::shared_ptr<tls::AcmeChallenges> acme_board_;
  std::unique_ptr<AcmeManager> acme_;
  uv_loop_t* control_loop_ = nullptr;  // while run() runs the control loop
  data::GenerationSlot current_;
  std::atomic<uint64_t> next_connection_id_{1};
  std::unique_ptr<log::LogWriter> log_writer_;
  // One per worker, outliving the workers: the admin endpoint sums them.
  std::vector<std::unique_ptr<metrics::WorkerCounters>> counters_;
  std::vector<std::unique_ptr<data::Worker>> workers_;

  // Each [[listen]] address, as configured, with the port it got (the real
  // one of a port-0 address); bound() is the text the log names it by.
  std::map<std::string, config::Endpoint> bound_;
  std::string bound(const config::Endpoint& address) const;

  // The /metrics body: the workers' counters summed, plus the process-wide
  // sources. Control thread.
  std::string scrape() const;
};

// data::Worker count for `configured` (0 = one per CPU).
int resolve_workers(int configured);

}  // namespace tlsfront::control
