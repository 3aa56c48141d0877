// FakeClock: a Clock whose time moves only when a test says so, to drive
// session timeouts, ticket rotation and OCSP expiry deterministically.
// Thread affinity: any thread (the time is one atomic).
#pragma once

#include <atomic>
#include <chrono>

#include "util/clock.h"

namespace tlsfront {

class FakeClock final : public Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  // Starts at `start`; by default 2030-01-01T00:00:00Z, far from any real "now"
  // so code that mixes in the system clock by mistake shows up.
  explicit FakeClock(TimePoint start = TimePoint(std::chrono::seconds(1893456000))) : now_(start) {}

  TimePoint now() const override { return now_.load(); }
  void set(TimePoint t) { now_.store(t); }

  template <typename Rep, typename Period>
  void advance(std::chrono::duration<Rep, Period> d) {
    TimePoint cur = now_.load();
    while (!now_.compare_exchange_weak(cur, cur + std::chrono::duration_cast<TimePoint::duration>(d))) {
    }
  }

 private:
  std::atomic<TimePoint> now_;
};

}  // namespace tlsfront
