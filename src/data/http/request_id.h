// RequestId: a request's $request_id — 128 random bits as 32 lowercase hex
// characters, or, from a client its listener
// trusts (trust_request_id), that client's own ID when it is 1..128 visible
// ASCII characters (VCHAR, RFC 5234: 0x21..0x7e). Fixed storage: no
// allocation per request.
// The random bits come from OpenSSL's DRBG through the thread's batch
// (util/random_batch.h): one RAND_bytes call per request, with OpenSSL 3.0's
// provider lookup and DRBG locking, was 8.9 % of the instructions of a
// proxied HTTP/2 request.
// Thread affinity: owning worker only.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace tlsfront::http {

class RequestId {
 public:
  static constexpr size_t kMaxLength = 128;

  // A fresh random ID.
  void generate();
  // Takes `value` when it is a valid ID (true), else keeps the current one.
  bool adopt(std::string_view value);
  static bool valid(std::string_view value);

  std::string_view view() const { return {bytes_.data(), length_}; }

 private:
  std::array<char, kMaxLength> bytes_{};
  uint8_t length_ = 0;
};

}  // namespace tlsfront::http
