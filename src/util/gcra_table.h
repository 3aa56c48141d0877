// GcraTable: per-key request rates by the Generic Cell Rate Algorithm (the
// "virtual scheduling" form of ITU-T I.371), for [[limit_req]] zones and
// [limits] max_full_handshakes_per_client. It gives nginx's limit_req
// verdicts (ngx_http_limit_req_module: a leaky bucket of `burst` excess
// requests drained at `rate`) with one number per key: its theoretical
// arrival time (TAT), the time at which its queue of admitted requests
// would be drained at the rate.
//
// For a request of a key at `now`, with T = the emission interval (1/rate):
//   tat    = max(the key's TAT, now)       (unknown key: now)
//   ahead  = tat - now                     (the excess already admitted, in time)
//   ahead > burst*T  -> Reject, retry after ahead - burst*T; the TAT is kept
//   otherwise        -> Pass, the TAT becomes tat + T, and the request waits
//                       ahead - delay*T when that is positive (delay = N:
//                       the first N excess requests go at once; kNoDelay:
//                       all of them, nginx's nodelay; delay = 0: nginx's
//                       default, every excess request is spaced at the rate).
//
// Structure: kShards shards, a key's shard chosen by its hash; each shard
// a hash map of its keys and a least-recently-used list, behind its own
// mutex, held only for one lookup and update (no allocation but a new key's
// node, no system call). Workers contend only when two keys of the same
// shard are checked at the same instant: with 64 shards and a few workers
// that is rare, and no lock is ever held across the request path's other
// work. Atomics alone would need a lock-free hash map with eviction, which
// the standard library does not have; a global mutex would serialize every
// worker on every limited request.
// Memory: `max_bytes` spread evenly over the shards; an entry costs its key
// plus kEntryOverhead. Past a shard's share, its least recently checked keys
// are forgotten (a forgotten key starts again with a full burst, as in
// nginx, which evicts the same way).
// Units: nanoseconds of a monotonic clock (the caller's; steady_clock).
// Thread affinity: any thread; every member function is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tlsfront {

// Now, in the nanoseconds of steady_clock the tables take.
inline uint64_t gcra_now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

struct GcraParams {
  static constexpr uint64_t kNoDelay = UINT64_MAX;
  uint64_t emission_ns = 1'000'000'000;  // T: 1e9 / requests per second (> 0)
  uint64_t burst = 0;                    // excess requests admitted above the rate
  uint64_t delay = kNoDelay;             // excess requests passed without waiting
};

struct GcraVerdict {
  bool pass = true;
  uint64_t wait_ns = 0;         // Pass: how long to hold the request first
  uint64_t retry_after_ns = 0;  // Reject: when the key may come back
};

class GcraTable {
 public:
  static constexpr size_t kShards = 64;
  static constexpr size_t kEntryOverhead = 128;  // list and map nodes, hash bucket

  explicit GcraTable(uint64_t max_bytes);
  GcraTable(const GcraTable&) = delete;
  GcraTable& operator=(const GcraTable&) = delete;

  // Charges one request of `key` at `now_ns` when it passes.
  GcraVerdict check(std::string_view key, uint64_t now_ns, const GcraParams& params);
  // Whether a request of `key` at `now_ns` would be rejected; charges nothing.
  bool would_reject(std::string_view key, uint64_t now_ns, const GcraParams& params);

  uint64_t max_bytes() const { return max_bytes_; }
  size_t entries() const { return entries_.load(std::memory_order_relaxed); }  // keys tracked now
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::string key;
    uint64_t tat = 0;
  };
  struct Shard {
    std::mutex mu;
    std::list<Entry> lru;                                                    // most recently checked first
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index;  // views of the list's keys
    uint64_t bytes = 0;
  };
  Shard& shard_of(std::string_view key);

  const uint64_t max_bytes_;
  const uint64_t shard_bytes_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<size_t> entries_{0};
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace tlsfront
