// CertChain: path building from bundles in any order, dropped certificates
// and their reasons, incomplete chains, issuers_dir, validity checks, and the
// report's byte count. Uses the test PKI (scripts/gen-test-pki.sh).
#include "tls/cert_chain.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <fstream>
#include <openssl/pem.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "shared/temp_dir.h"
#include "support/test_pki.h"

namespace tlsfront::tls {
namespace {

using testing::kPki;
using testing::load_cert;
using testing::load_key;
constexpr const char* kIntermediate = "CN=tlsfront test intermediate";
constexpr const char* kRoot = "CN=tlsfront test root";

std::chrono::system_clock::time_point not_after_of(const std::string& name) {
  X509Ptr x = load_cert(name);
  std::tm tm{};
  EXPECT_EQ(ASN1_TIME_to_tm(X509_get0_notAfter(x.get()), &tm), 1);
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

class CertChainTest : public ::testing::Test {
 protected:
  config::Tls tls(const std::string& cert, const std::string& key = "localhost.key") const {
    config::Tls t;
    t.certificates.push_back({.cert = kPki + "/" + cert, .key = kPki + "/" + key, .cert_origin = "t.toml:5:1",
                              .key_origin = "t.toml:6:1"});
    t.trusted_ca = kPki + "/root.pem";
    t.trusted_ca_origin = "t.toml:7:1";
    return t;
  }
  Result<CertChain> build(const config::Tls& t, const std::string& key = "localhost.key",
                          std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
    key_ = load_key(key);
    EXPECT_TRUE(key_);
    return CertChain::build(t.certificates.at(0), t, key_.get(), now);
  }
  EvpPkeyPtr key_;
};

// A leaf issued by the root itself: nothing but the leaf is sent, and the
// anchor (from the file or from trusted_ca) is kept as an X509 for OCSP.
TEST_F(CertChainTest, RootIssuedLeafKeepsItsAnchorWhetherFromTheFileOrTheStore) {
  X509Ptr root = load_cert("root.pem");
  for (const char* file : {"root-issued.chain.pem", "root-issued.with-root.pem"}) {
    auto chain = build(tls(file, "root-issued.key"), "root-issued.key");
    ASSERT_TRUE(chain.ok()) << file << ": " << chain.error().message();
    EXPECT_EQ(sk_X509_num(chain->intermediates()), 0) << file;
    ASSERT_NE(chain->anchor(), nullptr) << file;
    EXPECT_EQ(X509_cmp(chain->anchor(), root.get()), 0) << file;
  }
  auto via_intermediate = build(tls("localhost.chain.pem"));
  ASSERT_TRUE(via_intermediate.ok()) << via_intermediate.error().message();
  ASSERT_NE(via_intermediate->anchor(), nullptr);
  EXPECT_EQ(X509_cmp(via_intermediate->anchor(), root.get()), 0);
}

TEST_F(CertChainTest, ShuffledBundleSendsLeafThenIntermediateOnly) {
  auto chain = build(tls("localhost.shuffled.pem"));
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  X509Ptr leaf = load_cert("localhost.pem"), intermediate = load_cert("intermediate.pem");
  EXPECT_EQ(X509_cmp(chain->leaf(), leaf.get()), 0);
  ASSERT_EQ(sk_X509_num(chain->intermediates()), 1);
  EXPECT_EQ(X509_cmp(sk_X509_value(chain->intermediates(), 0), intermediate.get()), 0);

  const ChainReport& r = chain->report();
  ASSERT_EQ(r.sent.size(), 2u);
  EXPECT_EQ(r.sent[0].subject, "CN=localhost");
  EXPECT_EQ(r.sent[0].issuer, kIntermediate);
  EXPECT_EQ(r.sent[0].key_type, "ECDSA P-256");
  EXPECT_EQ(r.sent[1].subject, kIntermediate);
  EXPECT_EQ(r.sent[1].issuer, kRoot);
  EXPECT_NE(r.anchor.find(kRoot), std::string::npos) << r.anchor;
  // File order: root, intermediate, other-root, leaf.
  ASSERT_EQ(r.dropped.size(), 2u);
  EXPECT_EQ(r.dropped[0].position, 1);
  EXPECT_EQ(r.dropped[0].subject, kRoot);
  EXPECT_NE(r.dropped[0].reason.find("self-signed root"), std::string::npos) << r.dropped[0].reason;
  EXPECT_NE(r.dropped[0].reason.find("trust anchor"), std::string::npos) << r.dropped[0].reason;
  EXPECT_EQ(r.dropped[1].position, 3);
  EXPECT_EQ(r.dropped[1].subject, "CN=tlsfront unrelated root");
  EXPECT_NE(r.dropped[1].reason.find("not on the leaf's path"), std::string::npos) << r.dropped[1].reason;
  EXPECT_TRUE(r.warnings.empty());

  std::string all;
  for (const auto& line : r.lines()) all += line + "\n";
  EXPECT_NE(all.find("sending 2 certificates"), std::string::npos) << all;
  EXPECT_NE(all.find("dropped file certificate #3 \"CN=tlsfront unrelated root\""), std::string::npos) << all;
}

TEST_F(CertChainTest, PrivateKeyInTheCertificateFileIsAWarning) {
  const std::string path = std::filesystem::temp_directory_path() / ("tlsfront-bundle-" + std::to_string(::getpid()) + ".pem");
  {
    std::ofstream out(path);
    for (const char* part : {"/localhost.key", "/localhost.chain.pem"}) {
      std::ifstream in(kPki + part);
      out << in.rdbuf();
    }
  }
  config::Tls t = tls("localhost.chain.pem");
  t.certificates[0].cert = path;
  auto chain = build(t);
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  ASSERT_EQ(chain->report().warnings.size(), 1u);
  EXPECT_NE(chain->report().warnings[0].find("also holds a private key"), std::string::npos);
  std::filesystem::remove(path);
  // The plain chain file: no warning.
  auto clean = build(tls("localhost.chain.pem"));
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->report().warnings.empty());
}

TEST_F(CertChainTest, TotalBytesIsTheSumOfDerSizes) {
  auto chain = build(tls("localhost.shuffled.pem"));
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  X509Ptr leaf = load_cert("localhost.pem"), intermediate = load_cert("intermediate.pem");
  const size_t expected = static_cast<size_t>(i2d_X509(leaf.get(), nullptr) + i2d_X509(intermediate.get(), nullptr));
  EXPECT_EQ(chain->report().total_der_bytes, expected);
  EXPECT_EQ(chain->report().sent[0].der_bytes + chain->report().sent[1].der_bytes, expected);
  EXPECT_NE(chain->report().lines()[0].find(std::to_string(expected) + " bytes"), std::string::npos);
}

TEST_F(CertChainTest, OrderedChainIsKeptAsIs) {
  auto chain = build(tls("localhost.chain.pem"));
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  EXPECT_EQ(chain->report().sent.size(), 2u);
  EXPECT_TRUE(chain->report().dropped.empty());
}

TEST_F(CertChainTest, FullchainWithRootDropsTheRoot) {
  auto chain = build(tls("localhost.fullchain-with-root.pem"));
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  ASSERT_EQ(sk_X509_num(chain->intermediates()), 1);
  ASSERT_EQ(chain->report().dropped.size(), 1u);
  EXPECT_EQ(chain->report().dropped[0].subject, kRoot);
  EXPECT_EQ(chain->report().dropped[0].position, 3);
  EXPECT_NE(chain->report().dropped[0].reason.find("never sent"), std::string::npos);
}

TEST_F(CertChainTest, LeafOnlyIsIncompleteNamingTheIntermediate) {
  auto chain = build(tls("leaf-only.pem"));
  ASSERT_FALSE(chain.ok());
  const std::string m = chain.error().message();
  EXPECT_EQ(chain.error().code, Errc::Config);
  EXPECT_EQ(m.rfind("t.toml:5:1: tls.certificate: incomplete chain", 0), 0u) << m;
  EXPECT_NE(m.find(std::string("the issuer \"") + kIntermediate + "\""), std::string::npos) << m;
  EXPECT_NE(m.find("no issuers_dir"), std::string::npos) << m;
}

TEST_F(CertChainTest, LeafOnlyIsCompletedFromIssuersDir) {
  config::Tls t = tls("leaf-only.pem");
  t.issuers_dir = kPki + "/issuers";
  auto chain = build(t);
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  const ChainReport& r = chain->report();
  ASSERT_EQ(r.sent.size(), 2u);
  EXPECT_EQ(r.sent[1].subject, kIntermediate);
  EXPECT_NE(r.sent[1].note.find("from issuers_dir"), std::string::npos) << r.sent[1].note;
  EXPECT_NE(r.sent[1].note.find("issuers/intermediate.pem"), std::string::npos) << r.sent[1].note;
  EXPECT_TRUE(r.sent[0].note.empty());
}

TEST_F(CertChainTest, IssuersDirWithoutTheLinkIsStillIncomplete) {
  const TempDir tmp("cert-chain-test");
  const std::string& dir = tmp.path();
  std::filesystem::copy_file(kPki + "/other-root.pem", dir + "/other-root.pem");
  config::Tls t = tls("leaf-only.pem");
  t.issuers_dir = dir;
  auto chain = build(t);
  ASSERT_FALSE(chain.ok());
  const std::string m = chain.error().message();
  EXPECT_NE(m.find(std::string("the issuer \"") + kIntermediate + "\""), std::string::npos) << m;
  EXPECT_NE(m.find("not in issuers_dir \"" + dir + "\""), std::string::npos) << m;
}

TEST_F(CertChainTest, MissingIssuersDirNamesItsPosition) {
  config::Tls t = tls("leaf-only.pem");
  t.issuers_dir = kPki + "/no-such-dir";
  t.issuers_dir_origin = "t.toml:8:1";
  auto chain = build(t);
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.error().message().find("t.toml:8:1: tls.issuers_dir"), std::string::npos)
      << chain.error().message();
}

TEST_F(CertChainTest, ChainEndingAtAnUnknownIssuerIsIncomplete) {
  // The intermediate's issuer (the test root) is in no store when trusted_ca
  // names an unrelated CA.
  config::Tls t = tls("localhost.chain.pem");
  t.trusted_ca = kPki + "/other-root.pem";
  auto chain = build(t);
  ASSERT_FALSE(chain.ok());
  const std::string m = chain.error().message();
  EXPECT_NE(m.find(std::string("the issuer \"") + kRoot + "\" of \"" + kIntermediate + "\""), std::string::npos) << m;
  EXPECT_NE(m.find("trusted_ca"), std::string::npos) << m;
}

TEST_F(CertChainTest, PrivateRootOnlyInTheFileDoesNotVerify) {
  config::Tls t = tls("localhost.fullchain-with-root.pem");
  t.trusted_ca = kPki + "/other-root.pem";
  auto chain = build(t);
  ASSERT_FALSE(chain.ok());
  const std::string m = chain.error().message();
  EXPECT_NE(m.find("does not verify"), std::string::npos) << m;
  EXPECT_NE(m.find("set tls.trusted_ca"), std::string::npos) << m;
}

TEST_F(CertChainTest, KeyMatchingNoCertificateIsAMismatch) {
  auto chain = build(tls("localhost.chain.pem", "mismatch.key"), "mismatch.key");
  ASSERT_FALSE(chain.ok());
  const std::string m = chain.error().message();
  EXPECT_EQ(m.rfind("t.toml:6:1: tls.key: ", 0), 0u) << m;
  EXPECT_NE(m.find("does not match certificate"), std::string::npos) << m;
}

TEST_F(CertChainTest, ExpiredLeafNamesNotAfter) {
  auto chain = build(tls("expired.chain.pem", "expired.key"), "expired.key");
  ASSERT_FALSE(chain.ok());
  const std::string m = chain.error().message();
  EXPECT_NE(m.find("has expired: notAfter 2021-01-01T00:00:00Z"), std::string::npos) << m;
}

TEST_F(CertChainTest, NotYetValidLeafNamesNotBefore) {
  auto chain = build(tls("not-yet-valid.pem", "not-yet-valid.key"), "not-yet-valid.key");
  ASSERT_FALSE(chain.ok());
  const std::string m = chain.error().message();
  EXPECT_NE(m.find("is not valid yet: notBefore 2099-01-01T00:00:00Z"), std::string::npos) << m;
}

TEST_F(CertChainTest, LeafExpiringWithinFourteenDaysWarns) {
  const auto now = not_after_of("localhost.pem") - std::chrono::hours(5 * 24);
  auto chain = build(tls("localhost.chain.pem"), "localhost.key", now);
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  ASSERT_EQ(chain->report().warnings.size(), 1u);
  EXPECT_NE(chain->report().warnings[0].find("expires in 5 days"), std::string::npos) << chain->report().warnings[0];

  auto later = build(tls("localhost.chain.pem"), "localhost.key", now - std::chrono::hours(10 * 24));
  ASSERT_TRUE(later.ok()) << later.error().message();
  EXPECT_TRUE(later->report().warnings.empty());
}

TEST_F(CertChainTest, RsaKeyTypeIsReported) {
  auto chain = build(tls("rsa.chain.pem", "rsa.key"), "rsa.key");
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  EXPECT_EQ(chain->report().sent[0].key_type, "RSA 2048");
  EXPECT_EQ(chain->report().sent[1].key_type, "ECDSA P-256");
}

TEST_F(CertChainTest, WithoutAKeyTheFirstCertificateIsTheLeaf) {
  const config::Tls t = tls("localhost.chain.pem");
  auto chain = CertChain::build(t.certificates[0], t, nullptr, std::chrono::system_clock::now());
  ASSERT_TRUE(chain.ok()) << chain.error().message();
  EXPECT_EQ(chain->report().sent[0].subject, "CN=localhost");
}

TEST_F(CertChainTest, MissingTrustedCaNamesItsPosition) {
  config::Tls t = tls("localhost.chain.pem");
  t.trusted_ca = kPki + "/nope.pem";
  auto chain = build(t);
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.error().message().find("t.toml:7:1: tls.trusted_ca"), std::string::npos) << chain.error().message();
  EXPECT_NE(chain.error().message().find("nope.pem"), std::string::npos);
}

}  // namespace
}  // namespace tlsfront::tls
