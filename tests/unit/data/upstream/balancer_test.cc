// The retry policy (a pure function: every rule and its limits) and the
// round-robin Balancer over real UpstreamPools (never connected here):
// turns, servers skipped after a failed connect, after_failure's choice.
#include "data/upstream/balancer.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "data/upstream/retry_policy.h"
#include "data/upstream/upstream_pool.h"
#include "support/loop_test.h"

namespace tlsfront::upstream {
namespace {

FailedAttempt replayable(UpstreamFailure f) {
  FailedAttempt a;
  a.failure = f;
  a.replayable = true;
  return a;
}

TEST(RetryPolicy, NothingReplayableIsNeverRetried) {
  FailedAttempt a = replayable(UpstreamFailure::Refused);
  a.nothing_sent = true;
  a.replayable = false;
  EXPECT_EQ(retry_kind(a), RetryKind::None);
  a = replayable(UpstreamFailure::Unprocessed);
  a.replayable = false;
  EXPECT_EQ(retry_kind(a), RetryKind::None);
}

TEST(RetryPolicy, AFailedConnectGoesToTheNextServerWhateverTheMethod) {
  FailedAttempt a = replayable(UpstreamFailure::Refused);
  a.nothing_sent = true;
  a.idempotent = false;
  EXPECT_EQ(retry_kind(a), RetryKind::NextServer);
  a.failure = UpstreamFailure::TlsHandshake;
  EXPECT_EQ(retry_kind(a), RetryKind::NextServer);
}

TEST(RetryPolicy, AnUnprocessedStreamGoesAgainToTheSameServerABoundedNumberOfTimes) {
  FailedAttempt a = replayable(UpstreamFailure::Unprocessed);
  a.response_started = false;
  for (int i = 0; i < kMaxUnprocessedRetries; ++i) {
    a.unprocessed_retries = i;
    EXPECT_EQ(retry_kind(a), RetryKind::SameServer) << i;
  }
  a.unprocessed_retries = kMaxUnprocessedRetries;
  EXPECT_EQ(retry_kind(a), RetryKind::None);
}

TEST(RetryPolicy, AStalePooledConnectionIsRetriedOnceOnAFreshOne) {
  FailedAttempt a = replayable(UpstreamFailure::Closed);
  a.upstream_error = true;
  a.reused = true;
  a.idempotent = true;
  a.written = 100;
  EXPECT_EQ(retry_kind(a), RetryKind::FreshConnection);
  a.fresh_retries = 1;
  EXPECT_EQ(retry_kind(a), RetryKind::None);  // once
  a.fresh_retries = 0;
  a.idempotent = false;
  EXPECT_EQ(retry_kind(a), RetryKind::None);  // a POST that was written may have been processed
  a.written = 0;
  EXPECT_EQ(retry_kind(a), RetryKind::FreshConnection);  // none of it was written
}

TEST(RetryPolicy, TimeoutsNewConnectionsAndStartedResponsesAreNotRetried) {
  FailedAttempt a = replayable(UpstreamFailure::TimeoutRead);
  a.reused = true;
  a.idempotent = true;
  a.upstream_error = false;  // Errc::Timeout: the request may be being processed
  EXPECT_EQ(retry_kind(a), RetryKind::None);
  a = replayable(UpstreamFailure::Reset);
  a.upstream_error = true;
  a.idempotent = true;
  a.reused = false;  // a new connection that failed after connecting
  EXPECT_EQ(retry_kind(a), RetryKind::None);
  a.reused = true;
  a.response_started = true;
  EXPECT_EQ(retry_kind(a), RetryKind::None);
}

class BalancerTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    cfg_.name = "t";
    cfg_.servers = {config::Endpoint{"127.0.0.1", 1}, config::Endpoint{"127.0.0.1", 2},
                    config::Endpoint{"127.0.0.1", 3}};
    group_ = std::make_unique<UpstreamGroup>(&loop_, cfg_);
  }
  void release_objects() override { group_.reset(); }
  Balancer& balancer() { return group_->balancer(); }

  config::Upstream cfg_;
  std::unique_ptr<UpstreamGroup> group_;
};

FailedAttempt connect_failed() {
  FailedAttempt a = replayable(UpstreamFailure::Refused);
  a.nothing_sent = true;
  a.upstream_error = true;
  return a;
}

TEST_F(BalancerTest, RoundRobinSkipsAServerThatFailedAConnect) {
  UpstreamPool* a = balancer().pick({});
  UpstreamPool* b = balancer().pick({});
  UpstreamPool* c = balancer().pick({});
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_NE(a, c);
  EXPECT_EQ(balancer().pick({}), a);
  balancer().on_failure(b, connect_failed());
  for (int i = 0; i < 6; ++i) EXPECT_NE(balancer().pick({}), b);
  // Every server tried: nothing left.
  EXPECT_EQ(balancer().pick({a, b, c}), nullptr);
  // All untried servers down: still one to try (as nginx).
  balancer().on_failure(a, connect_failed());
  balancer().on_failure(c, connect_failed());
  EXPECT_NE(balancer().pick({}), nullptr);
}

TEST_F(BalancerTest, AnUnprocessedStreamDoesNotMarkItsServerDown) {
  UpstreamPool* a = balancer().pick({});
  FailedAttempt refused = replayable(UpstreamFailure::Unprocessed);
  refused.nothing_sent = true;
  balancer().on_failure(a, refused);
  int seen = 0;
  for (int i = 0; i < 6; ++i) seen += balancer().pick({}) == a;
  EXPECT_EQ(seen, 2);
}

TEST_F(BalancerTest, AfterAFailedConnectTheRetryGoesToAnUntriedServer) {
  UpstreamPool* a = balancer().pick({});
  std::vector<UpstreamPool*> tried{a};
  Balancer::Retry r = balancer().after_failure(a, connect_failed(), tried);
  ASSERT_EQ(r.kind, RetryKind::NextServer);
  ASSERT_NE(r.server, nullptr);
  EXPECT_NE(r.server, a);
  tried.push_back(r.server);
  r = balancer().after_failure(r.server, connect_failed(), tried);
  ASSERT_EQ(r.kind, RetryKind::NextServer);
  tried.push_back(r.server);
  // All three tried: the client gets the failure.
  r = balancer().after_failure(r.server, connect_failed(), tried);
  EXPECT_EQ(r.kind, RetryKind::None);
  EXPECT_EQ(r.server, nullptr);
}

TEST_F(BalancerTest, ARetryOnTheSameServerKeepsIt) {
  UpstreamPool* a = balancer().pick({});
  FailedAttempt stale = replayable(UpstreamFailure::Closed);
  stale.upstream_error = true;
  stale.reused = true;
  stale.idempotent = true;
  Balancer::Retry r = balancer().after_failure(a, stale, {a});
  EXPECT_EQ(r.kind, RetryKind::FreshConnection);
  EXPECT_EQ(r.server, a);
}

}  // namespace
}  // namespace tlsfront::upstream
