// [[listen]] proxy_protocol, proxy_protocol_from, trusted_proxies,
// real_ip_header, real_ip_recursive: values, defaults and errors (with
// file:line:column and the key).
#include "config/loader.h"
#include "loader_test_support.h"

#include <gtest/gtest.h>

namespace tlsfront::config {
namespace {

std::string listen(std::string_view keys) {
  return std::string(R"([[listen]]
address = "127.0.0.1:8443"
)") + std::string(keys) + std::string(kMinimal.substr(kMinimal.find("\n[tls]")));
}

TEST(LoaderClientAddress, Defaults) {
  const Config c = load_ok(std::string(kMinimal));
  const Listener& l = c.listeners[0];
  EXPECT_FALSE(l.proxy_protocol);
  EXPECT_TRUE(l.proxy_protocol_from.empty());
  EXPECT_TRUE(l.trusted_proxies.empty());
  EXPECT_EQ(l.real_ip_header, RealIpHeader::XForwardedFor);
  EXPECT_TRUE(l.real_ip_recursive);
}

TEST(LoaderClientAddress, Values) {
  const Config c = load_ok(listen(R"(proxy_protocol = true
proxy_protocol_from = ["10.0.0.0/8", "::1", "192.0.2.7"]
trusted_proxies = ["10.1.0.0/16"]
real_ip_header = "x-real-ip"
real_ip_recursive = false
)"));
  const Listener& l = c.listeners[0];
  EXPECT_TRUE(l.proxy_protocol);
  ASSERT_EQ(l.proxy_protocol_from.size(), 3u);
  EXPECT_EQ(l.proxy_protocol_from[1].to_string(), "::1/128");
  EXPECT_EQ(l.trusted_proxies[0].to_string(), "10.1.0.0/16");
  EXPECT_EQ(l.real_ip_header, RealIpHeader::XRealIp);
  EXPECT_FALSE(l.real_ip_recursive);
}

TEST(LoaderClientAddress, Errors) {
  EXPECT_EQ(load_error(listen("proxy_protocol = \"yes\"\n")),
            "t.toml:3:1: listen[0].proxy_protocol: expected a boolean, got string");
  EXPECT_EQ(load_error(listen("proxy_protocol_from = [\"10.0.0.0/8\"]\n")),
            "t.toml:3:1: listen[0].proxy_protocol_from: only with proxy_protocol = true");
  EXPECT_EQ(load_error(listen("proxy_protocol = true\nproxy_protocol_from = [\"10.0.0.0/8\",\n  \"10.0.0.1/8\"]\n")),
            R"(t.toml:5:3: listen[0].proxy_protocol_from[1]: "10.0.0.1/8": host bits set (the network is 10.0.0.0/8))");
  EXPECT_EQ(load_error(listen("proxy_protocol = true\nproxy_protocol_from = []\n")),
            "t.toml:4:1: listen[0].proxy_protocol_from: must not be empty (omit it for none)");
  EXPECT_EQ(load_error(listen("trusted_proxies = [\"10.0.0.0/8\", \"10.0.0.0/8\"]\n")),
            R"(t.toml:3:34: listen[0].trusted_proxies[1]: duplicate "10.0.0.0/8")");
  EXPECT_EQ(load_error(listen("trusted_proxies = [\"lb.internal\"]\n")),
            "t.toml:3:20: listen[0].trusted_proxies[0]: \"lb.internal\": not an IP address or CIDR block "
            R"(("10.0.0.0/8", "2001:db8::/32", "192.0.2.7"))");
  EXPECT_EQ(load_error(listen("trusted_proxies = [8]\n")),
            "t.toml:3:20: listen[0].trusted_proxies[0]: expected a string, got integer");
  EXPECT_EQ(load_error(listen("real_ip_header = \"X-Real-IP\"\n")),
            "t.toml:3:1: listen[0].real_ip_header: only with trusted_proxies (the peers whose header is believed)");
  EXPECT_EQ(load_error(listen("trusted_proxies = [\"::1\"]\nreal_ip_header = \"Forwarded\"\n")),
            R"(t.toml:4:1: listen[0].real_ip_header: must be "X-Forwarded-For" or "X-Real-IP", got "Forwarded")");
  EXPECT_EQ(load_error(listen("real_ip_recursive = false\n")),
            "t.toml:3:1: listen[0].real_ip_recursive: only with trusted_proxies (the peers whose header is believed)");
}

}  // namespace
}  // namespace tlsfront::config
