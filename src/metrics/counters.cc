#include "metrics/counters.h"

#include <algorithm>
#include <cerrno>

namespace tlsfront::metrics {

namespace {
// kDurationBuckets in nanoseconds: an observation is placed with integer
// compares (two histograms are observed per proxied request).
constexpr std::array<int64_t, kDurationBuckets.size()> kBucketNs = [] {
  std::array<int64_t, kDurationBuckets.size()> ns{};
  for (size_t i = 0; i < ns.size(); ++i) ns[i] = static_cast<int64_t>(kDurationBuckets[i] * 1e9 + 0.5);
  return ns;
}();
}  // namespace

void Histogram::observe(std::chrono::nanoseconds d) {
  const auto it = std::lower_bound(kBucketNs.begin(), kBucketNs.end(), d.count());
  buckets_[static_cast<size_t>(it - kBucketNs.begin())].add();
  count_.add();
  sum_ns_.add(static_cast<uint64_t>(std::max<int64_t>(d.count(), 0)));
}

void LabelPairCounters::add(const char* first, const char* second) {
  const size_t n = used_.load(std::memory_order_relaxed);  // this thread is the only writer
  for (size_t i = 0; i < n; ++i) {
    if (first_[i] == first && second_[i] == second) {
      counts_[i].add();
      return;
    }
  }
  if (n == kSlots) {
    other_.add();
    return;
  }
  first_[n] = first;
  second_[n] = second;
  counts_[n].add();
  used_.store(n + 1, std::memory_order_release);
}

OfferedVersion offered_version(uint16_t v) {
  switch (v) {
    case 0x0304: return OfferedVersion::Tls13;
    case 0x0303: return OfferedVersion::Tls12;
    case 0x0302: return OfferedVersion::Tls11;
    case 0x0301: return OfferedVersion::Tls10;
    case 0x0300: return OfferedVersion::Ssl3;
    default: return OfferedVersion::Other;
  }
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

std::map<std::pair<std::string, std::string>, UpstreamServerTotals> sum_upstream_servers(
    const std::vector<const WorkerCounters*>& workers) {
  std::map<std::pair<std::string, std::string>, UpstreamServerTotals> rows;
  for (const WorkerCounters* w : workers) {
    w->for_each_upstream([&](const std::string& u, const std::string& s, const UpstreamServerCounters& c) {
      UpstreamServerTotals& r = rows[{u, s}];
      r.created += c.connections_created.get();
      r.reused += c.connections_reused.get();
      r.failures += c.failures.get();
      r.retries += c.retries.get();
      r.idle += c.idle.get();
      r.outstanding += c.outstanding.get();
      r.ping_timeouts += c.h2_ping_timeouts.get();
      r.tls_handshakes += c.tls_handshakes.get();
      r.tls_resumed += c.tls_resumed.get();
      r.floods += c.floods.get();
      r.ejections += c.ejections.get();
      r.panics += c.panics.get();
      c.attempt_failures.for_each(
          [&](const char* reason, const char*, uint64_t n) { r.failures_by_reason[reason] += n; });
      for (size_t i = 0; i < r.buckets.size(); ++i) r.buckets[i] += c.response_time.bucket(i);
      r.responses += c.response_time.count();
      r.response_ns += c.response_time.sum_ns();
    });
  }
  return rows;
}

}  // namespace tlsfront::metrics
