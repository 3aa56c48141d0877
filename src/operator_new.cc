// The tlsfront binary's global operator new and delete: glibc's malloc
// through the per-thread block cache (util/block_cache.h), as OpenSSL's
// allocations are. Blocks stay plain glibc chunks, so memory allocated here
// may be freed by free() and the reverse (libraries built against the
// default operator new, e.g. libstdc++'s own, mix freely), on any thread.
// Only in the tlsfront executable: the test binaries keep the default, so
// their unit tests see glibc's allocator directly; the integration tests run
// this binary. Not under AddressSanitizer, which must see every allocation.
// The aligned (std::align_val_t) forms keep libstdc++'s defaults.
#include <new>

#include "util/block_cache.h"

#if !defined(TLSFRONT_ASAN)
namespace {

// operator new(0) must return a distinct pointer; block_cache::allocate(0)
// returns nullptr, as OpenSSL expects.
inline void* take(std::size_t n) { return tlsfront::block_cache::allocate(n != 0 ? n : 1); }
inline void give(void* p) { tlsfront::block_cache::release(p); }
inline void give(void* p, std::size_t n) { tlsfront::block_cache::release_sized(p, n); }

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = take(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = take(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return take(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return take(n); }
void operator delete(void* p) noexcept { give(p); }
void operator delete[](void* p) noexcept { give(p); }
void operator delete(void* p, std::size_t n) noexcept { give(p, n); }
void operator delete[](void* p, std::size_t n) noexcept { give(p, n); }
void operator delete(void* p, const std::nothrow_t&) noexcept { give(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { give(p); }
#endif
