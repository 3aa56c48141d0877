// The response compressors: gzip and br streams decode (zlib inflate,
// libbrotlidec) to exactly what was written, a flush makes everything so far
// decodable, state is sized to a known body, and a large body streams
// through bounded state.
#include "message/content_encoder.h"

#include <brotli/decode.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include "message/brotli_encoder.h"
#include "message/gzip_encoder.h"
#include "shared/json_body.h"

namespace tlsfront::http {
namespace {

// Decodes as much of `in` as it can: a truncated stream yields its decodable prefix.
std::string gunzip(std::string_view in, bool* complete = nullptr) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  std::string out;
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
  if (complete) *complete = rc == Z_STREAM_END;
  inflateEnd(&z);
  return out;
}

std::string unbrotli(std::string_view in, bool* complete = nullptr) {
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
  if (complete) *complete = rc == BROTLI_DECODER_RESULT_SUCCESS;
  BrotliDecoderDestroyInstance(d);
  return out;
}

std::string decode(ContentCoding c, std::string_view in, bool* complete = nullptr) {
  return c == ContentCoding::Gzip ? gunzip(in, complete) : unbrotli(in, complete);
}

class ContentEncoderTest : public ::testing::TestWithParam<ContentCoding> {};

TEST_P(ContentEncoderTest, RoundTripsInPieces) {
  const std::string body = testdata::json_body(100'000);
  auto e = make_content_encoder(GetParam(), GetParam() == ContentCoding::Gzip ? 1 : 4, std::nullopt);
  ASSERT_TRUE(e);
  std::string out;
  for (size_t off = 0; off < body.size(); off += 7777) {
    ASSERT_TRUE(e->write(std::string_view(body).substr(off, 7777), out));
  }
  ASSERT_TRUE(e->finish(out));
  EXPECT_LT(out.size(), body.size() / 3);
  bool complete = false;
  EXPECT_EQ(decode(GetParam(), out, &complete), body);
  EXPECT_TRUE(complete);
}

TEST_P(ContentEncoderTest, FlushMakesEverythingSoFarDecodable) {
  const std::string body = testdata::json_body(3000);
  auto e = make_content_encoder(GetParam(), 5, std::nullopt);
  ASSERT_TRUE(e);
  std::string out;
  ASSERT_TRUE(e->write(std::string_view(body).substr(0, 1000), out));
  ASSERT_TRUE(e->flush(out));
  bool complete = true;
  EXPECT_EQ(decode(GetParam(), out, &complete), body.substr(0, 1000));
  EXPECT_FALSE(complete);
  ASSERT_TRUE(e->write(std::string_view(body).substr(1000), out));
  ASSERT_TRUE(e->flush(out));
  ASSERT_TRUE(e->flush(out));  // nothing new: harmless
  ASSERT_TRUE(e->finish(out));
  EXPECT_EQ(decode(GetParam(), out, &complete), body);
  EXPECT_TRUE(complete);
}

TEST_P(ContentEncoderTest, EmptyBody) {
  auto e = make_content_encoder(GetParam(), 1, 0);
  ASSERT_TRUE(e);
  std::string out;
  ASSERT_TRUE(e->write("", out));
  ASSERT_TRUE(e->finish(out));
  bool complete = false;
  EXPECT_EQ(decode(GetParam(), out, &complete), "");
  EXPECT_TRUE(complete);
}

TEST_P(ContentEncoderTest, StateIsBoundedAndFreed) {
  // 10 MB through the encoder: its state stays what it was after the first
  // write (no growth with the body), and nothing outlives it.
  auto e = make_content_encoder(GetParam(), GetParam() == ContentCoding::Gzip ? 1 : 4, std::nullopt);
  ASSERT_TRUE(e);
  const std::string piece = testdata::json_body(65536);
  std::string out;
  size_t peak = 0;
  for (int i = 0; i < 160; ++i) {
    out.clear();
    ASSERT_TRUE(e->write(piece, out));
    ASSERT_TRUE(e->flush(out));
    peak = std::max(peak, e->state_bytes());
  }
  EXPECT_GT(peak, 0u);
  EXPECT_LT(peak, 2u << 20);
}

INSTANTIATE_TEST_SUITE_P(Codecs, ContentEncoderTest, ::testing::Values(ContentCoding::Gzip, ContentCoding::Brotli),
                         [](const auto& info) { return std::string(coding_name(info.param) == "gzip" ? "gzip" : "br"); });

TEST(GzipEncoder, StateFollowsTheKnownLength) {
  auto big = GzipEncoder::create(1, std::nullopt);
  auto small = GzipEncoder::create(1, 4000);
  ASSERT_TRUE(big && small);
  // zlib's defaults (window 15, memLevel 8): 256 KiB plus its ~6 KiB struct.
  EXPECT_GT(big->state_bytes(), 256u * 1024);
  EXPECT_LT(big->state_bytes(), 270u * 1024);
  // A 4000-byte body: an 8 KiB window (13 bits) and memLevel 6, ~70 KiB.
  EXPECT_LT(small->state_bytes(), 80u * 1024);
  std::string out;
  const std::string body = testdata::json_body(4000);
  ASSERT_TRUE(small->write(body, out));
  ASSERT_TRUE(small->finish(out));
  EXPECT_EQ(gunzip(out), body);
}

TEST(BrotliEncoder, StateFollowsTheKnownLength) {
  const std::string body = testdata::json_body(4000);
  std::string out_big, out_small;
  // Quality 5: its hash tables follow the window (at 2..4 they have a fixed size).
  auto big = BrotliEncoder::create(5, std::nullopt);
  auto small = BrotliEncoder::create(5, body.size());
  ASSERT_TRUE(big && small);
  // The state grows when the first block is compressed: here at the flush.
  ASSERT_TRUE(big->write(body, out_big) && big->flush(out_big));
  ASSERT_TRUE(small->write(body, out_small) && small->flush(out_small));
  EXPECT_LT(small->state_bytes(), big->state_bytes());
  ASSERT_TRUE(small->finish(out_small));
  EXPECT_EQ(unbrotli(out_small), body);
}

TEST(ContentCoding, Names) {
  EXPECT_EQ(coding_name(ContentCoding::Gzip), "gzip");
  EXPECT_EQ(coding_name(ContentCoding::Brotli), "br");
  EXPECT_EQ(coding_from_name("br"), ContentCoding::Brotli);
  EXPECT_EQ(coding_from_name("gzip"), ContentCoding::Gzip);
  EXPECT_FALSE(coding_from_name("deflate"));
}

}  // namespace
}  // namespace tlsfront::http
