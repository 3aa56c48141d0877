// Prometheus text exposition format (version 0.0.4) of tlsfront's metrics:
// the workers' counters summed, plus the process-wide sources the Server
// reads on scrape (session cache, ticket keys, access log). Metric names and
// labels are listed in docs/operations.md "Metrics".
// Thread affinity: any thread (the control thread in practice).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/counters.h"
#include "metrics/request_counters.h"

namespace tlsfront::metrics {

struct ProcessMetrics {
  std::vector<const WorkerCounters*> workers;  // borrowed
  uint64_t generation = 0;                     // configuration generation (1 + reloads)
  // The current generation's tlsfront_requests_total; null: none counted.
  std::shared_ptr<const RequestCounterTable> requests;
  // [tls.session_cache] (tls::SessionCache::Stats)
  uint64_t session_cache_hits = 0, session_cache_misses = 0, session_cache_evictions = 0,
           session_cache_expired = 0, session_cache_stores = 0, session_cache_entries = 0, session_cache_bytes = 0;
  // Ticket keys (tls::TicketCounters, tls::TicketKeyRing)
  uint64_t tickets_issued = 0, tickets_decrypted_current = 0, tickets_decrypted_renewed = 0, tickets_failed = 0;
  uint64_t ticket_keys = 0;                         // keys in the ring
  std::optional<double> ticket_key_age_seconds;     // since the encrypting key's activation
  // Access log (log::LogWriter); nullopt when it is off.
  std::optional<uint64_t> access_log_bytes, access_log_dropped_batches, access_log_dropped_lines;
  // Process descriptors (the Prometheus client libraries' process collector
  // names): the RLIMIT_NOFILE soft limit, descriptors open now (nullopt when
  // /proc/self/fd cannot be read, e.g. with none left to open it).
  uint64_t max_fds = 0;
  std::optional<uint64_t> open_fds;
  // Extra exposition text (complete "# HELP/# TYPE" blocks), appended as is.
  std::string extra;
};

std::string render_prometheus(const ProcessMetrics& m);

// A label value for the exposition format: backslash, double quote and
// newline escaped (\\, \", \n).
std::string escape_label_value(std::string_view v);

}  // namespace tlsfront::metrics
