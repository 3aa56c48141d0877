// ProxyExchange's failure paths: an upstream error goes to the group's
// Balancer, which records it and decides the retry (retry_policy.h: another
// server when nothing reached this one; the same server for a stream
// refused unprocessed or a pooled connection found closed); otherwise the
// client gets the answer (502/504, or an ended stream once the response
// began; a gRPC call gets UNAVAILABLE in trailers). The exchange itself:
// proxy_exchange.cc.
#include "data/http/proxy_exchange.h"
#include "log/log.h"
#include "message/grpc.h"

namespace tlsfront::http {

void ProxyExchange::on_upstream_error(upstream::UpstreamFailure failure, Error error) {
  if (phase_ == Phase::Done) return;
  stats_.add_error(failure);
  upstream::FailedAttempt failed;
  failed.failure = failure;
  failed.upstream_error = error.code == Errc::Upstream;
  failed.timeout = error.code == Errc::Timeout;
  failed.nothing_sent = phase_ == Phase::Connecting;
  failed.reused = reused();
  failed.response_started = channel_ && channel_->response_started();
  failed.written = channel_ ? channel_->bytes_written() : 0;
  failed.idempotent = idempotent_;
  failed.replayable = replay_state_ != Replay::Lost;
  failed.fresh_retries = fresh_retries_;
  failed.unprocessed_retries = unprocessed_retries_;
  failed.retries = retries_;
  failed.max_retries = static_cast<int>(group_->config().max_retries);
  failed.retry_non_idempotent = group_->config().retry_non_idempotent;
  drop_connection();
  const ConnectionInfo& info = sink_->connection_info();
  log::warn("conn={} client={}:{} upstream={}: {}", info.id, info.remote_addr, info.remote_port,
            pool_ ? pool_->address() : std::string("-"), error.message());
  if (phase_ == Phase::Streaming || phase_ == Phase::Tunnel) {
    fail(0, error.message());  // the response began: never retried
    return;
  }
  const upstream::Balancer::Retry retry = group_->balancer().after_failure(pool_.get(), failed, tried_, hash_);
  switch (retry.kind) {
    case upstream::RetryKind::SameServer:
      ++unprocessed_retries_;
      attempt(retry.server, true);
      return;
    case upstream::RetryKind::NextServer:
      ++retries_;
      tried_.push_back(retry.server);
      attempt(retry.server, true);
      return;
    case upstream::RetryKind::FreshConnection:
      ++retries_;
      ++fresh_retries_;
      attempt(retry.server, false);
      return;
    case upstream::RetryKind::None:
      break;
  }
  // A failed handshake's reasons (names checked, settings to change) are
  // the error log's: a gRPC client's grpc-message gets the fact only.
  fail(error.code == Errc::Timeout ? 504 : 502, failure == upstream::UpstreamFailure::TlsHandshake
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
  count_load(false);
  sink_->fail_response(status, reason);
}

void ProxyExchange::fail_grpc(std::string_view reason) {
  const bool head_sent = phase_ == Phase::Streaming;
  transition(phase_, Phase::Done);
  drop_encoder();
  drop_connection();
  count_load(false);
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
    sink_->send_response_head(std::move(head), false);
  }
  sink_->end_response();
}

}  // namespace tlsfront::http
