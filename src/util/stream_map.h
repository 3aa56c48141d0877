// StreamMap<T>: the open streams of one HTTP/2 connection by stream ID, a
// vector of (id, T) kept sorted by ID.
//
// Why not std::unordered_map: a connection has few streams open at once
// (SETTINGS_MAX_CONCURRENT_STREAMS bounds them: 100 or so), and a node map
// allocates and frees a node and hashes per stream — per request. Stream IDs
// of one initiator only grow (RFC 9113 §5.1.1), so a new stream goes at the
// end (no shifting) and the vector's capacity, kept across streams, makes
// no allocation after the connection's first requests. Lookups are a binary
// search; erase shifts the streams opened after it (pointers or
// unique_ptrs: a few words each).
//
// Iteration is in ID order. As with any vector, insert and erase invalidate
// iterators: a loop over the map must not open or close streams in it.
// Thread affinity: its connection's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace tlsfront {

template <typename T>
class StreamMap {
 public:
  using value_type = std::pair<int32_t, T>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }

  iterator find(int32_t id) {
    auto it = lower_bound(id);
    return it != items_.end() && it->first == id ? it : items_.end();
  }
  const_iterator find(int32_t id) const { return const_cast<StreamMap*>(this)->find(id); }

  // Adds `value` under `id`, or replaces the one there.
  void insert(int32_t id, T value) {
    if (items_.empty() || items_.back().first < id) {  // a new stream: the usual case
      items_.emplace_back(id, std::move(value));
      return;
    }
    auto it = lower_bound(id);
    if (it != items_.end() && it->first == id) it->second = std::move(value);
    else items_.emplace(it, id, std::move(value));
  }

  iterator erase(iterator it) { return items_.erase(it); }

 private:
  iterator lower_bound(int32_t id) {
    return std::lower_bound(items_.begin(), items_.end(), id,
                            [](const value_type& v, int32_t key) { return v.first < key; });
  }

  std::vector<value_type> items_;
};

}  // namespace tlsfront
