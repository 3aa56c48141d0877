// Clock: the source of wall-clock time, injectable so tests can drive expiry
// (session timeouts, ticket rotation, OCSP nextUpdate) with a FakeClock.
// Thread affinity: implementations must be safe to call from any thread.
#pragma once

#include <chrono>

namespace tlsfront {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::system_clock::time_point now() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace tlsfront
