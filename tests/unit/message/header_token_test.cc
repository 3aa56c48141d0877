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

}  // namespace
}  // namespace tlsfront::http
