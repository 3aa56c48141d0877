#include "message/brotli_encoder.h"

#include <algorithm>

namespace tlsfront::http {

std::unique_ptr<BrotliEncoder> BrotliEncoder::create(int level, std::optional<uint64_t> size_hint, int window_bits) {
  if (size_hint) {
    while (window_bits > BROTLI_MIN_WINDOW_BITS && *size_hint <= (uint64_t{1} << (window_bits - 1))) --window_bits;
  }
  std::unique_ptr<BrotliEncoder> e(new BrotliEncoder(Shape{ContentCoding::Brotli, level, window_bits}));
  e->state_ = BrotliEncoderCreateInstance(
      [](void* opaque, size_t bytes) {
        return counted_alloc(static_cast<BrotliEncoder*>(opaque)->state_bytes_, bytes);
      },
      [](void* opaque, void* p) { counted_free(static_cast<BrotliEncoder*>(opaque)->state_bytes_, p); }, e.get());
  if (e->state_ == nullptr) return nullptr;
  BrotliEncoderSetParameter(e->state_, BROTLI_PARAM_QUALITY, static_cast<uint32_t>(level));
  BrotliEncoderSetParameter(e->state_, BROTLI_PARAM_LGWIN, static_cast<uint32_t>(window_bits));
  if (size_hint) {
    BrotliEncoderSetParameter(e->state_, BROTLI_PARAM_SIZE_HINT,
                              static_cast<uint32_t>(std::min<uint64_t>(*size_hint, 1u << 30)));
  }
  return e;
}

BrotliEncoder::~BrotliEncoder() {
  if (state_ != nullptr) BrotliEncoderDestroyInstance(state_);
}

bool BrotliEncoder::run(std::string_view in, BrotliEncoderOperation op, std::string& out) {
  size_t avail_in = in.size();
  const auto* next_in = reinterpret_cast<const uint8_t*>(in.data());
  for (;;) {
    // No output buffer of ours: the encoder keeps its output, which is
    // taken (copied into `out`) right after.
    size_t avail_out = 0;
    if (!BrotliEncoderCompressStream(state_, op, &avail_in, &next_in, &avail_out, nullptr, nullptr)) return false;
    while (BrotliEncoderHasMoreOutput(state_)) {
      size_t n = 0;
      const uint8_t* p = BrotliEncoderTakeOutput(state_, &n);
      out.append(reinterpret_cast<const char*>(p), n);
    }
    const bool done = op == BROTLI_OPERATION_FINISH ? BrotliEncoderIsFinished(state_) != 0 : avail_in == 0;
    if (done) return true;
  }
}

bool BrotliEncoder::write(std::string_view in, std::string& out) {
  return in.empty() || run(in, BROTLI_OPERATION_PROCESS, out);
}

bool BrotliEncoder::flush(std::string& out) { return run({}, BROTLI_OPERATION_FLUSH, out); }

bool BrotliEncoder::finish(std::string& out) { return run({}, BROTLI_OPERATION_FINISH, out); }

}  // namespace tlsfront::http
