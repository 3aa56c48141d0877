#include "data/upstream/retry_policy.h"

namespace tlsfront::upstream {

namespace {
// A pooled connection the backend had already closed: the first failure of
// a request on it, before any response byte, and no timeout.
bool stale_pooled(const FailedAttempt& a) {
  return a.reused && a.fresh_retries == 0 && a.upstream_error && !a.response_started;
}
}  // namespace

RetryKind retry_kind(const FailedAttempt& a) {
  if (!a.replayable) return RetryKind::None;
  if (a.failure == UpstreamFailure::Unprocessed) {
    return a.unprocessed_retries < kMaxUnprocessedRetries ? RetryKind::SameServer : RetryKind::None;
  }
  if (a.retries >= a.max_retries) return RetryKind::None;
  if (a.nothing_sent) return RetryKind::NextServer;
  const bool may_repeat = a.idempotent || a.written == 0 || a.retry_non_idempotent;
  if (stale_pooled(a) && (a.idempotent || a.written == 0)) return RetryKind::FreshConnection;
  const bool next_upstream = a.timeout || a.upstream_error || a.failure == UpstreamFailure::StreamReset;
  if (!a.response_started && next_upstream && may_repeat) return RetryKind::NextServer;
  return RetryKind::None;
}

bool counts_against_server(const FailedAttempt& a) {
  return a.failure != UpstreamFailure::Unprocessed && !stale_pooled(a);
}

}  // namespace tlsfront::upstream
