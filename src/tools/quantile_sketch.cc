#include "tools/quantile_sketch.h"

#include <bit>
#include <cmath>

namespace tlsfront::tools {

size_t QuantileSketch::bucket_of(double ms) {
  if (!(ms >= std::ldexp(1.0, kMinExponent))) return 0;
  if (ms >= std::ldexp(1.0, kMaxExponent)) return kBuckets - 1;
  // IEEE 754 binary64: 11 exponent bits (bias 1023), then the mantissa.
  const auto bits = std::bit_cast<uint64_t>(ms);
  const int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  const auto sub = static_cast<size_t>((bits >> 46) & (kSubBuckets - 1));
  return static_cast<size_t>(exponent - kMinExponent) * kSubBuckets + sub;
}

double QuantileSketch::middle_of(size_t bucket) {
  if (bucket == kBuckets - 1) return std::ldexp(1.0, kMaxExponent);
  const int exponent = static_cast<int>(bucket / kSubBuckets) + kMinExponent;
  const double sub = static_cast<double>(bucket % kSubBuckets);
  return std::ldexp(1.0 + (sub + 0.5) / kSubBuckets, exponent);
}

void QuantileSketch::add(double ms) {
  if (std::isnan(ms) || ms < 0) return;
  if (buckets_.empty()) buckets_.assign(kBuckets, 0);
  ++buckets_[bucket_of(ms)];
  ++count_;
}

void QuantileSketch::merge(const QuantileSketch& other) {
  if (other.count_ == 0) return;
  if (buckets_.empty()) buckets_.assign(kBuckets, 0);
  for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
}

std::optional<double> QuantileSketch::quantile(double q) const {
  if (count_ == 0 || !(q > 0) || q > 1) return std::nullopt;
  // Nearest rank: the smallest value with at least q * count values at or below it.
  const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank && buckets_[i] > 0) return middle_of(i);
  }
  return middle_of(kBuckets - 1);
}

}  // namespace tlsfront::tools
