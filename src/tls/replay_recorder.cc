#include "tls/replay_recorder.h"

#include <functional>

namespace tlsfront::tls {

ReplayRecorder& ReplayRecorder::node() {
  static ReplayRecorder recorder(Clock::now());
  return recorder;
}

ReplayRecorder& ReplayRecorder::quic_node() {
  static ReplayRecorder recorder(Clock::now(), kQuicWindow);
  return recorder;
}

ReplayRecorder::Claim ReplayRecorder::claim(std::string_view binder, Clock::time_point now, bool after_start_window) {
  if (after_start_window && now < started_ + window_) return Claim::Starting;
  Shard& shard = shards_[std::hash<std::string_view>{}(binder) % kShards];
  std::lock_guard lock(shard.mu);
  while (!shard.by_age.empty() && shard.by_age.front().first + window_ <= now) {
    shard.keys.erase(shard.by_age.front().second);
    shard.by_age.pop_front();
  }
  if (shard.keys.contains(std::string(binder))) return Claim::Seen;
  if (shard.keys.size() >= kMaxRecords / kShards) return Claim::Full;
  shard.keys.emplace(binder);
  shard.by_age.emplace_back(now, std::string(binder));
  return Claim::First;
}

size_t ReplayRecorder::size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += s.keys.size();
  }
  return n;
}

}  // namespace tlsfront::tls
