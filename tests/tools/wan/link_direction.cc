// One direction of an emulated link; see link_direction.h.
#include "wan/link_direction.h"

#include <algorithm>
#include <limits>

namespace tlsfront::wan {

LinkDirection::LinkDirection(const LinkParams& params) : params_(params), rng_(params.seed) {}

LinkDirection::Verdict LinkDirection::offer(std::vector<std::uint8_t>&& packet, std::uint64_t now_ns) {
  ++stats_.received;
  // 53 random bits as a double in [0, 1): the same on every platform, unlike
  // std::bernoulli_distribution.
  const double draw = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  if (draw < params_.loss) {
    ++stats_.lost;
    return Verdict::kLost;
  }
  while (!serializing_end_.empty() && serializing_end_.front() <= now_ns) serializing_end_.pop_front();
  if (params_.queue_packets != 0 && serializing_end_.size() >= params_.queue_packets) {
    ++stats_.queue_full;
    return Verdict::kQueueFull;
  }
  if (held_.size() >= params_.max_in_flight) {
    ++stats_.overflow;
    return Verdict::kOverflow;
  }
  const std::uint64_t start = std::max(now_ns, link_free_ns_);
  std::uint64_t serialization_ns = 0;
  if (params_.rate_bps != 0) {
    serialization_ns = static_cast<std::uint64_t>(packet.size()) * 8u * 1'000'000'000u / params_.rate_bps;
  }
  link_free_ns_ = start + serialization_ns;
  serializing_end_.push_back(link_free_ns_);
  held_.push_back(Held{link_free_ns_ + params_.delay_ns, std::move(packet)});
  return Verdict::kQueued;
}

std::uint64_t LinkDirection::next_due_ns() const {
  return held_.empty() ? std::numeric_limits<std::uint64_t>::max() : held_.front().due_ns;
}

}  // namespace tlsfront::wan
