// TokenBucket: a rate bound for work a peer can make us do without making
// progress (HTTP/2 control frames, stream resets, TLS post-handshake
// messages). Holds at most `burst` tokens, refilled at `per_second`; take()
// spends one. The clock is read only when a token is taken, so a bucket that
// is never charged costs nothing.
// Thread affinity: one owner; not synchronized.
#pragma once

#include <algorithm>
#include <chrono>

namespace tlsfront {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts full. `burst` >= 1 tokens; `per_second` >= 0 (0: never refilled).
  TokenBucket(double burst, double per_second, Clock::time_point now = Clock::now())
      : tokens_(burst), burst_(burst), per_second_(per_second), last_(now) {}

  // Spends one token if there is one (refilled up to `now` first). False
  // when the bucket is empty: the caller is over its rate.
  bool take(Clock::time_point now = Clock::now()) {
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * per_second_);
    last_ = now;
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }

 private:
  double tokens_;
  double burst_;
  double per_second_;
  Clock::time_point last_;
};

}  // namespace tlsfront
