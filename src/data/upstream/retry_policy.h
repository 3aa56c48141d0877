// The retry policy: what an exchange does after one failed attempt, decided
// from what it knows about that attempt (nginx's proxy_next_upstream
// defaults, RFC 9110 §9.2.2 and RFC 9113 §8.7). A pure function of its
// facts, so that every rule is a unit test.
//   SameServer       an HTTP/2 stream the server did not process (REFUSED_
//                    STREAM, above its GOAWAY's last-stream-id): any method
//                    goes again, on another of its connections, at most
//                    kMaxUnprocessedRetries times per exchange
//   NextServer       nothing reached the server (the connect, or TLS to it,
//                    failed): any method goes to the next server
//   FreshConnection  a pooled connection the backend had already closed (a
//                    reset or EOF before any response byte; not a timeout,
//                    which may mean the request is being processed): once,
//                    on a new connection to the same server, for an
//                    idempotent request or one none of which was written
//   None             the client gets the failure (502, 504, or a cut
//                    response)
// Every retry needs the request still replayable (ProxyExchange::Replay not
// Lost). A response that began is never retried (the caller's rule).
// Thread affinity: none (values).
#pragma once

#include <cstdint>

#include "data/upstream/upstream_failure.h"

namespace tlsfront::upstream {

// Streams an HTTP/2 upstream refused unprocessed, retried per exchange:
// enough for a GOAWAY (or two, while connections roll over), bounded
// against an upstream that refuses everything.
constexpr int kMaxUnprocessedRetries = 3;

struct FailedAttempt {
  UpstreamFailure failure = UpstreamFailure::ConnectFailed;
  bool upstream_error = false;    // Errc::Upstream: refused, reset, closed (not a timeout, not a bad response)
  bool nothing_sent = false;      // it failed while connecting: nothing reached the server
  bool reused = false;            // the attempt ran on a pooled connection
  bool response_started = false;  // some of the response had arrived
  uint64_t written = 0;           // request octets the server had taken
  bool idempotent = false;        // RFC 9110 §9.2.2
  bool replayable = false;        // everything sent so far can be sent again
  int fresh_retries = 0;          // FreshConnection retries so far in this exchange
  int unprocessed_retries = 0;    // SameServer retries so far in this exchange
};

enum class RetryKind { None, SameServer, NextServer, FreshConnection };

RetryKind retry_kind(const FailedAttempt& attempt);

}  // namespace tlsfront::upstream
