// ConcurrencyTable: how many of something each key has in progress now
// (nginx's limit_conn zone): [limits] max_connections_per_client (client
// connections per address) and [[limit_conn]] zones (requests per key).
// acquire() takes one slot of a key unless it already holds `max`;
// release() gives it back. A key is forgotten when its count reaches 0, so
// the table holds only keys with something in progress.
//
// Structure: as GcraTable (util/gcra_table.h) and for the same reasons:
// kShards shards by key hash, each a hash map behind its own mutex held for
// one update. Memory: `max_bytes` over the shards (a key costs its size plus
// kEntryOverhead); a new key that does not fit is refused (Full), as nginx
// answers when its zone is exhausted — counts in progress cannot be
// evicted without letting more in than the limit.
// Thread affinity: any thread; every member function is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tlsfront {

class ConcurrencyTable {
 public:
  static constexpr size_t kShards = 64;
  static constexpr size_t kEntryOverhead = 96;
  enum class Acquire : uint8_t { Ok, AtLimit, Full };

  explicit ConcurrencyTable(uint64_t max_bytes);
  ConcurrencyTable(const ConcurrencyTable&) = delete;
  ConcurrencyTable& operator=(const ConcurrencyTable&) = delete;

  Acquire acquire(std::string_view key, uint64_t max);
  // Gives back one slot acquire() returned Ok for.
  void release(std::string_view key);
  size_t entries() const { return entries_.load(std::memory_order_relaxed); }  // keys with a count now

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> counts;
    uint64_t bytes = 0;
  };
  Shard& shard_of(std::string_view key);

  const uint64_t shard_bytes_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<size_t> entries_{0};
};

// One slot of a ConcurrencyTable, given back when it goes. Move-only.
class ConcurrencySlot {
 public:
  ConcurrencySlot() = default;
  ConcurrencySlot(std::shared_ptr<ConcurrencyTable> table, std::string key)
      : table_(std::move(table)), key_(std::move(key)) {}
  ConcurrencySlot(ConcurrencySlot&&) noexcept = default;
  ConcurrencySlot& operator=(ConcurrencySlot&& other) noexcept {
    if (this != &other) {
      reset();
      table_ = std::move(other.table_);
      key_ = std::move(other.key_);
    }
    return *this;
  }
  ~ConcurrencySlot() { reset(); }
  void reset() {
    if (table_) table_->release(key_);
    table_.reset();
  }
  explicit operator bool() const { return table_ != nullptr; }

 private:
  std::shared_ptr<ConcurrencyTable> table_;
  std::string key_;
};

}  // namespace tlsfront
