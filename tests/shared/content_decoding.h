// Decoders for the compression tests: gzip (zlib inflate) and br
// (libbrotlidec), streaming, so a truncated or flushed-but-unfinished stream
// yields the prefix it encodes. Header-only; the binaries that include it
// link ZLIB::ZLIB and libbrotlidec. Any thread.
#pragma once

#include <brotli/decode.h>
#include <zlib.h>

#include <string>
#include <string_view>

namespace tlsfront::testdata {

// What `in` decodes to; `complete`: the stream's end (gzip trailer, brotli
// last meta-block) was reached without an error.
inline std::string gunzip(std::string_view in, bool* complete = nullptr) {
  z_stream z{};
  std::string out;
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  char buf[16384];
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_SYNC_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK && (z.avail_in > 0 || z.avail_out == 0));
  if (complete) *complete = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  return out;
}

inline std::string unbrotli(std::string_view in, bool* complete = nullptr) {
  BrotliDecoderState* d = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  std::string out;
  size_t avail_in = in.size();
  const auto* next_in = reinterpret_cast<const uint8_t*>(in.data());
  BrotliDecoderResult rc;
  do {
    uint8_t buf[16384];
    size_t avail_out = sizeof buf;
    uint8_t* next_out = buf;
    rc = BrotliDecoderDecompressStream(d, &avail_in, &next_in, &avail_out, &next_out, nullptr);
    out.append(reinterpret_cast<char*>(buf), sizeof buf - avail_out);
  } while (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT);
  if (complete) *complete = rc == BROTLI_DECODER_RESULT_SUCCESS && avail_in == 0;
  BrotliDecoderDestroyInstance(d);
  return out;
}

// By content-coding token: "gzip" or "br"; anything else is returned as is.
inline std::string decode_body(std::string_view coding, std::string_view in, bool* complete = nullptr) {
  if (coding == "gzip") return gunzip(in, complete);
  if (coding == "br") return unbrotli(in, complete);
  if (complete) *complete = true;
  return std::string(in);
}

}  // namespace tlsfront::testdata
