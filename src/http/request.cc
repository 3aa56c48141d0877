#include "http/request.h"

namespace tlsfront::http {

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
