// The retry policy (a pure function: every rule and its limits) and the
// round-robin Balancer over real UpstreamPools (never connected here):
// turns, servers skipped after a failed connect, after_failure's choice.
#include "data/upstream/balancer.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "data/upstream/retry_policy.h"
#include "data/upstream/upstream_pool.h"
#include "support/loop_test.h"
#include "support/balancer_fixture.h"

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
  a.retries = 1;
  a.reused = false;  // the fresh connection failed too: another server
  EXPECT_EQ(retry_kind(a), RetryKind::NextServer);
  a = replayable(UpstreamFailure::Closed);
  a.upstream_error = true;
  a.reused = true;
  a.written = 100;  // a POST that was written may have been processed
  EXPECT_EQ(retry_kind(a), RetryKind::None);
  a.written = 0;  // none of it was written
  EXPECT_EQ(retry_kind(a), RetryKind::FreshConnection);
}

TEST(RetryPolicy, ATimeoutOrResetBeforeTheResponseGoesToTheNextServerWhenIdempotent) {
  // nginx's proxy_next_upstream error timeout.
  FailedAttempt a = replayable(UpstreamFailure::TimeoutRead);
  a.timeout = true;
  a.idempotent = true;
  a.written = 50;
  EXPECT_EQ(retry_kind(a), RetryKind::NextServer);
  a.idempotent = false;  // a POST the server may be processing
  EXPECT_EQ(retry_kind(a), RetryKind::None);
  a.retry_non_idempotent = true;  // proxy_next_upstream non_idempotent
  EXPECT_EQ(retry_kind(a), RetryKind::NextServer);
  a = replayable(UpstreamFailure::Reset);
  a.upstream_error = true;
  a.idempotent = true;
  EXPECT_EQ(retry_kind(a), RetryKind::NextServer);
  a.response_started = true;  // some of the response went on: never
  EXPECT_EQ(retry_kind(a), RetryKind::None);
  a = replayable(UpstreamFailure::InvalidResponse);  // not proxy_next_upstream's default
  a.idempotent = true;
  EXPECT_EQ(retry_kind(a), RetryKind::None);
}

TEST(RetryPolicy, RetriesAreBoundedByMaxRetries) {
  FailedAttempt a = replayable(UpstreamFailure::Refused);
  a.nothing_sent = true;
  a.max_retries = 2;
  a.retries = 1;
  EXPECT_EQ(retry_kind(a), RetryKind::NextServer);
  a.retries = 2;
  EXPECT_EQ(retry_kind(a), RetryKind::None);
  a.max_retries = 0;
  a.retries = 0;
  EXPECT_EQ(retry_kind(a), RetryKind::None);
}

TEST(RetryPolicy, WhatCountsAgainstAServer) {
  FailedAttempt a = replayable(UpstreamFailure::Unprocessed);
  EXPECT_FALSE(counts_against_server(a));
  a = replayable(UpstreamFailure::Closed);  // a keepalive connection it closed while idle
  a.upstream_error = true;
  a.reused = true;
  EXPECT_FALSE(counts_against_server(a));
  a.reused = false;
  EXPECT_TRUE(counts_against_server(a));
  a = replayable(UpstreamFailure::TimeoutRead);
  a.timeout = true;
  a.reused = true;
  EXPECT_TRUE(counts_against_server(a));
}

FailedAttempt connect_failed() {
  FailedAttempt a = replayable(UpstreamFailure::Refused);
  a.nothing_sent = true;
  a.upstream_error = true;
  return a;
}

TEST_F(BalancerTest, RoundRobinSkipsAServerThatFailedAConnect) {
  make();
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
  // max_ejected_percent (50): of three servers, one may be out at once.
  balancer().on_failure(a, connect_failed());
  int a_seen = 0;
  for (int i = 0; i < 6; ++i) a_seen += balancer().pick({}) == a;
  EXPECT_EQ(a_seen, 3);
}

TEST_F(BalancerTest, WhenEveryServerIsOutRequestsStillGoToThem) {
  cfg_.max_ejected_percent = 100;
  make();
  UpstreamPool* a = balancer().pick({});
  UpstreamPool* b = balancer().pick({});
  UpstreamPool* c = balancer().pick({});
  for (UpstreamPool* p : {a, b, c}) balancer().on_failure(p, connect_failed());
  std::set<UpstreamPool*> chosen;
  for (int i = 0; i < 6; ++i) chosen.insert(balancer().pick({}));
  EXPECT_EQ(chosen, (std::set<UpstreamPool*>{a, b, c}));  // panic: all of them, in turn
  EXPECT_EQ(balancer().pick({a, b, c}), nullptr);
}

