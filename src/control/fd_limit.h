// The process's file-descriptor budget: what RLIMIT_NOFILE should allow for
// a configuration, the start-up warning when the soft limit is below it, and
// the descriptor figures /metrics reports (process_max_fds, process_open_fds).
//
// All workers are threads of one process and share its one limit (nginx's
// worker_rlimit_nofile is per worker process; here it is divided). At the
// limit accept(2) fails with EMFILE: the worker pauses accepting
// (data/worker.h) and closes idle connections, so the figure is advice, not
// a hard requirement.
// Thread affinity: any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"

namespace tlsfront::control {

// Client connections per worker the budget makes room for (2 descriptors
// each while proxied: the client's and the upstream's); [limits]
// max_connections instead when it is lower.
inline constexpr uint64_t kBudgetConnectionsPerWorker = 256;
// The process's own descriptors: stdio, the control loop, the admin listener,
// the access log, Redis and OCSP fetches, libuv's per-loop descriptors.
inline constexpr uint64_t kBudgetProcessMargin = 64;

struct FdBudget {
  uint64_t per_worker = 0;  // listeners + idle upstream pools + connections x 2 + its loop's own
  uint64_t total = 0;       // workers x per_worker + kBudgetProcessMargin
};
FdBudget fd_budget(const config::Config& c, int workers);

// The warning to log at start-up when `soft_limit` is below the budget for
// `c` with `workers`, naming both figures and how they are made; nullopt
// when it is enough.
std::optional<std::string> fd_limit_warning(const config::Config& c, int workers, uint64_t soft_limit);

// RLIMIT_NOFILE's soft limit (UINT64_MAX when unlimited).
uint64_t open_files_soft_limit();
// Descriptors open in this process (entries of /proc/self/fd, less the one
// reading it); nullopt when it cannot be read (no descriptor left to open it).
std::optional<uint64_t> open_fd_count();

}  // namespace tlsfront::control
