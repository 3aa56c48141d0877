#include "data/http/proxy_exchange.h"

#include <algorithm>

#include "data/http/header_plan.h"
#include "data/http/response_compression.h"
#include "log/log.h"
#include "message/chunked.h"
#include "message/grpc.h"
#include "message/header_rewrite.h"

namespace tlsfront::http {
namespace {
constexpr size_t kMaxReplayBytes = 64 * 1024;
constexpr int kMaxInformational = 8;
}  // namespace

ProxyExchange::ProxyExchange(uv_loop_t* loop, ExchangeSink* sink, upstream::UpstreamGroup* group,
                             const RequestHead& head, const ExchangeHeaders& headers,
                             const config::Compression* compression, CompressionBudget* budget)
    : loop_(loop),
      sink_(sink),
      group_(group),
      record_(headers.record),
      method_(head.method),
      chunked_request_(head.chunked),
      idempotent_(head.idempotent()),
      upgrade_(head.upgrade),
      extended_connect_(head.extended_connect),
      early_(headers.early),
      has_body_(head.has_body()),
      grpc_(is_grpc(head)),
      http2_upstream_(config::is_http2(group->config().protocol)),
      replay_state_(Replay::Partial) {
  const ConnectionInfo& info = sink->connection_info();
  const HeaderVars vars = header_vars_now();  // for the request's head, built below
  UpstreamRequestOptions opts;
  opts.client_addr = info.remote_addr;
  opts.real_ip = headers.client_addr;
  opts.scheme = scheme_name(info.scheme);
  opts.default_host = group->config().name;
  opts.close = group->config().keepalive == 0;
  opts.upstream_tls = group->config().tls.enabled;
  opts.request_id_header = headers.request_id_header;
  opts.request_id = headers.request_id;
  if (headers.rules != nullptr) {
    if (!headers.rules->request.empty()) {
      opts.edit = &headers.rules->request;
      opts.vars = &vars;
    }
    if (!headers.rules->response.empty()) response_edit_ = &headers.rules->response;
  }
  if (compression != nullptr && !compression->encodings.empty()) {
    compression_ = compression;
    budget_ = budget;
    accepted_ = accepted_coding(*compression, head);
  }
  stats_.protocol = config::protocol_name(group->config().protocol);
  if (http2_upstream_) {
    // HTTP/2 has no Upgrade (RFC 9113 §8.6): an Upgrade request goes up as
    // an ordinary one, and no 101 can open a tunnel.
    h2_fields_ = upstream_h2_request_fields(head, opts);
  } else {
    append_upstream_request_head(replay_, head, opts);
  }
  const bool own_early_data = std::any_of(head.headers.begin(), head.headers.end(),
                                          [](const Header& h) { return iequals(h.name, "early-data"); });
  if (early_ == EarlyData::Send && !own_early_data) {
    // RFC 8470 §5.1: an intermediary adds it; a client's own is forwarded
    // as it is. HTTP/1.1: before the head's last CRLF (a Send request has no body).
    if (http2_upstream_) {
      early_line_ = h2_fields_.size();
      h2_fields_.push_back(Header{"early-data", "1", HeaderToken::Other});
    } else {
      static constexpr std::string_view kLine = "Early-Data: 1\r\n";
      early_line_ = replay_.size() - 2;
      replay_.insert(early_line_, kLine);
    }
  }
  if (!head.chunked && replay_.size() + head.content_length.value_or(0) <= kMaxReplayBytes) replay_state_ = Replay::Whole;
}

ProxyExchange::~ProxyExchange() { drop_connection(); }

void ProxyExchange::retire(std::unique_ptr<ProxyExchange>& exchange, RequestRecord* record) {
  if (!exchange) return;
  exchange->cancel();
  if (record) record->upstream = std::make_unique<UpstreamStats>(std::move(exchange->stats_));
  uv_loop_t* loop = exchange->loop_;
  LoopContext::of(loop).defer_delete(std::move(exchange));
}

std::unique_ptr<upstream::UpstreamTunnel> ProxyExchange::take_tunnel(std::unique_ptr<ProxyExchange>& exchange,
                                                                     upstream::UpstreamHandler* handler,
                                                                     RequestRecord& record) {
  if (!exchange || exchange->phase_ != Phase::Tunnel || !exchange->tunnel_) return nullptr;
  std::unique_ptr<upstream::UpstreamTunnel> tunnel = std::move(exchange->tunnel_);
  tunnel->set_handler(handler);
  tunnel->set_attempt_start(exchange->attempt_start_);
  retire(exchange, &record);
  return tunnel;
}

void ProxyExchange::start() {
  if (sink_->connection_info().early_data) {
    if (early_ == EarlyData::Hold) {
      transition(phase_, Phase::Held);
      return;
    }
  } else {
    strip_early_data_line();  // the handshake completed before the request went up
  }
  begin();
}

void ProxyExchange::on_handshake_done() {
  if (phase_ != Phase::Held) return;
  strip_early_data_line();
  if (pool_ != nullptr) {
    attempt(pool_, true);  // after a 425: the same server, a pooled connection welcome
  } else {
    begin();
  }
  if (phase_ != Phase::Done && !request_body_congested()) sink_->on_request_body_writable();
}

void ProxyExchange::strip_early_data_line() {
  if (early_line_ == std::string::npos) return;
  if (http2_upstream_) {
    h2_fields_.erase(h2_fields_.begin() + static_cast<std::ptrdiff_t>(early_line_));
  } else {
    replay_.erase(early_line_, std::string_view("Early-Data: 1\r\n").size());
  }
  early_line_ = std::string::npos;
}

void ProxyExchange::begin() {
  if (grpc_ && !http2_upstream_) {
    // gRPC needs HTTP/2 end to end (trailers, full-duplex streams).
    stats_.error = "grpc_needs_h2c";
    fail_grpc("upstream " + group_->config().name + " speaks HTTP/1.1; gRPC needs protocol = \"h2c\" or \"h2\"");
    return;
  }
  if (extended_connect_ && http2_upstream_) {
    // RFC 8441 asks for a tunnel, which this upstream cannot carry (HTTP/2
    // has no Upgrade, RFC 9113 §8.6): refused before anything is sent,
    // rather than run as the GET it is mapped to.
    stats_.error = "upgrade_needs_http1";
    const ConnectionInfo& info = sink_->connection_info();
    log::warn("conn={} client={}:{} {} tunnel (RFC 8441 extended CONNECT) refused: upstream {} speaks HTTP/2; "
              "tunnels need protocol = \"http/1.1\"",
              info.id, info.remote_addr, info.remote_port, upgrade_, group_->config().name);
    fail(501, "the upstream cannot carry this tunnel");
    return;
  }
  upstream::UpstreamPool* pool = group_->pick(tried_);
  if (!pool) {
    stats_.error = "no_live_upstreams";
    fail(502, "no live upstreams");
    return;
  }
  tried_.push_back(pool);
  attempt(pool, true);
}

void ProxyExchange::attempt(upstream::UpstreamPool* pool, bool allow_reuse) {
  pool_ = pool;
  transition(phase_, Phase::Connecting);
  if (!stats_.addr.empty()) stats_.addr += ", ";
  stats_.addr += pool->address();
  attempt_start_ = std::chrono::steady_clock::now();
  if (!h2_fields_.empty()) {
    attempt_h2(pool);
    return;
  }
  // A request on_upstream_error() retries once on a fresh connection (the
  // backend closed a pooled one) skips the MSG_PEEK check, as nginx does.
  // Only a Whole replay buffer makes the retry certain: a Partial one may
  // still overflow after this choice, and the retry would then be impossible.
  const bool check_open = !(idempotent_ && replay_state_ == Replay::Whole);
  // An Upgrade may turn the connection into a tunnel: never a pooled one.
  auto lease = pool->acquire(allow_reuse && upgrade_.empty(), check_open);
  if (!lease) {
    on_upstream_error(upstream::UpstreamFailure::ConnectFailed, lease.take_error());
    return;
  }
  conn_ = std::move(lease->conn);
  stats_.connection_reused = lease->reused;
  if (reused()) {
    stats_.connect_ms = 0.0;
    transition(phase_, Phase::AwaitingHead);
  }
  conn_->attach(this, method_ == "HEAD", !upgrade_.empty());
  conn_->send(replay_);
  // Held, the request body was kept whatever its size (bounded by what the
  // session read before it stopped: request_body_congested()).
  if (replay_state_ != Replay::Lost && replay_.size() > kMaxReplayBytes) lose_replay();
  // A request that cannot be retried goes out now, not at the end of the
  // iteration: the peek said the pooled connection was open a moment ago,
  // and a backend's idle close landing in between would cost a 502.
  if (reused() && check_open) conn_->write_now();
}

void ProxyExchange::attempt_h2(upstream::UpstreamPool* pool) {
  auto lease = pool->open_h2_stream(this, h2_fields_, has_body_);
  if (!lease) {
    on_upstream_error(upstream::UpstreamFailure::ConnectFailed, lease.take_error());
    return;
  }
  h2_ = std::move(lease->stream);
  stats_.connection_reused = lease->reused;
  if (reused()) {
    stats_.connect_ms = 0.0;
    transition(phase_, Phase::AwaitingHead);
  }
  if (!replay_.empty()) h2_->send(replay_);
  if (request_complete_) h2_->end(request_trailers_);
}

void ProxyExchange::send_up(std::string_view bytes) {
  if (phase_ == Phase::Held) {  // no connection yet: all of it waits here
    replay_.append(bytes);
    return;
  }
  if (replay_state_ != Replay::Lost) {
    if (replay_.size() + bytes.size() <= kMaxReplayBytes) {
      replay_.append(bytes);
    } else {
      lose_replay();
    }
  }
  if (conn_) conn_->send(bytes);
  if (h2_) h2_->send(bytes);
}

void ProxyExchange::lose_replay() {
  transition(replay_state_, Replay::Lost);
  std::string().swap(replay_);
}

void ProxyExchange::on_request_body(std::string_view data) {
  if (phase_ == Phase::Done || data.empty()) return;
  if (chunked_request_ && h2_fields_.empty()) {
    write_chunk(data, [this](std::string_view part) { send_up(part); });
  } else {
    send_up(data);
  }
}

void ProxyExchange::on_tunnel_data(std::string_view data) {
  if (phase_ == Phase::Tunnel && tunnel_) tunnel_->send(data);
}

void ProxyExchange::on_request_trailers(std::vector<Header>&& trailers) {
  // An HTTP/1.1 request with a Content-Length has no trailer section.
  if (h2_fields_.empty() && !chunked_request_) return;
  // A malformed field drops the section (nothing ambiguous goes up: an
  // HTTP/1.1 upstream gets it as text); fields a sender must not put in
  // trailers (RFC 9110 §6.5.1) go.
  for (const auto& h : trailers) {
    if (!valid_field_name(h.name) || !valid_field_value(h.value)) return;
  }
  std::erase_if(trailers, [](const Header& h) {
    return is_hop_by_hop(h.token) || h.token == HeaderToken::ContentLength || h.token == HeaderToken::Host;
  });
  request_trailers_ = std::move(trailers);
}

void ProxyExchange::on_tunnel_end() {
  if (phase_ == Phase::Tunnel && tunnel_) tunnel_->shutdown_write();
}

void ProxyExchange::on_request_complete() {
  request_complete_ = true;
  if (phase_ == Phase::Done) return;
  if (h2_) {
    h2_->end(request_trailers_);
  } else if (chunked_request_ && h2_fields_.empty()) {
    // RFC 9112 §7.1.2: the last chunk, the trailer fields, an empty line.
    std::string last(kLastChunkLine);
    for (const auto& h : request_trailers_) last += h.name + ": " + h.value + "\r\n";
    last += "\r\n";
    send_up(last);
  }
}

bool ProxyExchange::request_body_congested() const {
  if (phase_ == Phase::Held) return true;
  if (h2_) return h2_->buffered_bytes() > upstream::kWriteHighWatermark;
  if (tunnel_) return tunnel_->buffered_bytes() > upstream::kWriteHighWatermark;
  return conn_ && conn_->buffered_bytes() > upstream::kWriteHighWatermark;
}

void ProxyExchange::on_output_drained() {
  if (phase_ == Phase::Done) return;
  if (conn_) conn_->resume_reading();
  if (h2_) h2_->resume_reading();
  if (tunnel_) tunnel_->resume_reading();
}

void ProxyExchange::pause_upstream() {
  if (conn_) conn_->pause_reading();
  if (h2_) h2_->pause_reading();
  if (tunnel_) tunnel_->pause_reading();
}

void ProxyExchange::cancel() {
  if (phase_ != Phase::Done) transition(phase_, Phase::Done);
  drop_encoder();  // the codec state goes now, not with the deferred delete
  drop_connection();
}

void ProxyExchange::drop_encoder() {
  claim_ = {};
  encoder_.reset();
}

void ProxyExchange::drop_connection() {
  upstream::UpstreamTunnel::retire(tunnel_);
  if (h2_) {
    h2_->detach();
    h2_->close();
    LoopContext::of(loop_).defer_delete(std::move(h2_));
  }
  if (!conn_) return;
  conn_->detach();
  conn_->close();
  LoopContext::of(loop_).defer_delete(std::move(conn_));
}

HeaderVars ProxyExchange::header_vars_now() const {
  return record_ != nullptr ? header_vars(sink_->connection_info(), *record_) : HeaderVars{};
}

double ProxyExchange::ms_since(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

void ProxyExchange::on_upstream_connected() {
  transition(phase_, Phase::AwaitingHead);
  stats_.connect_ms = ms_since(attempt_start_);
}

void ProxyExchange::on_upstream_head(ResponseHead&& head, bool informational) {
  if (phase_ == Phase::Done) return;
  if (head.status == 101 && !switches_to(head, upgrade_)) {
    // Anything else would be passed on as the protocol the client asked for.
    on_upstream_error(upstream::UpstreamFailure::InvalidResponse,
                      make_error(Errc::Protocol, "upstream's 101 does not switch to the protocol the request asked for"));
    return;
  }
  strip_response_headers(head.headers);
  if (informational) {
    // Bounded: an upstream streaming 1xx forever must not grow our buffers.
    if (++informational_ > kMaxInformational) {
      on_upstream_error(upstream::UpstreamFailure::InvalidResponse,
                        make_error(Errc::Protocol, "upstream sent too many 1xx responses"));
      return;
    }
    // The proxy answered Expect: 100-continue itself and never forwards Expect.
    if (head.status != 100) sink_->send_informational(head);
    if (sink_->output_congested()) pause_upstream();
    return;
  }
  if (head.status == 425 && early_line_ != std::string::npos && replay_state_ == Replay::Whole) {
    // RFC 8470 §5.2: the upstream wants the request after the handshake.
    // Once it completed, send it again without Early-Data; the client sees
    // the real answer, never this 425.
    stats_.too_early_retried = true;
    drop_connection();
    strip_early_data_line();
    if (sink_->connection_info().early_data) {
      transition(phase_, Phase::Held);
    } else {
      attempt(pool_, true);
    }
    return;
  }
  if (replay_state_ != Replay::Lost) lose_replay();
  stats_.status = head.status;
  if (head.status == 101) {
    // Only an Upgrade request's connection lets a 101 through
    // (UpstreamConnection::attach); the client gets the protocol it asked for.
    transition(phase_, Phase::Tunnel);
    if (response_edit_ != nullptr) apply_edit(head.headers, *response_edit_, header_vars_now());
    // No header rule applies after this head: nothing of the request's
    // record is read any more (the session frees its head fields now).
    record_ = nullptr;
    response_edit_ = nullptr;
    sink_->open_tunnel(head, upgrade_);
    return;
  }
  transition(phase_, Phase::Streaming);
  if (response_edit_ != nullptr) apply_edit(head.headers, *response_edit_, header_vars_now());
  if (grpc_) stats_.grpc_status = grpc_status_of(head.headers);  // a trailers-only response's
  // An HTTP/2 response that ended with its HEADERS (a zero length, no
  // trailers to follow) stays bodiless: gRPC's trailers-only form. One that
  // did not end the stream keeps its end open for the trailers, even with a
  // content-length: 0 (the client's HEADERS must not carry END_STREAM).
  bool has_body =
      !response_has_no_body(method_, head.status) && !(h2_ && head.content_length == 0 && !head.trailers_may_follow);
  if (compression_ != nullptr) {
    switch (judge_response(*compression_, method_, head, has_body && accepted_.has_value())) {
      case CompressionVerdict::Untouched:
        break;
      case CompressionVerdict::VaryOnly:
        add_vary_accept_encoding(head.headers);
        break;
      case CompressionVerdict::Compress:
        encoder_ = make_content_encoder(*accepted_, compression_level(*compression_, *accepted_), head.content_length);
        if (encoder_) {
          bool admitted = false;
          claim_ = CompressionClaim::admit(budget_, *encoder_, compression_->max_memory, admitted);
          if (!admitted) encoder_.reset();  // the worker's codecs hold max_memory already
        }
        if (encoder_) {
          mark_compressed(head, *accepted_);
          stats_.content_encoding = coding_name(*accepted_);
        } else {
          add_vary_accept_encoding(head.headers);  // no memory for a codec: the identity body
        }
        break;
    }
  }
  sink_->send_response_head(head, has_body);
}

namespace {
// The encoders' output, handed to the sink (which copies it) at once: one
// buffer per worker thread, not one per response.
std::string& encoded_scratch() {
  thread_local std::string scratch;
  scratch.clear();
  return scratch;
}
}  // namespace

bool ProxyExchange::send_encoded(bool ok, const std::string& out) {
  if (!ok) {
    drop_encoder();
    const ConnectionInfo& info = sink_->connection_info();
    log::warn("conn={} client={}:{}: response compression failed (out of memory): response cut short", info.id,
              info.remote_addr, info.remote_port);
    fail(0, "response compression failed");
    return false;
  }
  if (!out.empty()) sink_->send_response_body(out);
  return true;
}

void ProxyExchange::on_upstream_body(std::string_view data) {
  if (phase_ == Phase::Done) return;
  if (encoder_) {
    std::string& out = encoded_scratch();
    if (!send_encoded(encoder_->write(data, out), out)) return;
    if (encoder_) claim_.follow(*encoder_);  // the send may have cancelled the exchange
  } else {
    sink_->send_response_body(data);
  }
  if (sink_->output_congested()) pause_upstream();
}

void ProxyExchange::on_upstream_read_end() {
  if (phase_ != Phase::Streaming || !encoder_) return;
  // The read is used up: what the codec holds goes out now, so a streamed
  // response (events, progress) reaches the client as the upstream sends it.
  std::string& out = encoded_scratch();
  if (!send_encoded(encoder_->flush(out), out)) return;
  if (encoder_) claim_.follow(*encoder_);
  if (sink_->output_congested()) pause_upstream();
}

void ProxyExchange::on_upstream_trailers(std::vector<Header>&& trailers) {
  if (phase_ == Phase::Done) return;
  // Fields a sender must not put in trailers (RFC 9110 §6.5.1) go, as does
  // a section with a malformed field: nothing ambiguous reaches the client.
  for (const auto& h : trailers) {
    if (!valid_field_name(h.name) || !valid_field_value(h.value)) return;
  }
  strip_response_headers(trailers);
  std::erase_if(trailers, [](const Header& h) {
    return h.token == HeaderToken::Host || iequals(h.name, "content-type") || iequals(h.name, "content-encoding") ||
           iequals(h.name, "set-cookie");
  });
  if (grpc_) {
    if (auto status = grpc_status_of(trailers)) stats_.grpc_status = status;
  }
  if (!trailers.empty()) sink_->send_trailers(trailers);
}

void ProxyExchange::on_upstream_complete() {
  if (phase_ == Phase::Done) return;
  if (encoder_) {
    std::string& out = encoded_scratch();
    if (!send_encoded(encoder_->finish(out), out)) return;
    if (encoder_) claim_.complete(*encoder_);
    drop_encoder();
  }
  transition(phase_, Phase::Done);
  stats_.response_ms = ms_since(attempt_start_);
  if (h2_ || tunnel_) drop_connection();  // an h2 connection carries on with the other streams
  if (conn_) {
    if (request_complete_ && conn_->reusable() && upgrade_.empty()) {
      pool_->release(std::move(conn_));
    } else {
      drop_connection();
    }
  }
  sink_->end_response();
}

void ProxyExchange::on_upstream_tunnel(std::unique_ptr<upstream::UpstreamTunnel> tunnel) {
  tunnel_ = std::move(tunnel);
  // The connection still passes on the 101 and what followed it, then goes.
  LoopContext::of(loop_).defer_delete(std::move(conn_));
}

void ProxyExchange::on_upstream_writable() {
  if (phase_ != Phase::Done) sink_->on_request_body_writable();
}

}  // namespace tlsfront::http
