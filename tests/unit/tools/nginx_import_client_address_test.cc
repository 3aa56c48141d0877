// import-nginx of the real client address: `listen ... proxy_protocol`,
// set_real_ip_from, real_ip_header, real_ip_recursive (nginx's realip
// module) → [[listen]] proxy_protocol, proxy_protocol_from, trusted_proxies,
// real_ip_header, real_ip_recursive; what is not carried over is reported.
#include "nginx_import_support.h"

namespace tlsfront::tools::nginx::test {
namespace {

std::string cidrs(const std::vector<Cidr>& v) {
  std::string s;
  for (const Cidr& c : v) s += (s.empty() ? "" : " ") + c.to_string();
  return s;
}

TEST(NginxImportClientAddress, RecursiveXForwardedFor) {
  Outcome r = run(server("", "set_real_ip_from 10.0.0.0/8;\nset_real_ip_from 2001:db8::/32;\nset_real_ip_from 192.0.2.7;\n"
                             "real_ip_header X-Forwarded-For;\nreal_ip_recursive on;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  const config::Listener& l = r.cfg.listeners[0];
  EXPECT_EQ(cidrs(l.trusted_proxies), "10.0.0.0/8 2001:db8::/32 192.0.2.7/32");
  EXPECT_EQ(l.real_ip_header, config::RealIpHeader::XForwardedFor);
  EXPECT_TRUE(l.real_ip_recursive);
  EXPECT_FALSE(l.proxy_protocol);
  EXPECT_EQ(r.report.find("real_ip"), std::string::npos) << r.report;  // all carried over
}

TEST(NginxImportClientAddress, NginxDefaultsAreWrittenOut) {
  // nginx's defaults: real_ip_header X-Real-IP; real_ip_recursive off.
  Outcome r = run(server("", "set_real_ip_from 10.0.0.0/8;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.listeners[0].real_ip_header, config::RealIpHeader::XRealIp);
  EXPECT_NE(r.toml.find("nginx's default real_ip_header"), std::string::npos) << r.toml;
  r = run(server("", "set_real_ip_from 10.0.0.0/8;\nreal_ip_header x-forwarded-for;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.listeners[0].real_ip_header, config::RealIpHeader::XForwardedFor);
  EXPECT_FALSE(r.cfg.listeners[0].real_ip_recursive);
}

TEST(NginxImportClientAddress, ProxyProtocolListenAndItsTrustedPeers) {
  Outcome r = run(
      "http {\nset_real_ip_from 10.0.0.0/8;\nreal_ip_header proxy_protocol;\n"
      "server {\nlisten 443 ssl proxy_protocol;\nlisten 8443 ssl;\nlisten 80 proxy_protocol;\n"
      "ssl_certificate c.pem;\nssl_certificate_key c.key;\nlocation / { proxy_pass http://127.0.0.1:9000; }\n}\n}\n");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.listeners.size(), 3u);
  EXPECT_TRUE(r.cfg.listeners[0].proxy_protocol);
  EXPECT_EQ(cidrs(r.cfg.listeners[0].proxy_protocol_from), "10.0.0.0/8");
  EXPECT_FALSE(r.cfg.listeners[1].proxy_protocol);
  EXPECT_TRUE(r.cfg.listeners[1].proxy_protocol_from.empty());
  EXPECT_FALSE(r.cfg.listeners[2].tls);
  EXPECT_TRUE(r.cfg.listeners[2].proxy_protocol);
  EXPECT_TRUE(r.cfg.listeners[0].trusted_proxies.empty());
  EXPECT_REPORTS(r, "n.conf:2: set_real_ip_from: carried over as proxy_protocol_from: other peers are refused at accept");
  EXPECT_REPORTS(r, "n.conf:5: listen: parameter proxy_protocol carried over as proxy_protocol = true");
  // With a header instead, the peers it is believed from differ: reported.
  r = run(
      "http {\nset_real_ip_from 10.0.0.0/8;\nreal_ip_header X-Forwarded-For;\n"
      "server {\nlisten 443 ssl proxy_protocol;\n"
      "ssl_certificate c.pem;\nssl_certificate_key c.key;\nlocation / { proxy_pass http://127.0.0.1:9000; }\n}\n}\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(cidrs(r.cfg.listeners[0].trusted_proxies), "10.0.0.0/8");
  EXPECT_REPORTS(r, "n.conf:2: set_real_ip_from: carried over, but on a proxy_protocol listener tlsfront matches "
                    "trusted_proxies against the PROXY protocol header's address");
  // Without a proxy_protocol listen there is nothing to restrict.
  r = run(server("", "set_real_ip_from 10.0.0.0/8;\nreal_ip_header proxy_protocol;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, "n.conf:3: real_ip_header: not carried over: no listen ... proxy_protocol");
}

// The PROXY header's TLVs by nginx's own variable names.
TEST(NginxImportClientAddress, ProxyProtocolTlvVariables) {
  Outcome r = run(server("", "proxy_set_header X-LB-Id $proxy_protocol_tlv_unique_id;\n"
                             "proxy_set_header X-LB-Host $proxy_protocol_tlv_authority;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.toml.find("X-LB-Id = \"${proxy_protocol_tlv_unique_id}\""), std::string::npos) << r.toml;
  EXPECT_NE(r.toml.find("X-LB-Host = \"${proxy_protocol_tlv_authority}\""), std::string::npos) << r.toml;
  EXPECT_EQ(r.report.find("proxy_set_header"), std::string::npos) << r.report;
}

TEST(NginxImportClientAddress, WhatIsNotCarriedOver) {
  Outcome r = run(server("", "set_real_ip_from lb.internal;\nset_real_ip_from unix:;\nset_real_ip_from 10.0.0.0/8;\n"
                             "set_real_ip_from 10.0.0.0/8;\nreal_ip_header X-Forwarded-For;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(cidrs(r.cfg.listeners[0].trusted_proxies), "10.0.0.0/8");
  EXPECT_REPORTS(r, "n.conf:2: set_real_ip_from: not carried over: one IP address or CIDR block (names are not resolved)");
  EXPECT_REPORTS(r, "n.conf:3: set_real_ip_from: not carried over: no UNIX-domain listeners");
  EXPECT_REPORTS(r, "n.conf:5: set_real_ip_from: not needed: the same as another set_real_ip_from");
  // Another header: nothing is believed.
  r = run(server("", "set_real_ip_from 10.0.0.0/8;\nreal_ip_header CF-Connecting-IP;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.cfg.listeners[0].trusted_proxies.empty());
  EXPECT_REPORTS(r, "n.conf:3: real_ip_header: not carried over: tlsfront believes X-Forwarded-For, X-Real-IP or the "
                    "PROXY protocol");
  // A header without peers to believe.
  r = run(server("", "real_ip_header X-Forwarded-For;\nreal_ip_recursive on;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, "n.conf:2: real_ip_header: not needed: without set_real_ip_from no header is believed");
  // A second server with other peers: tlsfront has one set per listener.
  r = run(
      "http {\nserver {\nlisten 443 ssl default_server;\nserver_name a.example;\nset_real_ip_from 10.0.0.0/8;\n"
      "ssl_certificate c.pem;\nssl_certificate_key c.key;\nlocation / { proxy_pass http://127.0.0.1:9000; }\n}\n"
      "server {\nlisten 443 ssl;\nserver_name b.example;\nset_real_ip_from 192.0.2.0/24;\n"
      "ssl_certificate c.pem;\nssl_certificate_key c.key;\nlocation / { proxy_pass http://127.0.0.1:9001; }\n}\n}\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(cidrs(r.cfg.listeners[0].trusted_proxies), "10.0.0.0/8");
  EXPECT_REPORTS(r, "n.conf:13: set_real_ip_from: set_real_ip_from not carried over for this server: differs from the "
                    "default server's (n.conf:5)");
}

}  // namespace
}  // namespace tlsfront::tools::nginx::test
