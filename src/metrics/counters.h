// Counters: the metrics each worker keeps on its hot path, summed by the admin
// endpoint on scrape (prometheus.h). Every Counter has one writer (its
// worker's thread), so an increment is a relaxed load + store, not a locked
// read-modify-write; a scrape on the control thread reads them relaxed. Totals
// may be a few events apart from each other during a scrape, never torn.
// Thread affinity: increments on the owning worker's thread; reads anywhere.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tlsfront::metrics {

class Counter {
 public:
  void add(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void set(uint64_t v) { v_.store(v, std::memory_order_relaxed); }  // a gauge
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// Upper bounds in seconds of the duration histograms' buckets (Prometheus
// `le`; +Inf is implied).
inline constexpr std::array<double, 15> kDurationBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                            0.25,   0.5,   1,      2.5,   5,    10,    30};

class Histogram {
 public:
  void observe(std::chrono::nanoseconds d);
  // Non-cumulative count of bucket i (i == kDurationBuckets.size(): above the last bound).
  uint64_t bucket(size_t i) const { return buckets_[i].get(); }
  uint64_t count() const { return count_.get(); }
  uint64_t sum_ns() const { return sum_ns_.get(); }

 private:
  std::array<Counter, kDurationBuckets.size() + 1> buckets_;
  Counter count_, sum_ns_;
};

// Counters for a small set of label pairs found at run time (the negotiated
// TLS version and cipher): the owning worker adds, a scrape reads the slots
// published so far (a slot's labels are written before `used_` is released).
// A pair is told apart by its pointers, so two equal strings from different
// places may take two slots; the scrape merges by value. Pairs beyond kSlots
// are counted in other().
class LabelPairCounters {
 public:
  static constexpr size_t kSlots = 32;
  // `first` and `second` must have static storage (OpenSSL's version and
  // cipher names do).
  void add(const char* first, const char* second);
  template <typename Fn>
  void for_each(Fn&& fn) const {  // fn(first, second, count)
    const size_t n = used_.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) fn(first_[i], second_[i], counts_[i].get());
  }
  uint64_t other() const { return other_.get(); }

 private:
  std::array<const char*, kSlots> first_{}, second_{};
  std::array<Counter, kSlots> counts_;
  std::atomic<size_t> used_{0};
  Counter other_;
};

// One upstream server in one worker (upstream::UpstreamPool).
struct UpstreamServerCounters {
  Counter connections_created;  // new TCP connections opened
  Counter connections_reused;   // requests sent on a pooled keepalive connection
  Counter failures;             // connection refused/failed: the server is skipped for fail_timeout
  Counter retries;              // an exchange went on to another attempt after an error on this server
  Counter idle;                 // gauge: idle keepalive connections now (h2c: connections with no stream)
  Counter outstanding;          // gauge: this worker's exchanges with an attempt on the server now
  Counter h2_ping_timeouts;     // h2c connections closed because a PING went unanswered (RFC 9113 §6.7)
  Counter tls_handshakes;       // TLS handshakes completed with the server ([upstream.tls])
  Counter tls_resumed;          // of those, the ones that resumed a session
  Counter floods;               // connections closed because the server flooded (TLS post-handshake, HTTP/2 control)
  Counter ejections;            // times this worker's balancer ejected the server (max_fails)
  Counter panics;               // attempts sent to it while it was ejected: every server of the group was
  // Failed attempts by the access log's upstream_error (first: its name,
  // second: ""), whether or not they count against the server.
  LabelPairCounters attempt_failures;
  Histogram response_time;  // attempt start to the response's end, responses that completed
};

// One upstream server's counters summed over the workers (a scrape, the
// admin listener's /upstreams).
struct UpstreamServerTotals {
  uint64_t created = 0, reused = 0, failures = 0, retries = 0, idle = 0, outstanding = 0, ping_timeouts = 0,
           tls_handshakes = 0,
           tls_resumed = 0, floods = 0, ejections = 0, panics = 0;
  std::map<std::string, uint64_t> failures_by_reason;
  std::array<uint64_t, kDurationBuckets.size() + 1> buckets{};  // response_time, non-cumulative
  uint64_t responses = 0;
  uint64_t response_ns = 0;
};

