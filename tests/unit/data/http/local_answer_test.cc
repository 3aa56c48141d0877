// LocalAnswer's pieces that decide a redirect: which hosts a Location may
// name, the HTTPS Location of a cleartext listener, a configured location
// expanded.
#include "data/http/local_answer.h"

#include <gtest/gtest.h>

namespace tlsfront::http {
namespace {

TEST(LocalAnswer, RedirectableHosts) {
  for (const char* ok : {"example.com", "a", "xn--bcher-kva.example", "a-b.c-d.example", "192.0.2.7", "[::1]",
                         "[2001:db8::1]", "[::ffff:192.0.2.7]"}) {
    EXPECT_TRUE(redirectable_host(ok)) << ok;
  }
  const std::string long_label(64, 'a');
  const std::string long_name = std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
                                std::string(63, 'd');  // 255 bytes
  for (const std::string bad :
       {std::string(), std::string("a_b.example"), std::string("%65vil.example"), std::string("-a.example"),
        std::string("a-.example"), std::string("a..example"), std::string("example."), std::string(".example"),
        std::string("a~b"), std::string("user@example.com"), std::string("EXAMPLE.com"),
        std::string("[fe80::1%25eth0]"), std::string("[::g]"), std::string("[]"), std::string("::1"),
        std::string("[::1"), std::string("a/b"), long_label + ".example", long_name}) {
    EXPECT_FALSE(redirectable_host(bad)) << bad;
  }
}

TEST(LocalAnswer, HttpsLocation) {
  EXPECT_EQ(https_location("example.com", 443, "/a?b=c"), "https://example.com/a?b=c");
  EXPECT_EQ(https_location("[::1]", 8443, "/"), "https://[::1]:8443/");
}

TEST(LocalAnswer, ExpandLocation) {
  HeaderVars vars{};
  vars[static_cast<size_t>(HeaderVar::Host)] = "h.example";
  vars[static_cast<size_t>(HeaderVar::RequestUri)] = "/p?q";
  const std::vector<config::HeaderValuePart> parts{
      {"https://", -1}, {"", 0}, {"/v2", -1}, {"", static_cast<int>(HeaderVar::RequestUri)}};
  EXPECT_EQ(expand_location(parts, vars), "https://h.example/v2/p?q");
}

}  // namespace
}  // namespace tlsfront::http
