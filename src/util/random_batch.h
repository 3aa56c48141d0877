// random_batch: OpenSSL's public DRBG (RAND_bytes) drawn in batches per
// thread, for the small public random values made per connection or request
// (a session ticket's IV, a request ID).
//
// Why: each RAND_bytes call pays a fixed ~6,500 instructions (the thread's
// DRBG lookup, the reseed checks, an AES-CTR generate set-up) whatever its
// length: 0.25 % of a full TLS handshake for a 16-octet ticket IV (callgrind,
// issue #18). One call for kBatchBytes serves many values: at 4 KiB, 256
// request IDs, about 68 instructions each where a 512-octet batch cost 235
// (the DRBG's output itself costs about 2.8 instructions an octet).
//
// The octets are the DRBG's output as RAND_bytes gives it; only their order of
// use changes. Octets handed out are wiped from the batch at once; the batch's
// unused octets stay in the thread's memory until used (public values only:
// never use this for keys or secrets, use RAND_priv_bytes). A forked child
// starts with an empty batch (pthread_atfork), so parent and child never hand
// out the same octets.
//
// Thread affinity: any thread; each has its own batch (thread_local).
#pragma once

#include <cstddef>

namespace tlsfront::random_batch {

inline constexpr size_t kBatchBytes = 4096;
inline constexpr size_t kMaxRequest = 64;  // octets per call, at most

// Fills `out` with `n` (<= kMaxRequest) random octets. False when n is out of
// range or RAND_bytes failed (the output is then unspecified), as RAND_bytes.
[[nodiscard]] bool fill(unsigned char* out, size_t n);

// Octets left in the calling thread's batch (tests).
size_t available();

}  // namespace tlsfront::random_batch
