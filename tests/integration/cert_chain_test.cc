// Certificate chains end to end: --test prints the chain report, the proxy
// sends exactly leaf + intermediate from a shuffled bundle, an incomplete
// chain fails --test naming the missing issuer, issuers_dir completes it.
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

std::string subject(X509* x) {
  char buf[256];
  X509_NAME_oneline(X509_get_subject_name(x), buf, sizeof(buf));
  return buf;
}

class CertChain : public ::testing::Test {
 protected:
  ProxyOptions options(const std::string& certificate) const {
    ProxyOptions o;
    o.upstream_servers = {"127.0.0.1:" + std::to_string(free_port())};
    o.certificate = pki(certificate);
    return o;
  }
  RunResult run_test(const ProxyOptions& o) {
    std::string path = dir_.file("tlsfront.toml");
    write_file(path, make_config(o, kAnyPort, dir_.file("access.log")));
    return run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", path});
  }
  TempDir dir_;
};

TEST_F(CertChain, TestPrintsTheReport) {
  RunResult r = run_test(options("localhost.shuffled.pem"));
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find("sending 2 certificates"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bytes (DER) in the handshake"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sent #0 (leaf): subject \"CN=localhost\", issuer \"CN=tlsfront test intermediate\", "
                       "ECDSA P-256, notAfter "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("sent #1: subject \"CN=tlsfront test intermediate\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dropped file certificate #1 \"CN=tlsfront test root\": self-signed root"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("dropped file certificate #3 \"CN=tlsfront unrelated root\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("test is successful"), std::string::npos) << r.err;
}

TEST_F(CertChain, TestLeafOnlyNamesTheMissingIssuer) {
  RunResult r = run_test(options("leaf-only.pem"));
  EXPECT_EQ(r.status.code, 1) << r.err;
  EXPECT_NE(r.err.find("tls.certificate: incomplete chain"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the issuer \"CN=tlsfront test intermediate\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("test failed"), std::string::npos) << r.err;
}

TEST_F(CertChain, TestLeafOnlyCompletedFromIssuersDir) {
  ProxyOptions o = options("leaf-only.pem");
  o.tls_extra = "issuers_dir = \"" + pki("issuers") + "\"\n";
  RunResult r = run_test(o);
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find("from issuers_dir"), std::string::npos) << r.err;
}

TEST_F(CertChain, TestExpiredLeafFails) {
  ProxyOptions o = options("expired.chain.pem");
  o.key = pki("expired.key");
  RunResult r = run_test(o);
  EXPECT_EQ(r.status.code, 1) << r.err;
  EXPECT_NE(r.err.find("notAfter 2021-01-01T00:00:00Z"), std::string::npos) << r.err;
}

using CertChainProxy = ProxyTest;

TEST_F(CertChainProxy, H1_ShuffledBundleSendsLeafAndIntermediate) {
  ProxyOptions o;
  o.certificate = pki("localhost.shuffled.pem");
  ASSERT_TRUE(start_proxy(o));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();  // verifies against root.pem
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(c.ssl());
  ASSERT_NE(chain, nullptr);
  ASSERT_EQ(sk_X509_num(chain), 2);
  EXPECT_EQ(subject(sk_X509_value(chain, 0)), "/CN=localhost");
  EXPECT_EQ(subject(sk_X509_value(chain, 1)), "/CN=tlsfront test intermediate");
  // The start-up log carries the report.
  EXPECT_TRUE(wait_until([&] { return proxy_.process().err().find("sending 2 certificates") != std::string::npos; }))
      << proxy_.process().err();
}

}  // namespace
}  // namespace tlsfront::itest
