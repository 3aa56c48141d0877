#include "data/http/request_id.h"

#include <openssl/rand.h>

#include <array>
#include <cstring>
#include <random>

namespace tlsfront::http {

namespace {

constexpr size_t kIdOctets = 16;
constexpr size_t kPoolOctets = 1024;  // 64 IDs per RAND_bytes call

// Random octets drawn ahead from the DRBG, handed out kIdOctets at a time.
struct RandomPool {
  std::array<unsigned char, kPoolOctets> octets;
  size_t next = kPoolOctets;  // empty: the first ID draws

  const unsigned char* take() {
    if (next + kIdOctets > octets.size()) refill();
    const unsigned char* id = octets.data() + next;
    next += kIdOctets;
    return id;
  }

  void refill() {
    next = 0;
    if (RAND_bytes(octets.data(), static_cast<int>(octets.size())) == 1) return;
    // The DRBG failed (it does not on a healthy system): still unique enough
    // to correlate log lines, never a reason to refuse a request.
    thread_local std::mt19937_64 fallback{std::random_device{}()};
    for (size_t i = 0; i < octets.size(); i += 8) {
      uint64_t v = fallback();
      std::memcpy(octets.data() + i, &v, 8);
    }
  }
};

}  // namespace

void RequestId::generate() {
  thread_local RandomPool pool;
  const unsigned char* raw = pool.take();
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < kIdOctets; ++i) {
    bytes_[2 * i] = kHex[raw[i] >> 4];
    bytes_[2 * i + 1] = kHex[raw[i] & 0x0f];
  }
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
