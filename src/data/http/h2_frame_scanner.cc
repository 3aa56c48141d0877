#include "data/http/h2_frame_scanner.h"

#include <algorithm>
#include <cstring>

namespace tlsfront::http {
namespace {

uint32_t be24(const uint8_t* p) { return uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2]; }
int32_t stream_id(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]) & 0x7fffffffu);
}

}  // namespace

void H2FrameScanner::scan(std::string_view data, std::vector<int32_t>& self_dependent,
                          std::vector<int32_t>& data_streams) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t left = data.size();
  if (preface_left_ > 0) {
    const size_t n = std::min(preface_left_, left);
    preface_left_ -= n;
    p += n;
    left -= n;
  }
  while (left > 0) {
    if (payload_left_ == 0) {
      // A frame header, maybe split across reads.
      const size_t n = std::min(kHeadSize - head_len_, left);
      std::memcpy(head_ + head_len_, p, n);
      head_len_ += n;
      p += n;
      left -= n;
      if (head_len_ < kHeadSize) return;
      head_len_ = 0;
      payload_left_ = be24(head_);
      priority_ = head_[3] == 0x2 && payload_left_ == kDependencySize + 1;
      stream_ = stream_id(head_ + 5);
      dependency_len_ = 0;
      if (head_[3] == 0x0 && (data_streams.empty() || data_streams.back() != stream_)) data_streams.push_back(stream_);
      continue;
    }
    const size_t n = std::min(payload_left_, left);
    if (priority_ && dependency_len_ < kDependencySize) {
      const size_t m = std::min(kDependencySize - dependency_len_, n);
      std::memcpy(dependency_ + dependency_len_, p, m);
      dependency_len_ += m;
      if (dependency_len_ == kDependencySize && stream_id(dependency_) == stream_) self_dependent.push_back(stream_);
    }
    payload_left_ -= n;
    p += n;
    left -= n;
  }
}

}  // namespace tlsfront::http
