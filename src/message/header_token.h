// Well-known header names and the hop-by-hop set (RFC 9110 §7.6.1): names are
// compared case-insensitively, classified once per header so the proxy never
// re-scans strings on the hot path.
// Thread affinity: any thread (pure functions).
#pragma once

#include <string>
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
// Lowercases the ASCII letters of `s` in place (octets >= 0x80 unchanged),
// eight at a time: what HTTP/2 and HTTP/3 require of field names (RFC 9113
// §8.2.1, RFC 9114 §4.2).
void lowercase_in_place(std::string& s);

// `s` without leading and trailing optional whitespace (OWS: SP and HTAB,
// RFC 9110 §5.6.3).
std::string_view trim_ows(std::string_view s);

// Classifies a header field name (case-insensitive).
HeaderToken classify_header(std::string_view name);

// Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding,
// Upgrade: removed by a proxy before forwarding (RFC 9110 §7.6.1).
bool is_hop_by_hop(HeaderToken token);

// RFC 9110 §5.6.2: a field name is a non-empty token (tchar only). llhttp 8.1
// lets "Name : value" through, so names are checked again before forwarding.
bool valid_field_name(std::string_view name);

// RFC 9110 §5.5: a field value is VCHAR / obs-text / SP / HTAB — no CR, LF,
// NUL or other control byte.
bool valid_field_value(std::string_view value);

// Calls `fn(item)` for each element of the comma-separated list `value`
// (RFC 9110 §5.6.1: trimmed, empty elements skipped), a view into `value`;
// stops early when `fn` returns true, and returns whether it did. Allocates
// nothing.
template <typename Fn>
bool for_each_list_item(std::string_view value, Fn&& fn) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = trim_ows(value.substr(0, comma));
    if (!item.empty() && fn(item)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// Splits a Connection header value into its comma-separated option names
// (trimmed, empty elements skipped), appending views into `value` to `out`.
void split_list(std::string_view value, std::vector<std::string_view>& out);

// True when the comma-separated list `value` contains `token` (case-insensitive).
bool list_contains(std::string_view value, std::string_view token);

}  // namespace tlsfront::http
