#include "tools/nginx_values.h"

#include <array>
#include <cctype>
#include <utility>

#include <fmt/format.h>

namespace tlsfront::tools::nginx {

std::optional<config::Millis> parse_time(std::string_view text) {
  constexpr int64_t kMax = INT64_MAX / 1000 / 365 / 86400;  // years that fit in int64 milliseconds, with room
  int64_t total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    int64_t n = 0;
    size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + (text[i] - '0');
      if (n > kMax * 365 * 86400) return std::nullopt;
      ++i;
    }
    if (i == start) return std::nullopt;
    int64_t unit = 1000;  // bare digits: seconds
    if (i < text.size() && text[i] != ' ') {
      char u = text[i++];
      switch (u) {
        case 'm':
          if (i < text.size() && text[i] == 's') {
            ++i;
            unit = 1;
          } else {
            unit = 60'000;
          }
          break;
        case 's': unit = 1000; break;
        case 'h': unit = 3'600'000; break;
        case 'd': unit = 86'400'000; break;
        case 'w': unit = 7 * 86'400'000LL; break;
        case 'M': unit = 30 * 86'400'000LL; break;
        case 'y': unit = 365 * 86'400'000LL; break;
        default: return std::nullopt;
      }
      if (i < text.size() && text[i] != ' ' && (text[i] < '0' || text[i] > '9')) return std::nullopt;
    }
    if (n > (INT64_MAX - total) / unit) return std::nullopt;
    total += n * unit;
    any = true;
  }
  if (!any) return std::nullopt;
  return config::Millis{total};
}

std::optional<uint64_t> parse_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t mult = 1;
  char last = text.back();
  if (last == 'k' || last == 'K') mult = 1024;
  if (last == 'm' || last == 'M') mult = 1024 * 1024;
  if (last == 'g' || last == 'G') mult = 1024 * 1024 * 1024;
  if (mult != 1) text.remove_suffix(1);
  if (text.empty() || text.size() > 15) return std::nullopt;
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (n > UINT64_MAX / mult) return std::nullopt;
  return n * mult;
}

// gzip directives the import writes from the default server only
// (tools/nginx_import_compression.cc); elsewhere (a location, another server).
constexpr std::string_view kCompressionByHand =
    "not carried over: [compression] is the default server's gzip settings; write a route's compress keys for this "
    "one (docs/configuration.md, [compression])";

