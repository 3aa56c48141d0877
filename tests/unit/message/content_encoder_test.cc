// The response compressors: gzip and br streams decode (zlib inflate,
// libbrotlidec) to exactly what was written, a flush makes everything so far
// decodable, state is sized to a known body, and a large body streams
// through bounded state.
#include "message/content_encoder.h"

#include <gtest/gtest.h>

#include "message/brotli_encoder.h"
#include "message/gzip_encoder.h"
#include "shared/content_decoding.h"
#include "shared/json_body.h"

namespace tlsfront::http {
namespace {

using testdata::gunzip;
using testdata::unbrotli;

std::string decode(ContentCoding c, std::string_view in, bool* complete = nullptr) {
  return testdata::decode_body(coding_name(c), in, complete);
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
                         [](const auto& info) {
                           return std::string(coding_name(info.param) == "gzip" ? "gzip" : "br");
                         });

TEST(GzipEncoder, StateFollowsTheKnownLength) {
  auto big = GzipEncoder::create(1, std::nullopt);
  auto small = GzipEncoder::create(1, 4000);
  ASSERT_TRUE(big && small);
  // Window 14, memLevel 7: 128 KiB plus deflate's ~6 KiB struct.
  EXPECT_GT(big->state_bytes(), 128u * 1024);
  EXPECT_LT(big->state_bytes(), 140u * 1024);
  // A 4000-byte body: an 8 KiB window (13 bits) and memLevel 6, 72 KiB.
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
