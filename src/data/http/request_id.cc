#include "data/http/request_id.h"

#include <array>
#include <cstring>
#include <random>

#include "util/random_batch.h"

namespace tlsfront::http {

void RequestId::generate() {
  unsigned char raw[16];
  // A public value: from the thread's batch of RAND_bytes (util/random_batch.h).
  if (!random_batch::fill(raw, sizeof raw)) {
    // The DRBG failed (it does not on a healthy system): still unique enough
    // to correlate log lines, never a reason to refuse a request.
    thread_local std::mt19937_64 fallback{std::random_device{}()};
    uint64_t a = fallback(), b = fallback();
    std::memcpy(raw, &a, 8);
    std::memcpy(raw + 8, &b, 8);
  }
  // Two hex digits an octet, from a table of all 256 pairs.
  static constexpr auto kHexPairs = [] {
    std::array<char, 512> t{};
    constexpr char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 256; ++i) {
      t[2 * i] = kHex[i >> 4];
      t[2 * i + 1] = kHex[i & 0x0f];
    }
    return t;
  }();
  for (size_t i = 0; i < sizeof raw; ++i) std::memcpy(&bytes_[2 * i], &kHexPairs[2 * raw[i]], 2);
  length_ = 32;
}

bool RequestId::valid(std::string_view value) {
  if (value.empty() || value.size() > kMaxLength) return false;
  for (unsigned char c : value) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

bool RequestId::adopt(std::string_view value) {
  if (!valid(value)) return false;
  std::memcpy(bytes_.data(), value.data(), value.size());
  length_ = static_cast<uint8_t>(value.size());
  return true;
}

}  // namespace tlsfront::http
