#include "data/http/proxy_exchange.h"

#include <algorithm>

#include "data/http/header_plan.h"
#include "data/http/response_compression.h"
#include "data/upstream/hash_key.h"
#include "log/log.h"
#include "message/error_response.h"
#include "message/grpc.h"
#include "message/header_rewrite.h"
#include "metrics/counters.h"

namespace tlsfront::http {
namespace {
constexpr size_t kMaxReplayBytes = 64 * 1024;
constexpr int kMaxInformational = 8;
}  // namespace

namespace {
// The request head as the group's protocol sends it, the route's
// request_headers rules applied (their variables read now).
upstream::UpstreamRequestHead encode_head(ExchangeSink* sink, const upstream::UpstreamGroup& group,
                                          const RequestHead& head, const ExchangeHeaders& headers) {
  const ConnectionInfo& info = sink->connection_info();
  const HeaderVars vars = headers.record != nullptr ? header_vars(info, *headers.record) : HeaderVars{};
  UpstreamRequestOptions opts;
  opts.client_addr = info.remote_addr;
  opts.real_ip = headers.client_addr;
  opts.scheme = scheme_name(info.scheme);
  opts.default_host = group.config().name;
  opts.close = group.config().keepalive == 0;
  opts.upstream_tls = group.config().tls.enabled;
  opts.request_id_header = headers.request_id_header;
  opts.request_id = headers.request_id;
  if (headers.rules != nullptr && !headers.rules->request.empty()) {
    opts.edit = &headers.rules->request;
    opts.vars = &vars;
  }
  return upstream::UpstreamRequestHead(group.config().protocol, head, opts, headers.early == EarlyData::Send);
}
}  // namespace

ProxyExchange::ProxyExchange(uv_loop_t* loop, ExchangeSink* sink, upstream::UpstreamGroup* group,
                             const RequestHead& head, const ExchangeHeaders& headers,
                             const config::Compression* compression, CompressionBudget* budget)
    : Exchange(loop),
      sink_(sink),
      group_(group),
      record_(headers.record),
      method_(head.method),
      idempotent_(head.idempotent()),
      upgrade_(head.upgrade),
      extended_connect_(head.extended_connect),
      early_(headers.early),
      grpc_(is_grpc(head)),
      head_(encode_head(sink, *group, head, headers)),
      replay_state_(!head.chunked && head.content_length.value_or(0) <= kMaxReplayBytes ? Replay::Whole
                                                                                          : Replay::Partial) {
  if (headers.rules != nullptr && !headers.rules->response.empty()) response_edit_ = &headers.rules->response;
  if (compression != nullptr && !compression->encodings.empty()) {
    compression_ = compression;
    budget_ = budget;
    accepted_ = accepted_coding(*compression, head);
  }
  stats_.protocol = config::protocol_name(group->config().protocol);
  if (group->config().balance == config::Balance::Hash) {
    hash_ = upstream::request_hash(group->config().hash, head,
                                   headers.client_addr.empty() ? std::string_view(sink->connection_info().remote_addr)
                                                               : headers.client_addr);
  }
}

ProxyExchange::~ProxyExchange() {
  drop_connection();
  count_load(false);
}

void ProxyExchange::count_load(bool on) {
  if (on == counted_ || !pool_) return;
  counted_ = on;
  if (on) {
    pool_->begin_request();
  } else {
    pool_->end_request();
  }
}

void ProxyExchange::retire(std::unique_ptr<ProxyExchange>& exchange, RequestRecord* record) {
  std::unique_ptr<Exchange> base(std::move(exchange));
  Exchange::retire(base, record);
}

void ProxyExchange::record_into(RequestRecord& record) {
  record.upstream = std::make_unique<UpstreamStats>(std::move(stats_));
}

std::unique_ptr<upstream::UpstreamTunnel> ProxyExchange::take_tunnel(std::unique_ptr<Exchange>& exchange,
                                                                     upstream::UpstreamHandler* handler,
                                                                     RequestRecord& record) {
  ProxyExchange* proxy = exchange ? exchange->as_proxy() : nullptr;
  if (proxy == nullptr || proxy->phase_ != Phase::Tunnel || !proxy->channel_) return nullptr;
  // In Phase::Tunnel the channel is the tunnel the 101 handed over
  // (on_upstream_tunnel comes before the 101's on_upstream_head).
  std::unique_ptr<upstream::UpstreamTunnel> tunnel(static_cast<upstream::UpstreamTunnel*>(proxy->channel_.release()));
  tunnel->set_handler(handler);
  tunnel->set_attempt_start(proxy->attempt_start_);
  Exchange::retire(exchange, &record);
  return tunnel;
}

void ProxyExchange::hold_limits(std::vector<ConcurrencySlot> slots, uint64_t wait_ms) {
  limit_slots_ = std::move(slots);
  limit_wait_ms_ = wait_ms;
}

void ProxyExchange::check_remote_limits(RemoteLimiter* limiter, const config::Config* config,
                                        const RequestLimits* limits, std::vector<std::pair<size_t, std::string>> checks,
                                        metrics::WorkerCounters* counters) {
  remote_ = std::make_unique<RemoteChecks>();
  remote_->limiter = limiter;
  remote_->config = config;
  remote_->limits = limits;
  remote_->counters = counters;
  remote_->checks = std::move(checks);
}

void ProxyExchange::start() {
  if (limit_wait_ms_ == 0 && !remote_) {
    go();
    return;
  }
  transition(phase_, Phase::Delayed);
  if (!remote_) {
    wait_then_go(limit_wait_ms_);
    return;
  }
  // Every check is sent before any answer is taken (answers come from the
  // loop, later); one refused at once fails open.
  remote_->self = std::make_shared<ProxyExchange*>(this);
  remote_->pending = remote_->checks.size();
  std::vector<size_t> refused;
  for (const auto& [zone, key] : remote_->checks) {
    std::weak_ptr<ProxyExchange*> weak = remote_->self;
    const size_t index = zone;
    const bool sent = remote_->limiter->check(remote_->config->limit_req[zone], key,
                                              [weak, index](std::optional<GcraVerdict> verdict) {
                                                if (auto self = weak.lock()) (*self)->on_remote_limit(index, verdict);
                                              });
    if (!sent) refused.push_back(zone);
  }
  for (size_t zone : refused) {
    if (phase_ != Phase::Delayed) return;
    on_remote_limit(zone, std::nullopt);
  }
}

void ProxyExchange::on_remote_limit(size_t zone, std::optional<GcraVerdict> verdict) {
  if (phase_ != Phase::Delayed || !remote_) return;
  RateZone& rate = *remote_->limits->req[zone];
  const config::LimitReqZone& z = remote_->config->limit_req[zone];
  if (!verdict) {
    rate.failed_open.fetch_add(1, std::memory_order_relaxed);
  } else if (!verdict->pass) {
    rate.rejected.fetch_add(1, std::memory_order_relaxed);
    if (remote_->counters) remote_->counters->count_limited(429);
    stats_.limit = z.name;
    refuse_limited(verdict->retry_after_ns);
    return;
  } else if (verdict->wait_ns > 0) {
    rate.delayed.fetch_add(1, std::memory_order_relaxed);
    stats_.limit = z.name;
    limit_wait_ms_ = std::max(limit_wait_ms_, (verdict->wait_ns + 999'999) / 1'000'000);
  } else {
    rate.passed.fetch_add(1, std::memory_order_relaxed);
  }
  if (--remote_->pending > 0) return;
  remote_.reset();  // its callbacks find nothing from here on
  if (limit_wait_ms_ == 0) {
    go();
    if (phase_ != Phase::Done && !request_body_congested()) sink_->on_request_body_writable();
    return;
  }
  wait_then_go(limit_wait_ms_);
}

void ProxyExchange::refuse_limited(uint64_t retry_after_ns) {
  transition(phase_, Phase::Done);
  ResponseHead head;
  head.status = 429;
  const std::string body = make_error_body(429);
  head.headers.push_back(Header{"Server", "tlsfront", HeaderToken::Other});
  head.headers.push_back(Header{"Content-Type", "text/plain", HeaderToken::Other});
  head.headers.push_back(
      Header{"Retry-After", std::to_string(std::max<uint64_t>(1, (retry_after_ns + 999'999'999) / 1'000'000'000)),
             HeaderToken::Other});
  head.content_length = body.size();
  const bool has_body = method_ != "HEAD";
  sink_->send_response_head(std::move(head), has_body);
  if (has_body) sink_->send_response_body(body);
  sink_->end_response();
}

void ProxyExchange::wait_then_go(uint64_t ms) {
  delay_timer_ = std::make_unique<LazyTimer>();
  delay_timer_->init(
      loop_,
      [](void* self) {
        auto* e = static_cast<ProxyExchange*>(self);
        if (e->phase_ != Phase::Delayed) return;
        e->go();
        if (e->phase_ != Phase::Done && !e->request_body_congested()) e->sink_->on_request_body_writable();
      },
      this);
  delay_timer_->arm(std::chrono::milliseconds(ms));
}

void ProxyExchange::go() {
  if (sink_->connection_info().early_data) {
    if (early_ == EarlyData::Hold) {
      transition(phase_, Phase::Held);
      return;
    }
  } else {
    head_.unmark_early_data();  // the handshake completed before the request went up
  }
  begin();
}

void ProxyExchange::on_handshake_done() {
  if (phase_ != Phase::Held) return;
  head_.unmark_early_data();
  if (pool_ != nullptr) {
    attempt(pool_.get(), true);  // after a 425: the same server, a pooled connection welcome
  } else {
    begin();
  }
  if (phase_ != Phase::Done && !request_body_congested()) sink_->on_request_body_writable();
}

void ProxyExchange::begin() {
  if (grpc_ && !head_.http2()) {
    // gRPC needs HTTP/2 end to end (trailers, full-duplex streams).
    stats_.error = "grpc_needs_h2c";
    fail_grpc("upstream " + group_->config().name + " speaks HTTP/1.1; gRPC needs protocol = \"h2c\" or \"h2\"");
    return;
  }
  if (extended_connect_ && head_.http2()) {
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
  upstream::UpstreamPool* pool = group_->balancer().pick(tried_, hash_);
  if (!pool) {
    stats_.error = "no_live_upstreams";
    fail(502, "no live upstreams");
    return;
  }
  tried_.push_back(pool);
  attempt(pool, true);
}

void ProxyExchange::attempt(upstream::UpstreamPool* pool, bool allow_reuse) {
  if (pool_.get() != pool) {
    count_load(false);
    pool_ = pool->shared_from_this();
  }
  count_load(true);
  transition(phase_, Phase::Connecting);
  if (!stats_.addr.empty()) stats_.addr += ", ";
  stats_.addr += pool->address();
  attempt_start_ = std::chrono::steady_clock::now();
  // A request on_upstream_error() retries once on a fresh connection (the
  // backend closed a pooled one) skips the MSG_PEEK check, as nginx does.
  // Only a Whole replay buffer makes the retry certain: a Partial one may
  // still overflow after this choice, and the retry would then be impossible.
  const bool check_open = !(idempotent_ && replay_state_ == Replay::Whole);
  auto lease = pool->open(this, head_, allow_reuse, check_open);
  if (!lease) {
    on_upstream_error(upstream::UpstreamFailure::ConnectFailed, lease.take_error());
    return;
  }
  channel_ = std::move(lease->channel);
  stats_.connection_reused = lease->reused;
  if (reused()) {
    stats_.connect_ms = 0.0;
    transition(phase_, Phase::AwaitingHead);
  }
  if (!replay_.empty()) channel_->send_body(replay_);
  if (request_complete_) channel_->end(request_trailers_);
  // Held, the request body was kept whatever its size (bounded by what the
  // session read before it stopped: request_body_congested()).
  if (replay_state_ != Replay::Lost && replay_.size() > kMaxReplayBytes) lose_replay();
  // A request that cannot be retried goes out now, not at the end of the
  // iteration: the peek said the pooled connection was open a moment ago,
  // and a backend's idle close landing in between would cost a 502.
  if (reused() && check_open) channel_->write_now();
}

void ProxyExchange::send_up(std::string_view bytes) {
  if (waiting()) {  // no connection yet: all of it waits here
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
  if (channel_) channel_->send_body(bytes);
}

void ProxyExchange::lose_replay() {
  transition(replay_state_, Replay::Lost);
  std::string().swap(replay_);
}

void ProxyExchange::on_request_body(std::string_view data) {
  if (phase_ == Phase::Done || phase_ == Phase::Tunnel || data.empty()) return;  // a tunnel's: on_tunnel_data
  send_up(data);
}

void ProxyExchange::on_tunnel_data(std::string_view data) {
  if (phase_ == Phase::Tunnel && channel_) channel_->send_body(data);
}

void ProxyExchange::on_request_trailers(std::vector<Header>&& trailers) {
  // An HTTP/1.1 request with a Content-Length has no trailer section.
  if (!head_.http2() && !head_.chunked()) return;
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
  if (phase_ == Phase::Tunnel && channel_) channel_->end({});
}

void ProxyExchange::on_request_complete() {
  request_complete_ = true;
  // Held, the end goes with the attempt; a tunnel's end is on_tunnel_end.
  if (phase_ == Phase::Done || phase_ == Phase::Tunnel || !channel_) return;
  channel_->end(request_trailers_);
}

bool ProxyExchange::request_body_congested() const {
  if (waiting()) return true;
  return channel_ && channel_->buffered_bytes() > upstream::kWriteHighWatermark;
}

void ProxyExchange::on_output_drained() {
  if (phase_ != Phase::Done && channel_) channel_->resume_reading();
}

void ProxyExchange::pause_upstream() {
  if (channel_) channel_->pause_reading();
}

void ProxyExchange::cancel() {
  if (phase_ != Phase::Done) transition(phase_, Phase::Done);
  delay_timer_.reset();
  remote_.reset();
  drop_encoder();  // the codec state goes now, not with the deferred delete
  drop_connection();
  count_load(false);
}

void ProxyExchange::drop_encoder() {
  claim_ = {};
  encoder_.reset();
}

void ProxyExchange::drop_connection() { upstream::UpstreamChannel::retire(channel_); }

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
  if (head.status == 425 && head_.early_data_marked() && replay_state_ == Replay::Whole) {
    // RFC 8470 §5.2: the upstream wants the request after the handshake.
    // Once it completed, send it again without Early-Data; the client sees
    // the real answer, never this 425.
    stats_.too_early_retried = true;
    drop_connection();
    count_load(false);
    head_.unmark_early_data();
    if (sink_->connection_info().early_data) {
      transition(phase_, Phase::Held);
    } else {
      attempt(pool_.get(), true);
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
      !response_has_no_body(method_, head.status) && !(head_.http2() && head.content_length == 0 && !head.trailers_may_follow);
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
  sink_->send_response_head(std::move(head), has_body);
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
  group_->balancer().on_success(pool_.get(), *stats_.response_ms, stats_.status);
  count_load(false);
  // An HTTP/1.1 connection goes back to its pool when it can carry another
  // request; an HTTP/2 one carries on with its other streams.
  upstream::UpstreamChannel::finish(channel_, request_complete_);
  sink_->end_response();
}

void ProxyExchange::on_upstream_tunnel(std::unique_ptr<upstream::UpstreamTunnel> tunnel) {
  // The connection still passes on the 101 and what followed it, then goes.
  LoopContext::of(loop_).defer_delete(std::move(channel_));
  channel_ = std::move(tunnel);
}

void ProxyExchange::on_upstream_writable() {
  if (phase_ != Phase::Done) sink_->on_request_body_writable();
}

}  // namespace tlsfront::http
