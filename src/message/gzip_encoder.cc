#include "message/gzip_encoder.h"

#include <algorithm>
#include <cstdlib>

namespace tlsfront::http {
namespace {
// zlib's smallest window for the gzip wrapper (windowBits 8 becomes 9).
constexpr int kMinWindowBits = 9;
constexpr size_t kMinOutputStep = 4096;
constexpr size_t kAlign = 16;
// deflate's blocks for window_bits and mem_level (zlib's deflate.c: the
// window and prev, 2 << window_bits each; head, 2 << (mem_level + 7); the
// pending buffer, 4 << (mem_level + 6)) plus its state struct (under 6 KiB
// in zlib 1.2.13; 8 KiB here, as nginx reserves) and their alignment.
size_t deflate_bytes(int window_bits, int mem_level) {
  return (size_t{1} << (window_bits + 2)) + (size_t{1} << (mem_level + 9)) + 8192 + 5 * kAlign;
}
}  // namespace

std::unique_ptr<GzipEncoder> GzipEncoder::create(int level, std::optional<uint64_t> size_hint, int window_bits,
                                                 int mem_level) {
  if (size_hint) {
    // nginx's rule (ngx_http_gzip_filter_module): halve the window (and the
    // hash) while the body fits in half of it, less deflate's lookahead.
    while (window_bits > kMinWindowBits && mem_level > 1 && *size_hint < (uint64_t{1} << (window_bits - 1)) - 262) {
      --window_bits;
      --mem_level;
    }
  }
  std::unique_ptr<GzipEncoder> e(new GzipEncoder(Shape{ContentCoding::Gzip, level, window_bits}));
  e->arena_size_ = deflate_bytes(window_bits, mem_level);
  e->arena_ = static_cast<unsigned char*>(std::malloc(e->arena_size_));
  if (e->arena_ == nullptr) return nullptr;
  e->state_bytes_ = e->arena_size_;
  e->z_.opaque = e.get();
  e->z_.zalloc = [](voidpf opaque, uInt items, uInt size) -> voidpf {
    return static_cast<GzipEncoder*>(opaque)->zalloc(size_t{items} * size);
  };
  e->z_.zfree = [](voidpf opaque, voidpf p) { static_cast<GzipEncoder*>(opaque)->zfree(p); };
  // 16 + window bits: the gzip wrapper (header and CRC-32 trailer), not zlib's.
  if (deflateInit2(&e->z_, level, Z_DEFLATED, 16 + window_bits, mem_level, Z_DEFAULT_STRATEGY) != Z_OK) {
    return nullptr;
  }
  e->initialized_ = true;
  return e;
}

GzipEncoder::~GzipEncoder() {
  if (initialized_) deflateEnd(&z_);
  std::free(arena_);
}

void* GzipEncoder::zalloc(size_t bytes) {
  const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (arena_size_ - arena_used_ >= rounded) {
    void* p = arena_ + arena_used_;
    arena_used_ += rounded;
    return p;
  }
  return counted_alloc(state_bytes_, bytes);
}

void GzipEncoder::zfree(void* p) {
  // Blocks of the arena go with it.
  if (p >= arena_ && p < arena_ + arena_size_) return;
  counted_free(state_bytes_, p);
}

bool GzipEncoder::deflate_into(std::string_view in, int mode, std::string& out) {
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z_.avail_in = static_cast<uInt>(in.size());
  size_t used = out.size();
  // Room for what this call is likely to release; more rounds when not.
  size_t step = std::max<size_t>(kMinOutputStep, deflateBound(&z_, in.size()));
  for (;;) {
    out.resize(used + step);
    z_.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    z_.avail_out = static_cast<uInt>(step);
    const int rc = deflate(&z_, mode);
    used += step - z_.avail_out;
    if (rc == Z_STREAM_ERROR) {
      out.resize(used);
      return false;
    }
    // Done when deflate left room unused: all input taken and, for a flush
    // or finish, all output released (Z_BUF_ERROR: nothing to do).
    if (z_.avail_out != 0 || rc == Z_STREAM_END) break;
  }
  out.resize(used);
  return z_.avail_in == 0;
}

bool GzipEncoder::write(std::string_view in, std::string& out) {
  return in.empty() || deflate_into(in, Z_NO_FLUSH, out);
}

bool GzipEncoder::flush(std::string& out) { return deflate_into({}, Z_SYNC_FLUSH, out); }

bool GzipEncoder::finish(std::string& out) { return deflate_into({}, Z_FINISH, out); }

}  // namespace tlsfront::http
