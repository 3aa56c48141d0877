// GzipEncoder: the gzip content coding (RFC 9110 §8.4.1.3, RFC 1952) with
// zlib's deflate and its gzip wrapper, streamed (message/content_encoder.h
// has the shape). flush() is Z_SYNC_FLUSH: the output so far ends on a byte
// boundary and decodes completely (4-5 bytes of empty stored block each).
//
// Memory: deflate's state is (1 << (window_bits + 2)) + (1 << (mem_level +
// 9)) bytes plus ~6 KiB — 262 KiB at zlib's and nginx's defaults (15, 8).
// tlsfront takes kWindowBits 14 and kMemLevel 7, 136 KiB: measured with
// tlsfront_compress_bench, the 20 KB JSON body compresses to the same size
// (4485 bytes) and a 300 KB one 0.7 % larger (61,229 vs 60,798 bytes),
// while half the memory stays free for every response in flight (HTTP/2
// allows 128 per connection: 17 MiB rather than 33 MiB at worst); window
// 13 would cost 1.8 % there. As nginx does, both shrink further for a body
// whose length is known to be smaller than the window (a 4 KB JSON answer
// gets an 8 KiB window and 72 KiB of state): the window cannot reach
// further back than the body anyway, so the output is the same.
// The state is one allocation (zlib's five blocks carved from it, as
// nginx's gzip filter does): with glibc, zlib's separate blocks freed at
// the top of the heap were trimmed back to the kernel after every response
// and faulted in again (page faults were the largest item of a profile at
// 2,800 responses/s), while one block above malloc's mmap threshold moves
// the mmap and trim thresholds above itself after its first free, and then
// stays.
// Thread affinity: one thread at a time.
#pragma once

#include <zlib.h>

#include <memory>
#include <optional>

#include "message/content_encoder.h"

namespace tlsfront::http {

class GzipEncoder final : public ContentEncoder {
 public:
  static constexpr int kWindowBits = 14;  // 16 KiB window (deflate's largest: 15)
  static constexpr int kMemLevel = 7;     // 64 KiB of hash and pending buffer (zlib's default: 8)

  // `level` 1..9 (zlib's; 1 is nginx's gzip_comp_level default). Null when
  // deflateInit2 fails (no memory).
  static std::unique_ptr<GzipEncoder> create(int level, std::optional<uint64_t> size_hint,
                                             int window_bits = kWindowBits, int mem_level = kMemLevel);
  ~GzipEncoder() override;

  bool write(std::string_view in, std::string& out) override;
  bool flush(std::string& out) override;
  bool finish(std::string& out) override;

 private:
  explicit GzipEncoder(Shape shape) : ContentEncoder(shape) {}
  bool deflate_into(std::string_view in, int mode, std::string& out);
  void* zalloc(size_t bytes);
  void zfree(void* p);

  z_stream z_{};
  bool initialized_ = false;
  // The one block zlib's state is carved from; a request beyond it (another
  // zlib version) falls back to malloc.
  unsigned char* arena_ = nullptr;
  size_t arena_size_ = 0;
  size_t arena_used_ = 0;
};

}  // namespace tlsfront::http
