// classify_header: every well-known name in any letter case, and nothing else
// (same-length near misses, prefixes, longer names) is Other.
#include "message/header_token.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace tlsfront::http {
namespace {

const std::vector<std::pair<std::string, HeaderToken>> kKnown = {
    {"connection", HeaderToken::Connection},
    {"keep-alive", HeaderToken::KeepAlive},
    {"proxy-connection", HeaderToken::ProxyConnection},
    {"te", HeaderToken::Te},
    {"trailer", HeaderToken::Trailer},
    {"transfer-encoding", HeaderToken::TransferEncoding},
    {"upgrade", HeaderToken::Upgrade},
    {"host", HeaderToken::Host},
    {"content-length", HeaderToken::ContentLength},
    {"expect", HeaderToken::Expect},
    {"x-forwarded-for", HeaderToken::XForwardedFor},
    {"x-forwarded-proto", HeaderToken::XForwardedProto},
    {"x-real-ip", HeaderToken::XRealIp},
    {"user-agent", HeaderToken::UserAgent},
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

TEST(HeaderToken, EveryKnownNameInAnyCase) {
  for (const auto& [name, token] : kKnown) {
    EXPECT_EQ(classify_header(name), token) << name;
    EXPECT_EQ(classify_header(upper(name)), token) << upper(name);
    std::string mixed = name;
    mixed[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(mixed[0])));
    EXPECT_EQ(classify_header(mixed), token) << mixed;
  }
}

TEST(HeaderToken, NearMissesAreOther) {
  for (const auto& [name, token] : kKnown) {
    std::string last = name;
    last.back() = last.back() == 'x' ? 'y' : 'x';
    EXPECT_EQ(classify_header(last), HeaderToken::Other) << last;
    std::string first = name;
    first.front() = first.front() == 'q' ? 'z' : 'q';
    EXPECT_EQ(classify_header(first), HeaderToken::Other) << first;
    EXPECT_EQ(classify_header(name + "s"), HeaderToken::Other) << name << "s";
    EXPECT_EQ(classify_header(name.substr(0, name.size() - 1)), HeaderToken::Other) << name;
  }
  EXPECT_EQ(classify_header(""), HeaderToken::Other);
  EXPECT_EQ(classify_header("accept"), HeaderToken::Other);
  EXPECT_EQ(classify_header("content-type"), HeaderToken::Other);
}

// Every length around the word size (the whole-word path and its
// overlapping last word, the octet path below 8), every octet value in
// every position: only 'A'..'Z' change, by +32.
TEST(HeaderToken, LowercaseInPlaceChangesOnlyAsciiCapitals) {
  for (size_t n = 0; n <= 19; ++n) {
    for (int c = 0; c < 256; ++c) {
      for (size_t at = 0; at < n; ++at) {
        std::string s(n, 'Q');
        s[at] = static_cast<char>(c);
        std::string want(n, 'q');
        want[at] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : static_cast<char>(c);
        lowercase_in_place(s);
        ASSERT_EQ(s, want) << "n=" << n << " c=" << c << " at=" << at;
      }
    }
  }
  std::string mixed = "X-Request-ID: Content-Type";
  lowercase_in_place(mixed);
  EXPECT_EQ(mixed, "x-request-id: content-type");
}

}  // namespace
}  // namespace tlsfront::http
