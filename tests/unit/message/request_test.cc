// valid_host: the Host / :authority forms routed, and those refused (400)
// because a router and a backend could read different hosts out of them;
// set_routing_host: the trailing dot stripped.
#include "message/request.h"

#include <gtest/gtest.h>

namespace tlsfront::http {
namespace {

TEST(ValidHost, NamesAddressesAndPorts) {
  for (const char* ok : {"api.example.com", "API.Example.com:8443", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:443",
                         "[2001:db8::1]", "[::ffff:1.2.3.4]:8080", "a_b.local", "x%41.example", "admin.example.",
                         "admin.example.:8443", "localhost.", "127.0.0.1."}) {
    EXPECT_TRUE(valid_host(ok)) << ok;
  }
}

TEST(ValidHost, MalformedLiteralsAndTrailingBytesAreRefused) {
  for (const char* bad : {"", "[::1]evil.com", "[::1]]", "[:::1]", "[1::2::3]", "[1:2:3:4:5:6:7:8:9]", "[::1.2.3.4.5]",
                          "[::1", "[fe80::1%25eth0]", "[v1.x]", "[::1]:", "[::1]:123456", "[::1]:8a", "a:b:c", "1::2",
                          "a.com:", "a.com:80:80", "a@b", "a b", "a/b", "[::g]", "a[b]"}) {
    EXPECT_FALSE(valid_host(bad)) << bad;
  }
}

// Empty labels: a backend could read the name with or without them (nginx
// refuses them); only one trailing dot is a name's absolute form.
TEST(ValidHost, EmptyLabelsAreRefused) {
  for (const char* bad : {"admin.example..", "admin.example..:443", "a..example", ".example", "..example", ".", "..",
                          ".:80", ":80", "[::1].", "[::1].:443"}) {
    EXPECT_FALSE(valid_host(bad)) << bad;
  }
}

// set_routing_host: one trailing dot goes from the Host field itself (what
// the upstream receives) and from the routing key.
TEST(SetRoutingHost, OneTrailingDotIsStripped) {
  struct Row {
    const char* field;
    const char* forwarded;
    const char* key;
  };
  for (const Row& r :
       {Row{"admin.example.", "admin.example", "admin.example"},
        Row{"Admin.Example.:8443", "Admin.Example:8443", "admin.example"}, Row{"127.0.0.1.", "127.0.0.1", "127.0.0.1"},
        Row{"admin.example", "admin.example", "admin.example"}, Row{"a.example:80", "a.example:80", "a.example"},
        Row{"[::1]:443", "[::1]:443", "[::1]"}}) {
    ASSERT_TRUE(valid_host(r.field)) << r.field;
    RequestHead head;
    head.headers.push_back(Header{"User-Agent", "x.", HeaderToken::UserAgent});
    head.headers.push_back(Header{"Host", r.field, HeaderToken::Host});
    set_routing_host(head);
    EXPECT_EQ(head.headers[1].value, r.forwarded) << r.field;
    EXPECT_EQ(head.host, r.key) << r.field;
    EXPECT_EQ(head.headers[0].value, "x.");
  }
  RequestHead none;  // HTTP/1.0 without Host, HTTP/2 without :authority
  none.host = "stale";
  set_routing_host(none);
  EXPECT_EQ(none.host, "");
}

TEST(ValidResponseHead, StatusReasonAndFieldsMustBeWellFormed) {
  ResponseHead head;
  head.status = 200;
  head.reason = "OK\tfine";
  head.headers.push_back(Header{"X-A", "1", HeaderToken::Other});
  EXPECT_TRUE(valid_response_head(head));
  ResponseHead bad = head;
  bad.status = 600;
  EXPECT_FALSE(valid_response_head(bad));
  bad = head;
  bad.reason = "OK\rX-Injected: 1";
  EXPECT_FALSE(valid_response_head(bad));
  bad = head;
  bad.headers[0].name = "X A";
  EXPECT_FALSE(valid_response_head(bad));
  bad = head;
  bad.headers[0].value = "a\nb";
  EXPECT_FALSE(valid_response_head(bad));
}

TEST(SwitchesTo, TheUpgradeFieldMustNameTheProtocolAskedFor) {
  ResponseHead head;
  head.status = 101;
  EXPECT_FALSE(switches_to(head, "websocket"));  // no Upgrade field
  head.headers.push_back(Header{"Upgrade", "WebSocket", HeaderToken::Upgrade});
  EXPECT_TRUE(switches_to(head, "websocket"));
  head.headers[0].value = "h2c";
  EXPECT_FALSE(switches_to(head, "websocket"));
  head.headers[0].value = "";
  EXPECT_FALSE(switches_to(head, "websocket"));
}

}  // namespace
}  // namespace tlsfront::http
