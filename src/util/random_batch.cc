#include "util/random_batch.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>

#include <cstring>

namespace tlsfront::random_batch {
namespace {

// Trivial, zero-initialised per thread: an empty batch until the first fill.
struct Batch {
  unsigned char bytes[kBatchBytes];
  size_t left;  // unused octets, at the end of `bytes`
};

thread_local Batch batch;

void forget_in_child() {
  // The only thread of a forked child is the one that forked.
  OPENSSL_cleanse(batch.bytes, sizeof batch.bytes);
  batch.left = 0;
}

}  // namespace

bool fill(unsigned char* out, size_t n) {
  if (n > kMaxRequest) return false;
  static const bool registered = pthread_atfork(nullptr, nullptr, forget_in_child) == 0;
  (void)registered;
  Batch& b = batch;
  if (b.left < n) {
    if (RAND_bytes(b.bytes, static_cast<int>(kBatchBytes)) != 1) {
      b.left = 0;
      return false;
    }
    b.left = kBatchBytes;
  }
  unsigned char* from = b.bytes + (kBatchBytes - b.left);
  std::memcpy(out, from, n);
  std::memset(from, 0, n);
  b.left -= n;
  return true;
}

size_t available() { return batch.left; }

}  // namespace tlsfront::random_batch
