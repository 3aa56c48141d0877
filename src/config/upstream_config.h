// [[upstream]] and its tables ([upstream.tls], servers, health_check) as
// the loader validated them (config.h holds the rest of the Config).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/values.h"

namespace tlsfront::config {

// [[upstream]]
// What an [[upstream]]'s servers speak: HTTP/1.1 (over TLS when its `tls` is
// enabled), HTTP/2 over cleartext TCP with prior knowledge (RFC 9113 §3.3:
// no Upgrade, no ALPN), or HTTP/2 over TLS (ALPN "h2", RFC 9113 §3.2; TLS
// is implied).
enum class UpstreamProtocol : uint8_t { Http1, H2c, H2 };
// [[upstream]] balance: least outstanding requests by power-of-two-choices
// (Envoy's LEAST_REQUEST), round robin (nginx's default), random, or a
// consistent hash of a request key (nginx's `hash ... consistent`); each
// weighted by the servers' `weight`.
enum class Balance : uint8_t { LeastRequest, RoundRobin, Random, Hash };

// One entry of [[upstream]] servers written as a table, { address = "...",
// weight = 3, backup = true } (nginx's `server ... weight= backup`).
struct ServerOptions {
  int64_t weight = 1;   // 1..1000: its share of the requests against the others'
  bool backup = false;  // only while every other (primary) server is out
  bool operator==(const ServerOptions&) const = default;
};

// [[upstream]] hash: the request key a balance = "hash" group hashes.
struct HashKey {
  enum class Kind : uint8_t { None, RemoteAddr, Header, Cookie };
  Kind kind = Kind::None;
  std::string name;  // Header: the field name, lowercase; Cookie: the cookie's name
  bool operator==(const HashKey&) const = default;
};

// [[upstream]] health_check = { ... }: active checks, run once per process
// (control/health_checker.h). A server fails `fall` checks in a row to be
// marked down, passes `rise` in a row to be up again.
struct HealthCheck {
  enum class Kind : uint8_t { Http, Grpc };
  bool enabled = false;       // the table is present
  Kind kind = Kind::Http;     // type = "http" (a GET of `path`) | "grpc" (grpc.health.v1.Health/Check)
  std::string path = "/";     // http: the request target
  std::string host;           // http: the Host (:authority) sent; "": the server as written
  std::string service;        // grpc: the service name asked about ("": the server as a whole)
  Millis interval{5'000};
  Millis timeout{1'000};      // a check not answered within it fails
  int64_t rise = 2;
  int64_t fall = 3;
  int expect_min = 200;       // expect_status = "200-399": a status in it passes (http)
  int expect_max = 399;
  std::string origin;         // "file:line:col" of the table, for logs
  bool operator==(const HealthCheck&) const = default;
};
constexpr const char* protocol_name(UpstreamProtocol p) {
  return p == UpstreamProtocol::H2c ? "h2c" : p == UpstreamProtocol::H2 ? "h2" : "http/1.1";
}
// Whether the servers are spoken to through multiplexed HTTP/2 sessions.
constexpr bool is_http2(UpstreamProtocol p) { return p != UpstreamProtocol::Http1; }

// [upstream.tls] (or `tls = true` for every default): TLS to the group's
// servers, nginx's `proxy_pass https://` with its proxy_ssl_* directives.
// Unlike nginx (proxy_ssl_verify off), the server's certificate is verified
// by default.
struct UpstreamTls {
  bool enabled = false;
  // server_name: sent as SNI (RFC 6066 §3) and the name the certificate must
  // carry (RFC 6125). "" (the default): no SNI, and the certificate must
  // carry the server's IP address (a server written "localhost" is
  // 127.0.0.1).
  std::string server_name;
  bool verify = true;       // false: any certificate (nginx's default, a trap)
  std::string trusted_ca;   // PEM file of trust anchors; "" = OpenSSL's default store (the system's)
  std::string certificate;  // client certificate chain (PEM), for servers that ask for one; with `key`
  std::string key;
  std::vector<TlsVersion> protocols{TlsVersion::Tls12, TlsVersion::Tls13};
  bool session_reuse = true;  // resume the last session with each server (nginx's proxy_ssl_session_reuse)
  std::string origin;         // "file:line:col" of the table (or `tls = true`), for errors found later
  bool operator==(const UpstreamTls&) const = default;
};

struct Upstream {
  std::string name;                  // name = "api" (required, unique)
  UpstreamProtocol protocol = UpstreamProtocol::Http1;  // protocol = "http/1.1" | "h2c" | "h2"
  UpstreamTls tls;                   // [upstream.tls]; enabled whenever protocol = "h2"
  // servers = ["127.0.0.1:9000", "api.internal:8080"] (required, >= 1): IP
  // literals, or DNS names resolved by [resolver], each of their A/AAAA
  // answers a server of the group (control/upstream_resolver.h).
  std::vector<Endpoint> servers;
  // Parallel to `servers` when one of them is written as a table; entries
  // past its end (or all, when empty) are the defaults.
  std::vector<ServerOptions> server_options;
  SourcePositions server_positions;  // where each of `servers` is written
  const ServerOptions& options_of(size_t i) const {
    static const ServerOptions kDefault;
    return i < server_options.size() ? server_options[i] : kDefault;
  }
  // A name of `servers` that does not resolve at start-up stops the start
  // (false: the group starts without its addresses, which join once the
  // name resolves).
  bool resolve_at_start = true;
  size_t keepalive = 32;             // max idle keepalive connections per worker per server (0 = no pooling)
  Millis keepalive_timeout{60'000};  // idle pooled connection closed after this
  uint64_t keepalive_requests = 1000;  // requests per upstream connection before it is closed
  Millis connect_timeout{5'000};
  Millis read_timeout{60'000};       // between two reads of the response
  Millis send_timeout{60'000};       // between two writes of the request
  // Passive health (data/upstream/server_health.h): max_fails consecutive
  // failures (connect, TLS, reset, timeout, invalid response) eject a
  // server for fail_timeout × its consecutive ejections (at most 5 min, or
  // fail_timeout when longer); 0: never ejected. At most
  // max_ejected_percent of the group's servers are out at once; when every
  // server is out, requests still go to them ("panic").
  Millis fail_timeout{10'000};
  int64_t max_fails = 1;
  int64_t max_ejected_percent = 50;
  // Responses with one of these statuses (400..599) count as failures of
  // their server too (Envoy's consecutive 5xx, HAProxy's observe layer7);
  // the response still goes to the client. Empty: only transport failures.
  std::vector<int> failure_statuses;
  // How a server is chosen (data/upstream/balancer.h).
  Balance balance = Balance::LeastRequest;
  HashKey hash;  // balance = "hash" only: "$remote_addr" | "$header_NAME" | "$cookie_NAME"
  // A server that comes back (its ejection or a down verdict ends) or
  // joins ramps from 10 % to its full weight over this (0: at once).
  Millis slow_start{0};
  HealthCheck health_check;
  // Further attempts of one request after a failure (another server, or a
  // fresh connection), before the client gets it: a request that nothing
  // reached goes on whatever its method; one that timed out or was reset
  // before any of the response only when idempotent (RFC 9110 §9.2.2), or
  // with retry_non_idempotent (nginx's proxy_next_upstream non_idempotent).
  int64_t max_retries = 2;
  bool retry_non_idempotent = false;
  // h2c and h2 only (RFC 9113 §6.7): a connection that carries no stream sends a
  // PING after h2_ping_interval idle (0 = never), and is closed when no PING
  // ACK came back within h2_ping_timeout.
  Millis h2_ping_interval{0};
  Millis h2_ping_timeout{5'000};
  bool operator==(const Upstream&) const = default;
};

}  // namespace tlsfront::config
