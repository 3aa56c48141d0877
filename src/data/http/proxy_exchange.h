// ProxyExchange: one client request proxied to one upstream: picks a server,
// takes a pooled keepalive connection (or opens one), streams the request body
// up and the response body down with backpressure on both sides, retries once
// on a stale keepalive connection, and records what the access log reports.
// One per HTTP/1.1 request or HTTP/2 stream; talks to its session
// only through ExchangeSink. With its route's compression on, it compresses
// the response body on the way (data/http/response_compression.h): each
// upstream body chunk is encoded as it arrives and the output flushed when
// a read from the backend is parsed, so memory stays the codec's state and
// backpressure acts on the compressed bytes as on any body. An Upgrade
// request (RequestHead::upgrade) goes on a new connection, and a 101 makes
// the exchange a tunnel (Phase::Tunnel) until either side closes.
//
// The exchange speaks to every upstream protocol through one
// upstream::UpstreamChannel, opened by UpstreamPool::open with the request
// head as the group's protocol writes it (upstream::UpstreamRequestHead):
// an HTTP/1.1 connection, a stream of a multiplexed HTTP/2 connection (h2c
// or h2: the head as fields, the body as DATA, the client's request
// trailers after it), or the tunnel a 101 leaves; streams the upstream did not process
// (GOAWAY, REFUSED_STREAM: RFC 9113 §6.8, §8.7) are retried on another
// connection, any method, while the replay buffer holds the body.
// gRPC (a request whose content-type is application/grpc*): what cannot be
// served — an http/1.1 upstream, no server reachable, an upstream failing
// mid-call — ends as a gRPC status, grpc-status 14 (UNAVAILABLE) with a
// grpc-message, in trailers-only form (HTTP 200) before the response head
// and as trailers after it, never a bare 502 or a reset (as Envoy does;
// gRPC over HTTP/2, "Responses").
// Thread affinity: owning worker only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/http/compression_budget.h"
#include "data/http/exchange.h"
#include "data/http/exchange_sink.h"
#include "data/http/request_limits.h"
#include "data/http/request_record.h"
#include "data/upstream/request_head.h"
#include "data/upstream/upstream_channel.h"
#include "data/upstream/upstream_pool.h"
#include "message/content_encoder.h"
#include "message/header_edit.h"
#include "message/request.h"
#include "util/concurrency_table.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"
#include "util/state.h"

namespace tlsfront::metrics {
struct WorkerCounters;
}

namespace tlsfront::http {

struct RouteHeaders;

// How a request read in TLS early data goes up (RFC 8470):
//   None  not in early data: as any request
//   Send  a replay-safe request (an early_data_methods method, no body): now,
//         with Early-Data: 1 (§5.1) unless the client sent its own
//   Hold  any other: held until the handshake completes, then sent as a
//         normal request (the client waits one round trip, never sees a 425)
enum class EarlyData { None, Send, Hold };

// The header rules an exchange applies (data/http/header_plan.h) and what
// they need; `record` and the views are borrowed from the request's record
// and connection, which outlive the exchange. The variables (header_vars)
// are read from the record when a rule is applied, not kept. Default: no
// rules, no request ID.
struct ExchangeHeaders {
  const RouteHeaders* rules = nullptr;
  const RequestRecord* record = nullptr;  // null: every variable is ""
  std::string_view request_id_header;
  std::string_view request_id;
  // RequestRecord::client_addr (X-Real-IP); "": the connection's.
  std::string_view client_addr;
  EarlyData early = EarlyData::None;
};

class ProxyExchange final : public Exchange, private upstream::UpstreamConnection::Handler {
 public:
  // Where the exchange is (docs/ARCHITECTURE.md, "The request path"):
  //   Created      -> Connecting (start) | Done (no server to try)
  //   Connecting   -> AwaitingHead (connected, or a pooled connection) |
  //                   Connecting (connect failed: the next server) | Done
  //   AwaitingHead -> Streaming (final response head passed on) |
  //                   Connecting (a pooled connection failed: retried once on a new one) | Done
  //   Streaming    -> Done
  //   AwaitingHead -> Tunnel (a 101 answered an Upgrade request: both sides
  //                   are a byte tunnel, on a connection that is never pooled)
  //   Tunnel       -> Done (either side closed, or the tunnel was cancelled)
  //   Created      -> Held (start() of an EarlyData::Hold request while the
  //                   client's handshake is incomplete)
  //   AwaitingHead -> Held (a 425 answered a request sent in early data and
  //                   the handshake is still incomplete) | Connecting (the
  //                   same, handshake complete: sent again without Early-Data)
  //   Held         -> Connecting (on_handshake_done) | Done (cancelled)
  //   Created      -> Delayed (start() with a limit_req wait: hold_limits)
  //   Delayed      -> Connecting | Held (the wait ended: as start() would
  //                   go on) | Done (cancelled)
  // Done: the response completed, failed, or the exchange was cancelled; no
  // sink call is made after it.
  enum class Phase { Created, Connecting, AwaitingHead, Streaming, Tunnel, Held, Delayed, Done };
  // What the replay buffer holds (everything sent upstream so far, so a
  // failed attempt can be replayed on a new connection):
  //   Whole   -> Lost   the whole request body (a Content-Length) fits:
  //                     a retry is always possible until the response head
  //   Partial -> Lost   held so far; a body still to come may overflow it
  // Lost: overflowed, or the response head arrived; no retry from here on.
  enum class Replay { Whole, Partial, Lost };

