// HTTP/1.1 chunked transfer coding, the sending side (RFC 9112 §7.1): the
// framing tlsfront writes around body bytes it forwards — response bodies to
// HTTP/1.1 clients, request bodies of unknown length to upstreams.
// Decoding is llhttp's. Thread affinity: none (values and constants).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string_view>

namespace tlsfront::http {

// "<hex size>\r\n" for a chunk of `size` bytes (size > 0: a zero size would
// end the body). The view lives as long as the object.
class ChunkHeader {
 public:
  explicit ChunkHeader(size_t size) {
    len_ = static_cast<size_t>(std::snprintf(buf_, sizeof(buf_), "%zx\r\n", size));
  }
  std::string_view view() const { return {buf_, len_}; }

 private:
  char buf_[24];  // 16 hex digits + CRLF + NUL
  size_t len_;
};

// What follows a chunk's data.
inline constexpr std::string_view kChunkEnd = "\r\n";
// The last chunk and an empty trailer section: the end of a chunked body.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";
// The last chunk alone: trailer fields ("name: value\r\n" each) and an
// empty line follow (RFC 9112 §7.1.2).
inline constexpr std::string_view kLastChunkLine = "0\r\n";

// Appends `data` as one chunk through `out(std::string_view)`, called three
// times; returns the bytes written. Empty data writes nothing.
template <typename Out>
size_t write_chunk(std::string_view data, Out&& out) {
  if (data.empty()) return 0;
  const ChunkHeader header(data.size());
  out(header.view());
  out(data);
  out(kChunkEnd);
  return header.view().size() + data.size() + kChunkEnd.size();
}

}  // namespace tlsfront::http