std::string_view known_reason(std::string_view d) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 75> kReasons{{
      {"user", "not needed: the systemd unit runs tlsfront as its own user (User=)"},
      {"pid",
       "not carried over: nginx's own pid file; tlsfront's is pid_file or --pid-file (the systemd unit passes "
       "/run/tlsfront/tlsfront.pid), and it never takes over a file a running process holds"},
      {"worker_rlimit_nofile",
       "no equivalent: set the open-files limit outside (the systemd unit has LimitNOFILE=65536)"},
      {"worker_connections",
       "not carried over: it counts upstream connections too; tlsfront's [limits] max_connections (client "
       "connections per worker) is off by default: set it to about half of this if wanted"},
      {"use", "not needed: libuv picks the event mechanism (epoll)"},
      {"multi_accept", "not needed: each worker accepts on its own SO_REUSEPORT socket"},
      {"accept_mutex", "not needed: each worker accepts on its own SO_REUSEPORT socket"},
      {"load_module", "not needed: tlsfront has no modules"},
      {"error_log", "not carried over: errors and events go to stderr (the journal under systemd)"},
      {"sendfile", "not needed: over TLS a file is copied through OpenSSL (no kernel TLS)"},
      {"tcp_nopush", "not needed: over TLS a file is copied through OpenSSL (no kernel TLS)"},
      {"tcp_nodelay", "not needed: TCP_NODELAY is always set"},
      {"types_hash_max_size", "not needed"},
      {"types_hash_bucket_size", "not needed"},
      {"server_names_hash_bucket_size", "not needed"},
      {"server_names_hash_max_size", "not needed"},
      {"types", "not carried over: a built-in table covers web formats; add others as a route's types = { ext = \"type\" }"},
      {"default_type", "no equivalent: a file of an unknown type is application/octet-stream"},
      {"root", "not carried over: no imported location serves files with it"},
      {"alias", "not carried over: no imported location serves files with it"},
      {"index", "not carried over: no imported location serves files with it"},
      {"autoindex", "no equivalent: tlsfront never lists a directory"},
      {"try_files", "not carried over: only in a location that serves files (root or alias)"},
      {"charset", "no equivalent: text types carry charset=utf-8 (a route's types can say otherwise)"},
      {"expires", "not carried over: only in a location that serves files (root or alias); elsewhere write Cache-Control as response_headers"},
      {"etag", "not needed: file answers always carry a strong ETag"},
      {"gzip", kCompressionByHand},
      {"gzip_static", "not carried over: only in a location that serves files (root or alias)"},
      {"gzip_vary", "not needed: tlsfront adds Vary: Accept-Encoding to every compressible response"},
      {"gzip_proxied", "not carried over: tlsfront compresses proxied requests too (nginx's gzip_proxied any)"},
      {"gzip_comp_level", kCompressionByHand},
      {"gzip_buffers", "not needed: compression streams; each response holds only its codec state"},
      {"gzip_http_version", "not needed: tlsfront compresses for HTTP/1.0, 1.1 and 2 alike"},
      {"gzip_types", kCompressionByHand},
      {"gzip_min_length", kCompressionByHand},
      {"return",
       "not carried over by import-nginx yet: write it as [[route]] return / redirect (docs/configuration.md, "
       "[[route]])"},
      {"rewrite", "no equivalent: no rewriting"},
      {"error_page", "no equivalent: tlsfront's error answers are its own"},
      {"server_tokens", "not needed: tlsfront sends no version"},
      {"proxy_redirect", "no equivalent: Location headers are passed as the backend sends them"},
      {"proxy_buffering", "not needed: bodies are streamed both ways with backpressure"},
      {"proxy_buffers", "not needed: bodies are streamed both ways with backpressure"},
      {"proxy_buffer_size", "not needed: bodies are streamed both ways with backpressure"},
      {"proxy_busy_buffers_size", "not needed: bodies are streamed both ways with backpressure"},
      {"proxy_request_buffering", "not needed: request bodies are streamed with backpressure"},
      {"proxy_next_upstream",
       "no equivalent: a request failing on a reused connection before any response byte is retried once (docs/configuration.md, "
       "[[upstream]])"},
      {"proxy_intercept_errors", "no equivalent: backend responses are passed through"},
      {"ssl_dhparam", "not needed: ECDHE key exchange only"},
      // nginx: the CA certificates that verify OCSP responses and client
      // certificates, never sent; not the trust anchors tlsfront's
      // trusted_ca is (an intermediate-only chain.pem there fails --test).
      {"ssl_trusted_certificate",
       "not carried over: nginx verifies OCSP responses (and client certificates) with it; tlsfront verifies a "
       "response against the leaf's issuer, from the certificate's chain, and client certificates against client_ca "
       "only (add any CA they need there). It is not [tls] trusted_ca, the root(s) a server chain must end at (an "
       "intermediate there fails tlsfront --test): set that by hand only for a private CA's root"},
      {"ssl_buffer_size", "no equivalent: tlsfront sets no TLS record size (OpenSSL's records, up to 16k)"},
      {"ssl_reject_handshake", "no equivalent per server: [tls] strict_sni = true refuses unknown names for all"},
      {"satisfy", "no equivalent: access rules alone decide (satisfy all without auth)"},
      {"limit_req_status", "not carried over: tlsfront answers 429 (Retry-After) to limit_req"},
      {"limit_conn_status", "not carried over: tlsfront answers 503 to limit_conn"},
      {"limit_req_log_level", "no equivalent: limited requests carry \"limit\" in the access log"},
      {"limit_conn_log_level", "no equivalent: limited requests carry \"limit\" in the access log"},
      {"auth_basic", "no equivalent: no authentication"},
      {"auth_basic_user_file", "no equivalent: no authentication"},
      {"auth_request", "no equivalent: no authentication"},
      {"if", "no equivalent: no conditions"},
      {"set", "no equivalent: no variables"},
      {"map", "no equivalent: no variables"},
      {"geo", "no equivalent: no variables"},
      {"split_clients", "no equivalent: no variables"},
      {"limit_except", "no equivalent: no per-method rules"},
      {"internal", "no equivalent: no internal locations"},
      {"large_client_header_buffers",
       "not carried over: [limits] max_header_bytes bounds the whole request head (default 16k)"},
  }};
  for (const auto& [name, why] : kReasons) {
    if (name == d) return why;
  }
  if (d.starts_with("gzip_")) return "no equivalent: other gzip_ settings";
  if (d.starts_with("grpc_")) return detail::grpc_reason(d);
  if (d.starts_with("fastcgi_") || d.starts_with("uwsgi_") || d.starts_with("scgi_")) {
    return "no equivalent: HTTP/1.1 and h2c upstreams only";
  }
  if (d.starts_with("proxy_cache")) return "no equivalent: no cache";
  if (d.starts_with("proxy_ssl_")) return "not carried over: no proxy_pass https:// location that was imported uses it";
  if (d.starts_with("limit_")) return "no equivalent yet: no rate or connection limits";
  return {};
}

