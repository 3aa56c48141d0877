// ProxyExchange: one client request proxied to one upstream: picks a server,
// takes a pooled keepalive connection (or opens one), streams the request body
// up and the response body down with backpressure on both sides, retries once
// on a stale keepalive connection, and records what the access log reports.
// One per HTTP/1.1 request or HTTP/2 stream; talks to its session
// only through ExchangeSink.
// Thread affinity: owning worker only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/http/exchange_sink.h"
#include "log/access_log.h"
#include "message/request.h"
#include "data/upstream/upstream_pool.h"
#include "util/loop_context.h"

namespace tlsfront::http {

struct UpstreamStats {
  std::string addr;  // "127.0.0.1:9000", or "a, b" after a retry (as nginx)
  int status = 0;
  std::optional<double> connect_ms;
  std::optional<double> response_ms;
  std::optional<bool> connection_reused;
};

class ProxyExchange : public Deletable, private upstream::UpstreamConnection::Handler {
 public:
  // `sink` and `group` are borrowed and outlive the exchange (the session
  // defers the exchange's deletion; groups live as long as the worker).
  ProxyExchange(uv_loop_t* loop, ExchangeSink* sink, upstream::UpstreamGroup* group, const RequestHead& head);
  ~ProxyExchange() override;

  // Sends the request head upstream. Failures are reported through the sink.
  void start();
  // Request body bytes as decoded by the client parser (chunk framing removed).
  void on_request_body(std::string_view data);
  void on_request_complete();
  // True while the upstream write queue is above its high watermark: the
  // session stops reading the client until ExchangeSink::on_request_body_writable.
  bool request_body_congested() const;
  // The client side drained: resume reading the upstream response.
  void on_output_drained();
  // The client went away or the session failed: close the upstream connection,
  // make no further sink calls.
  void cancel();

  const UpstreamStats& stats() const { return stats_; }
  bool response_complete() const { return response_complete_; }

 private:
  void attempt(upstream::UpstreamPool* pool, bool allow_reuse);
  void send_up(std::string_view bytes);
  void fail(int status, std::string_view reason);
  void drop_connection();
  double ms_since(std::chrono::steady_clock::time_point t) const;

  // UpstreamConnection::Handler
  void on_upstream_connected() override;
  void on_upstream_head(ResponseHead&& head, bool informational) override;
  void on_upstream_body(std::string_view data) override;
  void on_upstream_trailers(std::vector<Header>&& trailers) override;
  void on_upstream_complete() override;
  void on_upstream_error(Error error) override;
  void on_upstream_writable() override;

  uv_loop_t* loop_;
  ExchangeSink* sink_;
  upstream::UpstreamGroup* group_;
  std::string method_;
  bool chunked_request_;
  bool idempotent_;
  std::unique_ptr<upstream::UpstreamConnection> conn_;
  upstream::UpstreamPool* pool_ = nullptr;
  std::vector<upstream::UpstreamPool*> tried_;
  // Everything sent upstream so far, kept while small so a failed attempt can
  // be replayed on a new connection.
  std::string replay_;
  bool replay_valid_ = true;
  // The whole request (head and a Content-Length body) fits in replay_, so a
  // failure on a pooled connection can always be retried: only then may
  // acquire() skip its liveness peek. A chunked or larger body may overflow
  // replay_ after the connection was chosen, and then no retry is possible.
  bool replay_certain_ = false;
  bool connected_ = false;
  bool reused_ = false;
  int retries_ = 0;
  int informational_ = 0;
  bool request_complete_ = false;
  bool head_sent_ = false;
  bool response_complete_ = false;
  bool done_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point attempt_start_;
  UpstreamStats stats_;
};

// The access-log fields every exchange shares, from its connection (`info`)
// and its upstream side (`exchange`, null when none was started); the session
// adds the request's own (time, method, path, status, bytes, stream_id, ...).
// The entry borrows from both. Thread affinity: owning worker.
void fill_access_log_entry(log::AccessLogEntry& e, const ConnectionInfo& info, const ProxyExchange* exchange);

}  // namespace tlsfront::http
