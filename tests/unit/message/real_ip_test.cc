// real_client_address: nginx's realip rule (set_real_ip_from, real_ip_header,
// real_ip_recursive) against spoofing attempts.
#include "message/real_ip.h"

#include <gtest/gtest.h>

namespace tlsfront::http {
namespace {

std::vector<Cidr> trusted(std::initializer_list<std::string_view> blocks) {
  std::vector<Cidr> out;
  for (auto b : blocks) out.push_back(*Cidr::parse(b, nullptr));
  return out;
}

std::vector<Header> fields(std::initializer_list<std::pair<std::string_view, std::string_view>> list) {
  std::vector<Header> out;
  for (auto [n, v] : list) out.push_back(Header{std::string(n), std::string(v), classify_header(n)});
  return out;
}

// The client the rule picks, as text; "" when the peer stays the client.
std::string client(const std::vector<Header>& h, std::string_view peer, const std::vector<Cidr>& t,
                   bool recursive = true, HeaderToken which = HeaderToken::XForwardedFor) {
  const auto a = real_client_address(h, which, *IpAddress::parse(peer), t, recursive);
  return a ? a->to_string() : "";
}

const std::vector<Cidr> kLb = trusted({"10.0.0.0/8", "::1"});

TEST(RealIp, UntrustedPeerIsNeverBelieved) {
  EXPECT_EQ(client(fields({{"X-Forwarded-For", "203.0.113.9"}}), "198.51.100.1", kLb), "");
  EXPECT_EQ(client(fields({{"X-Real-IP", "203.0.113.9"}}), "198.51.100.1", kLb, true, HeaderToken::XRealIp), "");
  EXPECT_EQ(client(fields({{"X-Forwarded-For", "203.0.113.9"}}), "10.0.0.1", {}), "");
}

TEST(RealIp, RecursiveRightMostUntrustedWins) {
  // The client wrote "1.1.1.1" itself (spoof); the load balancer appended
  // the address it saw (203.0.113.9), an inner proxy 10.0.0.2.
  const auto h = fields({{"X-Forwarded-For", "1.1.1.1, 203.0.113.9, 10.0.0.2"}});
  EXPECT_EQ(client(h, "10.0.0.1", kLb), "203.0.113.9");
  // Not recursive: the right-most is the client, trusted or not.
  EXPECT_EQ(client(h, "10.0.0.1", kLb, false), "10.0.0.2");
  // Split over several fields: one list, in order.
  const auto split = fields({{"X-Forwarded-For", "1.1.1.1"}, {"Accept", "*/*"}, {"x-forwarded-for", "203.0.113.9"},
                             {"X-Forwarded-For", "10.0.0.2,10.0.0.3"}});
  EXPECT_EQ(client(split, "10.0.0.1", kLb), "203.0.113.9");
  // All trusted: the left-most.
  EXPECT_EQ(client(fields({{"X-Forwarded-For", "10.0.0.3, 10.0.0.2"}}), "10.0.0.1", kLb), "10.0.0.3");
  // No header: nothing changes.
  EXPECT_EQ(client(fields({{"Host", "a"}}), "10.0.0.1", kLb), "");
}

TEST(RealIp, MalformedEntriesStopTheWalk) {
  // Garbage at the right-most position: the peer stays the client.
  for (std::string_view bad : {"203.0.113.9, garbage", "203.0.113.9,", "unknown", "", "203.0.113.9, 10.0.0.2 x",
                               "2001:db8::1]:80", "[192.0.2.1]", "192.0.2.1:http"}) {
    EXPECT_EQ(client(fields({{"X-Forwarded-For", bad}}), "10.0.0.1", kLb), "") << bad;
  }
  // Garbage left of a trusted hop: the walk stops at that hop.
  EXPECT_EQ(client(fields({{"X-Forwarded-For", "nonsense, 10.0.0.2"}}), "10.0.0.1", kLb), "10.0.0.2");
  // Garbage left of the client: never reached.
  EXPECT_EQ(client(fields({{"X-Forwarded-For", "<script>, 203.0.113.9, 10.0.0.2"}}), "10.0.0.1", kLb),
            "203.0.113.9");
}

TEST(RealIp, EntryForms) {
  EXPECT_EQ(parse_forwarded_address(" 192.0.2.1:8080 ")->to_string(), "192.0.2.1");
  EXPECT_EQ(parse_forwarded_address("[2001:db8::1]:443")->to_string(), "2001:db8::1");
  EXPECT_EQ(parse_forwarded_address("[2001:db8::1]")->to_string(), "2001:db8::1");
  EXPECT_EQ(parse_forwarded_address("\t2001:DB8::1")->to_string(), "2001:db8::1");
  EXPECT_EQ(parse_forwarded_address("::ffff:192.0.2.1")->to_string(), "192.0.2.1");
  EXPECT_FALSE(parse_forwarded_address("[2001:db8::1]:"));
  EXPECT_FALSE(parse_forwarded_address("[2001:db8::1]x"));
  EXPECT_FALSE(parse_forwarded_address("192.0.2.1:"));
  EXPECT_FALSE(parse_forwarded_address("192.0.2.1:123456"));
  EXPECT_FALSE(parse_forwarded_address("2001:db8::1:80:1:2:3:4:5"));
  EXPECT_FALSE(parse_forwarded_address("_hidden"));
}

TEST(RealIp, XRealIpTakesExactlyOneField) {
  const HeaderToken x = HeaderToken::XRealIp;
  EXPECT_EQ(client(fields({{"X-Real-IP", "203.0.113.9"}}), "::1", kLb, true, x), "203.0.113.9");
  EXPECT_EQ(client(fields({{"X-Real-IP", "203.0.113.9"}, {"X-Real-IP", "1.1.1.1"}}), "::1", kLb, true, x), "");
  EXPECT_EQ(client(fields({{"X-Real-IP", "1.1.1.1, 2.2.2.2"}}), "::1", kLb, true, x), "");
  // X-Forwarded-For is not read when X-Real-IP is the header.
  EXPECT_EQ(client(fields({{"X-Forwarded-For", "203.0.113.9"}}), "::1", kLb, true, x), "");
}

}  // namespace
}  // namespace tlsfront::http
