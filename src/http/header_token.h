// Well-known header names and the hop-by-hop set (RFC 9110 §7.6.1): names are
// compared case-insensitively, classified once per header so the proxy never
// re-scans strings on the hot path.
// Thread affinity: any thread (pure functions).
#pragma once

#include <string_view>
#include <vector>

namespace tlsfront::http {

enum class HeaderToken {
  Other,
  Connection,
  KeepAlive,
  ProxyConnection,
  Te,
  Trailer,
  TransferEncoding,
  Upgrade,
  Host,
  ContentLength,
  Expect,
  XForwardedFor,
  XForwardedProto,
  XRealIp,
  UserAgent,
};

bool iequals(std::string_view a, std::string_view b);

// Classifies a header field name (case-insensitive).
HeaderToken classify_header(std::string_view name);

// Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding,
// Upgrade: removed by a proxy before forwarding (RFC 9110 §7.6.1).
bool is_hop_by_hop(HeaderToken token);

// Splits a Connection header value into its comma-separated option names
// (trimmed, empty elements skipped), appending views into `value` to `out`.
void split_list(std::string_view value, std::vector<std::string_view>& out);

// True when the comma-separated list `value` contains `token` (case-insensitive).
bool list_contains(std::string_view value, std::string_view token);

}  // namespace tlsfront::http
