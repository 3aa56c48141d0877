// QuantileSketch: percentiles of a stream of durations in bounded memory.
//
// Values (milliseconds, >= 0) fall into log-linear buckets: the binary
// exponent of the value and the top 6 bits of its mantissa, so each bucket
// spans 1/64 of its power of two and a reported percentile is within 1.6 %
// (half that from the bucket's middle) of the true one. 2^-10 ms (~1 µs) to
// 2^30 ms (~12 days) is resolved; smaller values count in the first bucket,
// larger (and +inf) in the last; NaN and negative values are not counted.
// 2,561 counters (20 KiB), allocated on the first value.
// Thread affinity: none (a value type).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tlsfront::tools {

class QuantileSketch {
 public:
  void add(double ms);
  void merge(const QuantileSketch& other);

  uint64_t count() const { return count_; }
  // The value at quantile `q` (0 < q <= 1) as the middle of its bucket, or
  // nullopt when empty. q = 0.5 is the median (nearest rank).
  std::optional<double> quantile(double q) const;

  static constexpr int kMinExponent = -10;  // 2^-10 ms
  static constexpr int kMaxExponent = 30;   // 2^30 ms
  static constexpr int kSubBuckets = 64;
  static constexpr size_t kBuckets = size_t{kMaxExponent - kMinExponent} * kSubBuckets + 1;

 private:
  static size_t bucket_of(double ms);
  static double middle_of(size_t bucket);

  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
};

}  // namespace tlsfront::tools
