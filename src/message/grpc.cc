#include "message/grpc.h"

#include "message/header_token.h"

namespace tlsfront::http {

bool is_grpc(const RequestHead& head) {
  for (const auto& h : head.headers) {
    if (iequals(h.name, "content-type")) {
      std::string_view v = h.value;
      return v.size() >= 16 && iequals(v.substr(0, 16), "application/grpc");
    }
  }
  return false;
}

std::string grpc_message(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::optional<int> grpc_status_of(const std::vector<Header>& fields) {
  for (const auto& h : fields) {
    if (!iequals(h.name, "grpc-status")) continue;
    if (h.value.empty() || h.value.size() > 4) return std::nullopt;
    int n = 0;
    for (char c : h.value) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return n;
  }
  return std::nullopt;
}

std::vector<Header> grpc_status_fields(int status, std::string_view message) {
  return {Header{"grpc-status", std::to_string(status)}, Header{"grpc-message", grpc_message(message)}};
}

}  // namespace tlsfront::http
