// IpAddress and Cidr: parsing, IPv4-mapped addresses, matching.
#include "util/ip_address.h"

#include <gtest/gtest.h>

namespace tlsfront {
namespace {

Cidr cidr(std::string_view text) {
  std::string why;
  auto c = Cidr::parse(text, &why);
  EXPECT_TRUE(c) << text << ": " << why;
  return c ? *c : Cidr{};
}

std::string cidr_error(std::string_view text) {
  std::string why;
  EXPECT_FALSE(Cidr::parse(text, &why)) << text;
  return why;
}

TEST(IpAddress, ParsesAndFormatsCanonically) {
  EXPECT_EQ(IpAddress::parse("192.0.2.7")->to_string(), "192.0.2.7");
  EXPECT_EQ(IpAddress::parse("2001:DB8:0::1")->to_string(), "2001:db8::1");
  // What a dual-stack socket reports for an IPv4 peer is that IPv4 address.
  const auto mapped = IpAddress::parse("::ffff:127.0.0.1");
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->family, IpAddress::Family::V4);
  EXPECT_EQ(mapped->to_string(), "127.0.0.1");
  for (std::string_view bad : {"", "1.2.3", "1.2.3.4.5", "01.2.3.4", "256.1.1.1", "example.com", "[::1]", "::1%lo",
                               "1.2.3.4 ", "1.2.3.4/32"}) {
    EXPECT_FALSE(IpAddress::parse(bad)) << bad;
  }
  EXPECT_FALSE(IpAddress::parse(std::string(100, '1')));
}

TEST(Cidr, ParsesBlocksAndSingleAddresses) {
  EXPECT_EQ(cidr("10.0.0.0/8").to_string(), "10.0.0.0/8");
  EXPECT_EQ(cidr("192.0.2.7").to_string(), "192.0.2.7/32");
  EXPECT_EQ(cidr("::1").to_string(), "::1/128");
  EXPECT_EQ(cidr("2001:db8::/32").to_string(), "2001:db8::/32");
  EXPECT_EQ(cidr("0.0.0.0/0").to_string(), "0.0.0.0/0");
  EXPECT_EQ(cidr("::ffff:10.0.0.0/104").to_string(), "10.0.0.0/8");
  EXPECT_EQ(cidr_error("10.0.0.1/8"), "host bits set (the network is 10.0.0.0/8)");
  EXPECT_EQ(cidr_error("10.0.0.0/33"), "prefix length must be 0..32");
  EXPECT_EQ(cidr_error("::/129"), "prefix length must be 0..128");
  EXPECT_EQ(cidr_error("10.0.0.0/"), "prefix length must be 0..32");
  EXPECT_EQ(cidr_error("10.0.0.0/08"), "prefix length must be 0..32");
  EXPECT_EQ(cidr_error("::ffff:10.0.0.0/64"), "an IPv4-mapped block needs a prefix length of 96..128");
  EXPECT_NE(cidr_error("example.com/8").find("not an IP address"), std::string::npos);
}

TEST(Cidr, Contains) {
  const Cidr ten = cidr("10.0.0.0/8");
  EXPECT_TRUE(ten.contains(*IpAddress::parse("10.255.1.2")));
  EXPECT_TRUE(ten.contains(*IpAddress::parse("::ffff:10.1.1.1")));
  EXPECT_FALSE(ten.contains(*IpAddress::parse("11.0.0.0")));
  EXPECT_FALSE(ten.contains(*IpAddress::parse("::a00:1")));  // IPv4-compatible is not IPv4
  const Cidr odd = cidr("192.0.2.128/25");
  EXPECT_TRUE(odd.contains(*IpAddress::parse("192.0.2.200")));
  EXPECT_FALSE(odd.contains(*IpAddress::parse("192.0.2.127")));
  const Cidr v6 = cidr("2001:db8:8000::/33");
  EXPECT_TRUE(v6.contains(*IpAddress::parse("2001:db8:ffff::1")));
  EXPECT_FALSE(v6.contains(*IpAddress::parse("2001:db8:7fff::1")));
  EXPECT_FALSE(v6.contains(*IpAddress::parse("10.0.0.1")));
  EXPECT_TRUE(cidr("0.0.0.0/0").contains(*IpAddress::parse("203.0.113.9")));
  EXPECT_FALSE(cidr("0.0.0.0/0").contains(*IpAddress::parse("::1")));
  const std::vector<Cidr> both = {ten, cidr("::1")};
  EXPECT_TRUE(contains_any(both, *IpAddress::parse("::1")));
  EXPECT_FALSE(contains_any(both, *IpAddress::parse("::2")));
  EXPECT_FALSE(contains_any({}, *IpAddress::parse("10.0.0.1")));
}

}  // namespace
}  // namespace tlsfront
