// ContentEncoder: one response body compressed as it streams through, for a
// content coding (RFC 9110 §8.4.1) tlsfront applies itself: gzip (RFC 1952,
// zlib's deflate with the gzip wrapper; message/gzip_encoder.h) or br
// (RFC 7932, libbrotlienc's streaming API; message/brotli_encoder.h).
//
// Shape: write() each body chunk as it arrives (the codec may hold some of
// it back), flush() when the input pauses so that everything written so far
// can be decoded by the client (a streaming API's events are not held back),
// finish() once at the end (the stream's trailer). Each call appends the
// output it releases to `out`, which may stay empty. Memory: the codec's
// state only (see each codec for its size), allocated by the factory and
// freed by the destructor; no input is buffered outside it. A false return
// means the codec failed (out of memory): the response cannot be completed.
// Thread affinity: one thread at a time (the owning worker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tlsfront::http {

enum class ContentCoding { Gzip, Brotli };

// The content-coding token: "gzip", "br" (RFC 9110 §18.6 registry).
std::string_view coding_name(ContentCoding coding);
// The coding a token names ("gzip", "br"; exact, lowercase), or nullopt.
std::optional<ContentCoding> coding_from_name(std::string_view name);

class ContentEncoder {
 public:
  ContentEncoder(const ContentEncoder&) = delete;  // the codec state points back into it
  ContentEncoder& operator=(const ContentEncoder&) = delete;
  virtual ~ContentEncoder() = default;
  [[nodiscard]] virtual bool write(std::string_view in, std::string& out) = 0;
  [[nodiscard]] virtual bool flush(std::string& out) = 0;
  // No call may follow.
  [[nodiscard]] virtual bool finish(std::string& out) = 0;
  // Bytes the codec library holds allocated now (its state).
  size_t state_bytes() const { return state_bytes_; }
  // What the state's size depends on: a worker's budget
  // (data/http/compression_budget.h) learns the peak per shape.
  struct Shape {
    ContentCoding coding;
    int level;
    int window_bits;  // after the size hint shrank it
  };
  const Shape& shape() const { return shape_; }

 protected:
  explicit ContentEncoder(Shape shape) : shape_(shape) {}
  // For the codecs' allocation hooks: counts what they allocate.
  static void* counted_alloc(size_t& counter, size_t bytes);
  static void counted_free(size_t& counter, void* p);
  size_t state_bytes_ = 0;
  Shape shape_;
};

// A new encoder for `coding` at `level` (gzip 1..9, br 0..11; callers pass
// validated levels), or null when the codec cannot be set up (no memory).
// `size_hint`: the body's length when the upstream stated it; the codecs
// then size their windows to it (less memory for a small body).
std::unique_ptr<ContentEncoder> make_content_encoder(ContentCoding coding, int level,
                                                     std::optional<uint64_t> size_hint);

}  // namespace tlsfront::http
