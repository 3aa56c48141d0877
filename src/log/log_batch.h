// LogBatch: a worker's batch of access-log lines on its way to the
// LogWriter thread (log_writer.h), in memory that is not zero-filled first:
// the encoder (access_log.h) writes each line into room it reserved, then
// keeps only what it wrote, where std::string's resize() would clear that
// room for every line. Move-only; one thread at a time.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

namespace tlsfront::log {

class LogBatch {
 public:
  LogBatch() = default;
  // A moved-from batch is empty.
  LogBatch(LogBatch&& other) noexcept
      : bytes_(std::move(other.bytes_)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  LogBatch& operator=(LogBatch&& other) noexcept {
    bytes_ = std::move(other.bytes_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }
  // A copy of `text`.
  explicit LogBatch(std::string_view text) {
    reserve(text.size());
    if (!text.empty()) std::memcpy(bytes_.get(), text.data(), text.size());
    size_ = text.size();
  }

  const char* data() const { return bytes_.get(); }
  char* data() { return bytes_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {bytes_.get(), size_}; }

  // Makes room for `n` bytes in all, keeping the first size() of them
  // (the rest uninitialised).
  void reserve(size_t n) {
    if (n <= capacity_) return;
    auto bigger = std::make_unique_for_overwrite<char[]>(n);
    if (size_ != 0) std::memcpy(bigger.get(), bytes_.get(), size_);
    bytes_ = std::move(bigger);
    capacity_ = n;
  }
  // The first `n` (<= capacity()) bytes are the batch's.
  void set_size(size_t n) { size_ = n; }

 private:
  std::unique_ptr<char[]> bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace tlsfront::log