TEST_F(BalancerTest, MaxFailsConsecutiveFailuresEjectAndEjectionsGrow) {
  using std::chrono::milliseconds;
  cfg_.max_fails = 3;
  cfg_.fail_timeout = milliseconds(200);
  make();
  UpstreamPool* a = balancer().pick({});
  FailedAttempt timeout;
  timeout.failure = UpstreamFailure::TimeoutRead;
  timeout.timeout = true;
  balancer().on_failure(a, timeout);
  balancer().on_failure(a, timeout);
  balancer().on_success(a, 1.0);  // not consecutive: counting starts again
  balancer().on_failure(a, timeout);
  balancer().on_failure(a, timeout);
  EXPECT_FALSE(a->health().ejected(std::chrono::steady_clock::now()));
  auto now = std::chrono::steady_clock::now();
  balancer().on_failure(a, timeout);
  EXPECT_TRUE(a->health().ejected(now + milliseconds(150)));
  EXPECT_FALSE(a->health().ejected(now + milliseconds(250)));
  // Back after fail_timeout, failing at once: out twice as long.
  std::this_thread::sleep_for(milliseconds(210));
  EXPECT_FALSE(a->health().ejected(std::chrono::steady_clock::now()));
  now = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) balancer().on_failure(a, timeout);
  EXPECT_EQ(a->health().ejections(), 2u);
  EXPECT_TRUE(a->health().ejected(now + milliseconds(350)));
  // A success once it is back resets the multiplier.
  std::this_thread::sleep_for(milliseconds(410));
  balancer().on_success(a, 1.0);
  EXPECT_EQ(a->health().ejections(), 0u);
}

TEST_F(BalancerTest, MaxFailsZeroNeverEjects) {
  cfg_.max_fails = 0;
  make();
  UpstreamPool* a = balancer().pick({});
  for (int i = 0; i < 10; ++i) balancer().on_failure(a, connect_failed());
  EXPECT_FALSE(a->health().ejected(std::chrono::steady_clock::now()));
}

TEST_F(BalancerTest, LeastRequestPrefersTheServerWithFewerOutstanding) {
  cfg_.balance = config::Balance::LeastRequest;
  cfg_.servers.resize(2);
  make();
  UpstreamPool* a = balancer().pick({});
  UpstreamPool* b = balancer().pick({a});
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 5; ++i) a->begin_request();  // a is slow: its requests pile up
  for (int i = 0; i < 20; ++i) EXPECT_EQ(balancer().pick({}), b);
  for (int i = 0; i < 5; ++i) a->end_request();
  std::set<UpstreamPool*> chosen;
  for (int i = 0; i < 40; ++i) chosen.insert(balancer().pick({}));  // ties: either, at random
  EXPECT_EQ(chosen.size(), 2u);
}

TEST_F(BalancerTest, AnUnprocessedStreamDoesNotMarkItsServerDown) {
  make();
  UpstreamPool* a = balancer().pick({});
  FailedAttempt refused = replayable(UpstreamFailure::Unprocessed);
  refused.nothing_sent = true;
  balancer().on_failure(a, refused);
  int seen = 0;
  for (int i = 0; i < 6; ++i) seen += balancer().pick({}) == a;
  EXPECT_EQ(seen, 2);
}

TEST_F(BalancerTest, AfterAFailedConnectTheRetryGoesToAnUntriedServer) {
  cfg_.max_retries = 5;
  make();
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
  make();
  UpstreamPool* a = balancer().pick({});
  FailedAttempt stale = replayable(UpstreamFailure::Closed);
  stale.upstream_error = true;
  stale.reused = true;
  stale.idempotent = true;
  Balancer::Retry r = balancer().after_failure(a, stale, {a});
  EXPECT_EQ(r.kind, RetryKind::FreshConnection);
  EXPECT_EQ(r.server, a);
}

TEST_F(BalancerTest, FailureStatusesCountAgainstTheServerOnlyWhenListed) {
  cfg_.max_fails = 2;
  make();
  UpstreamPool* a = balancer().pick({});
  for (int i = 0; i < 3; ++i) balancer().on_success(a, 1.0, 503);  // not listed: a response is a success
  EXPECT_FALSE(a->health().out(std::chrono::steady_clock::now()));
  cfg_.failure_statuses = {502, 503};
  make();
  a = balancer().pick({});
  balancer().on_success(a, 1.0, 503);
  balancer().on_success(a, 1.0, 200);  // not consecutive
  balancer().on_success(a, 1.0, 503);
  EXPECT_FALSE(a->health().out(std::chrono::steady_clock::now()));
  balancer().on_success(a, 1.0, 502);
  EXPECT_TRUE(a->health().out(std::chrono::steady_clock::now()));
}

}  // namespace
}  // namespace tlsfront::upstream
