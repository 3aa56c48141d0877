// BlockCache: glibc's malloc with a bounded per-thread cache of freed blocks,
// behind OpenSSL's memory functions (CRYPTO_set_mem_functions, install()) and
// the tlsfront binary's global operator new/delete (src/operator_new.cc).
//
// Why: a TLS handshake makes ~740 OpenSSL allocations (issue #18; measured
// with a counting allocator: ~710 of at most 1,032 octets, ~25 of 3-22 KiB),
// and a proxied request ~15 of its own (the stream, the exchange, the
// record, header vectors and strings). glibc's tcache keeps 7 blocks per
// size up to 1,032 octets, so bursts of same-sized blocks and every larger
// block go through _int_malloc / _int_free. This cache keeps more of them per
// thread: −2.6 % instructions per full handshake (OpenSSL's), −4.5 % per
// proxied HTTP/2 request (operator new) in callgrind A/Bs.
// The bounds fit a worker with a few hundred requests in flight (h2load's
// 20 connections × 10 streams): freed in bursts of that size, 64 blocks per
// class and 256 KiB let 60 % of operator new's calls miss; 512 and 1 MiB
// took −8.5 % instructions per HTTP/2-to-h2c request (callgrind), and 4 MiB
// cut the allocator's share of the CPU samples of a run at full speed from
// 13.7 to 9.6 % (perf). With 1,000 requests in flight (h2load -m50) a
// class's burst passed 512 blocks: 4,096 per class took −4.4 % instructions
// per HTTP/2-to-h2c request there (−1 % at 200 in flight). At most 4 MiB of
// freed blocks stays with each thread (16 MiB cost rss_idle +1.5 %, the
// handshakes' blocks held); idle memory per connection or tunnel did not
// move (bench.sh's rss_idle, rss_idle_h2, ws_idle A/B within 1 %): freed
// blocks stay resident in glibc's heap as well.
//
// Blocks are plain glibc chunks, always: a cached block is one that was
// freed, kept on the freeing thread's list, and handed out again on that
// thread. So a block may be freed on any thread (OpenSSL objects cross
// threads: the control plane builds SSL_CTX, workers use it, sessions sit in a
// shared cache), by free() as well, and realloc() is glibc's. No header: a
// block's size class is malloc_usable_size(), and a miss allocates exactly
// the usable size glibc would have given, so nothing is rounded beyond
// glibc's own 16-octet granularity (idle memory is unchanged).
//
// Classes: usable sizes 24, 40, ..., 1,032 (one list each, glibc's chunk
// sizes) and, up to kMaxCachedBytes, kMediumSlots exact-size slots (a usable
// size hashed to a slot; a slot holding another size is not evicted: the
// block goes to free()). Bounds per thread: kMaxPerClass blocks per class or
// slot and kMaxThreadBytes in all, of which blocks above kMaxSmallUsable may
// take half (a handshake's large blocks must not crowd out the small ones
// each request makes); beyond them, free(). A thread's cache is
// returned to free() when the thread exits; afterwards (OpenSSL's own
// thread-exit and atexit clean-up) its calls go straight to malloc/free.
//
// Semantics (OpenSSL 3.0 calls a custom function without its own checks):
// allocate(0) returns nullptr; reallocate(nullptr, n) allocates;
// reallocate(p, 0) frees p and returns nullptr; release(nullptr) is a no-op.
//
// install() must run before OpenSSL's first allocation (first thing in
// main()): CRYPTO_set_mem_functions refuses afterwards, and install() then
// returns false and OpenSSL keeps its defaults. Under AddressSanitizer
// install() does nothing and returns false, so ASan sees OpenSSL's
// allocations. Thread affinity: any thread; the cache is thread_local.
#pragma once

#include <cstddef>

// TLSFRONT_ASAN: defined under AddressSanitizer (GCC's macro or clang's
// feature test), where neither OpenSSL's functions nor operator new may
// bypass ASan's allocator.
#if defined(__SANITIZE_ADDRESS__)
#define TLSFRONT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TLSFRONT_ASAN 1
#endif
#endif

namespace tlsfront::block_cache {

inline constexpr size_t kMaxSmallUsable = 1032;        // glibc's largest tcache chunk
inline constexpr size_t kMaxCachedBytes = 32 * 1024;   // larger blocks: free()
inline constexpr size_t kMediumSlots = 32;
inline constexpr unsigned kMaxPerClass = 4096;
inline constexpr size_t kMaxThreadBytes = 4096 * 1024;  // octets cached per thread, at most

// Installs the functions below as OpenSSL's. True when installed.
bool install();
// True when install() succeeded in this process.
bool installed();

// The functions, callable directly (tests). file and line are OpenSSL's.
void* allocate(size_t n, const char* file = nullptr, int line = 0);
void* reallocate(void* p, size_t n, const char* file = nullptr, int line = 0);
void release(void* p, const char* file = nullptr, int line = 0);
// release() for a block known to have been allocated with n octets
// (malloc(n) or allocate(n); sized operator delete): no malloc_usable_size()
// call, whose read of the chunk header is a cache miss on a block not touched
// lately (malloc_usable_size: 3.3 % → 0.4 % of the proxy's CPU samples in
// an HTTP/2-to-h2c run at full speed, perf record).
void release_sized(void* p, size_t n);

struct ThreadStats {
  size_t blocks = 0;  // blocks cached by the calling thread
  size_t bytes = 0;   // their usable octets
  size_t hits = 0;    // allocations served from the cache
};
ThreadStats thread_stats();
// Returns the calling thread's cached blocks to free() (tests; thread exit).
void drain_thread();

}  // namespace tlsfront::block_cache
