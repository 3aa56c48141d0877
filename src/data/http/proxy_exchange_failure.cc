// ProxyExchange's failure paths: an upstream error decides between a retry
// (another server when nothing reached this one; the same pool for a
// stream refused unprocessed or a pooled connection found closed) and the
// client's answer (502/504, or an ended stream once the response began; a
// gRPC call gets UNAVAILABLE in trailers). The exchange itself:
// proxy_exchange.cc.
#include "data/http/proxy_exchange.h"
#include "log/log.h"
#include "message/grpc.h"

namespace tlsfront::http {
namespace {

// Streams an h2c upstream refused unprocessed, retried per exchange: enough
// for a GOAWAY (or two, while connections roll over), bounded against an
// upstream that refuses everything.
constexpr int kMaxUnprocessedRetries = 3;

}  // namespace

void ProxyExchange::on_upstream_error(upstream::UpstreamFailure failure, Error error) {
  if (phase_ == Phase::Done) return;
  stats_.add_error(failure);
  const uint64_t written = channel_ ? channel_->bytes_written() : 0;
  const bool response_started = channel_ && channel_->response_started();
  drop_connection();
  const bool timeout = error.code == Errc::Timeout;
  const ConnectionInfo& info = sink_->connection_info();
  log::warn("conn={} client={}:{} upstream={}: {}", info.id, info.remote_addr, info.remote_port,
            pool_ ? pool_->address() : std::string("-"), error.message());
  if (phase_ == Phase::Streaming || phase_ == Phase::Tunnel) {
    fail(0, error.message());
    return;
  }
  if (failure == upstream::UpstreamFailure::Unprocessed) {
    // RFC 9113 §6.8: the server did not process the stream, so any method
    // may go again, on another connection (the refusing one is draining);
    // kMaxUnprocessedRetries times in all, none of the other retries after.
    if (replay_state_ != Replay::Lost && unprocessed_retries_ < kMaxUnprocessedRetries) {
      ++unprocessed_retries_;
      pool_->count_retry();
      attempt(pool_, true);
      return;
    }
    fail(502, error.message());
    return;
  }
  if (phase_ == Phase::Connecting) {
    // Nothing reached this server: any method may go to the next one.
    pool_->mark_failed();
    if (replay_state_ != Replay::Lost) {
      if (upstream::UpstreamPool* next = group_->pick(tried_)) {
        pool_->count_retry();
        tried_.push_back(next);
        attempt(next, true);
        return;
      }
    }
  } else if (reused() && retries_ == 0 && replay_state_ != Replay::Lost && error.code == Errc::Upstream &&
             !response_started && (idempotent_ || written == 0)) {
    // A pooled connection the backend had already closed (reset or EOF before
    // any response byte; not a timeout, which may mean the request is being
    // processed): retry once on a fresh connection (RFC 9110 §9.2.2 allows it
    // for idempotent requests, and for any request none of which was written).
    ++retries_;
    pool_->count_retry();
    attempt(pool_, false);
    return;
  }
  // A failed handshake's reasons (names checked, settings to change) are
  // the error log's: a gRPC client's grpc-message gets the fact only.
  fail(timeout ? 504 : 502, failure == upstream::UpstreamFailure::TlsHandshake
                                ? std::string_view("upstream TLS handshake failed")
                                : std::string_view(error.message()));
}

void ProxyExchange::fail(int status, std::string_view reason) {
  if (phase_ == Phase::Done) return;
  if (grpc_ && phase_ != Phase::Tunnel) {
    fail_grpc(reason);
    return;
  }
  transition(phase_, Phase::Done);
  drop_connection();
  sink_->fail_response(status, reason);
}

void ProxyExchange::fail_grpc(std::string_view reason) {
  const bool head_sent = phase_ == Phase::Streaming;
  transition(phase_, Phase::Done);
  drop_encoder();
  drop_connection();
  stats_.grpc_status = kGrpcUnavailable;
  std::vector<Header> status = grpc_status_fields(kGrpcUnavailable, reason);
  if (head_sent) {
    // The call's status, in the trailers that end its stream.
    sink_->send_trailers(status);
  } else {
    // Trailers-only: one HEADERS frame with END_STREAM (an HTTP/1.1 client
    // gets an empty 200 with these fields).
    ResponseHead head;
    head.status = 200;
    head.content_length = 0;
    head.headers.push_back(Header{"content-type", "application/grpc"});
    for (auto& h : status) head.headers.push_back(std::move(h));
    sink_->send_response_head(head, false);
  }
  sink_->end_response();
}

}  // namespace tlsfront::http
