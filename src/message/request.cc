#include "message/request.h"

namespace tlsfront::http {

bool valid_host(std::string_view h) {
  if (h.empty() || h.size() > 255) return false;
  // Optional ":port" after a name or a bracketed IPv6 literal: 1-5 digits.
  size_t colon = h.front() == '[' ? h.find("]:") : h.rfind(':');
  if (colon != std::string_view::npos) {
    std::string_view port = h.substr(colon + (h.front() == '[' ? 2 : 1));
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
  }
  if (h.front() == '[' && h.find(']') == std::string_view::npos) return false;
  for (char c : h) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
              c == ':' || c == '[' || c == ']' || c == '_' || c == '~' || c == '%';
    if (!ok) return false;
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

}  // namespace tlsfront::http
