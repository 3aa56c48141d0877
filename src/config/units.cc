// Durations, sizes and endpoints as written in the config file (units.h).
#include "config/units.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>

namespace tlsfront::config {
namespace {

constexpr std::string_view kDurationExamples =
    R"(expected e.g. "500ms", "30s", "5m", "1h", "1d")";
constexpr std::string_view kSizeExamples = R"(expected e.g. "512", "16k", "10m", "1g")";
constexpr std::string_view kAddressExamples =
    R"(expected "host:port", e.g. "127.0.0.1:8443" or "[::1]:8443")";

constexpr uint64_t kMaxMillis = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

struct DurationUnit {
  std::string_view suffix;
  uint64_t millis;
};
// Largest first: the order they must appear in, and the order format_duration uses.
constexpr std::array<DurationUnit, 5> kDurationUnits{{
    {"d", 86'400'000},
    {"h", 3'600'000},
    {"m", 60'000},
    {"s", 1'000},
    {"ms", 1},
}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

Error invalid(std::string_view what, std::string_view text, std::string_view reason) {
  std::string detail = "invalid ";
  detail.append(what).append(" ").append(quote(text)).append(" (").append(reason).append(")");
  return make_error(Errc::InvalidArgument, std::move(detail));
}

// Reads the digits at text[pos...] into `out`. False if there are none or
// they overflow uint64; `overflow` tells which.
bool read_digits(std::string_view text, size_t& pos, uint64_t& out, bool& overflow) {
  size_t start = pos;
  out = 0;
  overflow = false;
  while (pos < text.size() && is_digit(text[pos])) {
    uint64_t digit = static_cast<uint64_t>(text[pos] - '0');
    if (__builtin_mul_overflow(out, 10u, &out) || __builtin_add_overflow(out, digit, &out)) {
      overflow = true;
    }
    ++pos;
  }
  return pos > start && !overflow;
}

}  // namespace

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out.append(buf);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

Result<Millis> parse_duration(std::string_view text) {
  constexpr std::string_view kWhat = "duration";
  if (text.empty()) return invalid(kWhat, text, "empty");
  if (text[0] == '-') return invalid(kWhat, text, "negative");

  uint64_t total = 0;
  size_t pos = 0;
  size_t next_unit = 0;  // index into kDurationUnits of the smallest unit still allowed first
  while (pos < text.size()) {
    uint64_t count = 0;
    bool overflow = false;
    if (!read_digits(text, pos, count, overflow)) {
      return invalid(kWhat, text, overflow ? "too large" : kDurationExamples);
    }
    size_t unit_start = pos;
    while (pos < text.size() && is_alpha(text[pos])) ++pos;
    std::string_view suffix = text.substr(unit_start, pos - unit_start);

    uint64_t unit_millis = 0;
    if (suffix.empty()) {
      // Bare digits mean seconds, but only as the whole value ("30", not "1m30").
      if (unit_start != text.size() || total != 0 || next_unit != 0) {
        return invalid(kWhat, text, kDurationExamples);
      }
      unit_millis = 1'000;
    } else {
      size_t index = kDurationUnits.size();
      for (size_t i = 0; i < kDurationUnits.size(); ++i) {
        if (kDurationUnits[i].suffix == suffix) index = i;
      }
      if (index == kDurationUnits.size()) return invalid(kWhat, text, kDurationExamples);
      if (index < next_unit) {
        return invalid(kWhat, text, "units must go from largest to smallest, each at most once");
      }
      next_unit = index + 1;
      unit_millis = kDurationUnits[index].millis;
    }
    uint64_t part = 0;
    if (__builtin_mul_overflow(count, unit_millis, &part) ||
        __builtin_add_overflow(total, part, &total) || total > kMaxMillis) {
      return invalid(kWhat, text, "too large");
    }
  }
  return Millis{static_cast<int64_t>(total)};
}

Result<Millis> duration_from_seconds(int64_t seconds) {
  if (seconds < 0) {
    return make_error(Errc::InvalidArgument,
                      "invalid duration " + std::to_string(seconds) + " (negative)");
  }
  int64_t millis = 0;
  if (__builtin_mul_overflow(seconds, int64_t{1'000}, &millis)) {
    return make_error(Errc::InvalidArgument,
                      "invalid duration " + std::to_string(seconds) + " (too large)");
  }
  return Millis{millis};
}

Result<uint64_t> parse_size(std::string_view text) {
  constexpr std::string_view kWhat = "size";
  if (text.empty()) return invalid(kWhat, text, "empty");
  if (text[0] == '-') return invalid(kWhat, text, "negative");

  size_t pos = 0;
  uint64_t count = 0;
  bool overflow = false;
  if (!read_digits(text, pos, count, overflow)) {
    return invalid(kWhat, text, overflow ? "too large" : kSizeExamples);
  }
  uint64_t multiplier = 1;
  if (pos < text.size()) {
    switch (text[pos]) {
      case 'k': case 'K': multiplier = 1ull << 10; break;
      case 'm': case 'M': multiplier = 1ull << 20; break;
      case 'g': case 'G': multiplier = 1ull << 30; break;
      default: return invalid(kWhat, text, kSizeExamples);
    }
    if (++pos != text.size()) return invalid(kWhat, text, kSizeExamples);
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, multiplier, &bytes)) return invalid(kWhat, text, "too large");
  return bytes;
}

Result<uint64_t> size_from_integer(int64_t bytes) {
  if (bytes < 0) {
    return make_error(Errc::InvalidArgument,
                      "invalid size " + std::to_string(bytes) + " (negative)");
  }
  return static_cast<uint64_t>(bytes);
}

std::string format_duration(Millis duration) {
  int64_t ms = duration.count();
  if (ms == 0) return "0s";
  std::string out;
  uint64_t rest = 0;
  if (ms < 0) {
    out.push_back('-');
    rest = 0 - static_cast<uint64_t>(ms);
  } else {
    rest = static_cast<uint64_t>(ms);
  }
  for (const DurationUnit& unit : kDurationUnits) {
    if (rest >= unit.millis) {
      out += std::to_string(rest / unit.millis);
      out += unit.suffix;
      rest %= unit.millis;
    }
  }
  return out;
}

std::string format_size(uint64_t bytes) {
  if (bytes != 0) {
    if (bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "g";
    if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "m";
    if (bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "k";
  }
  return std::to_string(bytes);
}

Result<Endpoint> parse_endpoint(std::string_view text, bool allow_localhost, bool allow_port_zero) {
  constexpr std::string_view kWhat = "address";
  std::string_view host;
  std::string_view port_text;
  bool bracketed = false;
  if (text.find("://") != std::string_view::npos) {
    return invalid(kWhat, text,
                   R"(a URL is not an address: expected "host:port" without a scheme, e.g. "127.0.0.1:8080")");
  }
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return invalid(kWhat, text, "missing \"]\"");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') return invalid(kWhat, text, kAddressExamples);
    port_text = text.substr(close + 2);
    bracketed = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return invalid(kWhat, text, kAddressExamples);
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return invalid(kWhat, text, R"(IPv6 addresses must be in brackets, e.g. "[::1]:8443")");
    }
  }
  if (host.empty()) return invalid(kWhat, text, "missing host");
  if (port_text.empty()) return invalid(kWhat, text, "missing port");

  size_t pos = 0;
  uint64_t port = 0;
  bool overflow = false;
  if (!read_digits(port_text, pos, port, overflow) || pos != port_text.size() ||
      (port < 1 && !allow_port_zero) ||
      port > 65535) {
    return invalid(kWhat, text, "port must be an integer 1..65535");
  }

  Endpoint endpoint;
  endpoint.port = static_cast<uint16_t>(port);
  // inet_pton needs a NUL-terminated string.
  std::string host_z(host);
  char canonical[INET6_ADDRSTRLEN] = {};
  if (bracketed) {
    in6_addr addr6{};
    if (inet_pton(AF_INET6, host_z.c_str(), &addr6) != 1 ||
        inet_ntop(AF_INET6, &addr6, canonical, sizeof canonical) == nullptr) {
      return invalid(kWhat, text, "not an IPv6 address");
    }
    endpoint.host = canonical;
    return endpoint;
  }
  in_addr addr4{};
  if (inet_pton(AF_INET, host_z.c_str(), &addr4) == 1 &&
      inet_ntop(AF_INET, &addr4, canonical, sizeof canonical) != nullptr) {
    endpoint.host = canonical;
    return endpoint;
  }
  if (allow_localhost && host.size() == 9) {
    bool is_localhost = true;
    for (size_t i = 0; i < host.size(); ++i) {
      char c = host[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != "localhost"[i]) is_localhost = false;
    }
    if (is_localhost) {
      endpoint.host = "127.0.0.1";
      return endpoint;
    }
  }
  return invalid(kWhat, text,
                 allow_localhost
                     ? "host must be an IP literal or \"localhost\"; names are not resolved"
                     : "host must be an IP literal; names are not resolved");
}

Result<Endpoint> parse_server_endpoint(std::string_view text) {
  Result<Endpoint> literal = parse_endpoint(text, /*allow_localhost=*/true);
  if (literal.ok()) return literal;
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || text.starts_with("[") || text.find("://") != std::string_view::npos) {
    return literal;  // parse_endpoint's reason
  }
  const std::string_view host = text.substr(0, colon);
  if (host.empty() || host.find(':') != std::string_view::npos || is_ip_literal(host)) return literal;
  // A last label of digits only is a mistyped IPv4 address, never a name
  // (no top-level domain is numeric).
  const size_t dot = host.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? host : host.substr(dot + 1);
  const bool numeric = !last.empty() && last.find_first_not_of("0123456789") == std::string_view::npos;
  if (!is_upstream_dns_name(host) || numeric) {
    return invalid("address", text,
                   "host must be an IP literal or a DNS name (labels of letters, digits, \"-\" and \"_\")");
  }
  // The port, checked as parse_endpoint checks it.
  Result<Endpoint> port = parse_endpoint("127.0.0.1" + std::string(text.substr(colon)), false);
  if (!port.ok()) return port;
  Endpoint endpoint;
  for (char c : host) endpoint.host += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  endpoint.port = port->port;
  return endpoint;
}

bool is_ip_literal(std::string_view text) {
  const std::string z(text);  // inet_pton wants a terminated string
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, z.c_str(), buf) == 1 || inet_pton(AF_INET6, z.c_str(), buf) == 1;
}

bool is_upstream_dns_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok || ++label > 63) return false;
  }
  return label != 0;
}

std::string check_dns_name(std::string& name) {
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (name.empty()) return "must not be empty";
  if (name.size() > 253) return "longer than 253 bytes";
  if (name.back() == '.') return "must not end with a dot";
  std::string_view rest = name;
  if (rest.starts_with("*.")) {
    rest.remove_prefix(2);
    if (rest.find('.') == std::string_view::npos) return "a wildcard needs at least two labels after \"*.\"";
  }
  size_t label = 0;
  for (size_t i = 0; i <= rest.size(); ++i) {
    if (i == rest.size() || rest[i] == '.') {
      if (label == 0) return "has an empty label";
      if (label > 63) return "has a label longer than 63 bytes";
      if (rest[i - 1] == '-' || rest[i - label] == '-') return "has a label starting or ending with '-'";
      label = 0;
      continue;
    }
    const char c = rest[i];
    if (c == '*') return "\"*\" is only allowed as the whole left-most label (\"*.example.com\")";
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return "is not a DNS name (letters, digits, '-' and '.' only; IDNs in A-label form \"xn--...\")";
    }
    ++label;
  }
  return "";
}


bool is_region_name(std::string_view r) {
  return !r.empty() && r.size() <= 64 && std::all_of(r.begin(), r.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace tlsfront::config
