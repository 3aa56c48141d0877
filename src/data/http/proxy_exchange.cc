#include "data/http/proxy_exchange.h"

#include <cstdio>

#include "message/header_rewrite.h"
#include "log/log.h"

namespace tlsfront::http {
namespace {
constexpr size_t kMaxReplayBytes = 64 * 1024;
constexpr size_t kUpstreamHighWatermark = 64 * 1024;
constexpr int kMaxInformational = 8;
}  // namespace

ProxyExchange::ProxyExchange(uv_loop_t* loop, ExchangeSink* sink, upstream::UpstreamGroup* group,
                             const RequestHead& head)
    : loop_(loop),
      sink_(sink),
      group_(group),
      method_(head.method),
      chunked_request_(head.chunked),
      idempotent_(head.idempotent()),
      start_(std::chrono::steady_clock::now()) {
  const ConnectionInfo& info = sink->connection_info();
  UpstreamRequestOptions opts;
  opts.client_addr = info.remote_addr;
  opts.default_host = group->config().name;
  opts.close = group->config().keepalive == 0;
  append_upstream_request_head(replay_, head, opts);
  replay_certain_ = !head.chunked && replay_.size() + head.content_length.value_or(0) <= kMaxReplayBytes;
}

ProxyExchange::~ProxyExchange() { drop_connection(); }

void ProxyExchange::start() {
  upstream::UpstreamPool* pool = group_->pick(tried_);
  if (!pool) {
    fail(502, "no live upstreams");
    return;
  }
  tried_.push_back(pool);
  attempt(pool, true);
}

void ProxyExchange::attempt(upstream::UpstreamPool* pool, bool allow_reuse) {
  pool_ = pool;
  connected_ = false;
  if (!stats_.addr.empty()) stats_.addr += ", ";
  stats_.addr += pool->address();
  attempt_start_ = std::chrono::steady_clock::now();
  // A request on_upstream_error() retries once on a fresh connection (the
  // backend closed a pooled one) skips the MSG_PEEK check, as nginx does.
  // replay_valid_ alone is not enough: a body still to come may overflow the
  // replay buffer after this choice, and the retry would then be impossible.
  const bool check_open = !(idempotent_ && replay_valid_ && replay_certain_);
  auto lease = pool->acquire(allow_reuse, check_open);
  if (!lease) {
    on_upstream_error(lease.take_error());
    return;
  }
  conn_ = std::move(lease->conn);
  reused_ = lease->reused;
  connected_ = reused_;
  stats_.connection_reused = reused_;
  if (reused_) stats_.connect_ms = 0.0;
  conn_->attach(this, method_ == "HEAD");
  conn_->send(replay_);
  // A request that cannot be retried goes out now, not at the end of the
  // iteration: the peek said the pooled connection was open a moment ago,
  // and a backend's idle close landing in between would cost a 502.
  if (reused_ && check_open) conn_->write_now();
}

void ProxyExchange::send_up(std::string_view bytes) {
  if (replay_valid_) {
    if (replay_.size() + bytes.size() <= kMaxReplayBytes) {
      replay_.append(bytes);
    } else {
      replay_valid_ = false;
      replay_.clear();
      replay_.shrink_to_fit();
    }
  }
  if (conn_) conn_->send(bytes);
}

void ProxyExchange::on_request_body(std::string_view data) {
  if (done_ || data.empty()) return;
  if (chunked_request_) {
    char size_line[24];
    int n = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", data.size());
    send_up(std::string_view(size_line, static_cast<size_t>(n)));
    send_up(data);
    send_up("\r\n");
  } else {
    send_up(data);
  }
}

void ProxyExchange::on_request_complete() {
  request_complete_ = true;
  if (done_) return;
  if (chunked_request_) send_up("0\r\n\r\n");
}

bool ProxyExchange::request_body_congested() const {
  return conn_ && conn_->buffered_bytes() > kUpstreamHighWatermark;
}

void ProxyExchange::on_output_drained() {
  if (conn_ && !done_) conn_->resume_reading();
}

void ProxyExchange::cancel() {
  done_ = true;
  drop_connection();
}

void ProxyExchange::drop_connection() {
  if (!conn_) return;
  conn_->detach();
  conn_->close();
  LoopContext::of(loop_).defer_delete(std::move(conn_));
}

void ProxyExchange::fail(int status, std::string_view reason) {
  if (done_) return;
  done_ = true;
  drop_connection();
  sink_->fail_response(status, reason);
}

double ProxyExchange::ms_since(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

void ProxyExchange::on_upstream_connected() {
  connected_ = true;
  stats_.connect_ms = ms_since(attempt_start_);
}

namespace {

// What the client would receive must be well-formed whatever the upstream
// sent: llhttp 8.1 accepts a bare CR in the reason phrase and names like
// "X A" in responses.
bool valid_response_head(const ResponseHead& head) {
  if (head.status < 100 || head.status > 599) return false;
  for (unsigned char c : head.reason) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  for (const auto& h : head.headers) {
    if (!valid_field_name(h.name) || !valid_field_value(h.value)) return false;
  }
  return true;
}

}  // namespace

void ProxyExchange::on_upstream_head(ResponseHead&& head, bool informational) {
  if (done_) return;
  if (!valid_response_head(head)) {
    on_upstream_error(make_error(Errc::Protocol, "upstream sent an invalid response head"));
    return;
  }
  strip_response_headers(head.headers);
  if (informational) {
    // Bounded: an upstream streaming 1xx forever must not grow our buffers.
    if (++informational_ > kMaxInformational) {
      on_upstream_error(make_error(Errc::Protocol, "upstream sent too many 1xx responses"));
      return;
    }
    // The proxy answered Expect: 100-continue itself and never forwards Expect.
    if (head.status != 100) sink_->send_informational(head);
    if (conn_ && sink_->output_congested()) conn_->pause_reading();
    return;
  }
  head_sent_ = true;
  replay_valid_ = false;
  replay_.clear();
  stats_.status = head.status;
  bool has_body = !response_has_no_body(method_, head.status);
  sink_->send_response_head(head, has_body);
}

void ProxyExchange::on_upstream_body(std::string_view data) {
  if (done_) return;
  sink_->send_response_body(data);
  if (conn_ && sink_->output_congested()) conn_->pause_reading();
}

void ProxyExchange::on_upstream_trailers(std::vector<Header>&& trailers) {
  if (done_) return;
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
  if (!trailers.empty()) sink_->send_trailers(trailers);
}

void ProxyExchange::on_upstream_complete() {
  if (done_) return;
  done_ = true;
  response_complete_ = true;
  stats_.response_ms = ms_since(attempt_start_);
  if (conn_) {
    if (request_complete_ && conn_->reusable()) {
      pool_->release(std::move(conn_));
    } else {
      drop_connection();
    }
  }
  sink_->end_response();
}

void ProxyExchange::on_upstream_error(Error error) {
  if (done_) return;
  const uint64_t written = conn_ ? conn_->bytes_written() : 0;
  const bool response_started = conn_ && conn_->response_started();
  if (conn_) drop_connection();
  const bool timeout = error.code == Errc::Timeout;
  const ConnectionInfo& info = sink_->connection_info();
  log::warn("conn={} client={}:{} upstream={}: {}", info.id, info.remote_addr, info.remote_port,
            pool_ ? pool_->address() : std::string("-"), error.message());
  if (head_sent_) {
    fail(0, error.message());
    return;
  }
  if (!connected_) {
    // Nothing reached this server: any method may go to the next one.
    pool_->mark_failed();
    if (replay_valid_) {
      if (upstream::UpstreamPool* next = group_->pick(tried_)) {
        pool_->count_retry();
        tried_.push_back(next);
        attempt(next, true);
        return;
      }
    }
  } else if (reused_ && retries_ == 0 && replay_valid_ && error.code == Errc::Upstream && !response_started &&
             (idempotent_ || written == 0)) {
    // A pooled connection the backend had already closed (reset or EOF before
    // any response byte; not a timeout, which may mean the request is being
    // processed): retry once on a fresh connection (RFC 9110 §9.2.2 allows it
    // for idempotent requests, and for any request none of which was written).
    ++retries_;
    pool_->count_retry();
    attempt(pool_, false);
    return;
  }
  fail(timeout ? 504 : 502, error.message());
}

void ProxyExchange::on_upstream_writable() {
  if (!done_) sink_->on_request_body_writable();
}

void fill_access_log_entry(log::AccessLogEntry& e, const ConnectionInfo& info, const ProxyExchange* exchange) {
  e.remote_addr = info.remote_addr;
  e.remote_port = info.remote_port;
  e.sni = info.sni;
  e.alpn = info.alpn;
  e.ssl_protocol = info.ssl_protocol;
  e.ssl_cipher = info.ssl_cipher;
  e.ssl_session_reused = info.ssl_session_reused;
  e.ssl_resumption = info.ssl_resumption;
  e.connection_id = info.id;
  e.connection_requests = info.requests;
  if (exchange) {
    const UpstreamStats& s = exchange->stats();
    e.upstream_addr = s.addr;
    e.upstream_status = s.status;
    e.upstream_connect_ms = s.connect_ms;
    e.upstream_response_ms = s.response_ms;
    e.upstream_connection_reused = s.connection_reused;
  }
}

}  // namespace tlsfront::http
