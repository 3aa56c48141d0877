// util/block_cache.h: glibc chunks through a bounded per-thread cache (for
// OpenSSL and operator new); a block may be freed on any thread.
#include "util/block_cache.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace tlsfront::block_cache {
namespace {

class BlockCache : public ::testing::Test {
 protected:
  void SetUp() override { drain_thread(); }
  void TearDown() override { drain_thread(); }
};

TEST_F(BlockCache, ZeroOctetsIsNull) {
  EXPECT_EQ(allocate(0), nullptr);
  release(nullptr);  // a no-op
  EXPECT_EQ(thread_stats().blocks, 0u);
}

TEST_F(BlockCache, BlocksAreGlibcChunksOfTheUsualSize) {
  for (size_t n : {1u, 24u, 25u, 100u, 1032u, 1033u, 3272u, 16584u, 100000u}) {
    void* p = allocate(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_GE(malloc_usable_size(p), n);
    // glibc's own rounding: the 8-octet header and 16-octet steps, and one
    // more step when it hands out a free chunk whose rest would be too small
    // to split off (so it depends on the heap's state: seen in the full run).
    EXPECT_LT(malloc_usable_size(p), n + 24 + 16) << "no rounding beyond glibc's: " << n;
    std::memset(p, 0xab, n);
    std::free(p);  // plain free() is fine: a chunk like any other
  }
}

TEST_F(BlockCache, AFreedBlockIsHandedOutAgainOnItsThread) {
  for (size_t n : {40u, 1000u, 3272u, 7608u, 16584u, 21848u}) {
    void* p = allocate(n);
    // Its class is its usable size, which glibc may make one 16-octet step
    // more than n needs (when the rest of the free chunk it took was too
    // small to split off: it depends on the heap's state): asking for the
    // usable size finds it either way.
    const size_t usable = malloc_usable_size(p);
    release(p);
    EXPECT_EQ(thread_stats().blocks, 1u) << n;
    size_t hits = thread_stats().hits;
    void* q = allocate(usable);
    EXPECT_EQ(q, p) << n;
    EXPECT_EQ(thread_stats().hits, hits + 1) << n;
    EXPECT_EQ(thread_stats().blocks, 0u) << n;
    release(q);
    drain_thread();
  }
}

// Sized operator delete's path: the block joins the class of the size it
// was allocated with, without asking glibc for its usable size.
TEST_F(BlockCache, ABlockFreedWithItsSizeIsHandedOutAgain) {
  for (size_t n : {1u, 40u, 1000u, 16584u}) {
    void* p = allocate(n);
    release_sized(p, n);
    EXPECT_EQ(thread_stats().blocks, 1u) << n;
    EXPECT_GE(thread_stats().bytes, n) << n;  // its class: glibc's chunk size for n
    EXPECT_LE(thread_stats().bytes, malloc_usable_size(p)) << n;
    EXPECT_EQ(allocate(n), p) << n;
    release_sized(p, n);
    drain_thread();
  }
  // One from plain malloc too (libstdc++'s own operator new), and a size
  // beyond the cached ones goes back to glibc.
  void* m = std::malloc(200);
  release_sized(m, 200);
  EXPECT_EQ(allocate(200), m);
  release_sized(m, 200);
  void* big = allocate(kMaxCachedBytes + 1);
  drain_thread();
  release_sized(big, kMaxCachedBytes + 1);
  EXPECT_EQ(thread_stats().blocks, 0u);
}

TEST_F(BlockCache, SizesWithinOneChunkSizeShareAClass) {
  void* p = allocate(30);  // glibc: usable 40 (or 56: see above)
  const size_t usable = malloc_usable_size(p);
  release(p);
  void* again = allocate(usable - 15);  // the same chunk size
  EXPECT_EQ(again, p);
  release(again);
  void* other = allocate(usable + 1);  // the next chunk size: another class
  EXPECT_NE(other, p);
  release(other);
}

TEST_F(BlockCache, LargeBlocksAreNotCached) {
  void* p = allocate(kMaxCachedBytes + 1);
  release(p);
  EXPECT_EQ(thread_stats().blocks, 0u);
}

TEST_F(BlockCache, TheCacheIsBoundedPerClassAndPerThread) {
  std::vector<void*> small;
  for (unsigned i = 0; i < kMaxPerClass + 10; ++i) small.push_back(allocate(40));
  // glibc may hand out a chunk one class larger (a split's remainder too
  // small to keep): such a block is cached in its own class.
  const auto oversized = static_cast<size_t>(
      std::count_if(small.begin(), small.end(), [](void* p) { return malloc_usable_size(p) != 40; }));
  for (void* p : small) release(p);
  EXPECT_EQ(thread_stats().blocks, std::min<size_t>(kMaxPerClass, small.size() - oversized) + oversized);
  drain_thread();

  // Blocks above kMaxSmallUsable fill half the thread's bytes at most...
  std::vector<void*> big;
  for (size_t i = 0; i < kMaxThreadBytes / 2 / 16584 + 10; ++i) big.push_back(allocate(16584));
  for (void* p : big) release(p);
  EXPECT_LE(thread_stats().bytes, kMaxThreadBytes / 2);
  EXPECT_GT(thread_stats().bytes, kMaxThreadBytes / 2 - 16584 - 16);
  EXPECT_EQ(thread_stats().blocks, thread_stats().bytes / malloc_usable_size(big[0]));

  // ...so small blocks still find room beside them, up to kMaxThreadBytes.
  const size_t before = thread_stats().blocks;
  std::vector<void*> more;
  for (size_t k = 1; k < 64; ++k) {
    for (unsigned i = 0; i < kMaxPerClass; ++i) more.push_back(allocate(16 * k + 8));
  }
  for (void* p : more) release(p);
  EXPECT_GT(thread_stats().blocks, before + 100);
  EXPECT_LE(thread_stats().bytes, kMaxThreadBytes);
  EXPECT_GT(thread_stats().bytes, kMaxThreadBytes - kMaxSmallUsable - 16);
}

TEST_F(BlockCache, ABlockFreedOnAnotherThreadJoinsThatThreadsCache) {
  void* p = allocate(200);
  ThreadStats there;
  void* q = nullptr;
  std::thread t([&] {
    release(p);
    there = thread_stats();
    q = allocate(500);  // given back on this thread, below
  });
  t.join();  // the thread's cache (p) went to free() at its exit
  EXPECT_EQ(there.blocks, 1u);
  EXPECT_EQ(thread_stats().blocks, 0u);
  const size_t usable = malloc_usable_size(q);  // its class (see above)
  release(q);
  EXPECT_EQ(thread_stats().blocks, 1u);
  void* again = allocate(usable);
  EXPECT_EQ(again, q);
  std::free(again);  // q stays cached (and is drained) if it was not handed out
}

TEST_F(BlockCache, ReallocateFollowsOpenSslsRules) {
  char* p = static_cast<char*>(reallocate(nullptr, 10));  // an allocation
  ASSERT_NE(p, nullptr);
  std::memcpy(p, "0123456789", 10);
  p = static_cast<char*>(reallocate(p, 5000));  // grows, keeps the content
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(std::memcmp(p, "0123456789", 10), 0);
  EXPECT_GE(malloc_usable_size(p), 5000u);
  p = static_cast<char*>(reallocate(p, 4));  // shrinks, keeps the content
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(std::memcmp(p, "0123", 4), 0);
  // glibc's realloc returns a heap chunk (usable 16k + 8: cached); ASan's
  // reports the exact size asked for (not a glibc size: straight to free()).
  const bool glibc_chunk = (malloc_usable_size(p) & 15) == 8;
  EXPECT_EQ(reallocate(p, 0), nullptr);  // frees
  EXPECT_EQ(thread_stats().blocks, glibc_chunk ? 1u : 0u);
}

TEST_F(BlockCache, DrainEmptiesTheThreadsCache) {
  release(allocate(100));
  release(allocate(5000));
  EXPECT_EQ(thread_stats().blocks, 2u);
  drain_thread();
  EXPECT_EQ(thread_stats().blocks, 0u);
  EXPECT_EQ(thread_stats().bytes, 0u);
}

// ctest runs each test in a process of its own, where OpenSSL has not
// allocated yet; run with the others in one process, install() is refused.
TEST_F(BlockCache, InstalledOpenSslAllocatesThroughIt) {
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_FALSE(install()) << "AddressSanitizer sees OpenSSL's own allocations";
#else
  if (!install()) GTEST_SKIP() << "OpenSSL allocated before this test (not run alone)";
  EXPECT_TRUE(installed());
  void* p = OPENSSL_malloc(300);
  ASSERT_NE(p, nullptr);
  OPENSSL_free(p);
  EXPECT_EQ(thread_stats().blocks, 1u);
  EXPECT_EQ(OPENSSL_zalloc(300), p);
  OPENSSL_free(p);
#endif
}

}  // namespace
}  // namespace tlsfront::block_cache
