#include "data/http/request_record.h"

#include "log/access_log.h"
#include "metrics/counters.h"

namespace tlsfront::http {
namespace {

// The fields every request shares, from its connection and its upstream
// side (null when none was started); the entry borrows from both.
// `client_addr`: the request's (RequestRecord::client_addr), "" for the
// connection's.
void fill_access_log_entry(log::AccessLogEntry& e, const ConnectionInfo& info, std::string_view client_addr,
                           const UpstreamStats* upstream) {
  e.remote_addr = client_addr.empty() ? std::string_view(info.remote_addr) : client_addr;
  e.remote_port = info.remote_port;
  if (!client_addr.empty() || !info.peer_addr.empty()) {  // else the TCP peer is remote_addr
    const std::string_view tcp_peer = info.peer_addr.empty() ? info.remote_addr : info.peer_addr;
    if (tcp_peer != e.remote_addr) e.peer_addr = tcp_peer;
  }
  e.sni = info.sni;
  e.alpn = info.alpn;
  e.scheme = scheme_name(info.scheme);
  e.ssl_protocol = info.ssl_protocol;
  e.ssl_cipher = info.ssl_cipher;
  e.ssl_session_reused = info.ssl_session_reused;
  e.ssl_resumption = info.ssl_resumption;
  if (const tls::ClientIdentity* id = info.client_cert.get()) {
    e.ssl_client_verify = id->verify;
    e.ssl_client_s_dn = id->subject_dn;
    e.ssl_client_i_dn = id->issuer_dn;
    e.ssl_client_serial = id->serial;
    e.ssl_client_fingerprint = id->fingerprint;
  }
  e.connection_id = info.id;
  e.connection_requests = info.requests;
  e.migrated = info.migrated;
  if (upstream) {
    const UpstreamStats& s = *upstream;
    e.upstream_addr = s.addr;
    e.upstream_error = s.error;
    e.upstream_status = s.status;
    e.upstream_connect_ms = s.connect_ms;
    e.upstream_response_ms = s.response_ms;
    e.upstream_connection_reused = s.connection_reused;
    e.upstream_protocol = s.protocol;
    e.grpc_status = s.grpc_status;
    e.content_encoding = s.content_encoding;
  }
}

// Counts the request and writes its line: `e` holds the request's own
// fields (protocol, status and tunnel among them); the connection's, the
// upstream side's and the durations are added here.
// `route`: RequestRecord::route.
void finish_line(const SessionEnv& env, const ConnectionInfo& info, std::string_view client_addr,
                 const UpstreamStats* upstream, std::chrono::steady_clock::time_point start, bool with_handshake_time,
                 uint32_t route, log::AccessLogEntry& e) {
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (env.requests.base) {
    // The listener's index in Config::listeners: the connection's entry is
    // one of its generation's, as env.config is (none: the "(none)" slot).
    const size_t listener = info.listener ? static_cast<size_t>(info.listener - env.config->listeners.data())
                                          : env.config->listeners.size();
    env.requests.count(listener, route, e.protocol, e.status);
  }
  if (env.counters) {
    env.counters->request_duration.observe(elapsed);
    if (e.tunnel) env.counters->tunnels_closed.add();
    if (upstream && upstream->too_early_retried) env.counters->early_data_too_early_retried.add();
  }
  if (!env.access_log) return;
  if (route < env.config->routes.size()) {
    if (!env.config->routes[route].access_log) return;  // the route's access_log = false
    e.route = env.config->routes[route].name;
  }
  fill_access_log_entry(e, info, client_addr, upstream);
  e.request_time_ms = std::chrono::duration<double, std::milli>(elapsed).count();
  // In early data the handshake has not ended yet: no time to report.
  if (with_handshake_time && info.scheme == Scheme::Https && !info.early_data) e.tls_handshake_ms = info.tls_handshake_ms;
  if (with_handshake_time && info.rtt_ms >= 0) e.rtt_ms = info.rtt_ms;
  env.access_log->log(e);
}

}  // namespace

void RequestRecord::begin() {
  head = RequestHead{};
  head.headers.reserve(kHeadersReserved);
  time = std::chrono::system_clock::now();
  start = std::chrono::steady_clock::now();
  status = 0;
  response_complete = false;
  tunnel = false;
  early_data = false;
  limit = {};
  cache = {};
  content_encoding = {};
  bytes_sent = 0;
  bytes_received = 0;
  body_bytes = 0;
  user_agent.clear();
  client_addr.clear();
  request_id.generate();
  route_headers = nullptr;
  route = kNoRoute;
  upstream.reset();
}

bool RequestRecord::add_body(size_t n, uint64_t max_body) {
  body_bytes += n;
  return max_body == 0 || body_bytes <= max_body;
}

void RequestRecord::release_head_fields() {
  std::vector<Header>().swap(head.headers);
  std::string().swap(head.host);
  std::string().swap(head.upstream_target);
  std::string().swap(head.upgrade);
}

void RequestRecord::log_completed(const SessionEnv& env, const ConnectionInfo& info, std::string_view protocol,
                                  uint32_t stream_id, bool with_handshake_time) const {
  log::AccessLogEntry e;
  e.time = time;
  e.protocol = protocol;
  e.method = head.method;
  e.path = head.target;
  e.status = status;
  e.response_complete = response_complete;
  e.tunnel = tunnel;
  e.ssl_early_data = early_data;
  e.limit = !limit.empty() || !upstream ? limit : upstream->limit;
  e.cache = cache;
  e.content_encoding = content_encoding;  // a proxied response's: its UpstreamStats' (finish_line)
  e.bytes_sent = bytes_sent;
  e.bytes_received = bytes_received;
  e.stream_id = stream_id;
  e.user_agent = user_agent;
  e.request_id = request_id.view();
  finish_line(env, info, client_addr, upstream.get(), start, with_handshake_time, route, e);
}

TunnelRecord RequestRecord::to_tunnel() {
  TunnelRecord t;
  t.time = time;
  t.start = start;
  t.bytes_sent = bytes_sent;
  t.bytes_received = bytes_received;
  t.status = status;
  t.response_complete = response_complete;
  t.early_data = early_data;
  t.http10 = head.version_minor == 0;
  t.route = route;
  t.limit = limit;
  const std::string_view id = request_id.view();
  t.text.reserve(head.method.size() + head.target.size() + user_agent.size() + id.size() + client_addr.size());
  t.text.append(head.method).append(head.target).append(user_agent).append(id).append(client_addr);
  t.client_addr_length = static_cast<uint8_t>(client_addr.size());  // canonical text: at most 45
  t.method_length = static_cast<uint32_t>(head.method.size());
  t.target_length = static_cast<uint32_t>(head.target.size());
  t.user_agent_length = static_cast<uint32_t>(user_agent.size());
  if (upstream) t.upstream = std::move(*upstream);
  return t;
}

void TunnelRecord::log_completed(const SessionEnv& env, const ConnectionInfo& info, bool with_handshake_time) const {
  log::AccessLogEntry e;
  const std::string_view all = text;
  e.time = time;
  e.protocol = http10 ? "HTTP/1.0" : "HTTP/1.1";
  e.method = all.substr(0, method_length);
  e.path = all.substr(method_length, target_length);
  e.user_agent = all.substr(method_length + target_length, user_agent_length);
  const size_t id_at = method_length + target_length + user_agent_length;
  e.request_id = all.substr(id_at, all.size() - id_at - client_addr_length);
  const std::string_view client_addr = all.substr(all.size() - client_addr_length);
  e.status = status;
  e.response_complete = response_complete;
  e.tunnel = true;
  e.ssl_early_data = early_data;
  e.limit = !limit.empty() || !upstream ? limit : upstream->limit;
  e.bytes_sent = bytes_sent;
  e.bytes_received = bytes_received;
  finish_line(env, info, client_addr, upstream ? &*upstream : nullptr, start, with_handshake_time, route, e);
}

}  // namespace tlsfront::http
