// [upstream.tls] / tls = true: TLS to an [[upstream]]'s servers, and
// protocol = "h2" (HTTP/2 over TLS), which implies it.
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

// Lines 1-8: [[listen]], [tls], the [[upstream]] "a" up to its servers.
const std::string kHead =
    "[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = \"c\"\nkey = \"k\"\n"
    "[[upstream]]\nname = \"a\"\nservers = [\"127.0.0.1:1\"]\n";
const std::string kRoute = "[[route]]\nupstream = \"a\"\n";

Upstream upstream_of(const std::string& lines) { return load_ok(kHead + lines + kRoute).upstreams.at(0); }

TEST(LoaderUpstreamTls, OffUnlessAskedFor) {
  const Upstream u = upstream_of("");
  EXPECT_FALSE(u.tls.enabled);
  EXPECT_FALSE(upstream_of("tls = false\n").tls.enabled);
  EXPECT_FALSE(upstream_of("protocol = \"h2c\"\n").tls.enabled);
}

TEST(LoaderUpstreamTls, TrueTakesEveryDefault) {
  const Upstream u = upstream_of("tls = true\n");
  EXPECT_TRUE(u.tls.enabled);
  EXPECT_TRUE(u.tls.verify);  // verified by default, unlike nginx's proxy_ssl_verify off
  EXPECT_TRUE(u.tls.session_reuse);
  EXPECT_EQ(u.tls.server_name, "");
  EXPECT_EQ(u.tls.trusted_ca, "");  // the system's store
  EXPECT_EQ(u.tls.protocols, (std::vector<TlsVersion>{TlsVersion::Tls12, TlsVersion::Tls13}));
  EXPECT_EQ(u.tls.origin, "/etc/tlsfront/t.toml:9:1");
}

TEST(LoaderUpstreamTls, TableSetsEachKey) {
  // After [[upstream]], a [upstream.tls] table belongs to that upstream (TOML).
  const Config c = load_ok(kHead + kRoute +
                           "[upstream.tls]\nserver_name = \"API.Internal\"\ntrusted_ca = \"ca.pem\"\n"
                           "certificate = \"/pki/client.pem\"\nkey = \"client.key\"\nprotocols = [\"TLSv1.3\"]\n"
                           "session_reuse = false\n");
  const UpstreamTls& t = c.upstreams.at(0).tls;
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.server_name, "api.internal");  // names compare case-insensitively: kept lowercase
  EXPECT_EQ(t.trusted_ca, "/etc/tlsfront/ca.pem");
  EXPECT_EQ(t.certificate, "/pki/client.pem");
  EXPECT_EQ(t.key, "/etc/tlsfront/client.key");
  EXPECT_EQ(t.protocols, std::vector<TlsVersion>{TlsVersion::Tls13});
  EXPECT_FALSE(t.session_reuse);
  EXPECT_EQ(upstream_of("tls = { server_name = \"10.0.0.5\" }\n").tls.server_name, "10.0.0.5");
  EXPECT_EQ(upstream_of("tls = { server_name = \"::1\" }\n").tls.server_name, "::1");
  EXPECT_FALSE(upstream_of("tls = { enabled = false, server_name = \"a.b\" }\n").tls.enabled);
  EXPECT_FALSE(upstream_of("tls = { verify = false }\n").tls.verify);
}

TEST(LoaderUpstreamTls, H2ImpliesTls) {
  const Upstream u = upstream_of("protocol = \"h2\"\n");
  EXPECT_EQ(u.protocol, UpstreamProtocol::H2);
  EXPECT_TRUE(u.tls.enabled);
  EXPECT_EQ(u.tls.origin, "/etc/tlsfront/t.toml:9:1");
  EXPECT_TRUE(upstream_of("protocol = \"h2\"\ntls = true\n").tls.enabled);
  EXPECT_EQ(upstream_of("protocol = \"h2\"\nh2_ping_interval = \"10s\"\n").h2_ping_interval, Millis{10'000});
}

TEST(LoaderUpstreamTls, Errors) {
  EXPECT_EQ(load_error(kHead + "protocol = \"h2\"\ntls = false\n"),
            R"(t.toml:10:1: upstream[0].tls: protocol = "h2" is HTTP/2 over TLS; for HTTP/2 over cleartext TCP )"
            R"(use protocol = "h2c")");
  EXPECT_EQ(load_error(kHead + "protocol = \"h2\"\ntls = { enabled = false }\n"),
            R"(t.toml:10:1: upstream[0].tls: protocol = "h2" is HTTP/2 over TLS; for HTTP/2 over cleartext TCP )"
            R"(use protocol = "h2c")");
  EXPECT_EQ(load_error(kHead + "protocol = \"h2c\"\ntls = true\n"),
            R"(t.toml:10:1: upstream[0].tls: protocol = "h2c" is HTTP/2 over cleartext TCP; for HTTP/2 over TLS )"
            R"(use protocol = "h2")");
  EXPECT_EQ(load_error(kHead + "tls = \"on\"\n"),
            "t.toml:9:7: upstream[0].tls: expected a table ([upstream.tls]) or a boolean, got string");
  EXPECT_EQ(load_error(kHead + "tls = { verify = true, sni = \"a\" }\n"),
            R"(t.toml:9:24: upstream[0].tls.sni: unknown key "sni")");
  EXPECT_EQ(load_error(kHead + "tls = { server_name = \"api.internal.\" }\n"),
            R"(t.toml:9:9: upstream[0].tls.server_name: invalid server name "api.internal." (expected a DNS name )"
            R"(such as "api.internal", without a trailing dot, or an IP address))");
  EXPECT_EQ(load_error(kHead + "tls = { server_name = \"a b\" }\n"),
            R"(t.toml:9:9: upstream[0].tls.server_name: invalid server name "a b" (expected a DNS name )"
            R"(such as "api.internal", without a trailing dot, or an IP address))");
  EXPECT_EQ(load_error(kHead + "tls = { server_name = \"\" }\n"),
            "t.toml:9:9: upstream[0].tls.server_name: must not be empty");
  EXPECT_EQ(load_error(kHead + "tls = { verify = false, trusted_ca = \"ca.pem\" }\n"),
            "t.toml:9:25: upstream[0].tls.trusted_ca: has no use with verify = false (no certificate is checked)");
  EXPECT_EQ(load_error(kHead + "tls = { certificate = \"c.pem\" }\n"),
            "t.toml:9:9: upstream[0].tls.certificate: a client certificate needs both certificate and key");
  EXPECT_EQ(load_error(kHead + "tls = { key = \"c.key\" }\n"),
            "t.toml:9:9: upstream[0].tls.key: a client certificate needs both certificate and key");
  EXPECT_EQ(load_error(kHead + "tls = { protocols = [\"TLSv1.1\"] }\n"),
            R"(t.toml:9:22: upstream[0].tls.protocols[0]: unknown protocol "TLSv1.1" (expected "TLSv1.2" or )"
            R"("TLSv1.3"))");
  EXPECT_EQ(load_error(kHead + "protocol = \"h2\"\nkeepalive = 0\n"),
            "t.toml:10:1: upstream[0].keepalive: must be >= 1 with protocol = \"h2\" (it bounds the HTTP/2 "
            "connections per worker per server)");
}

}  // namespace
}  // namespace tlsfront::config
