#include "metrics/prometheus.h"

#include <map>

#include <fmt/format.h>

namespace tlsfront::metrics {
namespace {

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void single(std::string& out, std::string_view name, std::string_view type, std::string_view help, uint64_t v) {
  header(out, name, type, help);
  fmt::format_to(std::back_inserter(out), "{} {}\n", name, v);
}

template <typename Get>
uint64_t sum(const ProcessMetrics& m, Get get) {
  uint64_t total = 0;
  for (const WorkerCounters* w : m.workers) total += get(*w);
  return total;
}

// The series of one histogram; `labels` ("kind=\"full\"" or "") go before `le`.
template <typename Get>
void histogram_series(std::string& out, const ProcessMetrics& m, std::string_view name, std::string_view labels,
                      Get get) {
  const std::string_view sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= kDurationBuckets.size(); ++i) {
    cumulative += sum(m, [&](const WorkerCounters& w) { return get(w).bucket(i); });
    if (i < kDurationBuckets.size()) {
      fmt::format_to(std::back_inserter(out), "{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep,
                     kDurationBuckets[i], cumulative);
    } else {
      fmt::format_to(std::back_inserter(out), "{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, cumulative);
    }
  }
  const uint64_t ns = sum(m, [&](const WorkerCounters& w) { return get(w).sum_ns(); });
  const std::string braced = labels.empty() ? "" : fmt::format("{{{}}}", labels);
  fmt::format_to(std::back_inserter(out), "{}_sum{} {:.9f}\n{}_count{} {}\n", name, braced,
                 static_cast<double>(ns) / 1e9, name, braced, cumulative);
}

template <typename Get>
void histogram(std::string& out, const ProcessMetrics& m, std::string_view name, std::string_view help, Get get) {
  header(out, name, "histogram", help);
  histogram_series(out, m, name, "", get);
}

}  // namespace

std::string escape_label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string render_prometheus(const ProcessMetrics& m) {
  std::string out;
  out.reserve(16 * 1024);
  single(out, "tlsfront_config_generation", "gauge", "Configuration generation in use (1 + successful reloads).",
         m.generation);

  const uint64_t accepted = sum(m, [](const WorkerCounters& w) { return w.connections_accepted.get(); });
  const uint64_t closed = sum(m, [](const WorkerCounters& w) { return w.connections_closed.get(); });
  single(out, "tlsfront_connections_accepted_total", "counter", "Client TCP connections accepted.", accepted);
  single(out, "tlsfront_connections_active", "gauge", "Client connections open now.", accepted - closed);
  header(out, "tlsfront_connections_total", "counter", "Client connections by protocol after the TLS handshake (ALPN).");
  fmt::format_to(std::back_inserter(out), "tlsfront_connections_total{{protocol=\"http/1.1\"}} {}\n",
                 sum(m, [](const WorkerCounters& w) { return w.connections_http1.get(); }));
  fmt::format_to(std::back_inserter(out), "tlsfront_connections_total{{protocol=\"h2\"}} {}\n",
                 sum(m, [](const WorkerCounters& w) { return w.connections_h2.get(); }));
  fmt::format_to(std::back_inserter(out), "tlsfront_connections_total{{protocol=\"h3\"}} {}\n",
                 sum(m, [](const WorkerCounters& w) { return w.connections_h3.get(); }));
  single(out, "tlsfront_quic_connections_active", "gauge", "QUIC connections open now (in their handshake or after).",
         sum(m, [](const WorkerCounters& w) { return w.quic_opened.get(); }) -
             sum(m, [](const WorkerCounters& w) { return w.quic_closed.get(); }));
  single(out, "tlsfront_quic_initials_dropped_total", "counter",
         "Client Initials dropped because a worker had its maximum of QUIC handshakes in progress.",
         sum(m, [](const WorkerCounters& w) { return w.quic_initials_dropped.get(); }));
  single(out, "tlsfront_quic_retries_total", "counter",
         "Retry packets sent: new QUIC clients asked to prove their address (quic_retry, or under load).",
         sum(m, [](const WorkerCounters& w) { return w.quic_retries.get(); }));
  single(out, "tlsfront_quic_invalid_tokens_total", "counter",
         "Client Initials dropped for a Retry token that was expired, forged or for another address.",
         sum(m, [](const WorkerCounters& w) { return w.quic_invalid_tokens.get(); }));
  single(out, "tlsfront_quic_stateless_resets_total", "counter",
         "Stateless resets sent for packets of QUIC connections this node does not have.",
         sum(m, [](const WorkerCounters& w) { return w.quic_stateless_resets.get(); }));
  single(out, "tlsfront_quic_datagrams_received_total", "counter", "UDP datagrams the QUIC listeners received.",
         sum(m, [](const WorkerCounters& w) { return w.quic_datagrams_received.get(); }));
  single(out, "tlsfront_quic_receive_calls_total", "counter",
         "System calls that read the QUIC listeners' datagrams (one reads several with UDP GRO).",
         sum(m, [](const WorkerCounters& w) { return w.quic_receive_calls.get(); }));
  single(out, "tlsfront_quic_datagrams_sent_total", "counter", "UDP datagrams the QUIC listeners sent.",
         sum(m, [](const WorkerCounters& w) { return w.quic_datagrams_sent.get(); }));
  single(out, "tlsfront_quic_send_calls_total", "counter",
         "System calls that sent the QUIC listeners' datagrams (one carries several with UDP GSO).",
         sum(m, [](const WorkerCounters& w) { return w.quic_send_calls.get(); }));

  const uint64_t tunnels = sum(m, [](const WorkerCounters& w) { return w.tunnels_opened.get(); });
  single(out, "tlsfront_tunnels_total", "counter", "Upgrade tunnels (WebSocket) opened by an upstream's 101.", tunnels);
  single(out, "tlsfront_tunnels_open", "gauge", "Upgrade tunnels open now.",
         tunnels - sum(m, [](const WorkerCounters& w) { return w.tunnels_closed.get(); }));
  header(out, "tlsfront_tunnel_bytes_total", "counter", "Bytes carried through Upgrade tunnels, by direction.");
  fmt::format_to(std::back_inserter(out), "tlsfront_tunnel_bytes_total{{direction=\"to_upstream\"}} {}\n",
                 sum(m, [](const WorkerCounters& w) { return w.tunnel_bytes_to_upstream.get(); }));
  fmt::format_to(std::back_inserter(out), "tlsfront_tunnel_bytes_total{{direction=\"to_client\"}} {}\n",
                 sum(m, [](const WorkerCounters& w) { return w.tunnel_bytes_to_client.get(); }));

  single(out, "tlsfront_early_data_offered_total", "counter", "ClientHellos that offered TLS 1.3 early data (0-RTT).",
         sum(m, [](const WorkerCounters& w) { return w.early_data_offered.get(); }));
  single(out, "tlsfront_early_data_accepted_total", "counter", "Handshakes that accepted the client's early data.",
         sum(m, [](const WorkerCounters& w) { return w.early_data_accepted.get(); }));
  header(out, "tlsfront_early_data_rejected_total", "counter", "Early data turned away (the handshake goes on), by reason.");
  for (size_t r = 0; r < std::size(kEarlyRejectionNames); ++r) {
    fmt::format_to(std::back_inserter(out), "tlsfront_early_data_rejected_total{{reason=\"{}\"}} {}\n",
                   kEarlyRejectionNames[r], sum(m, [r](const WorkerCounters& w) { return w.early_data_rejected[r].get(); }));
  }
  header(out, "tlsfront_early_data_requests_total", "counter",
         "Requests read in early data: sent up at once with Early-Data: 1, or held until the handshake completed.");
  fmt::format_to(std::back_inserter(out), "tlsfront_early_data_requests_total{{action=\"sent\"}} {}\n",
                 sum(m, [](const WorkerCounters& w) { return w.early_data_requests_sent.get(); }));
  fmt::format_to(std::back_inserter(out), "tlsfront_early_data_requests_total{{action=\"held\"}} {}\n",
                 sum(m, [](const WorkerCounters& w) { return w.early_data_requests_held.get(); }));
  single(out, "tlsfront_early_data_too_early_retries_total", "counter",
         "Upstream 425 (Too Early) answers to requests sent in early data, sent again after the handshake.",
         sum(m, [](const WorkerCounters& w) { return w.early_data_too_early_retried.get(); }));

  header(out, "tlsfront_proxy_protocol_headers_total", "counter",
         "PROXY protocol headers read on proxy_protocol listeners, by kind (v2_local: a load balancer's own "
         "connection).");
  for (size_t k = 0; k < std::size(kProxyHeaderKindNames); ++k) {
    fmt::format_to(std::back_inserter(out), "tlsfront_proxy_protocol_headers_total{{kind=\"{}\"}} {}\n",
                   kProxyHeaderKindNames[k], sum(m, [k](const WorkerCounters& w) { return w.proxy_headers[k].get(); }));
  }
  header(out, "tlsfront_proxy_protocol_refused_total", "counter",
         "Connections on proxy_protocol listeners closed without a valid PROXY protocol header, by reason.");
  for (size_t r = 0; r < std::size(kProxyRefusalNames); ++r) {
    fmt::format_to(std::back_inserter(out), "tlsfront_proxy_protocol_refused_total{{reason=\"{}\"}} {}\n",
                   kProxyRefusalNames[r], sum(m, [r](const WorkerCounters& w) { return w.proxy_refused[r].get(); }));
  }

  header(out, "tlsfront_connections_refused_total", "counter",
         "Client connections refused by their address before any TLS: a [[listen]] access rule, [limits] "
         "max_connections_per_client, [limits] max_full_handshakes_per_client (in the ClientHello).");
  for (size_t r = 0; r < std::size(kConnectionRefusalNames); ++r) {
    fmt::format_to(std::back_inserter(out), "tlsfront_connections_refused_total{{reason=\"{}\"}} {}\n",
                   kConnectionRefusalNames[r],
                   sum(m, [r](const WorkerCounters& w) { return w.connections_refused[r].get(); }));
  }
  header(out, "tlsfront_requests_refused_total", "counter",
         "Requests answered by a route's limits: its access rules (403), a limit_req zone (429), a limit_conn zone "
         "(503).");
  for (size_t r = 0; r < std::size(kRequestRefusalNames); ++r) {
    fmt::format_to(std::back_inserter(out), "tlsfront_requests_refused_total{{by=\"{}\"}} {}\n",
                   kRequestRefusalNames[r],
                   sum(m, [r](const WorkerCounters& w) { return w.requests_refused[r].get(); }));
  }

  header(out, "tlsfront_limit_redis_errors_total", "counter",
         "[[limit_req]] store = \"redis\" checks Redis did not answer usably (timeout, error, backoff): the "
         "request went on (fail open).");
  fmt::format_to(std::back_inserter(out), "tlsfront_limit_redis_errors_total {}\n",
                 sum(m, [](const WorkerCounters& w) { return w.limit_redis_errors.get(); }));

  header(out, "tlsfront_client_floods_total", "counter",
         "Client connections closed for a flood: TLS post-handshake messages (KeyUpdate, renegotiation), HTTP/2 "
         "control frames, HTTP/2 streams reset before their response.");
  for (size_t k = 0; k < std::size(kFloodNames); ++k) {
    fmt::format_to(std::back_inserter(out), "tlsfront_client_floods_total{{kind=\"{}\"}} {}\n", kFloodNames[k],
                   sum(m, [k](const WorkerCounters& w) { return w.client_floods[k].get(); }));
  }

  header(out, "tlsfront_accept_errors_total", "counter",
         "Failed accepts by errno (each pauses that worker's accepting; 'other' is any errno but these four).");
  for (size_t e = 0; e < std::size(kAcceptErrorNames); ++e) {
    fmt::format_to(std::back_inserter(out), "tlsfront_accept_errors_total{{errno=\"{}\"}} {}\n", kAcceptErrorNames[e],
                   sum(m, [e](const WorkerCounters& w) { return w.accept_errors[e].get(); }));
  }
  single(out, "tlsfront_accept_paused_total", "counter",
         "Times a worker stopped accepting for a backoff (500 ms) after a failed accept.",
         sum(m, [](const WorkerCounters& w) { return w.accept_pauses.get(); }));
  single(out, "tlsfront_connection_limit_reached_total", "counter",
         "Times a worker reached [limits] max_connections and stopped accepting until a connection closed.",
         sum(m, [](const WorkerCounters& w) { return w.connection_limit_pauses.get(); }));
  single(out, "tlsfront_accept_paused_workers", "gauge",
         "Workers not accepting now (in a backoff, or at max_connections).",
         sum(m, [](const WorkerCounters& w) { return w.accept_paused.get(); }));
  single(out, "tlsfront_idle_connections_reclaimed_total", "counter",
         "Idle client connections (keepalive between requests, HTTP/2 without streams) closed to make room after an "
         "accept failed at a resource limit.",
         sum(m, [](const WorkerCounters& w) { return w.idle_reclaimed.get(); }));
  single(out, "tlsfront_compression_memory_bytes", "gauge",
         "Bytes of response-compression codec state the workers hold now (each worker at most [compression] "
         "max_memory).",
         sum(m, [](const WorkerCounters& w) { return w.compression_memory.get(); }));
  single(out, "tlsfront_compression_refused_total", "counter",
         "Compressible responses sent uncompressed because their worker's codecs held [compression] max_memory.",
         sum(m, [](const WorkerCounters& w) { return w.compression_refused_memory.get(); }));
  single(out, "process_max_fds", "gauge", "Maximum number of open file descriptors (RLIMIT_NOFILE soft limit).",
         m.max_fds);
  if (m.open_fds) single(out, "process_open_fds", "gauge", "Number of open file descriptors.", *m.open_fds);

  header(out, "tlsfront_tls_handshakes_total", "counter",
         "Completed TLS handshakes, TCP and QUIC: full, resumed from the session cache (session ID, stateful PSK) or from a "
         "ticket.");
  static constexpr const char* kKinds[] = {"full", "resumed_cache", "resumed_ticket"};
  for (size_t k = 0; k < 3; ++k) {
    fmt::format_to(std::back_inserter(out), "tlsfront_tls_handshakes_total{{kind=\"{}\"}} {}\n", kKinds[k],
                   sum(m, [k](const WorkerCounters& w) { return w.handshakes[k].get(); }));
  }
  header(out, "tlsfront_tls_handshake_failures_total", "counter",
         "TLS handshakes that did not complete: timeout, error (alert or protocol error), closed (by the client; or by "
         "tlsfront after answering early data, before the client's Finished).");
  static constexpr const char* kReasons[] = {"timeout", "error", "closed"};
  for (size_t r = 0; r < 3; ++r) {
    fmt::format_to(std::back_inserter(out), "tlsfront_tls_handshake_failures_total{{reason=\"{}\"}} {}\n", kReasons[r],
                   sum(m, [r](const WorkerCounters& w) { return w.handshake_failures[r].get(); }));
  }
  header(out, "tlsfront_tls_handshake_duration_seconds", "histogram",
         "TCP accept (QUIC: first Initial) to TLS handshake done, by kind (as tlsfront_tls_handshakes_total).");
  for (size_t k = 0; k < 3; ++k) {
    histogram_series(out, m, "tlsfront_tls_handshake_duration_seconds", fmt::format("kind=\"{}\"", kKinds[k]),
                     [k](const WorkerCounters& w) -> const Histogram& { return w.handshake_duration[k]; });
  }
  header(out, "tlsfront_tls_handshakes_refused_total", "counter",
         "Handshakes tlsfront refused (also in failures{reason=\"error\"}): no TLS version, no cipher suite, group "
         "or signature algorithm, no ALPN protocol in common, or the server name refused (strict_sni).");
  for (size_t r = 0; r < std::size(kRefusalNames); ++r) {
    fmt::format_to(std::back_inserter(out), "tlsfront_tls_handshakes_refused_total{{reason=\"{}\"}} {}\n",
                   kRefusalNames[r], sum(m, [r](const WorkerCounters& w) { return w.handshakes_refused[r].get(); }));
  }
  header(out, "tlsfront_tls_client_hello_versions_total", "counter",
         "ClientHellos by the highest TLS version they offered (supported_versions, else legacy_version), counted "
         "when the handshake ended, refused ones included: clients that offer at most TLS 1.1 are the downgrade "
         "alarm.");
  for (size_t v = 0; v < std::size(kOfferedVersionNames); ++v) {
    fmt::format_to(std::back_inserter(out), "tlsfront_tls_client_hello_versions_total{{max_version=\"{}\"}} {}\n",
                   kOfferedVersionNames[v],
                   sum(m, [v](const WorkerCounters& w) { return w.client_hello_versions[v].get(); }));
  }
  header(out, "tlsfront_tls_negotiated_total", "counter", "Completed TLS handshakes by negotiated version and cipher.");
  std::map<std::pair<std::string, std::string>, uint64_t> negotiated;
  uint64_t negotiated_other = 0;
  for (const WorkerCounters* w : m.workers) {
    w->negotiated.for_each([&](const char* version, const char* cipher, uint64_t n) {
      negotiated[{version ? version : "", cipher ? cipher : ""}] += n;
    });
    negotiated_other += w->negotiated.other();
  }
  if (negotiated_other) negotiated[{"other", "other"}] += negotiated_other;
  for (const auto& [key, n] : negotiated) {
    fmt::format_to(std::back_inserter(out), "tlsfront_tls_negotiated_total{{version=\"{}\",cipher=\"{}\"}} {}\n",
                   escape_label_value(key.first), escape_label_value(key.second), n);
  }

  header(out, "tlsfront_requests_total", "counter",
         "Requests by listener, route, protocol and response status class (a series appears with its first "
         "request).");
  if (m.requests) {
    static constexpr const char* kProtocols[] = {"HTTP/1.0", "HTTP/1.1", "HTTP/2.0"};
    static constexpr const char* kClasses[] = {"1xx", "2xx", "3xx", "4xx", "5xx", "none"};
    m.requests->for_each([&](std::string_view listener, std::string_view route, size_t p, size_t c, uint64_t n) {
      fmt::format_to(std::back_inserter(out),
                     "tlsfront_requests_total{{listener=\"{}\",route=\"{}\",protocol=\"{}\",code=\"{}\"}} {}\n",
                     escape_label_value(listener), escape_label_value(route), kProtocols[p], kClasses[c], n);
    });
  }
  histogram(out, m, "tlsfront_request_duration_seconds", "Request start to the last byte of the response.",
            [](const WorkerCounters& w) -> const Histogram& { return w.request_duration; });

  single(out, "tlsfront_session_cache_hits_total", "counter", "Session cache lookups that found a session.",
         m.session_cache_hits);
  single(out, "tlsfront_session_cache_misses_total", "counter", "Session cache lookups that found none.",
         m.session_cache_misses);
  single(out, "tlsfront_session_cache_stores_total", "counter", "Sessions stored.", m.session_cache_stores);
  single(out, "tlsfront_session_cache_evictions_total", "counter", "Live sessions evicted for room (LRU).",
         m.session_cache_evictions);
  single(out, "tlsfront_session_cache_expired_total", "counter", "Sessions dropped on expiry.", m.session_cache_expired);
  single(out, "tlsfront_session_cache_entries", "gauge", "Sessions held.", m.session_cache_entries);
  single(out, "tlsfront_session_cache_bytes", "gauge", "Bytes accounted to held sessions.", m.session_cache_bytes);
  if (sum(m, [](const WorkerCounters& w) { return w.session_store.get(); }) > 0) {
    header(out, "tlsfront_session_store_connected", "gauge",
           "1 while the worker's Redis session store connection is up (0: down, or not needed since it was lost).");
    for (size_t i = 0; i < m.workers.size(); ++i) {
      if (m.workers[i]->session_store.get() == 0) continue;
      fmt::format_to(std::back_inserter(out), "tlsfront_session_store_connected{{worker=\"{}\"}} {}\n", i,
                     m.workers[i]->session_store_connected.get());
    }
  }

  single(out, "tlsfront_tickets_issued_total", "counter", "Session tickets issued.", m.tickets_issued);
  header(out, "tlsfront_tickets_decrypted_total", "counter",
         "Tickets decrypted, by key: the current encryption key, or an older one (the ticket is renewed).");
  fmt::format_to(std::back_inserter(out), "tlsfront_tickets_decrypted_total{{key=\"current\"}} {}\n",
                 m.tickets_decrypted_current);
  fmt::format_to(std::back_inserter(out), "tlsfront_tickets_decrypted_total{{key=\"older\"}} {}\n",
                 m.tickets_decrypted_renewed);
  single(out, "tlsfront_tickets_failed_total", "counter", "Tickets not decrypted (unknown key, bad MAC).",
         m.tickets_failed);
  single(out, "tlsfront_ticket_keys", "gauge", "Ticket keys in the ring.", m.ticket_keys);
  if (m.ticket_key_age_seconds) {
    header(out, "tlsfront_ticket_key_age_seconds", "gauge", "Time since the encrypting ticket key became current.");
    fmt::format_to(std::back_inserter(out), "tlsfront_ticket_key_age_seconds {:.3f}\n", *m.ticket_key_age_seconds);
  }

  using Row = UpstreamServerTotals;
  const std::map<std::pair<std::string, std::string>, Row> rows = sum_upstream_servers(m.workers);
  auto upstream_metric = [&](std::string_view name, std::string_view type, std::string_view help, auto field) {
    header(out, name, type, help);
    for (const auto& [key, r] : rows) {
      fmt::format_to(std::back_inserter(out), "{}{{upstream=\"{}\",server=\"{}\"}} {}\n", name, escape_label_value(key.first),
                     escape_label_value(key.second), r.*field);
    }
  };
  upstream_metric("tlsfront_upstream_connections_created_total", "counter", "Upstream TCP connections opened.",
                  &Row::created);
  upstream_metric("tlsfront_upstream_connections_reused_total", "counter",
                  "Requests sent on a pooled keepalive upstream connection.", &Row::reused);
  upstream_metric("tlsfront_upstream_idle_connections", "gauge",
                  "Idle keepalive upstream connections (HTTP/2: connections carrying no stream).", &Row::idle);
  upstream_metric("tlsfront_upstream_outstanding_requests", "gauge",
                  "Requests with an attempt on the server now (least_request's load).", &Row::outstanding);
  upstream_metric("tlsfront_upstream_failures_total", "counter",
                  "Failed attempts counted against the server (connect, TLS, reset, timeout, invalid response; "
                  "max_fails consecutive ones eject it).",
                  &Row::failures);
  header(out, "tlsfront_upstream_attempt_failures_total", "counter",
         "Failed attempts at the server by reason (the access log's upstream_error).");
  for (const auto& [key, r] : rows) {
    for (const auto& [reason, n] : r.failures_by_reason) {
      fmt::format_to(std::back_inserter(out), "tlsfront_upstream_attempt_failures_total{{upstream=\"{}\",server=\"{}\",reason=\"{}\"}} {}\n",
                     escape_label_value(key.first), escape_label_value(key.second), reason, n);
    }
  }
  header(out, "tlsfront_upstream_response_seconds", "histogram",
         "Upstream response time of completed responses: the attempt's start to the response's end.");
  for (const auto& [key, r] : rows) {
    const std::string labels =
        fmt::format("upstream=\"{}\",server=\"{}\"", escape_label_value(key.first), escape_label_value(key.second));
    uint64_t cumulative = 0;
    for (size_t i = 0; i < r.buckets.size(); ++i) {
      cumulative += r.buckets[i];
      if (i < kDurationBuckets.size()) {
        fmt::format_to(std::back_inserter(out), "tlsfront_upstream_response_seconds_bucket{{{},le=\"{}\"}} {}\n",
                       labels, kDurationBuckets[i], cumulative);
      } else {
        fmt::format_to(std::back_inserter(out), "tlsfront_upstream_response_seconds_bucket{{{},le=\"+Inf\"}} {}\n",
                       labels, cumulative);
      }
    }
    fmt::format_to(std::back_inserter(out),
                   "tlsfront_upstream_response_seconds_sum{{{}}} {:.9f}\ntlsfront_upstream_response_seconds_count{{{}}} {}\n",
                   labels, static_cast<double>(r.response_ns) / 1e9, labels, cumulative);
  }
  upstream_metric("tlsfront_upstream_ejections_total", "counter",
                  "Times the server was ejected after max_fails consecutive failures (for fail_timeout, longer when "
                  "repeated).",
                  &Row::ejections);
  upstream_metric("tlsfront_upstream_panic_requests_total", "counter",
                  "Attempts sent to the server while it was ejected, because every server of its group left to try "
                  "was (panic).",
                  &Row::panics);
  upstream_metric("tlsfront_upstream_retries_total", "counter",
                  "Exchanges retried on another attempt after an error on this server.", &Row::retries);
  upstream_metric("tlsfront_upstream_h2_ping_timeouts_total", "counter",
                  "HTTP/2 upstream connections closed because a PING went unanswered within h2_ping_timeout.",
                  &Row::ping_timeouts);
  upstream_metric("tlsfront_upstream_tls_handshakes_total", "counter",
                  "TLS handshakes completed with the upstream server ([upstream.tls]).", &Row::tls_handshakes);
  upstream_metric("tlsfront_upstream_tls_resumed_total", "counter",
                  "Upstream TLS handshakes that resumed a session (session_reuse).", &Row::tls_resumed);
  upstream_metric("tlsfront_upstream_floods_total", "counter",
                  "Upstream connections closed because the server flooded: TLS post-handshake messages, HTTP/2 "
                  "control frames (empty DATA, WINDOW_UPDATE, PRIORITY, SETTINGS, PING).",
                  &Row::floods);

  if (m.access_log_bytes) {
    single(out, "tlsfront_access_log_bytes_total", "counter", "Access log bytes written.", *m.access_log_bytes);
    single(out, "tlsfront_access_log_dropped_batches_total", "counter",
           "Access log batches dropped (queue full or write errors).", m.access_log_dropped_batches.value_or(0));
    single(out, "tlsfront_access_log_dropped_lines_total", "counter",
           "Access log lines dropped (queue full or write errors; a line cut by a failed write is removed).",
           m.access_log_dropped_lines.value_or(0));
  }
  out += m.extra;
  return out;
}

}  // namespace tlsfront::metrics