enum class HandshakeKind { Full, ResumedCache, ResumedTicket };
// accept(2) errors that pause a worker's accepting (util/acceptor.h): the
// resource limits by errno, then anything else.
enum class AcceptError { Emfile, Enfile, Enobufs, Enomem, Other };
inline constexpr const char* kAcceptErrorNames[] = {"EMFILE", "ENFILE", "ENOBUFS", "ENOMEM", "other"};
AcceptError accept_error(int err);  // `err`: an errno value
enum class HandshakeFailure { Timeout, Error, Closed };
// The highest TLS version a ClientHello offered, as /metrics labels it
// (tls/handshake_facts.h gives the wire value).
enum class OfferedVersion { Tls13, Tls12, Tls11, Tls10, Ssl3, Other };
inline constexpr const char* kOfferedVersionNames[] = {"TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1.0", "SSLv3", "other"};
OfferedVersion offered_version(uint16_t wire_version);  // 0x0304 -> Tls13 ...
// Handshakes tlsfront refused, by reason (tls::HandshakeRefusal without None).
enum class Refusal { ProtocolVersion, NoSharedCipher, NoAlpnOverlap, SniRefused, ClientCertificate };
inline constexpr const char* kRefusalNames[] = {"protocol_version", "no_shared_cipher", "no_alpn_overlap",
                                                "sni_refused", "client_certificate"};
// Why a ClientHello's early data (0-RTT) was turned away (the handshake goes
// on): early_data off; its ClientHello seen before, or the node's recording
// full or still in its start window (tls/EARLY_DATA_REPLAY.md); the shared
// store could not answer; more early data than max_early_data (the
// connection is aborted); OpenSSL's own checks (ticket age, ALPN, cipher
// suite, or no resumption).
enum class EarlyRejection { Disabled, Replay, RedisUnavailable, TooLarge, Ticket };
inline constexpr const char* kEarlyRejectionNames[] = {"disabled", "replay", "redis_unavailable", "too_large",
                                                       "ticket"};

// PROXY protocol headers accepted (message/proxy_protocol.h): v1 (TCP4,
// TCP6, UNKNOWN), v2 PROXY, v2 LOCAL (a load balancer's health check).
enum class ProxyHeaderKind { V1, V2, V2Local };
inline constexpr const char* kProxyHeaderKindNames[] = {"v1", "v2", "v2_local"};
// Connections on a proxy_protocol listener closed before their header was
// read: a peer outside proxy_protocol_from (refused at accept); first bytes
// that are no PROXY signature (a TLS ClientHello, an HTTP request); an
// invalid header; one over its size bound; timeouts.handshake passed; the
// peer closed mid-header; the peer closed before sending anything (a TCP
// health check).
enum class ProxyRefusal { Source, NotProxy, Malformed, TooLong, Timeout, Truncated, Empty };
inline constexpr const char* kProxyRefusalNames[] = {"source",  "not_proxy", "malformed", "too_long",
                                                     "timeout", "truncated", "empty"};

// Client connections cut off for making a worker work without progress:
// TLS post-handshake messages (KeyUpdate, renegotiation; tls/tls_stream.h),
// HTTP/2 control frames (SETTINGS, PING, PRIORITY, WINDOW_UPDATE, empty
// DATA) and HTTP/2 streams reset before their response ended (rapid reset).
enum class Flood { TlsPostHandshake, H2ControlFrames, H2Resets };
inline constexpr const char* kFloodNames[] = {"tls_post_handshake", "h2_control_frames", "h2_resets"};

// Client connections closed at accept or in their ClientHello: a
// [[listen]] access rule; [limits] max_connections_per_client reached;
// [limits] max_full_handshakes_per_client spent (data/client_gate.h).
enum class ConnectionRefusal { Access, PerClient, HandshakeRate };
inline constexpr const char* kConnectionRefusalNames[] = {"access", "per_client", "handshake_rate"};
// Requests answered by a route's limits (data/http/request_limits.h): its
// access rules (403), a limit_req zone (429), a limit_conn zone (503).
enum class RequestRefusal { Access, LimitReq, LimitConn };
inline constexpr const char* kRequestRefusalNames[] = {"access", "limit_req", "limit_conn"};

