// Byte strings and bounds-checked TLS wire encoding for tlsfront_hsload.
//
// Shapes: Bytes is an owned octet string; Writer appends big-endian
// integers and length-prefixed vectors (RFC 8446 §3.3, §3.4: a vector's
// length prefix is 1, 2 or 3 octets); Reader consumes them and turns every
// overrun into a sticky failure (ok() false, reads return zeros / empty), so
// a truncated or lying length in peer data is a decode_error, never a read
// past the buffer. Thread affinity: none (plain values).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tlsfront::hsload {

using Bytes = std::vector<uint8_t>;
using ByteView = std::span<const uint8_t>;

inline ByteView as_bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

class Writer {
 public:
  explicit Writer(Bytes& out) : out_(out) {}
  void u8(unsigned v) { out_.push_back(static_cast<uint8_t>(v)); }
  void u16(unsigned v) {
    u8(v >> 8);
    u8(v);
  }
  void u24(unsigned v) {
    u8(v >> 16);
    u16(v & 0xffff);
  }
  void u32(uint32_t v) {
    u16(v >> 16);
    u16(v & 0xffff);
  }
  void bytes(ByteView b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // Opens a vector with a `width`-octet length prefix (1..3); returns the
  // position to pass to close().
  size_t open(int width) {
    size_t at = out_.size();
    out_.insert(out_.end(), static_cast<size_t>(width), 0);
    return at;
  }
  // Fills in the length prefix of the vector opened at `at`.
  void close(size_t at, int width) {
    size_t n = out_.size() - at - static_cast<size_t>(width);
    for (int i = width - 1; i >= 0; --i, n >>= 8) out_[at + static_cast<size_t>(i)] = static_cast<uint8_t>(n);
  }
  size_t size() const { return out_.size(); }

 private:
  Bytes& out_;
};

class Reader {
 public:
  explicit Reader(ByteView d) : d_(d) {}
  bool ok() const { return ok_; }
  bool empty() const { return pos_ == d_.size(); }
  size_t remaining() const { return d_.size() - pos_; }
  // True when everything was consumed without an overrun.
  bool done() const { return ok_ && empty(); }
  uint32_t u8() { return static_cast<uint32_t>(num(1)); }
  uint32_t u16() { return static_cast<uint32_t>(num(2)); }
  uint32_t u24() { return static_cast<uint32_t>(num(3)); }
  uint32_t u32() { return static_cast<uint32_t>(num(4)); }
  ByteView bytes(size_t n) {
    if (!ok_ || remaining() < n) {
      ok_ = false;
      return {};
    }
    ByteView r = d_.subspan(pos_, n);
    pos_ += n;
    return r;
  }
  // A vector with a `width`-octet length prefix.
  ByteView vec(int width) { return bytes(num(width)); }

 private:
  uint64_t num(int width) {
    ByteView b = bytes(static_cast<size_t>(width));
    uint64_t v = 0;
    for (uint8_t c : b) v = (v << 8) | c;
    return v;
  }
  ByteView d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace tlsfront::hsload