std::string_view log_field_of(std::string_view v) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 27> kFields{{
      {"remote_addr", "remote_addr"},
      {"remote_port", "remote_port"},
      {"time_local", "time"},
      {"time_iso8601", "time"},
      {"msec", "time"},
      {"request", "method, path, protocol"},
      {"request_method", "method"},
      {"request_uri", "path"},
      {"server_protocol", "protocol"},
      {"status", "status"},
      {"body_bytes_sent", "bytes_sent (head + body)"},
      {"bytes_sent", "bytes_sent"},
      {"request_length", "bytes_received"},
      {"request_time", "request_time_ms"},
      {"ssl_protocol", "ssl_protocol"},
      {"ssl_cipher", "ssl_cipher"},
      {"ssl_session_reused", "ssl_session_reused"},
      {"ssl_server_name", "sni"},
      {"ssl_alpn_protocol", "alpn"},
      {"upstream_addr", "upstream_addr"},
      {"upstream_status", "upstream_status"},
      {"upstream_connect_time", "upstream_connect_ms"},
      {"upstream_response_time", "upstream_response_ms"},
      {"http_user_agent", "user_agent"},
      {"connection", "connection_id"},
      {"connection_requests", "connection_requests"},
      {"http2", "protocol, alpn"},
  }};
  for (const auto& [name, field] : kFields) {
    if (name == v) return field;
  }
  return {};
}

std::string log_format_reason(const std::vector<std::string>& args) {
  std::string mapped, unmapped;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    for (size_t p = a.find('$'); p != std::string::npos; p = a.find('$', p + 1)) {
      size_t e = p + 1;
      if (e < a.size() && a[e] == '{') ++e;
      size_t b = e;
      while (e < a.size() && (std::isalnum(static_cast<unsigned char>(a[e])) || a[e] == '_')) ++e;
      std::string var = a.substr(b, e - b);
      if (var.empty()) continue;
      std::string_view field = log_field_of(var);
      std::string& into = field.empty() ? unmapped : mapped;
      std::string item = field.empty() ? "$" + var : "$" + var + " → " + std::string(field);
      if (into.find(item) == std::string::npos) into += (into.empty() ? "" : ", ") + item;
    }
  }
  std::string why = "not carried over: tlsfront's access log is JSON with fixed fields";
  if (!mapped.empty()) why += "; its fields: " + mapped;
  if (!unmapped.empty()) why += "; no field for " + unmapped;
  return why;
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : 4;
    if (n == 4 || i + n >= s.size()) return false;  // not a lead byte, or cut short
    uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1f) : n == 2 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\u{:04X}", u);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace tlsfront::tools::nginx
