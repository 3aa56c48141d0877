#include "metrics/counters.h"

#include <algorithm>
#include <cerrno>

namespace tlsfront::metrics {

void Histogram::observe(std::chrono::nanoseconds d) {
  const double seconds = std::chrono::duration<double>(d).count();
  const auto it = std::lower_bound(kDurationBuckets.begin(), kDurationBuckets.end(), seconds);
  buckets_[static_cast<size_t>(it - kDurationBuckets.begin())].add();
  count_.add();
  sum_ns_.add(static_cast<uint64_t>(std::max<int64_t>(d.count(), 0)));
}

void WorkerCounters::count_request(std::string_view protocol, int status, std::chrono::nanoseconds duration) {
  const size_t p = protocol == "HTTP/2.0" ? 2 : protocol == "HTTP/1.0" ? 0 : 1;
  const size_t cls = status >= 100 && status <= 599 ? static_cast<size_t>(status / 100 - 1) : 5;
  requests[p][cls].add();
  request_duration.observe(duration);
}

AcceptError accept_error(int err) {
  switch (err) {
    case EMFILE: return AcceptError::Emfile;
    case ENFILE: return AcceptError::Enfile;
    case ENOBUFS: return AcceptError::Enobufs;
    case ENOMEM: return AcceptError::Enomem;
    default: return AcceptError::Other;
  }
}

UpstreamServerCounters* WorkerCounters::upstream(const std::string& upstream, const std::string& server) {
  std::lock_guard lock(upstreams_mu_);
  auto& slot = upstreams_[{upstream, server}];
  if (!slot) slot = std::make_unique<UpstreamServerCounters>();
  return slot.get();
}

}  // namespace tlsfront::metrics
