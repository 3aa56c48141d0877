// AcmeHttp: the HTTPS exchanges of an ACME client (RFC 8555 §6.1) with
// libcurl's easy interface, blocking: it runs on the ACME thread, never on a
// worker's or the control loop. HTTPS only, the server verified against
// `ca_file` (or the system's trust store when ""), no redirects, no proxy,
// a whole-exchange timeout, a response body of at most kMaxBody octets and
// headers of at most kMaxHeaderBytes: a hostile or broken CA costs at most
// that. One connection is reused across requests (keepalive).
// Errors: Errc::Io (connect, TLS, timeout: curl's message), Errc::Protocol
// (a body or header past its limit, a non-https URL).
// Thread affinity: one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "util/result.h"

namespace tlsfront::acme {

struct HttpResponse {
  long status = 0;
  std::string body;
  // The headers an ACME client reads (RFC 8555 §6.5, §7.1, §7.4.2, §8.2).
  std::string content_type, location, replay_nonce, retry_after;
};

class AcmeHttp {
 public:
  static constexpr size_t kMaxBody = 1 << 20;  // a certificate chain fits well within
  static constexpr size_t kMaxHeaderBytes = 32 * 1024;

  AcmeHttp(std::string ca_file, std::chrono::milliseconds timeout);
  ~AcmeHttp();
  AcmeHttp(const AcmeHttp&) = delete;
  AcmeHttp& operator=(const AcmeHttp&) = delete;

  [[nodiscard]] Result<HttpResponse> get(const std::string& url);
  [[nodiscard]] Result<HttpResponse> head(const std::string& url);
  // POST of a JWS (Content-Type: application/jose+json, RFC 8555 §6.2).
  [[nodiscard]] Result<HttpResponse> post_jose(const std::string& url, const std::string& body);

 private:
  enum class Method { Get, Head, Post };
  Result<HttpResponse> exchange(Method m, const std::string& url, const std::string* body);

  struct Curl;
  std::unique_ptr<Curl> curl_;
  std::string ca_file_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tlsfront::acme
