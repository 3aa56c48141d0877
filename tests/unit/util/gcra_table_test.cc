// GcraTable: nginx's limit_req verdicts (rate, burst, delay, nodelay),
// Retry-After, eviction within the memory bound; ConcurrencyTable: counts,
// limits, release, a full table.
#include "util/gcra_table.h"

#include <gtest/gtest.h>

#include "util/concurrency_table.h"

namespace tlsfront {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT = 100 * kMs;  // 10 r/s

TEST(GcraTable, RateWithoutBurst) {
  GcraTable t(1 << 20);
  const GcraParams p{kT, 0, GcraParams::kNoDelay};
  EXPECT_TRUE(t.check("a", 0, p).pass);
  const GcraVerdict second = t.check("a", 10 * kMs, p);
  EXPECT_FALSE(second.pass);
  EXPECT_EQ(second.retry_after_ns, 90 * kMs);
  EXPECT_TRUE(t.check("b", 10 * kMs, p).pass);  // keys are independent
  EXPECT_TRUE(t.check("a", 100 * kMs, p).pass);
  // At twice the rate, every other request passes.
  int passed = 0;
  for (uint64_t i = 0; i < 100; ++i) passed += t.check("c", 1000 * kMs + i * 50 * kMs, p).pass;
  EXPECT_EQ(passed, 50);
}

TEST(GcraTable, BurstDelayedAtTheRate) {
  GcraTable t(1 << 20);
  const GcraParams p{kT, 3, 0};  // nginx's default: every excess request waits
  EXPECT_EQ(t.check("a", 0, p).wait_ns, 0u);
  EXPECT_EQ(t.check("a", 0, p).wait_ns, kT);
  EXPECT_EQ(t.check("a", 0, p).wait_ns, 2 * kT);
  EXPECT_EQ(t.check("a", 0, p).wait_ns, 3 * kT);
  EXPECT_FALSE(t.check("a", 0, p).pass);
}

TEST(GcraTable, DelayLetsTheFirstOnesThrough) {
  GcraTable t(1 << 20);
  const GcraParams p{kT, 3, 2};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t.check("a", 0, p).wait_ns, 0u) << i;
  EXPECT_EQ(t.check("a", 0, p).wait_ns, kT);
  EXPECT_FALSE(t.check("a", 0, p).pass);
  GcraTable n(1 << 20);
  const GcraParams nodelay{kT, 3, GcraParams::kNoDelay};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(n.check("a", 0, nodelay).wait_ns, 0u);
  EXPECT_FALSE(n.check("a", 0, nodelay).pass);
  EXPECT_TRUE(n.would_reject("a", 50 * kMs, nodelay));
  EXPECT_FALSE(n.would_reject("a", 100 * kMs, nodelay));
}

TEST(GcraTable, EvictsLeastRecentlyUsedWithinItsBytes) {
  // 64 shards of 256 bytes: one key each at most.
  GcraTable t(GcraTable::kShards * 256);
  const GcraParams p{kT, 0, GcraParams::kNoDelay};
  for (int i = 0; i < 10'000; ++i) t.check("key" + std::to_string(i), 0, p);
  EXPECT_LE(t.entries(), GcraTable::kShards);
  EXPECT_GE(t.evictions(), 10'000u - GcraTable::kShards);
}

TEST(ConcurrencyTable, CountsAndReleases) {
  auto t = std::make_shared<ConcurrencyTable>(1 << 20);
  EXPECT_EQ(t->acquire("a", 2), ConcurrencyTable::Acquire::Ok);
  {
    ConcurrencySlot slot(t, "a");  // the one above, given back at scope end
    EXPECT_EQ(t->acquire("a", 2), ConcurrencyTable::Acquire::Ok);
    EXPECT_EQ(t->acquire("a", 2), ConcurrencyTable::Acquire::AtLimit);
    t->release("a");
  }
  EXPECT_EQ(t->entries(), 0u);
  ConcurrencyTable tiny(ConcurrencyTable::kShards * 100);
  int full = 0;
  for (int i = 0; i < 1000; ++i) full += tiny.acquire("k" + std::to_string(i), 1) == ConcurrencyTable::Acquire::Full;
  EXPECT_GT(full, 0);
  EXPECT_LE(tiny.entries(), ConcurrencyTable::kShards);
}

}  // namespace
}  // namespace tlsfront
