#include "message/gzip_encoder.h"

#include <algorithm>

namespace tlsfront::http {
namespace {
// zlib's smallest window for the gzip wrapper (windowBits 8 becomes 9).
constexpr int kMinWindowBits = 9;
constexpr size_t kMinOutputStep = 4096;
}  // namespace

std::unique_ptr<GzipEncoder> GzipEncoder::create(int level, std::optional<uint64_t> size_hint, int window_bits,
                                                 int mem_level) {
  if (size_hint) {
    // nginx's rule (ngx_http_gzip_filter_module): halve the window (and the
    // hash) while the body fits in half of it, less deflate's lookahead.
    while (window_bits > kMinWindowBits && mem_level > 1 &&
           *size_hint < (uint64_t{1} << (window_bits - 1)) - 262) {
      --window_bits;
      --mem_level;
    }
  }
  std::unique_ptr<GzipEncoder> e(new GzipEncoder());
  e->z_.opaque = e.get();
  e->z_.zalloc = [](voidpf opaque, uInt items, uInt size) -> voidpf {
    return counted_alloc(static_cast<GzipEncoder*>(opaque)->state_bytes_, size_t{items} * size);
  };
  e->z_.zfree = [](voidpf opaque, voidpf p) { counted_free(static_cast<GzipEncoder*>(opaque)->state_bytes_, p); };
  // 16 + window bits: the gzip wrapper (header and CRC-32 trailer), not zlib's.
  if (deflateInit2(&e->z_, level, Z_DEFLATED, 16 + window_bits, mem_level, Z_DEFAULT_STRATEGY) != Z_OK) {
    return nullptr;
  }
  e->initialized_ = true;
  return e;
}

GzipEncoder::~GzipEncoder() {
  if (initialized_) deflateEnd(&z_);
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
