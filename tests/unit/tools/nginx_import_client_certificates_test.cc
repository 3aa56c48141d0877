// import-nginx of client certificates: ssl_verify_client,
// ssl_client_certificate, ssl_crl, ssl_verify_depth → client_ca,
// verify_client, crl, verify_depth of the server's certificates, and the
// $ssl_client_* variables of proxy_set_header; what differs is reported.
#include "nginx_import_support.h"

namespace tlsfront::tools::nginx::test {
namespace {

TEST(NginxImportClientCertificates, RequiredWithCrlAndDepth) {
  Outcome r = run(server("ssl_verify_client on;\nssl_client_certificate partners.pem;\nssl_crl partners.crl;\n"
                         "ssl_verify_depth 2;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  const config::ClientAuth& a = r.cfg.tls.certificates[0].client_auth;
  EXPECT_EQ(a.verify, config::VerifyClient::Required);
  EXPECT_EQ(a.ca, "/etc/nginx/partners.pem");
  EXPECT_EQ(a.crl, "/etc/nginx/partners.crl");
  EXPECT_EQ(a.depth, 2);
  EXPECT_REPORTS(r, "n.conf:7: ssl_verify_client: carried over: a client without a valid certificate fails the TLS "
                    "handshake");
  EXPECT_EQ(r.report.find("ssl_client_certificate"), std::string::npos) << r.report;
  EXPECT_EQ(r.report.find("ssl_crl"), std::string::npos) << r.report;
}

TEST(NginxImportClientCertificates, OptionalAndOff) {
  Outcome r = run(server("ssl_verify_client optional_no_ca;\nssl_client_certificate ca.pem;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.certificates[0].client_auth.verify, config::VerifyClient::Optional);
  EXPECT_REPORTS(r, "ssl_verify_client: carried over as optional");
  r = run(server("ssl_client_certificate ca.pem;\nssl_verify_depth 3;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.cfg.tls.certificates[0].client_auth.enabled());
  EXPECT_REPORTS(r, "n.conf:7: ssl_client_certificate: not needed: ssl_verify_client is off");
  // Without ssl_client_certificate tlsfront has nothing to verify against.
  r = run(server("ssl_verify_client optional;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.cfg.tls.certificates[0].client_auth.enabled());
  EXPECT_REPORTS(r, "ssl_verify_client: not carried over: tlsfront verifies client certificates against client_ca");
}

// Per server: each server's certificates get its own settings.
TEST(NginxImportClientCertificates, PerServerCertificates) {
  Outcome r = run(
      "http {\nserver {\nlisten 443 ssl default_server;\nserver_name www.example.com;\nssl_certificate www.pem;\n"
      "ssl_certificate_key www.key;\nlocation / { proxy_pass http://127.0.0.1:9000; }\n}\n"
      "server {\nlisten 443 ssl;\nserver_name api.example.com;\nssl_certificate api.pem;\nssl_certificate_key api.key;\n"
      "ssl_verify_client on;\nssl_client_certificate partners.pem;\n"
      "location / { proxy_pass http://127.0.0.1:9001; }\n}\n}\n");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.tls.certificates.size(), 2u);
  EXPECT_FALSE(r.cfg.tls.certificates[0].client_auth.enabled());
  EXPECT_EQ(r.cfg.tls.certificates[1].client_auth.verify, config::VerifyClient::Required);
  EXPECT_EQ(r.cfg.tls.certificates[1].client_auth.ca, "/etc/nginx/partners.pem");
}

TEST(NginxImportClientCertificates, ClientVariablesInProxySetHeader) {
  Outcome r = run(server("ssl_verify_client optional;\nssl_client_certificate ca.pem;\n"
                         "proxy_set_header X-Client-DN $ssl_client_s_dn;\n"
                         "proxy_set_header X-Client-Verify $ssl_client_verify;\n"
                         "proxy_set_header X-Client-Cert $ssl_client_escaped_cert;\n"
                         "proxy_set_header X-Client-Fp $ssl_client_fingerprint;\n"
                         "proxy_set_header X-Client-Raw $ssl_client_cert;\n"));
  ASSERT_TRUE(r.ok) << r.error;
  const auto& set = r.cfg.request_headers.set;
  ASSERT_EQ(set.size(), 4u) << r.toml;
  EXPECT_NE(r.toml.find("X-Client-Cert = \"${ssl_client_cert}\""), std::string::npos) << r.toml;
  EXPECT_REPORTS(r, "n.conf:12: proxy_set_header: carried over: tlsfront's $ssl_client_fingerprint is the SHA-256");
  EXPECT_REPORTS(r, "n.conf:13: proxy_set_header: not carried over: nginx's $ssl_client_cert is the PEM on several "
                    "lines");
}

}  // namespace
}  // namespace tlsfront::tools::nginx::test
