// Durations, sizes, endpoints and their formatters (src/config/units.h).
#include "config/units.h"

#include <gtest/gtest.h>

namespace tlsfront::config {
namespace {

using namespace std::chrono_literals;

constexpr const char* kDurationHint = R"((expected e.g. "500ms", "30s", "5m", "1h", "1d"))";

std::string duration_error(std::string_view text) {
  Result<Millis> r = parse_duration(text);
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, Errc::InvalidArgument);
  return r.error().detail;
}

std::string size_error(std::string_view text) {
  Result<uint64_t> r = parse_size(text);
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, Errc::InvalidArgument);
  return r.error().detail;
}

std::string endpoint_error(std::string_view text, bool allow_localhost = false) {
  Result<Endpoint> r = parse_endpoint(text, allow_localhost);
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, Errc::InvalidArgument);
  return r.error().detail;
}

TEST(ParseDuration, AcceptsEachUnit) {
  EXPECT_EQ(*parse_duration("500ms"), 500ms);
  EXPECT_EQ(*parse_duration("30s"), 30s);
  EXPECT_EQ(*parse_duration("5m"), 5min);
  EXPECT_EQ(*parse_duration("1h"), 1h);
  EXPECT_EQ(*parse_duration("1d"), 24h);
  EXPECT_EQ(*parse_duration("0s"), 0ms);
  EXPECT_EQ(*parse_duration("007s"), 7s);
}

TEST(ParseDuration, BareDigitsAreSeconds) {
  EXPECT_EQ(*parse_duration("30"), 30s);
  EXPECT_EQ(*parse_duration("0"), 0ms);
}

TEST(ParseDuration, AcceptsCompoundLargestFirst) {
  EXPECT_EQ(*parse_duration("1h30m"), 90min);
  EXPECT_EQ(*parse_duration("1d2h3m4s5ms"), 24h + 2h + 3min + 4s + 5ms);
  EXPECT_EQ(*parse_duration("1m500ms"), 60'500ms);
}

TEST(ParseDuration, RejectsMalformed) {
  EXPECT_EQ(duration_error("5x"), std::string(R"(invalid duration "5x" )") + kDurationHint);
  EXPECT_EQ(duration_error("s"), std::string(R"(invalid duration "s" )") + kDurationHint);
  EXPECT_EQ(duration_error("1.5s"), std::string(R"(invalid duration "1.5s" )") + kDurationHint);
  EXPECT_EQ(duration_error("1h 30m"), std::string(R"(invalid duration "1h 30m" )") + kDurationHint);
  EXPECT_EQ(duration_error("1h30"), std::string(R"(invalid duration "1h30" )") + kDurationHint);
  EXPECT_EQ(duration_error("5S"), std::string(R"(invalid duration "5S" )") + kDurationHint);
  EXPECT_EQ(duration_error(" 5s"), std::string(R"(invalid duration " 5s" )") + kDurationHint);
  EXPECT_EQ(duration_error("+5s"), std::string(R"(invalid duration "+5s" )") + kDurationHint);
}

TEST(ParseDuration, RejectsEmptyNegativeAndMisordered) {
  EXPECT_EQ(duration_error(""), R"(invalid duration "" (empty))");
  EXPECT_EQ(duration_error("-5s"), R"(invalid duration "-5s" (negative))");
  EXPECT_EQ(duration_error("30m1h"),
            R"(invalid duration "30m1h" (units must go from largest to smallest, each at most once))");
  EXPECT_EQ(duration_error("1m1m"),
            R"(invalid duration "1m1m" (units must go from largest to smallest, each at most once))");
}

TEST(ParseDuration, RejectsOverflow) {
  // 2^63 - 1 ms is the largest; one more overflows.
  EXPECT_EQ(*parse_duration("9223372036854775807ms"), Millis{INT64_MAX});
  EXPECT_EQ(duration_error("9223372036854775808ms"),
            R"(invalid duration "9223372036854775808ms" (too large))");
  EXPECT_EQ(duration_error("99999999999999999999s"),
            R"(invalid duration "99999999999999999999s" (too large))");
  EXPECT_EQ(duration_error("106751991168d"), R"(invalid duration "106751991168d" (too large))");
  EXPECT_EQ(duration_error("106751991d9223372036854775807ms"),
            R"(invalid duration "106751991d9223372036854775807ms" (too large))");
}

TEST(ParseDuration, QuotesAndEscapesInMessages) {
  EXPECT_EQ(duration_error("5\"x"), std::string(R"(invalid duration "5\"x" )") + kDurationHint);
  EXPECT_EQ(duration_error("5\n"), std::string(R"(invalid duration "5\x0a" )") + kDurationHint);
}

TEST(DurationFromSeconds, ConvertsAndRejects) {
  EXPECT_EQ(*duration_from_seconds(30), 30s);
  EXPECT_EQ(*duration_from_seconds(0), 0ms);
  Result<Millis> negative = duration_from_seconds(-1);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().code, Errc::InvalidArgument);
  EXPECT_EQ(negative.error().detail, "invalid duration -1 (negative)");
  Result<Millis> huge = duration_from_seconds(INT64_MAX / 1000 + 1);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().detail, "invalid duration 9223372036854776 (too large)");
}

