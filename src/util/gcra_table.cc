#include "util/gcra_table.h"

#include <functional>

namespace tlsfront {

GcraTable::GcraTable(uint64_t max_bytes)
    : max_bytes_(max_bytes), shard_bytes_(max_bytes / kShards), shards_(std::make_unique<Shard[]>(kShards)) {}

GcraTable::Shard& GcraTable::shard_of(std::string_view key) {
  // The map hashes again with its own buckets; this picks the shard from the
  // high bits so both do not fall on the same low bits.
  const size_t h = std::hash<std::string_view>{}(key);
  return shards_[(h >> 26) % kShards];
}

GcraVerdict GcraTable::check(std::string_view key, uint64_t now_ns, const GcraParams& p) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.mu);
  auto it = s.index.find(key);
  uint64_t tat = it == s.index.end() ? now_ns : std::max(it->second->tat, now_ns);
  const uint64_t ahead = tat - now_ns;
  const uint64_t allowance = p.burst * p.emission_ns;
  if (ahead > allowance) return GcraVerdict{false, 0, ahead - allowance};
  GcraVerdict verdict;
  if (p.delay != GcraParams::kNoDelay) {
    const uint64_t free_ahead = p.delay * p.emission_ns;
    if (ahead > free_ahead) verdict.wait_ns = ahead - free_ahead;
  }
  tat += p.emission_ns;
  if (it != s.index.end()) {
    it->second->tat = tat;
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    return verdict;
  }
  const uint64_t cost = key.size() + kEntryOverhead;
  while (!s.lru.empty() && s.bytes + cost > shard_bytes_) {
    const Entry& last = s.lru.back();
    s.bytes -= last.key.size() + kEntryOverhead;
    s.index.erase(last.key);
    s.lru.pop_back();
    entries_.fetch_sub(1, std::memory_order_relaxed);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  s.lru.push_front(Entry{std::string(key), tat});
  s.index.emplace(s.lru.front().key, s.lru.begin());
  s.bytes += cost;
  entries_.fetch_add(1, std::memory_order_relaxed);
  return verdict;
}

bool GcraTable::would_reject(std::string_view key, uint64_t now_ns, const GcraParams& p) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.mu);
  auto it = s.index.find(key);
  if (it == s.index.end() || it->second->tat <= now_ns) return false;
  return it->second->tat - now_ns > p.burst * p.emission_ns;
}

}  // namespace tlsfront
