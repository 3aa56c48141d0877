#include "tools/probe_target.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "config/units.h"

namespace tlsfront::tools {
namespace {

Error bad(std::string_view what, std::string detail) {
  return make_error(Errc::InvalidArgument, std::string(what) + ": " + std::move(detail));
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}
bool is_ipv6(const std::string& s) {
  in6_addr a{};
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// A decimal port 1-65535.
bool parse_port(std::string_view s, int& port) {
  if (s.empty() || s.size() > 5) return false;
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 1 || v > 65535) return false;
  port = v;
  return true;
}

// RFC 3986 reg-name as DNS uses it: letters, digits, '-', '.', '_'.
bool valid_host_name(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  return std::all_of(h.begin(), h.end(), [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_'; });
}

}  // namespace

std::string ProbeTarget::authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  if (port == 443) return v6 ? fmt::format("[{}]", host) : host;
  return v6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::string ProbeTarget::host_port() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<ProbeTarget> parse_probe_url(std::string_view url) {
  const std::string what = "URL \"" + std::string(url) + "\"";
  ProbeTarget t;
  t.url = std::string(url);
  constexpr std::string_view kScheme = "https://";
  if (url.size() < kScheme.size() || lower(url.substr(0, kScheme.size())) != kScheme) {
    return bad(what, "expected https://HOST[:PORT][/PATH]");
  }
  std::string_view rest = url.substr(kScheme.size());
  if (auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  const size_t end = std::min(rest.find('/'), rest.find('?'));
  std::string_view authority = rest.substr(0, end);
  if (end != std::string_view::npos) {
    t.path = std::string(rest.substr(end));
    if (t.path[0] == '?') t.path.insert(t.path.begin(), '/');
  }
  for (unsigned char c : t.path) {
    if (c <= 0x20 || c >= 0x7f) return bad(what, "the path holds a space, control or non-ASCII byte (percent-encode it)");
  }
  if (authority.find('@') != std::string_view::npos) return bad(what, "user information (user@host) is not supported");
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad(what, "unterminated [IPv6 address]");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad(what, "unexpected text after ]");
      port = after.substr(1);
      if (port.empty()) return bad(what, "empty port");
    }
    t.host = lower(host);
    if (!is_ipv6(t.host)) return bad(what, "\"" + std::string(host) + "\" is not an IPv6 address");
    t.host_is_ip = true;
  } else {
    if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      if (port.empty()) return bad(what, "empty port");
    }
    t.host = lower(host);
    if (t.host.empty()) return bad(what, "no host");
    if (!t.host.empty() && t.host.back() == '.') t.host.pop_back();  // a fully qualified name; certificates hold none
    if (!valid_host_name(t.host)) return bad(what, "invalid host name \"" + std::string(host) + "\"");
    t.host_is_ip = is_ipv4(t.host);
  }
  if (!port.empty() && !parse_port(port, t.port)) return bad(what, "invalid port \"" + std::string(port) + "\" (1-65535)");
  return t;
}

Result<ResolveOverride> parse_resolve(std::string_view spec) {
  const std::string what = "--resolve \"" + std::string(spec) + "\"";
  const size_t c1 = spec.find(':');
  if (c1 == std::string_view::npos) return bad(what, "expected HOST:PORT:ADDRESS");
  const size_t c2 = spec.find(':', c1 + 1);
  if (c2 == std::string_view::npos) return bad(what, "expected HOST:PORT:ADDRESS");
  ResolveOverride r;
  r.host = lower(spec.substr(0, c1));
  if (!valid_host_name(r.host)) return bad(what, "invalid host name");
  if (!parse_port(spec.substr(c1 + 1, c2 - c1 - 1), r.port)) return bad(what, "invalid port (1-65535)");
  std::string_view addr = spec.substr(c2 + 1);
  if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']') addr = addr.substr(1, addr.size() - 2);
  r.address = std::string(addr);
  if (!is_ipv4(r.address) && !is_ipv6(r.address)) return bad(what, "\"" + r.address + "\" is not an IP address");
  return r;
}

// The configuration's duration syntax (config/units.h: "10", "10s", "500ms",
// "1m30s"), more than 0 and at most an hour.
Result<std::chrono::milliseconds> parse_probe_duration(std::string_view text) {
  auto d = config::parse_duration(text);
  if (!d || d->count() <= 0 || *d > std::chrono::hours(1)) {
    return bad("duration \"" + std::string(text) + "\"", "expected e.g. 10, 10s, 500ms or 1m (more than 0, at most 1h)");
  }
  return std::chrono::milliseconds(d->count());
}

}  // namespace tlsfront::tools