TEST(ParseSize, AcceptsSuffixesCaseInsensitive) {
  EXPECT_EQ(*parse_size("0"), 0u);
  EXPECT_EQ(*parse_size("512"), 512u);
  EXPECT_EQ(*parse_size("16k"), 16u * 1024);
  EXPECT_EQ(*parse_size("16K"), 16u * 1024);
  EXPECT_EQ(*parse_size("10m"), 10u * 1024 * 1024);
  EXPECT_EQ(*parse_size("10M"), 10u * 1024 * 1024);
  EXPECT_EQ(*parse_size("1g"), 1024ull * 1024 * 1024);
  EXPECT_EQ(*parse_size("1G"), 1024ull * 1024 * 1024);
}

TEST(ParseSize, RejectsMalformed) {
  constexpr const char* kHint = R"((expected e.g. "512", "16k", "10m", "1g"))";
  EXPECT_EQ(size_error(""), R"(invalid size "" (empty))");
  EXPECT_EQ(size_error("-1"), R"(invalid size "-1" (negative))");
  EXPECT_EQ(size_error("10x"), std::string(R"(invalid size "10x" )") + kHint);
  EXPECT_EQ(size_error("10kb"), std::string(R"(invalid size "10kb" )") + kHint);
  EXPECT_EQ(size_error("k"), std::string(R"(invalid size "k" )") + kHint);
  EXPECT_EQ(size_error("1.5m"), std::string(R"(invalid size "1.5m" )") + kHint);
  EXPECT_EQ(size_error("10 k"), std::string(R"(invalid size "10 k" )") + kHint);
}

TEST(ParseSize, RejectsOverflow) {
  EXPECT_EQ(*parse_size("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(size_error("18446744073709551616"), R"(invalid size "18446744073709551616" (too large))");
  EXPECT_EQ(size_error("17179869184g"), R"(invalid size "17179869184g" (too large))");
  EXPECT_EQ(*parse_size("17179869183g"), 17179869183ull << 30);
}

TEST(SizeFromInteger, RejectsNegative) {
  EXPECT_EQ(*size_from_integer(4096), 4096u);
  Result<uint64_t> r = size_from_integer(-4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().detail, "invalid size -4096 (negative)");
}

TEST(Format, DurationUsesLargestExactUnits) {
  EXPECT_EQ(format_duration(0ms), "0s");
  EXPECT_EQ(format_duration(500ms), "500ms");
  EXPECT_EQ(format_duration(90min), "1h30m");
  EXPECT_EQ(format_duration(24h + 1s + 1ms), "1d1s1ms");
  EXPECT_EQ(format_duration(-1500ms), "-1s500ms");
  // Round trip.
  EXPECT_EQ(*parse_duration(format_duration(Millis{123'456'789})), Millis{123'456'789});
}

TEST(Format, SizeUsesLargestExactSuffix) {
  EXPECT_EQ(format_size(0), "0");
  EXPECT_EQ(format_size(1000), "1000");
  EXPECT_EQ(format_size(16 * 1024), "16k");
  EXPECT_EQ(format_size(1024 * 1024), "1m");
  EXPECT_EQ(format_size(3ull << 30), "3g");
  EXPECT_EQ(format_size(1536 * 1024), "1536k");
}

TEST(ParseEndpoint, AcceptsIpv4AndBracketedIpv6) {
  Result<Endpoint> v4 = parse_endpoint("127.0.0.1:8443", false);
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8443);
  EXPECT_EQ(v4->to_string(), "127.0.0.1:8443");

  Result<Endpoint> any = parse_endpoint("0.0.0.0:443", false);
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->to_string(), "0.0.0.0:443");

  Result<Endpoint> v6 = parse_endpoint("[::1]:8443", false);
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8443);
  EXPECT_EQ(v6->to_string(), "[::1]:8443");

  // Stored canonical.
  Result<Endpoint> long_v6 = parse_endpoint("[2001:DB8:0:0:0:0:0:1]:65535", false);
  ASSERT_TRUE(long_v6.ok());
  EXPECT_EQ(long_v6->host, "2001:db8::1");
  EXPECT_EQ(long_v6->port, 65535);
  EXPECT_EQ(long_v6->to_string(), "[2001:db8::1]:65535");
}

