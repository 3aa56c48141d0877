// import-nginx: what is particular to grpc_pass (tools/nginx_import_detail.h):
// its address forms, the grpc_* directives that stand where proxy_pass
// locations have proxy_*, and the reasons for the grpc_* directives that
// are not carried over.
#include <array>
#include <utility>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {

const PassDirectives& pass_directives(PassKind kind) {
  static const PassDirectives kHttp{"proxy_pass",         "proxy_connect_timeout", "proxy_read_timeout",
                                    "proxy_send_timeout", "proxy_set_header",      "proxy_hide_header"};
  static const PassDirectives kGrpc{"grpc_pass",         "grpc_connect_timeout", "grpc_read_timeout",
                                    "grpc_send_timeout", "grpc_set_header",      "grpc_hide_header"};
  return kind == PassKind::Grpc ? kGrpc : kHttp;
}

std::string grpc_target(const std::string& arg, bool& tls, std::string& why) {
  // nginx: grpc_pass [grpc://|grpcs://]address, no URI; the address a
  // host[:port] or unix:path.
  tls = arg.starts_with("grpcs://");
  std::string address = tls ? arg.substr(8) : arg.starts_with("grpc://") ? arg.substr(7) : arg;
  if (address.starts_with("unix:")) {
    why = "not carried over: no UNIX-domain upstreams (no route)";
    return {};
  }
  if (address.empty() || address.find("://") != std::string::npos || address.find('/') != std::string::npos) {
    why = "not carried over: not a grpc:// address (host:port, no URI) (no route)";
    return {};
  }
  return address;
}

std::string_view grpc_reason(std::string_view d) {
  static constexpr std::string_view kRetry =
      "no equivalent: a call the upstream did not process (GOAWAY, REFUSED_STREAM) is retried on another "
      "connection, others are not (docs/configuration.md, [[upstream]])";
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kReasons{{
      {"grpc_buffer_size", "not needed: gRPC messages are streamed frame by frame with HTTP/2 flow control"},
      {"grpc_next_upstream", kRetry},
      {"grpc_next_upstream_tries", kRetry},
      {"grpc_next_upstream_timeout", kRetry},
      {"grpc_intercept_errors", "no equivalent: backend responses are passed through"},
      {"grpc_socket_keepalive",
       "not carried over: no TCP keepalive; h2_ping_interval checks idle h2c connections with HTTP/2 PINGs instead"},
      {"grpc_bind", "no equivalent: the system picks the source address"},
  }};
  for (const auto& [name, why] : kReasons) {
    if (name == d) return why;
  }
  if (d.starts_with("grpc_ssl_")) return "not carried over: no grpc_pass grpcs:// location that was imported uses it";
  return "no equivalent: other grpc_ settings";
}

}  // namespace tlsfront::tools::nginx::detail
