#include "util/block_cache.h"

#include <malloc.h>
#include <openssl/crypto.h>

#include <cstdint>
#include <cstdlib>

namespace tlsfront::block_cache {
namespace {

// glibc's chunks: usable size = chunk size - 8, chunk sizes multiples of 16,
// at least 32. So usable sizes are 24, 40, 56, ...: class c holds 16c + 8.
constexpr size_t kSmallClasses = (kMaxSmallUsable - 8) / 16 + 1;  // 0 unused, 1..64

struct Link {
  Link* next;
};

struct Slot {
  Link* head;
  uint32_t usable;  // the size this slot holds while count > 0
  uint32_t count;
};

enum : uint8_t { kFresh = 0, kLive = 1, kDead = 2 };

// Trivially constructible and destructible: zero-initialised per thread, no
// guard on access. The exit hook (Drainer) is registered on the first push.
struct Cache {
  Link* small[kSmallClasses];
  uint32_t small_count[kSmallClasses];
  Slot medium[kMediumSlots];
  size_t bytes;
  size_t blocks;
  size_t hits;
  uint8_t state;
};

thread_local Cache cache;

struct Drainer {
  ~Drainer() {
    drain_thread();
    cache.state = kDead;
  }
};

[[gnu::noinline]] void register_drainer() {
  static thread_local Drainer drainer;
  (void)&drainer;
  cache.state = kLive;
}

bool g_installed = false;

// The usable size glibc gives malloc(n), n > 0.
inline size_t usable_for(size_t n) {
  size_t chunk = (n + 8 + 15) & ~size_t{15};
  return chunk < 32 ? 24 : chunk - 8;
}

inline size_t slot_of(size_t usable) {
  return static_cast<size_t>((static_cast<uint32_t>(usable >> 4) * 2654435761u) >> 27) % kMediumSlots;
}

}  // namespace

void* allocate(size_t n, const char*, int) {
  if (n == 0) return nullptr;
  size_t u = usable_for(n);
  Cache& c = cache;
  if (u <= kMaxSmallUsable) {
    size_t k = (u - 8) >> 4;
    if (Link* l = c.small[k]) {
      c.small[k] = l->next;
      --c.small_count[k];
      c.bytes -= u;
      --c.blocks;
      ++c.hits;
      return l;
    }
  } else if (u <= kMaxCachedBytes) {
    size_t s = slot_of(u);
    for (int probe = 0; probe < 2; ++probe, s = (s + 1) % kMediumSlots) {
      Slot& slot = c.medium[s];
      if (slot.count && slot.usable == u) {
        Link* l = slot.head;
        slot.head = l->next;
        --slot.count;
        c.bytes -= u;
        --c.blocks;
        ++c.hits;
        return l;
      }
    }
  }
  return std::malloc(u);
}

namespace {

// Caches p, whose usable size is at least u (a glibc heap chunk size, 16c +
// 8), or frees it when the bounds leave no room.
inline void push(Cache& c, void* p, size_t u) {
  // Blocks above kMaxSmallUsable may fill only half of the thread's bytes,
  // so a handshake's large blocks never crowd out the small ones every
  // request makes.
  const size_t limit = u <= kMaxSmallUsable ? kMaxThreadBytes : kMaxThreadBytes / 2;
  if (c.bytes + u > limit) return std::free(p);
  Link* l = static_cast<Link*>(p);
  if (u <= kMaxSmallUsable) {
    size_t k = (u - 8) >> 4;
    if (k == 0 || c.small_count[k] >= kMaxPerClass) return std::free(p);
    l->next = c.small[k];
    c.small[k] = l;
    ++c.small_count[k];
  } else if (u <= kMaxCachedBytes) {
    size_t s = slot_of(u);
    Slot* slot = &c.medium[s];
    if (slot->count && slot->usable != u) {
      slot = &c.medium[(s + 1) % kMediumSlots];
      if (slot->count && slot->usable != u) return std::free(p);
    }
    if (slot->count >= kMaxPerClass) return std::free(p);
    slot->usable = static_cast<uint32_t>(u);
    l->next = slot->head;
    slot->head = l;
    ++slot->count;
  } else {
    return std::free(p);
  }
  c.bytes += u;
  ++c.blocks;
}

// The thread's cache, or null once it is gone (thread exit).
inline Cache* live_cache() {
  Cache& c = cache;
  if (c.state != kLive) {
    if (c.state == kDead) return nullptr;
    register_drainer();
  }
  return &c;
}

}  // namespace

void release(void* p, const char*, int) {
  if (!p) return;
  Cache* c = live_cache();
  if (c == nullptr) return std::free(p);
  size_t u = malloc_usable_size(p);
  // Only glibc's heap chunk sizes, not an mmapped chunk's.
  if ((u & 15) != 8) return std::free(p);
  push(*c, p, u);
}

void release_sized(void* p, size_t n) {
  if (!p) return;
  Cache* c = live_cache();
  if (c == nullptr) return std::free(p);
  // malloc(n) gave a chunk of at least usable_for(n) octets: cached in that
  // class, the block is big enough for whoever takes it next. (Cached sizes
  // are below glibc's default mmap threshold; were a block an mmapped chunk
  // all the same, free() still takes it back when it leaves the cache.)
  push(*c, p, usable_for(n != 0 ? n : 1));
}

void* reallocate(void* p, size_t n, const char* file, int line) {
  if (!p) return allocate(n, file, line);
  if (n == 0) {
    release(p, file, line);
    return nullptr;
  }
  return std::realloc(p, n);
}

ThreadStats thread_stats() { return {cache.blocks, cache.bytes, cache.hits}; }

void drain_thread() {
  Cache& c = cache;
  for (size_t k = 0; k < kSmallClasses; ++k) {
    while (Link* l = c.small[k]) {
      c.small[k] = l->next;
      std::free(l);
    }
    c.small_count[k] = 0;
  }
  for (Slot& slot : c.medium) {
    while (Link* l = slot.head) {
      slot.head = l->next;
      std::free(l);
    }
    slot.count = 0;
  }
  c.bytes = 0;
  c.blocks = 0;
}

bool install() {
#if defined(TLSFRONT_ASAN)
  return false;
#else
  if (g_installed) return true;
  g_installed = CRYPTO_set_mem_functions(allocate, reallocate, release) == 1;
  return g_installed;
#endif
}

bool installed() { return g_installed; }

}  // namespace tlsfront::block_cache
