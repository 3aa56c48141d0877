#include "util/secret.h"

#include <openssl/crypto.h>

namespace tlsfront {

Secret& Secret::operator=(Secret&& o) noexcept {
  if (this != &o) {
    wipe();
    bytes_ = std::move(o.bytes_);
    o.wipe();
  }
  return *this;
}

void Secret::wipe() {
  if (!bytes_.empty()) OPENSSL_cleanse(bytes_.data(), bytes_.size());
  bytes_.clear();
}

}  // namespace tlsfront