  // `sink` and `group` are borrowed and outlive the exchange (the session
  // retires the exchange before it goes; groups live as long as the worker).
  // `headers`: the route's request_headers rules shape the head sent up, its
  // response_headers rules the response head passed to the sink.
  // `compression`: the route's (borrowed from the Generation's config,
  // which outlives the exchange); null or no encodings: never compressed.
  // `budget`: the worker's, which an encoder claims its memory from (null:
  // unbounded).
  ProxyExchange(uv_loop_t* loop, ExchangeSink* sink, upstream::UpstreamGroup* group, const RequestHead& head,
                const ExchangeHeaders& headers = {}, const config::Compression* compression = nullptr,
                CompressionBudget* budget = nullptr);
  ~ProxyExchange() override;

  // Exchange::retire for a ProxyExchange held as one (unit tests).
  static void retire(std::unique_ptr<ProxyExchange>& exchange, RequestRecord* record = nullptr);
  // Phase::Tunnel, once the 101's read is over: the tunnel's upstream side
  // goes to `handler` (its events come there from now on; its response_ms()
  // counts from the exchange's last attempt), and the exchange is retired
  // into `record` as by retire(). Null, with the exchange left as it is, in
  // any other phase. Sessions drive their tunnels without the exchange.
  static std::unique_ptr<upstream::UpstreamTunnel> take_tunnel(std::unique_ptr<Exchange>& exchange,
                                                               upstream::UpstreamHandler* handler,
                                                               RequestRecord& record);

  // Before start(): the route's limit_conn slots, held until the exchange
  // goes, and a limit_req wait: start() then sends nothing before `wait_ms`
  // have passed on the loop's timers (the body waits as in Held).
  void hold_limits(std::vector<ConcurrencySlot> slots, uint64_t wait_ms);
  // Before start(): store = "redis" zones to ask first (LimitDecision::
  // remote), through `limiter`; the exchange waits in Delayed for every
  // answer, then sends the request, after the longest wait asked for, or
  // answers 429 with Retry-After itself. `counters` may be null.
  void check_remote_limits(RemoteLimiter* limiter, const config::Config* config, const RequestLimits* limits,
                           std::vector<std::pair<size_t, std::string>> checks, metrics::WorkerCounters* counters);
  // Sends the request head upstream (an EarlyData::Hold request in early
  // data: once on_handshake_done() is called). Failures are reported through
  // the sink.
  void start() override;
  // The client's TLS handshake completed: a Held request goes up now,
  // without Early-Data.
  void on_handshake_done() override;
  // Request body bytes as decoded by the client parser (chunk framing removed).
  void on_request_body(std::string_view data) override;
  // The client's request trailers (HTTP/2 clients: RFC 9113 §8.1), before
  // on_request_complete(). Forwarded to an h2c upstream, and to an
  // HTTP/1.1 upstream in the chunked request's trailer section (RFC 9112
  // §7.1.2); dropped when the request went up with a Content-Length (no
  // trailer section), or all of them when one is malformed.
  void on_request_trailers(std::vector<Header>&& trailers) override;
  void on_request_complete() override;
  // True while the upstream write queue is above its high watermark: the
  // session stops reading the client until ExchangeSink::on_request_body_writable.
  bool request_body_congested() const override;
  // Tunnel bytes from the client (after ExchangeSink::open_tunnel), sent up
  // as they are; the same backpressure as a request body.
  void on_tunnel_data(std::string_view data) override;
  // The client ended its side of the tunnel (HTTP/2 END_STREAM): a FIN to
  // the upstream once what it sent is written (RFC 9113 §8.5); the
  // upstream's bytes keep coming until its own close.
  void on_tunnel_end() override;
  // The client side drained: resume reading the upstream response.
  void on_output_drained() override;
  // The client went away or the session failed: close the upstream connection,
  // make no further sink calls. Idempotent.
  void cancel() override;

