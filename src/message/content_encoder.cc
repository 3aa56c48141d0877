#include "message/content_encoder.h"

#include <cstdlib>
#include <cstring>

#include "message/brotli_encoder.h"
#include "message/gzip_encoder.h"

namespace tlsfront::http {
namespace {
// Each block starts with its size, so that free knows what to uncount;
// 16 bytes keep the caller's part aligned as malloc's is.
constexpr size_t kHeaderBytes = 16;
}  // namespace

std::string_view coding_name(ContentCoding coding) { return coding == ContentCoding::Gzip ? "gzip" : "br"; }

std::optional<ContentCoding> coding_from_name(std::string_view name) {
  if (name == "gzip") return ContentCoding::Gzip;
  if (name == "br") return ContentCoding::Brotli;
  return std::nullopt;
}

void* ContentEncoder::counted_alloc(size_t& counter, size_t bytes) {
  auto* block = static_cast<unsigned char*>(std::malloc(bytes + kHeaderBytes));
  if (block == nullptr) return nullptr;
  std::memcpy(block, &bytes, sizeof bytes);
  counter += bytes;
  return block + kHeaderBytes;
}

void ContentEncoder::counted_free(size_t& counter, void* p) {
  if (p == nullptr) return;
  unsigned char* block = static_cast<unsigned char*>(p) - kHeaderBytes;
  size_t bytes = 0;
  std::memcpy(&bytes, block, sizeof bytes);
  counter -= bytes;
  std::free(block);
}

std::unique_ptr<ContentEncoder> make_content_encoder(ContentCoding coding, int level,
                                                     std::optional<uint64_t> size_hint) {
  if (coding == ContentCoding::Gzip) return GzipEncoder::create(level, size_hint);
  return BrotliEncoder::create(level, size_hint);
}

}  // namespace tlsfront::http
