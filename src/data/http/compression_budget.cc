#include "data/http/compression_budget.h"

#include <algorithm>
#include <utility>

#include "metrics/counters.h"

namespace tlsfront::http {
namespace {

constexpr size_t KiB = 1024;
// br's peak state by quality with the full window (BrotliEncoder::
// kWindowBits) and an unknown length, fed 64 KiB at a time (libbrotlienc
// 1.0.9); levels 10-11 use a different matcher, hence less than 9.
constexpr std::array<size_t, 12> kBrotliSeed = {262 * KiB,   390 * KiB,   1111 * KiB, 1111 * KiB,
                                                1991 * KiB,  2535 * KiB,  3559 * KiB, 9735 * KiB,
                                                17927 * KiB, 34503 * KiB, 4231 * KiB, 4231 * KiB};

size_t seed(const ContentEncoder::Shape& shape) {
  // gzip allocates its whole state when created: state_bytes() says it.
  if (shape.coding == ContentCoding::Gzip) return 0;
  return kBrotliSeed[static_cast<size_t>(std::clamp(shape.level, 0, 11))];
}

}  // namespace

const size_t& CompressionBudget::learned(const ContentEncoder::Shape& shape) const {
  return learned_[shape.coding == ContentCoding::Gzip ? 0 : 1][static_cast<size_t>(std::clamp(shape.level, 0, 11))]
                 [static_cast<size_t>(std::clamp(shape.window_bits, 0, 24))];
}

size_t& CompressionBudget::learned(const ContentEncoder::Shape& shape) {
  return const_cast<size_t&>(std::as_const(*this).learned(shape));
}

size_t CompressionBudget::expected_bytes(const ContentEncoder::Shape& shape) const {
  const size_t known = learned(shape);
  return known != 0 ? known : seed(shape);
}

void CompressionBudget::set_claimed(size_t bytes) {
  claimed_ = bytes;
  if (counters_ != nullptr) counters_->compression_memory.set(bytes);
}

CompressionClaim CompressionClaim::admit(CompressionBudget* budget, const ContentEncoder& encoder, uint64_t max_bytes,
                                         bool& admitted) {
  CompressionClaim claim;
  admitted = true;
  if (budget == nullptr) return claim;
  const size_t want = std::max(budget->expected_bytes(encoder.shape()), encoder.state_bytes());
  if (budget->claimed_ + want > max_bytes) {
    admitted = false;
    if (budget->counters_ != nullptr) budget->counters_->compression_refused_memory.add();
    return claim;
  }
  claim.budget_ = budget;
  claim.shape_ = encoder.shape();
  claim.bytes_ = want;
  claim.peak_ = encoder.state_bytes();
  budget->set_claimed(budget->claimed_ + want);
  return claim;
}

CompressionClaim::CompressionClaim(CompressionClaim&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      shape_(other.shape_),
      bytes_(other.bytes_),
      peak_(other.peak_),
      completed_(other.completed_) {}

CompressionClaim& CompressionClaim::operator=(CompressionClaim&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    shape_ = other.shape_;
    bytes_ = other.bytes_;
    peak_ = other.peak_;
    completed_ = other.completed_;
  }
  return *this;
}

CompressionClaim::~CompressionClaim() { release(); }

void CompressionClaim::follow(const ContentEncoder& encoder) {
  if (budget_ == nullptr) return;
  const size_t now = encoder.state_bytes();
  peak_ = std::max(peak_, now);
  if (now > bytes_) {
    budget_->set_claimed(budget_->claimed_ + (now - bytes_));
    bytes_ = now;
  }
}

void CompressionClaim::complete(const ContentEncoder& encoder) {
  follow(encoder);
  completed_ = true;
}

void CompressionClaim::release() {
  if (budget_ == nullptr) return;
  if (completed_) {
    size_t& learned = budget_->learned(shape_);
    learned = std::max(learned, peak_);
  }
  budget_->set_claimed(budget_->claimed_ - bytes_);
  budget_ = nullptr;
}

}  // namespace tlsfront::http
