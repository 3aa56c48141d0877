#include "message/real_ip.h"

namespace tlsfront::http {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<IpAddress> parse_forwarded_address(std::string_view entry) {
  std::string_view s = trim_ows(entry);
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view after = s.substr(close + 1);
    if (!after.empty() && (after.front() != ':' || !all_digits(after.substr(1)))) return std::nullopt;
    const std::string_view inner = s.substr(1, close - 1);
    if (inner.find(':') == std::string_view::npos) return std::nullopt;  // brackets hold IPv6 only
    return IpAddress::parse(inner);
  }
  const size_t colon = s.find(':');
  if (colon != std::string_view::npos && s.find(':', colon + 1) == std::string_view::npos) {
    // One colon: "a.b.c.d:port".
    if (!all_digits(s.substr(colon + 1))) return std::nullopt;
    const auto a = IpAddress::parse(s.substr(0, colon));
    if (!a || a->family != IpAddress::Family::V4) return std::nullopt;
    return a;
  }
  return IpAddress::parse(s);
}

std::optional<IpAddress> real_client_address(const std::vector<Header>& headers, HeaderToken header,
                                             const IpAddress& peer, std::span<const Cidr> trusted, bool recursive) {
  if (!contains_any(trusted, peer)) return std::nullopt;
  if (header == HeaderToken::XRealIp) {
    const Header* only = nullptr;
    for (const Header& h : headers) {
      if (h.token != HeaderToken::XRealIp) continue;
      if (only != nullptr) return std::nullopt;
      only = &h;
    }
    if (only == nullptr) return std::nullopt;
    auto a = parse_forwarded_address(only->value);
    if (!a || *a == peer) return std::nullopt;
    return a;
  }
  std::optional<IpAddress> reached;  // the last address walked; nullopt: still `peer`
  for (size_t i = headers.size(); i-- > 0;) {
    if (headers[i].token != HeaderToken::XForwardedFor) continue;
    std::string_view list = headers[i].value;
    for (;;) {
      const size_t comma = list.rfind(',');
      const std::string_view entry = comma == std::string_view::npos ? list : list.substr(comma + 1);
      const auto a = parse_forwarded_address(entry);
      if (!a) return reached;  // malformed: stop at the last address reached
      reached = a;
      if (!recursive || !contains_any(trusted, *a)) return reached;
      if (comma == std::string_view::npos) break;
      list = list.substr(0, comma);
    }
  }
  return reached;  // every address trusted: the left-most
}

}  // namespace tlsfront::http
