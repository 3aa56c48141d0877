// One direction of an emulated network link, as netem models it: random loss
// on arrival, a drop-tail queue in front of a bottleneck, serialization at the
// bottleneck rate, then a fixed propagation delay. Used by the delay line of
// scripts/bench-wan.sh (delay_line.cc); no I/O here, only the model.
//
// Shape: a packet offered at time t (monotonic nanoseconds)
//   - is lost with probability `loss` (one draw per packet from a 64-bit
//     Mersenne Twister seeded with `seed`: the same packets are lost for the
//     same seed and the same arrival sequence);
//   - else is dropped when `queue_packets` packets are already waiting for or
//     in serialization (drop-tail; 0 = no limit but `max_in_flight`);
//   - else starts serialization at max(t, end of the previous packet's), ends
//     it bytes * 8 / rate_bps later (rate_bps 0 = infinitely fast), and is
//     due `delay_ns` after that.
// Due times never decrease, so packets leave in the order they arrived
// (a FIFO: no reordering, like a single link). At most `max_in_flight`
// packets are held in all (queue + propagation): the memory bound when the
// rate is unlimited.
//
// Not thread-safe: one thread owns a LinkDirection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace tlsfront::wan {

struct LinkParams {
  std::uint64_t delay_ns = 0;        // one-way propagation delay
  std::uint64_t rate_bps = 0;        // bottleneck rate in bit/s; 0 = unlimited
  std::size_t queue_packets = 1000;  // drop-tail limit of the bottleneck queue; 0 = none
  double loss = 0;                   // probability in [0, 1]
  std::uint64_t seed = 1;
  std::size_t max_in_flight = 65536;
};

struct LinkStats {
  std::uint64_t received = 0;    // packets offered
  std::uint64_t delivered = 0;   // packets handed to deliver()'s sink
  std::uint64_t lost = 0;        // random loss
  std::uint64_t queue_full = 0;  // drop-tail
  std::uint64_t overflow = 0;    // max_in_flight reached
};

class LinkDirection {
 public:
  enum class Verdict { kQueued, kLost, kQueueFull, kOverflow };

  explicit LinkDirection(const LinkParams& params);

  Verdict offer(std::vector<std::uint8_t>&& packet, std::uint64_t now_ns);

  // Monotonic time of the next delivery, or UINT64_MAX when nothing is held.
  std::uint64_t next_due_ns() const;

  // Hands every packet due at `now_ns` to sink(const std::vector<uint8_t>&),
  // oldest first.
  template <typename Sink>
  void deliver(std::uint64_t now_ns, Sink&& sink) {
    while (!held_.empty() && held_.front().due_ns <= now_ns) {
      sink(held_.front().bytes);
      held_.pop_front();
      ++stats_.delivered;
    }
  }

  const LinkStats& stats() const { return stats_; }

 private:
  struct Held {
    std::uint64_t due_ns;
    std::vector<std::uint8_t> bytes;
  };

  LinkParams params_;
  std::mt19937_64 rng_;
  std::uint64_t link_free_ns_ = 0;             // end of the last serialization
  std::deque<std::uint64_t> serializing_end_;  // serialization ends still in the future (the queue)
  std::deque<Held> held_;
  LinkStats stats_;
};

}  // namespace tlsfront::wan
