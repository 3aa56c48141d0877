#include "tls/openssl_error.h"

#include <openssl/err.h>

namespace tlsfront::tls {

std::string drain_openssl_errors() {
  std::string out;
  unsigned long e;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

Error openssl_error(Errc code, std::string_view what) {
  std::string detail(what);
  std::string q = drain_openssl_errors();
  if (!q.empty()) {
    detail += ": ";
    detail += q;
  }
  return make_error(code, std::move(detail));
}

Error config_error(const std::string& origin, std::string_view setting, std::string message) {
  std::string out = origin.empty() ? std::string() : origin + ": ";
  out += setting;
  out += ": ";
  out += message;
  return make_error(Errc::Config, std::move(out));
}

}  // namespace tlsfront::tls