TEST(ParseEndpoint, LocalhostOnlyWhenAllowed) {
  Result<Endpoint> local = parse_endpoint("LocalHost:9080", true);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->to_string(), "127.0.0.1:9080");
  EXPECT_EQ(endpoint_error("localhost:9080"),
            R"(invalid address "localhost:9080" (host must be an IP literal; names are not resolved))");
  EXPECT_EQ(endpoint_error("example.com:80", true),
            R"(invalid address "example.com:80" (host must be an IP literal or "localhost"; names are not resolved))");
}

TEST(ParseEndpoint, RejectsBadShapes) {
  const std::string kHint = R"((expected "host:port", e.g. "127.0.0.1:8443" or "[::1]:8443"))";
  EXPECT_EQ(endpoint_error("127.0.0.1"), R"(invalid address "127.0.0.1" )" + kHint);
  EXPECT_EQ(endpoint_error(""), R"(invalid address "" )" + kHint);
  EXPECT_EQ(endpoint_error("[::1]"), R"(invalid address "[::1]" )" + kHint);
  EXPECT_EQ(endpoint_error("[::1]8443"), R"(invalid address "[::1]8443" )" + kHint);
  EXPECT_EQ(endpoint_error("[::1:8443"), R"(invalid address "[::1:8443" (missing "]"))");
  EXPECT_EQ(endpoint_error("::1:8443"),
            R"(invalid address "::1:8443" (IPv6 addresses must be in brackets, e.g. "[::1]:8443"))");
  // A URL is named as one, not taken for an IPv6 address without brackets.
  EXPECT_EQ(endpoint_error("http://10.0.0.1:8080"),
            R"(invalid address "http://10.0.0.1:8080" (a URL is not an address: expected "host:port" without a scheme, e.g. "127.0.0.1:8080"))");
  EXPECT_EQ(endpoint_error(":8443"), R"(invalid address ":8443" (missing host))");
  EXPECT_EQ(endpoint_error("[]:8443"), R"(invalid address "[]:8443" (missing host))");
  EXPECT_EQ(endpoint_error("1.2.3.4:"), R"(invalid address "1.2.3.4:" (missing port))");
  EXPECT_EQ(endpoint_error("[1.2.3.4]:80"), R"(invalid address "[1.2.3.4]:80" (not an IPv6 address))");
  EXPECT_EQ(endpoint_error("[fe80::1%eth0]:80"),
            R"(invalid address "[fe80::1%eth0]:80" (not an IPv6 address))");
  EXPECT_EQ(endpoint_error("1.2.3:80"),
            R"(invalid address "1.2.3:80" (host must be an IP literal; names are not resolved))");
  EXPECT_EQ(endpoint_error("256.0.0.1:80"),
            R"(invalid address "256.0.0.1:80" (host must be an IP literal; names are not resolved))");
}

TEST(ParseEndpoint, RejectsBadPorts) {
  for (const char* text : {"1.2.3.4:0", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3.4:80x",
                           "1.2.3.4:99999999999999999999999", "[::1]:0", "1.2.3.4:+80"}) {
    EXPECT_EQ(endpoint_error(text),
              "invalid address " + quote(text) + " (port must be an integer 1..65535)");
  }
}

}  // namespace
}  // namespace tlsfront::config
