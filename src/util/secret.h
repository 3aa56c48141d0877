// Secret: bytes that must not outlive their use in memory (a Redis password,
// a ticket-key wrap key): OPENSSL_cleanse()d on destruction and when moved
// from. Never logged by anything in tlsfront. Move-only value type; any
// thread (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace tlsfront {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string bytes) : bytes_(std::move(bytes)) {}
  Secret(Secret&& o) noexcept : bytes_(std::move(o.bytes_)) { o.wipe(); }
  Secret& operator=(Secret&& o) noexcept;
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  ~Secret() { wipe(); }

  const std::string& str() const { return bytes_; }
  std::span<const uint8_t> bytes() const {
    return {reinterpret_cast<const uint8_t*>(bytes_.data()), bytes_.size()};
  }
  bool empty() const { return bytes_.empty(); }

 private:
  void wipe();
  std::string bytes_;
};

}  // namespace tlsfront
