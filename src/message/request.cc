#include "message/request.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>

namespace tlsfront::http {
namespace {

// The characters of a reg-name or IPv4 address in a Host value: unreserved
// (RFC 3986 §2.3) and "%" of pct-encoded. One table look-up a character.
constexpr std::array<bool, 256> kRegNameChar = [] {
  std::array<bool, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (const char c : {'-', '.', '_', '~', '%'}) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

}  // namespace

bool valid_host(std::string_view h) {
  if (h.empty() || h.size() > 255) return false;
  std::string_view name = h, port;
  bool has_port = false;
  if (h.front() == '[') {
    // IP-literal: "[" IPv6address "]" (no zone ID, no IPvFuture), then only ":port".
    size_t end = h.find(']');
    if (end == std::string_view::npos || end + 1 > 47) return false;
    name = h.substr(0, end + 1);
    std::string_view rest = h.substr(end + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    has_port = !rest.empty();
    port = has_port ? rest.substr(1) : rest;
    char inner[INET6_ADDRSTRLEN + 1] = {};
    name.substr(1, name.size() - 2).copy(inner, INET6_ADDRSTRLEN);
    in6_addr address;
    if (inet_pton(AF_INET6, inner, &address) != 1) return false;
  } else {
    size_t colon = h.find(':');
    has_port = colon != std::string_view::npos;
    if (has_port) {
      name = h.substr(0, colon);
      port = h.substr(colon + 1);
    }
    // reg-name / IPv4address characters (unreserved, "%" of pct-encoded),
    // in labels that are not empty; one trailing dot is allowed.
    if (name.ends_with('.')) name.remove_suffix(1);
    if (name.empty() || name.front() == '.' || name.back() == '.') return false;
    char previous = 0;
    for (const char c : name) {
      if (!kRegNameChar[static_cast<unsigned char>(c)] || (c == '.' && previous == '.')) return false;
      previous = c;
    }
  }
  // Optional ":port": 1-5 digits.
  if (has_port) {
    if (port.empty() || port.size() > 5) return false;
    for (const char c : port) {
      if (c < '0' || c > '9') return false;
    }
  }
  return true;
}

std::string host_key(std::string_view h) {
  if (!h.empty() && h.front() == '[') {
    size_t end = h.find(']');
    h = h.substr(0, end == std::string_view::npos ? h.size() : end + 1);
  } else if (size_t colon = h.rfind(':'); colon != std::string_view::npos) {
    h = h.substr(0, colon);
  }
  std::string out(h);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  return out;
}

void set_routing_host(RequestHead& head) {
  head.host.clear();
  for (auto& h : head.headers) {
    if (h.token != HeaderToken::Host) continue;
    std::string& v = h.value;
    if (!v.empty() && v.front() != '[') {
      size_t end = v.find(':');  // the name's end
      if (end == std::string::npos) end = v.size();
      if (end > 1 && v[end - 1] == '.') v.erase(end - 1, 1);
    }
    head.host = host_key(v);
    return;
  }
}

bool RequestHead::idempotent() const {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" || method == "OPTIONS" ||
         method == "TRACE";
}

const Header* RequestHead::find(HeaderToken token) const {
  for (const auto& h : headers) {
    if (h.token == token) return &h;
  }
  return nullptr;
}

bool valid_response_head(const ResponseHead& head) {
  if (head.status < 100 || head.status > 599) return false;
  for (unsigned char c : head.reason) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  for (const auto& h : head.headers) {
    if (!valid_field_name(h.name) || !valid_field_value(h.value)) return false;
  }
  return true;
}

bool switches_to(const ResponseHead& head, std::string_view protocol) {
  std::vector<std::string_view> offered;
  for (const auto& h : head.headers) {
    if (h.token == HeaderToken::Upgrade) split_list(h.value, offered);
  }
  return !offered.empty() && iequals(offered.front(), protocol);
}

}  // namespace tlsfront::http
