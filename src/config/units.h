// Scalar value syntax of the config file: durations ("1h30m"), sizes ("16k")
// and endpoints ("[::1]:8443"), plus the matching formatters. These parsers
// know nothing about TOML or file positions: they return Errc::InvalidArgument
// with a message naming the offending text, and the loader prefixes it with
// "file:line:col: key.path: ". Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"
#include "util/result.h"

namespace tlsfront::config {

// Parses a duration string, as nginx does: one or more "<digits><unit>" groups
// with units "ms", "s", "m", "h", "d" (case-sensitive), largest unit first and
// each at most once ("1h30m", "500ms", "1d"), or bare digits meaning seconds
// ("30"). No sign, no spaces, no fractions.
// Errc::InvalidArgument: empty, negative, unknown or misordered unit, or a
// total over INT64_MAX milliseconds.
[[nodiscard]] Result<Millis> parse_duration(std::string_view text);

// Converts a TOML integer duration, in seconds, to milliseconds.
// Errc::InvalidArgument: negative or overflowing.
[[nodiscard]] Result<Millis> duration_from_seconds(int64_t seconds);

// Parses a size in bytes, as nginx does: digits with an optional
// case-insensitive suffix k, m or g (powers of 1024): "512", "16k", "10M", "1g".
// Errc::InvalidArgument: empty, negative, unknown suffix or over UINT64_MAX.
[[nodiscard]] Result<uint64_t> parse_size(std::string_view text);

// Converts a TOML integer size, in bytes. Errc::InvalidArgument: negative.
[[nodiscard]] Result<uint64_t> size_from_integer(int64_t bytes);

// Formats `duration` with the largest exact units: "1h30m", "500ms", "0s".
// Negative durations are formatted with a leading "-".
std::string format_duration(Millis duration);

// Formats `bytes` with the largest exact suffix: "16k", "1g", "1000".
std::string format_size(uint64_t bytes);

// Parses "host:port" where host is an IPv4 literal or a bracketed IPv6 literal
// ("127.0.0.1:8443", "[::1]:8443"); the host is stored canonical and without
// brackets. With `allow_localhost`, the name "localhost" (any case) is also
// accepted and stored as "127.0.0.1"; no other name is, since nothing is
// resolved. Port: 1..65535; with `allow_port_zero` also 0, an address to
// bind: the kernel picks a free port (the message for a bad port still says
// 1..65535: 0 is no port number but "any").
// Errc::InvalidArgument: any other shape, with the reason (a URL,
// "scheme://...", is named as such rather than read as host and port).
[[nodiscard]] Result<Endpoint> parse_endpoint(std::string_view text, bool allow_localhost,
                                              bool allow_port_zero = false);

// An [[upstream]] server: what parse_endpoint(text, allow_localhost = true)
// takes, or "name:port" with a DNS name (is_upstream_dns_name, stored
// lowercase), resolved at run time. Errc::InvalidArgument as parse_endpoint.
[[nodiscard]] Result<Endpoint> parse_server_endpoint(std::string_view text);

// A DNS name for SNI matching ([[certificate]] names): lowercase LDH labels
// of 1..63 bytes, at most 253 bytes, no trailing dot (RFC 6066 §3: SNI
// carries none); "*" only as the whole left-most label with at least two
// labels after it (RFC 6125 §6.4.3, §7.2: no "*.com"). Uppercase is folded
// in place. Returns "" when valid, else why not ("has an empty label").
std::string check_dns_name(std::string& name);

// An IPv4 or IPv6 literal, without brackets ("10.0.3.7", "::1").
bool is_ip_literal(std::string_view text);

// A DNS name as [upstream.tls] server_name takes it (and sends as SNI, RFC
// 6066 §3: no trailing dot): labels of letters (any case), digits, '-' and
// '_' (internal names have them), 1..63 bytes each, 253 in all.
bool is_upstream_dns_name(std::string_view name);

// A certificate store region ([tls.store] region, `tlsfront cert --region`):
// 1..64 of a-z, 0-9, '.', '_', '-' (it names Redis keys and cache files).
bool is_region_name(std::string_view name);

// `text` in double quotes, with '"', '\' and control bytes escaped, for
// error messages.
std::string quote(std::string_view text);

}  // namespace tlsfront::config
