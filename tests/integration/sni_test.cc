// Several certificates end to end: the proxy presents the certificate of the
// client's SNI (exact, wildcard, default), ECDSA or RSA for the same names by
// what the client supports (openssl s_client limited to RSA suites), strict_sni
// refuses unknown names with unrecognized_name, sessions do not cross
// certificates, and --test reports every entry.
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

std::string entry(const std::string& name, const std::string& extra = "") {
  return "[[certificate]]\ncert = \"" + pki(name + ".chain.pem") + "\"\nkey = \"" + pki(name + ".key") + "\"\n" +
         extra + "\n";
}

// localhost ECDSA + RSA (one name set), other.example, and the wildcard entry as the default.
const std::string kEntries =
    entry("localhost") + entry("rsa") + entry("other-name") + entry("wildcard", "default = true\n");

struct Presented {
  bool ok = false;
  std::string cn, key_type, error;
  bool reused = false;
};

Presented handshake(int port, TlsOptions o) {
  Presented p;
  TlsClient c;
  p.ok = c.connect(port, o);
  p.error = c.error();
  if (!p.ok) return p;
  X509* peer = SSL_get0_peer_certificate(c.ssl());
  char cn[256] = {0};
  if (peer) X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn));
  p.cn = cn;
  if (peer && EVP_PKEY_get0_type_name(X509_get0_pubkey(peer))) p.key_type = EVP_PKEY_get0_type_name(X509_get0_pubkey(peer));
  p.reused = c.session_reused();
  return p;
}

TlsOptions sni(const std::string& name) {
  TlsOptions o;
  o.sni = name;
  o.verify = false;  // the default certificate does not match unknown names; what is presented is the point
  return o;
}

using Sni = ProxyTest;

TEST_F(Sni, SelectsByNameWithWildcardAndDefault) {
  ProxyOptions o;
  o.certificates = kEntries;
  ASSERT_TRUE(start_proxy(o));
  EXPECT_EQ(handshake(port(), sni("localhost")).cn, "localhost");
  EXPECT_EQ(handshake(port(), sni("other.example")).cn, "other.example");
  EXPECT_EQ(handshake(port(), sni("api.wild.example")).cn, "*.wild.example");
  EXPECT_EQ(handshake(port(), sni("unknown.test")).cn, "*.wild.example");
  EXPECT_EQ(handshake(port(), sni("")).cn, "*.wild.example");
  // Verified the way a client does, with a request through the proxy.
  TlsOptions verified;
  verified.sni = "other.example";
  TlsClient c;
  ASSERT_TRUE(c.connect(port(), verified)) << c.error();
  ASSERT_TRUE(c.write("GET / HTTP/1.1\r\nHost: other.example\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(Sni, EcdsaOrRsaByClientCapability) {
  ProxyOptions o;
  o.certificates = kEntries;
  ASSERT_TRUE(start_proxy(o));
  EXPECT_EQ(handshake(port(), sni("localhost")).key_type, "EC");
  TlsOptions rsa_only = sni("localhost");
  rsa_only.max_version = TLS1_2_VERSION;
  rsa_only.cipher_list = "ECDHE-RSA-AES128-GCM-SHA256";
  Presented p = handshake(port(), rsa_only);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.key_type, "RSA");
  EXPECT_EQ(p.cn, "localhost");

  // The same with the openssl CLI, a real TLS 1.2 client limited to RSA suites.
  RunResult s = run_command(dir_, {"/usr/bin/openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port()),
                                   "-servername", "localhost", "-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256",
                                   "-CAfile", pki("root.pem"), "-verify_return_error", "-brief"});
  EXPECT_EQ(s.status.code, 0) << s.err;
  EXPECT_NE(s.err.find("Ciphersuite: ECDHE-RSA-AES128-GCM-SHA256"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("Signature type: RSA"), std::string::npos) << s.err;  // RSA-PSS: the RSA key signed
  EXPECT_NE(s.err.find("Verification: OK"), std::string::npos) << s.err;
}

TEST_F(Sni, StrictSniRefusesUnknownNames) {
  ProxyOptions o;
  o.certificates = entry("localhost") + entry("other-name");
  o.tls_extra = "strict_sni = true\n";
  ASSERT_TRUE(start_proxy(o));  // the readiness probe sends SNI "localhost"
  for (const std::string name : {"unknown.test", ""}) {
    Presented p = handshake(port(), sni(name));
    EXPECT_FALSE(p.ok) << name;
    EXPECT_NE(p.error.find("unrecognized name"), std::string::npos) << name << ": " << p.error;
  }
  EXPECT_EQ(handshake(port(), sni("other.example")).cn, "other.example");
}

TEST_F(Sni, SessionsDoNotCrossCertificates) {
  ProxyOptions o;
  o.certificates = kEntries;
  ASSERT_TRUE(start_proxy(o));
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version == TLS1_2_VERSION ? "TLS 1.2" : "TLS 1.3");
    TlsOptions first = sni("localhost");
    first.min_version = first.max_version = version;
    TlsClient c;
    ASSERT_TRUE(c.connect(port(), first)) << c.error();
    // TLS 1.3 tickets arrive after the handshake: one request reads them.
    ASSERT_TRUE(c.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    ASSERT_TRUE(c.read_response());
    SSL_SESSION* session = c.take_session();
    ASSERT_NE(session, nullptr);
    TlsOptions same = first;
    same.session = session;
    EXPECT_TRUE(handshake(port(), same).reused);
    TlsOptions other = sni("other.example");
    other.min_version = other.max_version = version;
    other.session = session;
    Presented p = handshake(port(), other);
    EXPECT_TRUE(p.ok) << p.error;
    EXPECT_FALSE(p.reused);
    EXPECT_EQ(p.cn, "other.example");
    SSL_SESSION_free(session);
  }
}

class SniConfig : public ::testing::Test {
 protected:
  RunResult run_test(const std::string& certificates, const std::string& tls_extra = "") {
    ProxyOptions o;
    o.upstream_servers = {"127.0.0.1:" + std::to_string(free_port())};
    o.certificates = certificates;
    o.tls_extra = tls_extra;
    const std::string path = dir_.file("tlsfront.toml");
    write_file(path, make_config(o, kAnyPort, dir_.file("access.log")));
    return run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", path});
  }
  TempDir dir_;
};

TEST_F(SniConfig, TestReportsEveryEntry) {
  RunResult r = run_test(kEntries);
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find("certificate[0].cert: ECDSA certificate for localhost (from its SAN)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("certificate[1].cert: RSA certificate for localhost (from its SAN)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("certificate[3].cert: ECDSA certificate for *.wild.example, wild.example (from its SAN); "
                       "default"),
            std::string::npos)
      << r.err;
}

TEST_F(SniConfig, UncoveredNameIsAnErrorWithItsPosition) {
  RunResult r = run_test(entry("other-name", "names = [\"api.example\"]\n"));
  EXPECT_EQ(r.status.code, 1) << r.err;
  EXPECT_NE(r.err.find("tlsfront.toml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("certificate[0].names: \"api.example\" is not covered by the certificate"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(its subjectAltName DNS names: other.example)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
