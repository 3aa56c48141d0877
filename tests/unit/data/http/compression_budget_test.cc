// CompressionBudget: admission against max_memory, claims released with the
// encoder, peaks learned only from encoders that finished, claims that follow
// a codec growing past its expectation. Real codecs (zlib, libbrotlienc).
#include "data/http/compression_budget.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "metrics/counters.h"
#include "shared/json_body.h"

namespace tlsfront::http {
namespace {

std::unique_ptr<ContentEncoder> gzip() { return make_content_encoder(ContentCoding::Gzip, 1, std::nullopt); }

TEST(CompressionBudget, AdmitsWhileTheClaimsFitAndReleasesWithTheClaim) {
  metrics::WorkerCounters counters;
  CompressionBudget budget(&counters);
  auto probe = gzip();
  const size_t each = probe->state_bytes();  // gzip's whole state, allocated up front
  ASSERT_GT(each, 100u * 1024);
  const uint64_t max = 3 * each + each / 2;  // room for three
  std::vector<std::unique_ptr<ContentEncoder>> encoders;
  std::vector<CompressionClaim> claims;
  for (int i = 0; i < 3; ++i) {
    encoders.push_back(gzip());
    bool admitted = false;
    claims.push_back(CompressionClaim::admit(&budget, *encoders.back(), max, admitted));
    EXPECT_TRUE(admitted) << i;
  }
  EXPECT_EQ(budget.claimed_bytes(), 3 * each);
  EXPECT_EQ(counters.compression_memory.get(), 3 * each);
  bool admitted = true;
  CompressionClaim refused = CompressionClaim::admit(&budget, *probe, max, admitted);
  EXPECT_FALSE(admitted);
  EXPECT_EQ(counters.compression_refused_memory.get(), 1u);
  EXPECT_EQ(budget.claimed_bytes(), 3 * each);
  claims.pop_back();  // one response ended
  EXPECT_EQ(budget.claimed_bytes(), 2 * each);
  CompressionClaim again = CompressionClaim::admit(&budget, *probe, max, admitted);
  EXPECT_TRUE(admitted);
  claims.clear();
  again = {};
  EXPECT_EQ(budget.claimed_bytes(), 0u);
  EXPECT_EQ(counters.compression_memory.get(), 0u);
}

TEST(CompressionBudget, BrotliStartsFromItsSeedAndLearnsFinishedPeaks) {
  CompressionBudget budget;
  const ContentEncoder::Shape shape{ContentCoding::Brotli, 4, 18};
  const size_t seed = budget.expected_bytes(shape);
  EXPECT_GT(seed, 1024u * 1024);  // a large br-4 stream peaks near 2 MiB
  const std::string body = testdata::json_body(20'000);
  {
    // Dropped before finish (its client went away): teaches nothing.
    auto e = make_content_encoder(ContentCoding::Brotli, 4, std::nullopt);
    ASSERT_EQ(e->shape().window_bits, 18);
    bool admitted = false;
    CompressionClaim claim = CompressionClaim::admit(&budget, *e, uint64_t{64} << 20, admitted);
    ASSERT_TRUE(admitted);
    EXPECT_EQ(budget.claimed_bytes(), seed);
  }
  EXPECT_EQ(budget.expected_bytes(shape), seed);
  {
    auto e = make_content_encoder(ContentCoding::Brotli, 4, std::nullopt);
    bool admitted = false;
    CompressionClaim claim = CompressionClaim::admit(&budget, *e, uint64_t{64} << 20, admitted);
    std::string out;
    ASSERT_TRUE(e->write(body, out));
    claim.follow(*e);
    ASSERT_TRUE(e->finish(out));
    claim.complete(*e);
  }
  const size_t learned = budget.expected_bytes(shape);
  EXPECT_LT(learned, seed);  // a 20 KB body needs less than the seed's large one
  EXPECT_GT(learned, 100u * 1024);
  EXPECT_EQ(budget.claimed_bytes(), 0u);
}

TEST(CompressionBudget, AClaimFollowsACodecGrowingPastItsExpectation) {
  CompressionBudget budget;
  // Teach a small peak for br 6 at window 18 with a tiny body...
  {
    auto e = make_content_encoder(ContentCoding::Brotli, 6, std::nullopt);
    bool admitted = false;
    CompressionClaim claim = CompressionClaim::admit(&budget, *e, uint64_t{64} << 20, admitted);
    std::string out;
    ASSERT_TRUE(e->write("{}", out));
    ASSERT_TRUE(e->finish(out));
    claim.complete(*e);
  }
  const ContentEncoder::Shape shape{ContentCoding::Brotli, 6, 18};
  const size_t small = budget.expected_bytes(shape);
  // ...then a large body grows past it: the claim grows with the codec.
  auto e = make_content_encoder(ContentCoding::Brotli, 6, std::nullopt);
  bool admitted = false;
  CompressionClaim claim = CompressionClaim::admit(&budget, *e, uint64_t{64} << 20, admitted);
  ASSERT_TRUE(admitted);
  const std::string body = testdata::json_body(1'000'000);
  std::string out;
  for (size_t off = 0; off < body.size(); off += 65536) {
    ASSERT_TRUE(e->write(std::string_view(body).substr(off, 65536), out));
    claim.follow(*e);
  }
  EXPECT_GT(e->state_bytes(), small);
  EXPECT_EQ(budget.claimed_bytes(), std::max(small, e->state_bytes()));
}

}  // namespace
}  // namespace tlsfront::http
