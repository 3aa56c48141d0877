// TOML -> Config for client certificates (mTLS): [tls] client_ca,
// verify_client, verify_depth, crl as every certificate's default, a
// [[certificate]] entry's own keys over them, and [[route]]
// require_client_cert; each error names its key and position.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

// kMinimal with `tls_extra` after [tls] key, then `tables`.
std::string tls_with(std::string_view tls_extra, std::string_view tables = "") {
  std::string base(kMinimal);
  const std::string key = "key = \"/pki/key.pem\"\n";
  base.insert(base.find(key) + key.size(), std::string(tls_extra));
  return base + std::string(tables);
}

TEST(LoaderClientAuth, OffByDefault) {
  Config c = load_ok(kMinimal);
  EXPECT_FALSE(c.tls.client_auth.enabled());
  EXPECT_FALSE(c.tls.certificates[0].client_auth.enabled());
  EXPECT_FALSE(c.routes[0].require_client_cert);
}

TEST(LoaderClientAuth, TlsKeysReachTheCertificate) {
  Config c = load_ok(tls_with("client_ca = \"ca.pem\"\nverify_client = \"required\"\nverify_depth = 2\ncrl = \"ca.crl\"\n",
                              "require_client_cert = true\n"),
                     "/etc/tlsfront/t.toml");
  const ClientAuth& a = c.tls.certificates[0].client_auth;
  EXPECT_EQ(a.verify, VerifyClient::Required);
  EXPECT_EQ(a.ca, "/etc/tlsfront/ca.pem");
  EXPECT_EQ(a.crl, "/etc/tlsfront/ca.crl");
  EXPECT_EQ(a.depth, 2);
  EXPECT_EQ(a.setting, "tls");
  EXPECT_EQ(a.ca_origin, "/etc/tlsfront/t.toml:7:1");
  EXPECT_TRUE(c.routes[0].require_client_cert);
}

TEST(LoaderClientAuth, CertificateEntryOverridesTls) {
  std::string base(kMinimal);
  const std::string shorthand = "certificate = \"/pki/cert.pem\"\nkey = \"/pki/key.pem\"\n";
  base.replace(base.find(shorthand), shorthand.size(), "client_ca = \"/ca.pem\"\nverify_client = \"optional\"\n");
  Config c = load_ok(base +
                     "[[certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n"
                     "[[certificate]]\ncert = \"b.pem\"\nkey = \"b.key\"\nnames = [\"b.example\"]\n"
                     "verify_client = \"required\"\nclient_ca = \"/partners.pem\"\n"
                     "[[certificate]]\ncert = \"c.pem\"\nkey = \"c.key\"\nnames = [\"c.example\"]\nverify_client = \"off\"\n");
  ASSERT_EQ(c.tls.certificates.size(), 3u);
  EXPECT_EQ(c.tls.certificates[0].client_auth.verify, VerifyClient::Optional);
  EXPECT_EQ(c.tls.certificates[0].client_auth.ca, "/ca.pem");
  EXPECT_EQ(c.tls.certificates[1].client_auth.verify, VerifyClient::Required);
  EXPECT_EQ(c.tls.certificates[1].client_auth.ca, "/partners.pem");
  EXPECT_EQ(c.tls.certificates[1].client_auth.setting, "certificate[1]");
  EXPECT_FALSE(c.tls.certificates[2].client_auth.enabled());
}

TEST(LoaderClientAuth, Errors) {
  EXPECT_EQ(load_error(tls_with("verify_client = \"on\"\nclient_ca = \"ca.pem\"\n")),
            "t.toml:7:1: tls.verify_client: unknown value \"on\" (expected \"off\", \"optional\" or \"required\")");
  EXPECT_EQ(load_error(tls_with("verify_client = \"required\"\n")),
            "t.toml:7:1: tls.verify_client: needs client_ca (the CAs client certificates are verified against)");
  EXPECT_EQ(load_error(tls_with("client_ca = \"ca.pem\"\ncrl = \"x.crl\"\n")),
            "t.toml:8:1: tls.crl: only used with verify_client = \"optional\" or \"required\"");
  EXPECT_NE(load_error(tls_with("client_ca = \"ca.pem\"\nverify_client = \"optional\"\nverify_depth = 0\n"))
                .find("t.toml:9:1: tls.verify_depth: must be"),
            std::string::npos);
  EXPECT_EQ(load_error(with("require_client_cert = true\n")),
            "t.toml:12:1: route[0].require_client_cert: no certificate asks for a client certificate (set [tls] "
            "verify_client and client_ca)");
}

}  // namespace
}  // namespace tlsfront::config