struct WorkerCounters {
  Counter connections_accepted;
  Counter connections_closed;                    // active = accepted - closed
  Counter connections_http1, connections_h2;     // by protocol after the handshake (ALPN)
  Counter connections_h3;                        // QUIC handshakes completed (data/quic)
  // QUIC connections: opened at a client's first Initial, closed when gone;
  // Initials dropped because kMaxHandshakes were in progress.
  Counter quic_opened, quic_closed, quic_initials_dropped;
  // Address validation (data/quic/address_tokens.h): Retry packets sent,
  // Initials dropped for an invalid Retry token; stateless resets sent.
  Counter quic_retries, quic_invalid_tokens, quic_stateless_resets;
  // UDP datagrams the QUIC endpoints received and sent, and the system
  // calls that sent them (one sendmsg carries several with UDP GSO).
  Counter quic_datagrams_received, quic_receive_calls, quic_datagrams_sent, quic_send_calls;
  std::array<Counter, 3> handshakes;             // by HandshakeKind
  std::array<Counter, 3> handshake_failures;     // by HandshakeFailure
  std::array<Histogram, 3> handshake_duration;   // accept -> handshake done, by HandshakeKind
  LabelPairCounters negotiated;                  // (version, cipher) of completed handshakes
  std::array<Counter, 6> client_hello_versions;  // by OfferedVersion, once per ClientHello seen
  std::array<Counter, std::size(kRefusalNames)> handshakes_refused;     // by Refusal (also counted as failures "error")
  // Requests are counted by listener, route, protocol and status class in
  // the generation's table (metrics/request_counters.h); their durations here.
  Histogram request_duration;
  // Gauges of [tls.session_cache] store = "redis" (data::RedisSessionStore):
  // 1 when this worker has a store, and 1 while its Redis connection is up.
  Counter session_store, session_store_connected;
  // Accepting at a resource limit (data/worker.h): accept errors by
  // AcceptError, backoff pauses (each one stops accepting for
  // Worker::kAcceptBackoff), whether the worker is paused now (a 0/1 gauge),
  // idle connections closed to make room.
  std::array<Counter, 5> accept_errors;
  Counter accept_pauses;
  Counter accept_paused;            // gauge: 1 while not accepting (backoff or max_connections)
  Counter connection_limit_pauses;  // times [limits] max_connections was reached
  Counter idle_reclaimed;
  // Response compression (data/http/compression_budget.h): bytes of codec
  // state claimed now (a gauge), responses sent as identity because the
  // worker's [compression] max_memory was reached.
  Counter compression_memory;
  Counter compression_refused_memory;
  // Upgrade tunnels (WebSocket): opened by a 101, closed when their access-log
  // line is written (open = opened - closed), and their bytes each way
  // (counted as they pass, not including the 101 or the request).
  Counter tunnels_opened, tunnels_closed;
  Counter tunnel_bytes_to_upstream, tunnel_bytes_to_client;
  // TLS 1.3 early data: ClientHellos that offered it, handshakes that took
  // it, rejections by EarlyRejection; requests read in it sent up at once
  // (Early-Data: 1) or held for the handshake; upstream 425s answered by
  // sending the request again after the handshake.
  Counter early_data_offered, early_data_accepted;
  std::array<Counter, 5> early_data_rejected;
  Counter early_data_requests_sent, early_data_requests_held, early_data_too_early_retried;
  // [[listen]] proxy_protocol (data/connection.h): headers read, by
  // ProxyHeaderKind; connections closed without one, by ProxyRefusal.
  std::array<Counter, 3> proxy_headers;
  std::array<Counter, 7> proxy_refused;
  // Client connections closed for a flood, by Flood.
  std::array<Counter, 3> client_floods;
  void count_flood(Flood kind) { client_floods[static_cast<size_t>(kind)].add(); }
  std::array<Counter, 3> connections_refused;  // by ConnectionRefusal
  std::array<Counter, 3> requests_refused;     // by RequestRefusal
  // [[limit_req]] store = "redis" checks that failed open (no usable answer).
  Counter limit_redis_errors;
  // A route's limits answered `status` (403, 429 or 503).
  void count_limited(int status) {
    requests_refused[static_cast<size_t>(status == 403   ? RequestRefusal::Access
                                         : status == 429 ? RequestRefusal::LimitReq
                                                         : RequestRefusal::LimitConn)]
        .add();
  }

  // The counters of `server` of `upstream`; created on first use and never
  // removed (a server gone after a reload keeps its totals). The pointer is
  // stable for this object's lifetime. Worker thread.
  UpstreamServerCounters* upstream(const std::string& upstream, const std::string& server);

  // Calls `fn(upstream, server, counters)` for each, sorted. Any thread.
  template <typename Fn>
  void for_each_upstream(Fn&& fn) const {
    std::lock_guard lock(upstreams_mu_);
    for (const auto& [key, c] : upstreams_) fn(key.first, key.second, *c);
  }

 private:
  mutable std::mutex upstreams_mu_;  // guards the map's shape, not the counters
  std::map<std::pair<std::string, std::string>, std::unique_ptr<UpstreamServerCounters>> upstreams_;
};

// By (upstream name, server address), over `workers`.
std::map<std::pair<std::string, std::string>, UpstreamServerTotals> sum_upstream_servers(
    const std::vector<const WorkerCounters*>& workers);

}  // namespace tlsfront::metrics
