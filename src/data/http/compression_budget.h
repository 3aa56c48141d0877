// CompressionBudget: the memory one worker's response encoders may hold
// together, [compression] max_memory (per worker). A codec's state is most
// of what a compressed response costs (gzip 72-136 KiB; br 0.3-4 MiB at
// levels 0-6 and up to 34 MiB at 9, measured with unknown-length bodies in
// 64 KiB reads), and HTTP/2 lets one connection run 128 streams at once:
// without a bound a few clients could make a worker hold gigabytes. Past
// the budget a response goes out as identity (its Vary: Accept-Encoding
// stays, so caches stay right) and is counted; nothing is cut short.
//
// Each encoder holds a claim: what its shape (coding, level, window) is
// expected to peak at, or more once it grows past that (the codecs count
// their allocations). The expectation is learned: the largest peak seen in
// this worker for the shape, or, before one was seen, a conservative seed
// (gzip's state is allocated whole up front; br's seeds are the measured
// peaks above for the full window). A new encoder is admitted while the
// claims plus its own expectation fit max_memory; an admitted encoder that
// grows past its expectation still grows (the claim follows it), so the
// bound is soft by at most what the learning has not yet seen.
// Thread affinity: the owning worker's loop thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "message/content_encoder.h"

namespace tlsfront::metrics {
struct WorkerCounters;
}

namespace tlsfront::http {

class CompressionBudget {
 public:
  // `counters` (may be null): the gauge of bytes claimed and the count of
  // responses refused a codec are kept there.
  explicit CompressionBudget(metrics::WorkerCounters* counters = nullptr) : counters_(counters) {}
  CompressionBudget(const CompressionBudget&) = delete;
  CompressionBudget& operator=(const CompressionBudget&) = delete;

  // The bytes a new encoder of `shape` is expected to peak at.
  size_t expected_bytes(const ContentEncoder::Shape& shape) const;
  size_t claimed_bytes() const { return claimed_; }

 private:
  friend class CompressionClaim;
  size_t& learned(const ContentEncoder::Shape& shape);
  const size_t& learned(const ContentEncoder::Shape& shape) const;
  void set_claimed(size_t bytes);

  metrics::WorkerCounters* counters_;
  size_t claimed_ = 0;
  // Largest peak seen per coding, level (0..11) and window bits (0..24).
  std::array<std::array<std::array<size_t, 25>, 12>, 2> learned_{};
};

// One encoder's claim on a budget; releases it (and teaches the budget the
// encoder's peak) when destroyed. Move-only; an empty claim does nothing.
class CompressionClaim {
 public:
  CompressionClaim() = default;
  // Claims for `encoder` if `budget` has room under `max_bytes`; an empty
  // claim (and a refusal counted) when it has not. Null budget: always
  // admitted, not counted.
  static CompressionClaim admit(CompressionBudget* budget, const ContentEncoder& encoder, uint64_t max_bytes,
                                bool& admitted);
  CompressionClaim(CompressionClaim&& other) noexcept;
  CompressionClaim& operator=(CompressionClaim&& other) noexcept;
  ~CompressionClaim();

  // After the encoder ran: the claim grows to its state if it grew past it.
  void follow(const ContentEncoder& encoder);
  // After finish(): as follow(), and the encoder's peak is one the budget
  // learns from (an encoder dropped early, its client gone, peaked low).
  void complete(const ContentEncoder& encoder);

 private:
  void release();

  CompressionBudget* budget_ = nullptr;
  ContentEncoder::Shape shape_{};
  size_t bytes_ = 0;  // what is claimed now
  size_t peak_ = 0;   // the encoder's largest state seen
  bool completed_ = false;
};

}  // namespace tlsfront::http
