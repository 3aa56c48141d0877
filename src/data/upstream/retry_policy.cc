#include "data/upstream/retry_policy.h"

namespace tlsfront::upstream {

RetryKind retry_kind(const FailedAttempt& a) {
  if (!a.replayable) return RetryKind::None;
  if (a.failure == UpstreamFailure::Unprocessed) {
    return a.unprocessed_retries < kMaxUnprocessedRetries ? RetryKind::SameServer : RetryKind::None;
  }
  if (a.nothing_sent) return RetryKind::NextServer;
  if (a.reused && a.fresh_retries == 0 && a.upstream_error && !a.response_started &&
      (a.idempotent || a.written == 0)) {
    return RetryKind::FreshConnection;
  }
  return RetryKind::None;
}

}  // namespace tlsfront::upstream
