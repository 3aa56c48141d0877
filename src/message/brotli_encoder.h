// BrotliEncoder: the br content coding (RFC 7932, RFC 9110 §18.6) with
// libbrotlienc's streaming API (BrotliEncoderCompressStream, output taken
// from the encoder's own buffer with BrotliEncoderTakeOutput), streamed as
// message/content_encoder.h describes. flush() is BROTLI_OPERATION_FLUSH:
// the output so far decodes completely.
//
// Memory: the ring buffer (up to 1 << lgwin bytes, grown as input arrives)
// and the quality's hash tables. libbrotli's default lgwin is 22 (4 MiB);
// tlsfront uses kWindowBits 18 (256 KiB: an API answer rarely refers back
// further), and for a body of known length the smallest window that covers
// it, with BROTLI_PARAM_SIZE_HINT so the hash tables are sized to it too.
// Measured state (counted through the allocator hooks,
// docs/configuration.md "[compression]"): quality 0-1 30-175 KiB; 2-3 320-640 KiB; 4 (tlsfront's
// default) 580-820 KiB, hash tables of a fixed size whatever the body;
// 5-6 the same with the window shrunk to a known body, up to 2.4 MiB
// without. More than gzip's 136 KiB: for memory, prefer gzip alone.
// Thread affinity: one thread at a time.
#pragma once

#include <brotli/encode.h>

#include <memory>
#include <optional>

#include "message/content_encoder.h"

namespace tlsfront::http {

class BrotliEncoder final : public ContentEncoder {
 public:
  static constexpr int kWindowBits = 18;

  // `level`: BROTLI_PARAM_QUALITY 0..11. Null when the encoder cannot be
  // created (no memory).
  static std::unique_ptr<BrotliEncoder> create(int level, std::optional<uint64_t> size_hint,
                                               int window_bits = kWindowBits);
  ~BrotliEncoder() override;

  bool write(std::string_view in, std::string& out) override;
  bool flush(std::string& out) override;
  bool finish(std::string& out) override;

 private:
  explicit BrotliEncoder(Shape shape) : ContentEncoder(shape) {}
  bool run(std::string_view in, BrotliEncoderOperation op, std::string& out);

  BrotliEncoderState* state_ = nullptr;
};

}  // namespace tlsfront::http
