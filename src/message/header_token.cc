#include "message/header_token.h"

#include <array>
#include <utility>

namespace tlsfront::http {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

constexpr std::array<std::pair<std::string_view, HeaderToken>, 14> kTokens{{
    {"connection", HeaderToken::Connection},
    {"keep-alive", HeaderToken::KeepAlive},
    {"proxy-connection", HeaderToken::ProxyConnection},
    {"te", HeaderToken::Te},
    {"trailer", HeaderToken::Trailer},
    {"transfer-encoding", HeaderToken::TransferEncoding},
    {"upgrade", HeaderToken::Upgrade},
    {"host", HeaderToken::Host},
    {"content-length", HeaderToken::ContentLength},
    {"expect", HeaderToken::Expect},
    {"x-forwarded-for", HeaderToken::XForwardedFor},
    {"x-forwarded-proto", HeaderToken::XForwardedProto},
    {"x-real-ip", HeaderToken::XRealIp},
    {"user-agent", HeaderToken::UserAgent},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

HeaderToken classify_header(std::string_view name) {
  // Cheap pre-filter: all known names are 2..17 bytes long.
  if (name.size() < 2 || name.size() > 17) return HeaderToken::Other;
  for (const auto& [n, t] : kTokens) {
    if (iequals(name, n)) return t;
  }
  return HeaderToken::Other;
}

bool valid_field_name(std::string_view name) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) {
      switch (c) {
        case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
        case '.': case '^': case '_': case '`': case '|': case '~':
          ok = true;
          break;
        default:
          return false;
      }
    }
  }
  return true;
}

bool valid_field_value(std::string_view value) {
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

bool is_hop_by_hop(HeaderToken token) {
  switch (token) {
    case HeaderToken::Connection:
    case HeaderToken::KeepAlive:
    case HeaderToken::ProxyConnection:
    case HeaderToken::Te:
    case HeaderToken::Trailer:
    case HeaderToken::TransferEncoding:
    case HeaderToken::Upgrade:
      return true;
    default:
      return false;
  }
}

void split_list(std::string_view value, std::vector<std::string_view>& out) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = trim(value.substr(0, comma));
    if (!item.empty()) out.push_back(item);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

bool list_contains(std::string_view value, std::string_view token) {
  std::vector<std::string_view> items;
  split_list(value, items);
  for (auto item : items) {
    if (iequals(item, token)) return true;
  }
  return false;
}

}  // namespace tlsfront::http
