// LogThrottle: at most one log line per interval for a condition that can
// recur many times a second (an accept failing at the open-files limit), each
// line saying how many occurrences it stands for. The first occurrence after
// a quiet interval is reported at once.
// Thread affinity: one thread (the owner's).
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>

namespace tlsfront::log {

class LogThrottle {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit LogThrottle(std::chrono::steady_clock::duration interval) : interval_(interval) {}

  // Counts one occurrence at `now`. Returns how many occurrences the line to
  // write now stands for (this one and those not reported yet), or 0 when no
  // line is due (the last one is less than the interval old).
  uint64_t count(TimePoint now) {
    ++pending_;
    if (reported_ && now - last_ < interval_) return 0;
    reported_ = true;
    last_ = now;
    return std::exchange(pending_, 0);
  }

 private:
  std::chrono::steady_clock::duration interval_;
  TimePoint last_{};
  bool reported_ = false;
  uint64_t pending_ = 0;
};

}  // namespace tlsfront::log
