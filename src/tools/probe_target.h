// What `tlsfront probe` connects to: an https:// URL taken apart
// (RFC 3986 §3: scheme, host or [IPv6], optional port, path and query), a
// curl-style `--resolve host:port:addr` override, and the durations of its
// options ("10", "10s", "500ms").
// Thread affinity: none (values and pure functions).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace tlsfront::tools {

struct ProbeTarget {
  std::string url;        // as given
  std::string host;       // lowercased; an IPv6 literal without its brackets
  bool host_is_ip = false;  // an IPv4 or IPv6 literal: no SNI is sent (RFC 6066 §3)
  int port = 443;
  std::string path = "/";  // path and query, never empty; the fragment dropped
  // The Host header value: host, [host] for IPv6, ":port" unless 443.
  std::string authority() const;
  // "host:port" ("[::1]:8443" for IPv6), for messages and labels.
  std::string host_port() const;
};

// Parses "https://host[:port][/path][?query][#fragment]". Only https; no
// userinfo; port 1-65535. Errc::InvalidArgument naming what is wrong.
[[nodiscard]] Result<ProbeTarget> parse_probe_url(std::string_view url);

// `--resolve host:port:addr` (curl's syntax; addr may be [IPv6]): connect to
// `address` instead of resolving `host` for that port.
struct ResolveOverride {
  std::string host;  // lowercased
  int port = 0;
  std::string address;  // a numeric IPv4 or IPv6 address, without brackets
};
[[nodiscard]] Result<ResolveOverride> parse_resolve(std::string_view spec);

// "10" (seconds), "10s", "500ms", "1m": the configuration's duration syntax
// (config/units.h), more than 0 and at most an hour.
[[nodiscard]] Result<std::chrono::milliseconds> parse_probe_duration(std::string_view text);

}  // namespace tlsfront::tools
