// LogThrottle: the first occurrence is reported at once, later ones at most
// once per interval with the count they stand for.
#include "log/log_throttle.h"

#include <gtest/gtest.h>

namespace tlsfront::log {
namespace {

using std::chrono::seconds;

TEST(LogThrottle, ReportsOncePerIntervalWithTheCount) {
  LogThrottle t(seconds(10));
  const LogThrottle::TimePoint t0{seconds(1000)};
  EXPECT_EQ(t.count(t0), 1u);
  EXPECT_EQ(t.count(t0 + seconds(1)), 0u);
  EXPECT_EQ(t.count(t0 + seconds(9)), 0u);
  EXPECT_EQ(t.count(t0 + seconds(10)), 3u);  // this one and the two held back
  EXPECT_EQ(t.count(t0 + seconds(11)), 0u);
  EXPECT_EQ(t.count(t0 + seconds(60)), 2u);  // after a quiet spell: at once
}

}  // namespace
}  // namespace tlsfront::log
