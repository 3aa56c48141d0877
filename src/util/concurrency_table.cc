#include "util/concurrency_table.h"

namespace tlsfront {

ConcurrencyTable::ConcurrencyTable(uint64_t max_bytes)
    : shard_bytes_(max_bytes / kShards), shards_(std::make_unique<Shard[]>(kShards)) {}

ConcurrencyTable::Shard& ConcurrencyTable::shard_of(std::string_view key) {
  return shards_[(Hash{}(key) >> 26) % kShards];
}

ConcurrencyTable::Acquire ConcurrencyTable::acquire(std::string_view key, uint64_t max) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.mu);
  auto it = s.counts.find(key);
  if (it != s.counts.end()) {
    if (it->second >= max) return Acquire::AtLimit;
    ++it->second;
    return Acquire::Ok;
  }
  if (max == 0) return Acquire::AtLimit;
  const uint64_t cost = key.size() + kEntryOverhead;
  if (s.bytes + cost > shard_bytes_) return Acquire::Full;
  s.counts.emplace(std::string(key), 1);
  s.bytes += cost;
  entries_.fetch_add(1, std::memory_order_relaxed);
  return Acquire::Ok;
}

void ConcurrencyTable::release(std::string_view key) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.mu);
  auto it = s.counts.find(key);
  if (it == s.counts.end()) return;
  if (--it->second != 0) return;
  s.bytes -= it->first.size() + kEntryOverhead;
  s.counts.erase(it);
  entries_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace tlsfront
