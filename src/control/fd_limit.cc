#include "control/fd_limit.h"

#include <dirent.h>
#include <sys/resource.h>

#include <fmt/format.h>

namespace tlsfront::control {
namespace {
// Per worker loop: epoll, its inbox eventfd, libuv's reserve descriptor.
constexpr uint64_t kLoopDescriptors = 3;
}  // namespace

// [limits] max_connections, when lower, is what a worker can hold.
uint64_t budget_connections(const config::Config& c) {
  const uint64_t cap = c.limits.max_connections;
  return cap != 0 && cap < kBudgetConnectionsPerWorker ? cap : kBudgetConnectionsPerWorker;
}

FdBudget fd_budget(const config::Config& c, int workers) {
  FdBudget b;
  b.per_worker = kLoopDescriptors + c.listeners.size() + 2 * budget_connections(c);
  for (const auto& u : c.upstreams) b.per_worker += u.keepalive * u.servers.size();
  if (c.tls.session_cache.enabled && c.tls.session_cache.store == config::SessionStore::Redis) ++b.per_worker;
  b.total = static_cast<uint64_t>(workers) * b.per_worker + kBudgetProcessMargin;
  return b;
}

std::optional<std::string> fd_limit_warning(const config::Config& c, int workers, uint64_t soft_limit) {
  const FdBudget b = fd_budget(c, workers);
  if (soft_limit >= b.total) return std::nullopt;
  return fmt::format(
      "the open files limit (RLIMIT_NOFILE soft) is {}, below the {} this configuration wants: {} worker{} x {} "
      "(room for {} client connections each at 2 descriptors, client and upstream, plus its listeners, idle upstream "
      "keepalive connections and event loop) + {} for the process; at the limit a worker stops accepting for 500 ms "
      "at a time and closes idle connections. Raise it (ulimit -n, systemd LimitNOFILE=)",
      soft_limit, b.total, workers, workers == 1 ? "" : "s", b.per_worker, budget_connections(c),
      kBudgetProcessMargin);
}

uint64_t open_files_soft_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return rl.rlim_cur;
}

std::optional<uint64_t> open_fd_count() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  uint64_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n > 0 ? n - 1 : 0;  // the directory's own descriptor
}

}  // namespace tlsfront::control
