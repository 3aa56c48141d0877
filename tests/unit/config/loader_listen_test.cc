// [[listen]] and [admin] addresses: their syntax, duplicates, and port 0
// (any free port: bound once, named by the start-up log).
#include "config/loader.h"
#include "loader_test_support.h"

#include <gtest/gtest.h>

namespace tlsfront::config {
namespace {

TEST(Loader, BadAddressAndPort) {
  EXPECT_EQ(load_error("[[listen]]\naddress = \"example.com:443\"\n"),
            R"(t.toml:2:1: listen[0].address: invalid address "example.com:443" (host must be an IP literal; names are not resolved))");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"localhost:443\"\n"),
            R"(t.toml:2:1: listen[0].address: invalid address "localhost:443" (host must be an IP literal; names are not resolved))");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:70000\"\n"),
            R"(t.toml:2:1: listen[0].address: invalid address "127.0.0.1:70000" (port must be an integer 1..65535))");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"::1:443\"\n"),
            R"(t.toml:2:1: listen[0].address: invalid address "::1:443" (IPv6 addresses must be in brackets, e.g. "[::1]:8443"))");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\nbacklog = 0\n"),
            "t.toml:3:1: listen[0].backlog: must be between 1 and 65535, got 0");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\ntcp_fastopen = 70000\n"),
            "t.toml:3:1: listen[0].tcp_fastopen: must be between 0 and 65535, got 70000");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\ntcp_fastopen = \"on\"\n"),
            R"(t.toml:3:1: listen[0].tcp_fastopen: must be "auto" or a queue length 0..65535 (0 = off), got "on")");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[[listen]]
address = "127.0.0.1:8443"
)"),
            R"(t.toml:4:1: listen[1].address: duplicate listen address "127.0.0.1:8443" (first at t.toml:2:1))");
  // Upstream servers: the position is the element's, not the key's.
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = ["127.0.0.1:1",
           "10.0.0.256:80"]
)"),
            R"(t.toml:9:12: upstream[0].servers[1]: invalid address "10.0.0.256:80" (host must be an IP literal or a DNS name (labels of letters, digits, "-" and "_")))");
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = [9000]
)"),
            "t.toml:8:12: upstream[0].servers[0]: expected a string or a table { address = ... }, got integer");
}

TEST(Loader, Ipv6Addresses) {
  Config c = load_ok(R"([[listen]]
address = "[::]:443"
[[listen]]
address = "[FE80::1]:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "v6"
servers = ["[::1]:9080", "[2001:db8:0:0:0:0:0:7]:80"]
[[route]]
upstream = "v6"
)");
  ASSERT_EQ(c.listeners.size(), 2u);
  EXPECT_EQ(c.listeners[0].address.host, "::");
  EXPECT_EQ(c.listeners[0].address.port, 443);
  EXPECT_EQ(c.listeners[1].address.to_string(), "[fe80::1]:8443");
  ASSERT_EQ(c.upstreams[0].servers.size(), 2u);
  EXPECT_EQ(c.upstreams[0].servers[0].to_string(), "[::1]:9080");
  EXPECT_EQ(c.upstreams[0].servers[1].to_string(), "[2001:db8::7]:80");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"[::1]\"\n"),
            R"(t.toml:2:1: listen[0].address: invalid address "[::1]" (expected "host:port", e.g. "127.0.0.1:8443" or "[::1]:8443"))");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"[::g]:443\"\n"),
            R"(t.toml:2:1: listen[0].address: invalid address "[::g]:443" (not an IPv6 address))");
}

TEST(Loader, Admin) {
  Config d = load_ok(kMinimal);
  EXPECT_TRUE(d.admin.enabled);
  EXPECT_EQ(d.admin.address.to_string(), "127.0.0.1:9901");
  Config c = load_ok(with("[admin]\naddress = \"[::1]:9100\"\n"));
  EXPECT_EQ(c.admin.address.to_string(), "[::1]:9100");
  EXPECT_FALSE(load_ok(with("[admin]\nenabled = false\n")).admin.enabled);
  EXPECT_EQ(load_error(with("[admin]\naddress = \"127.0.0.1:8443\"\n")),
            "t.toml:15:1: admin.address: is also a [[listen]] address");
  EXPECT_EQ(load_error(with("[admin]\nenabled = false\naddress = \"127.0.0.1:9\"\n")),
            "t.toml:16:1: admin.address: not used with enabled = false");
  EXPECT_EQ(load_error(with("[admin]\nport = 9\n")), "t.toml:15:1: admin.port: unknown key \"port\"");
}

// Port 0 is an address to bind: the kernel picks the port (tlsfront logs it).
TEST(Loader, ListenAndAdminPortZero) {
  Config c = load_ok(R"([[listen]]
address = "127.0.0.1:0"
[[listen]]
address = "[::1]:0"
[[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = ["127.0.0.1:9080"]
[[route]]
upstream = "a"
[admin]
address = "127.0.0.1:0"
)");
  ASSERT_EQ(c.listeners.size(), 3u);
  EXPECT_EQ(c.listeners[0].address.to_string(), "127.0.0.1:0");
  EXPECT_EQ(c.listeners[1].address.to_string(), "[::1]:0");
  // Port 0 on both is no clash: the two sockets get two free ports.
  EXPECT_EQ(c.admin.address.to_string(), "127.0.0.1:0");
}

// Port 0 twice on one host would be two sockets under one name (reload and
// ALPN find a listener by its address): an error that says so, at the second.
TEST(Loader, ListenPortZeroTwiceOnOneHost) {
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:0"
[[listen]]
address = "127.0.0.1:0"
)"),
            R"(t.toml:4:1: listen[1].address: duplicate listen address "127.0.0.1:0" (first at t.toml:2:1; port 0 is one free port per host: list it once))");
}

// Where tlsfront connects (upstream servers), port 0 stays an error.
TEST(Loader, UpstreamPortZeroIsAnError) {
  EXPECT_EQ(load_error(R"([[listen]]
address = "127.0.0.1:8443"
[tls]
certificate = "c"
key = "k"
[[upstream]]
name = "a"
servers = ["127.0.0.1:0"]
)"),
            R"(t.toml:8:12: upstream[0].servers[0]: invalid address "127.0.0.1:0" (port must be an integer 1..65535))");
}

TEST(Loader, Quic) {
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\ntls = false\nquic = true\n"),
            "t.toml:4:1: listen[0].quic: QUIC is TLS 1.3 only: not on a cleartext listener (tls = false)");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\nproxy_protocol = true\nquic = true\n"),
            "t.toml:4:1: listen[0].quic: no PROXY protocol over UDP: QUIC cannot be on a proxy_protocol listener");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\nalt_svc_max_age = 60\n"),
            "t.toml:3:1: listen[0].alt_svc_max_age: only with quic = true");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\nquic_retry = true\n"),
            "t.toml:3:1: listen[0].quic_retry: only with quic = true");
  EXPECT_EQ(load_error("[[listen]]\naddress = \"127.0.0.1:1\"\nquic = true\nalt_svc_max_age = -1\n"),
            "t.toml:4:1: listen[0].alt_svc_max_age: must be between 0 and 31536000, got -1");
}

}  // namespace
}  // namespace tlsfront::config
