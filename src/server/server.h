// Server: the control thread. Builds the first Generation, opens the access
// log writer, binds every worker's listening sockets, starts the workers and
// runs the control loop: SIGTERM/SIGINT/SIGQUIT stop gracefully (a second one
// exits at once), SIGUSR1 reopens the access log (logrotate), SIGHUP re-reads
// ticket key files and OCSP response files (a full configuration reload comes
// with #6). It owns what outlives configuration generations: the session
// cache, the ticket keys and the OCSP staplers (fetched on the control loop).
// Thread affinity: control thread only.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "config/config.h"
#include "server/generation.h"
#include "server/ticket_key_manager.h"
#include "tls/ocsp_fetcher.h"
#include "tls/ocsp_stapler.h"
#include "tls/session_cache.h"
#include "tls/ticket_key_ring.h"
#include "util/clock.h"
#include "server/worker.h"
#include "util/result.h"

namespace tlsfront::log {
class LogWriter;
}

namespace tlsfront::server {

class Server {
 public:
  Server();
  ~Server();

  // Runs until stopped by a signal. Logs the certificate chain report at info
  // (its warnings at warn). Errors (bad certificate, address in use)
  // are returned before any worker starts. Returns the process exit status.
  [[nodiscard]] Result<int> run(config::Config cfg);

  // `--test`: builds the generation (certificates, keys, TLS settings) and
  // checks the access log can be opened, binding nothing. Prints the
  // certificate chain report (tls::ChainReport) and its warnings to stderr.
  // Errors as run().
  [[nodiscard]] static Status test(config::Config cfg);

 private:
  // Declared before current_ so they outlive every generation's SSL_CTX.
  SystemClock clock_;
  std::unique_ptr<tls::SessionCache> session_cache_;
  std::unique_ptr<tls::TicketKeyStore> tickets_;
  std::unique_ptr<TicketKeyManager> ticket_keys_;
  // OCSP: one stapler per certificate; the registry is attached to the SSL_CTX.
  std::unique_ptr<tls::OcspFetcher> ocsp_fetcher_;
  std::vector<std::unique_ptr<tls::OcspStapler>> ocsp_staplers_;
  tls::OcspRegistry ocsp_registry_;
  GenerationSlot current_;
  std::atomic<uint64_t> next_connection_id_{1};
  std::unique_ptr<log::LogWriter> log_writer_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

// Worker count for `configured` (0 = one per CPU).
int resolve_workers(int configured);

}  // namespace tlsfront::server