  ProxyExchange* as_proxy() override { return this; }
  const UpstreamStats& stats() const { return stats_; }
  Phase phase() const { return phase_; }

 private:
  // The upstream stats move into record.upstream.
  void record_into(RequestRecord& record) override;
  // Picks a server and attempts it (start() once nothing holds it).
  void begin();
  // start() after any limit_req wait: Held, or begin().
  void go();
  // Delayed for `ms` on the loop's timers, then go().
  void wait_then_go(uint64_t ms);
  // One store = "redis" zone answered (nullopt: it failed open).
  void on_remote_limit(size_t zone, std::optional<GcraVerdict> verdict);
  // A 429 with Retry-After, as the response (a redis zone refused).
  void refuse_limited(uint64_t retry_after_ns);
  // Held or Delayed: nothing went up yet, the body waits in replay_.
  bool waiting() const { return phase_ == Phase::Held || phase_ == Phase::Delayed; }
  void attempt(upstream::UpstreamPool* pool, bool allow_reuse);
  // Counts this exchange in (or out of) pool_'s outstanding requests, the
  // least_request balancer's load: in while an attempt runs there.
  void count_load(bool on);
  // The gRPC status answer (see the class comment); `reason` the grpc-message.
  void fail_grpc(std::string_view reason);
  void pause_upstream();
  // The current attempt's connection came from the pool.
  bool reused() const { return stats_.connection_reused.value_or(false); }
  void send_up(std::string_view bytes);
  void lose_replay();
  void fail(int status, std::string_view reason);
  // The codec and its claim go (the response continues or ends without it).
  void drop_encoder();
  void drop_connection();
  // Passes the encoder's output `out` (if any) to the sink; `ok`: what the
  // encoder call returned. False after a codec failure, which has cut the
  // response short.
  bool send_encoded(bool ok, const std::string& out);
  double ms_since(std::chrono::steady_clock::time_point t) const;
  // The variables of the header rules, read now from the record.
  HeaderVars header_vars_now() const;

  // UpstreamConnection::Handler
  void on_upstream_connected() override;
  void on_upstream_head(ResponseHead&& head, bool informational) override;
  void on_upstream_body(std::string_view data) override;
  void on_upstream_trailers(std::vector<Header>&& trailers) override;
  void on_upstream_complete() override;
  void on_upstream_read_end() override;
  void on_upstream_error(upstream::UpstreamFailure failure, Error error) override;
  void on_upstream_writable() override;
  void on_upstream_tunnel(std::unique_ptr<upstream::UpstreamTunnel> tunnel) override;

