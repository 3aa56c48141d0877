// Accept-Encoding negotiation (RFC 9110 §12.5.3): q-values, "*", identity,
// x-gzip, malformed weights, several fields, the server's order on ties.
#include "message/accept_encoding.h"

#include <gtest/gtest.h>

#include <array>

namespace tlsfront::http {
namespace {

constexpr std::array<std::string_view, 2> kBrGzip{"br", "gzip"};
constexpr std::array<std::string_view, 1> kGzip{"gzip"};

// The chosen token, or "identity".
std::string_view chosen(std::string_view accept, std::span<const std::string_view> offered = kBrGzip) {
  auto i = negotiate_encoding(accept, offered);
  return i ? offered[*i] : std::string_view("identity");
}

TEST(AcceptEncoding, Weights) {
  EXPECT_EQ(accept_weight("gzip", "gzip"), 1000);
  EXPECT_EQ(accept_weight("gzip;q=0.5", "gzip"), 500);
  EXPECT_EQ(accept_weight("GZIP ; Q=0.123", "gzip"), 123);
  EXPECT_EQ(accept_weight("x-gzip", "gzip"), 1000);  // §8.4.1.3
  EXPECT_EQ(accept_weight("deflate", "gzip"), -1);   // not listed
  EXPECT_EQ(accept_weight("*;q=0.3", "gzip"), 300);
  EXPECT_EQ(accept_weight("gzip;q=0, *", "gzip"), 0);  // its own element wins over "*"
  EXPECT_EQ(accept_weight("gzip;q=1.000", "gzip"), 1000);
  // Malformed weights count as q=0.
  for (std::string_view bad : {"gzip;q=", "gzip;q=2", "gzip;q=1.5", "gzip;q=0.5.1", "gzip;q=0.1234", "gzip;q=x",
                               "gzip;q=1.001", "gzip;q=.5", "gzip; q =0", "gzip;q= 0"}) {
    EXPECT_EQ(accept_weight(bad, "gzip"), 0) << bad;
  }
  EXPECT_EQ(accept_weight("gzip;level=9", "gzip"), 1000);  // other parameters are ignored
  EXPECT_EQ(accept_weight(",, gzip ,", "gzip"), 1000);     // empty list elements
}

TEST(AcceptEncoding, Negotiation) {
  EXPECT_EQ(chosen("gzip, deflate, br"), "br");  // a tie: the server's order
  EXPECT_EQ(chosen("gzip, deflate"), "gzip");
  EXPECT_EQ(chosen("br;q=0.5, gzip"), "gzip");  // the client's weights first
  EXPECT_EQ(chosen("br;q=0, gzip;q=0"), "identity");
  EXPECT_EQ(chosen("gzip;q=0"), "identity");
  EXPECT_EQ(chosen("*"), "br");
  EXPECT_EQ(chosen("*;q=0"), "identity");
  EXPECT_EQ(chosen("*;q=0, gzip"), "gzip");
  EXPECT_EQ(chosen("identity"), "identity");
  EXPECT_EQ(chosen(""), "identity");
  EXPECT_EQ(chosen("deflate, compress"), "identity");
  EXPECT_EQ(chosen("gzip;q=0.5, identity"), "identity");  // identity weighted above it
  EXPECT_EQ(chosen("gzip;q=0.5, identity;q=0.5"), "gzip");
  EXPECT_EQ(chosen("gzip, identity;q=0"), "gzip");
  EXPECT_EQ(chosen("br", kGzip), "identity");
  EXPECT_EQ(chosen("x-gzip", kGzip), "gzip");
}

TEST(AcceptEncoding, SeveralFieldsAndNone) {
  std::vector<Header> headers = {
      {"Host", "a", HeaderToken::Host}, {"accept-encoding", "br;q=0.1"}, {"Accept-Encoding", "gzip"}};
  auto i = negotiate_encoding(headers, kBrGzip);
  ASSERT_TRUE(i);
  EXPECT_EQ(kBrGzip[*i], "gzip");
  headers.pop_back();
  headers.pop_back();
  EXPECT_FALSE(negotiate_encoding(headers, kBrGzip));  // no field: nothing is compressed
}

}  // namespace
}  // namespace tlsfront::http
