// ServerHealth: what every worker knows of one upstream server's health,
// shared (one per [[upstream]] name and server address in the process,
// found through the HealthBoard when a pool is made), so that a server one
// worker ejects is out for all of them: passive outlier detection (nginx's
// max_fails / fail_timeout, Envoy's consecutive errors), with an ejection
// time that grows with consecutive ejections.
//   in       -> ejected   max_fails consecutive failures (connect, TLS,
//                         reset, timeout, invalid response), when the
//                         group's max_ejected_percent allows
//                         (Balancer::on_failure decides)
//   ejected  -> in        its ejection time passed: the next attempt tries
//                         it (a failure then ejects it again, for longer)
// A success resets the consecutive failures and, once back in, the
// ejection multiplier.
// Independently, active checks (control/health_checker.h) mark it down
// (`fall` failed checks in a row) and up (`rise` passed). A server is out
// while ejected or down. When it comes back in (or first joins a running
// group), returned_at() says when, for slow_start.
// Thread affinity: any thread (atomics; relaxed: a verdict a few
// nanoseconds late changes nothing). Writes only on failures and on the
// first success after one, so that requests to a healthy server never
// write a line shared between workers.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tlsfront::upstream {

class ServerHealth {
 public:
  using Clock = std::chrono::steady_clock;

  bool ejected(Clock::time_point now) const { return now.time_since_epoch().count() < ejected_until_.load(rel); }
  // Out of the balancer's choice (unless in panic): ejected or down.
  bool out(Clock::time_point now) const { return down_.load(rel) || ejected(now); }
  // The active checks' verdict (HealthChecker, the only writer).
  bool down() const { return down_.load(rel); }
  void set_down(bool down, Clock::time_point now) {
    if (down_.exchange(down, rel) && !down) mark_returned(now);
  }
  // When it last came back in (an ejection's end, a down verdict lifted,
  // joined a running group); the clock's epoch when it never left.
  Clock::time_point returned_at() const {
    return Clock::time_point(Clock::duration(std::max(returned_at_.load(rel), ejected_until_.load(rel))));
  }
  void mark_returned(Clock::time_point now) { returned_at_.store(now.time_since_epoch().count(), rel); }
  // One more consecutive failure; their count after it.
  uint32_t record_failure() { return consecutive_failures_.fetch_add(1, rel) + 1; }
  // A success: the consecutive failures (and, when in, the ejection
  // multiplier) start again from 0.
  // Reads the clock only when there is a multiplier to reset: a healthy
  // server's success costs two relaxed loads.
  void record_success() {
    if (consecutive_failures_.load(rel) != 0) consecutive_failures_.store(0, rel);
    if (ejections_.load(rel) != 0 && !ejected(Clock::now())) ejections_.store(0, rel);
  }
  // Ejects until now + base × (consecutive ejections), at most `max`;
  // returns the time chosen.
  std::chrono::milliseconds eject(Clock::time_point now, std::chrono::milliseconds base, std::chrono::milliseconds max) {
    const uint32_t n = ejections_.fetch_add(1, rel) + 1;
    const auto time = std::min(max, base * static_cast<int64_t>(n));
    ejected_until_.store((now + time).time_since_epoch().count(), rel);
    consecutive_failures_.store(0, rel);
    return time;
  }
  // Milliseconds until the ejection ends (0 when in).
  int64_t ejected_ms(Clock::time_point now) const {
    const int64_t left = ejected_until_.load(rel) - now.time_since_epoch().count();
    return left <= 0 ? 0 : std::chrono::duration_cast<std::chrono::milliseconds>(Clock::duration(left)).count();
  }
  uint32_t consecutive_failures() const { return consecutive_failures_.load(rel); }
  uint32_t ejections() const { return ejections_.load(rel); }

 private:
  static constexpr auto rel = std::memory_order_relaxed;
  std::atomic<uint32_t> consecutive_failures_{0};
  std::atomic<uint32_t> ejections_{0};
  std::atomic<int64_t> ejected_until_{0};  // Clock ticks: ejected before this
  std::atomic<int64_t> returned_at_{0};    // Clock ticks
  std::atomic<bool> down_{false};
};

// HealthBoard: the process's ServerHealth entries, by upstream name and
// server address. Looked up when a pool is made (a mutex), never per request.
class HealthBoard {
 public:
  // The entry, or null: what a report reads without adding one.
  std::shared_ptr<ServerHealth> find(const std::string& upstream, const std::string& address) const {
    std::lock_guard lock(mu_);
    auto it = entries_.find(upstream + " " + address);
    return it == entries_.end() ? nullptr : it->second;
  }
  // `created` (optional): set to whether the entry is new.
  std::shared_ptr<ServerHealth> find_or_add(const std::string& upstream, const std::string& address,
                                            bool* created = nullptr) {
    std::lock_guard lock(mu_);
    auto& slot = entries_[upstream + " " + address];
    if (created != nullptr) *created = !slot;
    if (!slot) slot = std::make_shared<ServerHealth>();
    return slot;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ServerHealth>> entries_;
};

}  // namespace tlsfront::upstream