  ExchangeSink* sink_;
  upstream::UpstreamGroup* group_;
  const HeaderEdit* response_edit_ = nullptr;  // null: none
  // The header variables' source (ExchangeHeaders::record); null once
  // no rule can apply any more (a tunnel) or when none was given.
  const RequestRecord* record_ = nullptr;
  const config::Compression* compression_ = nullptr;  // null: the route does not compress
  std::optional<ContentCoding> accepted_;             // the coding the request accepts, if any
  CompressionBudget* budget_ = nullptr;
  std::unique_ptr<ContentEncoder> encoder_;           // while compressing the response body
  CompressionClaim claim_;                            // encoder_'s memory, on budget_
  const std::string method_;
  const bool idempotent_;
  const std::string upgrade_;  // the Upgrade protocol asked for; "": an ordinary request
  const bool extended_connect_;  // an RFC 8441 extended CONNECT (upgrade_ set): a tunnel or nothing
  const EarlyData early_;
  const bool grpc_;  // content-type application/grpc*
  // The head every attempt sends, with the Early-Data mark while the
  // request goes in early data.
  upstream::UpstreamRequestHead head_;
  std::vector<Header> request_trailers_;  // the client's, filtered, for the upstream
  Phase phase_ = Phase::Created;
  Replay replay_state_;
  // The current attempt's; Phase::Tunnel: the tunnel the 101 handed over.
  std::unique_ptr<upstream::UpstreamChannel> channel_;
  // The current attempt's server, held: a pool whose address left the group
  // lives until its exchanges end (UpstreamGroup::refresh_servers).
  std::shared_ptr<upstream::UpstreamPool> pool_;
  // Compared, never followed: a pool tried earlier may be gone since.
  std::vector<upstream::UpstreamPool*> tried_;
  std::optional<uint64_t> hash_;  // the request's key, balance = "hash" only (upstream/hash_key.h)
  // The request body sent so far (unframed; the head is head_'s) while
  // replay_state_ is not Lost.
  std::string replay_;
  bool request_complete_ = false;  // the client's request has ended (all of it was sent up)
  int fresh_retries_ = 0;        // RetryKind::FreshConnection retries so far
  int unprocessed_retries_ = 0;  // RetryKind::SameServer retries so far
  int retries_ = 0;              // NextServer and FreshConnection retries so far (max_retries)
  bool counted_ = false;         // counted in pool_'s outstanding requests
  int informational_ = 0;
  std::chrono::steady_clock::time_point attempt_start_;
  UpstreamStats stats_;
  // hold_limits(): what the route's limits gave this request.
  std::vector<ConcurrencySlot> limit_slots_;
  uint64_t limit_wait_ms_ = 0;
  std::unique_ptr<LazyTimer> delay_timer_;  // Delayed only
  // check_remote_limits(): what to ask, and the answers still to come.
  struct RemoteChecks {
    RemoteLimiter* limiter = nullptr;
    const config::Config* config = nullptr;
    const RequestLimits* limits = nullptr;
    metrics::WorkerCounters* counters = nullptr;
    std::vector<std::pair<size_t, std::string>> checks;
    size_t pending = 0;
    // The callbacks hold it weakly: reset, they find no exchange.
    std::shared_ptr<ProxyExchange*> self;
  };
  std::unique_ptr<RemoteChecks> remote_;
};

// The transition tables (util/state.h).
constexpr bool legal(ProxyExchange::Phase from, ProxyExchange::Phase to) {
  using P = ProxyExchange::Phase;
  switch (from) {
    case P::Created: return to == P::Connecting || to == P::Held || to == P::Delayed || to == P::Done;
    case P::Connecting: return to == P::AwaitingHead || to == P::Connecting || to == P::Done;
    case P::AwaitingHead:
      return to == P::Streaming || to == P::Tunnel || to == P::Connecting || to == P::Held || to == P::Done;
    case P::Streaming: return to == P::Done;
    case P::Tunnel: return to == P::Done;
    case P::Held: return to == P::Connecting || to == P::Done;
    case P::Delayed: return to == P::Connecting || to == P::Held || to == P::Done;
    case P::Done: return false;
  }
  return false;
}
constexpr const char* name(ProxyExchange::Phase p) {
  constexpr const char* names[] = {"Created", "Connecting", "AwaitingHead", "Streaming",
                                   "Tunnel",  "Held",       "Delayed",      "Done"};
  return names[static_cast<int>(p)];
}
constexpr bool legal(ProxyExchange::Replay from, ProxyExchange::Replay to) {
  return from != ProxyExchange::Replay::Lost && to == ProxyExchange::Replay::Lost;
}
constexpr const char* name(ProxyExchange::Replay r) {
  constexpr const char* names[] = {"Whole", "Partial", "Lost"};
  return names[static_cast<int>(r)];
}

}  // namespace tlsfront::http
