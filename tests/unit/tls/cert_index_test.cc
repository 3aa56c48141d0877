// CertIndex: certificates chosen by SNI (exact, wildcard, default, strict),
// ECDSA and RSA for the same names chosen by the client's capabilities,
// sessions never resumed under another certificate, and the configuration
// errors of names and duplicate key types. Real handshakes over BIO pairs with
// the test PKI (scripts/gen-test-pki.sh).
#include "tls/cert_index.h"

#include <gtest/gtest.h>

#include "support/test_pki.h"
#include "support/tls_pair.h"
#include "tls/session_cache.h"

namespace tlsfront::tls {
namespace {

using testing::connect_pair;
using testing::kPki;

config::Certificate entry(const std::string& name, std::vector<std::string> names = {}, bool is_default = false) {
  config::Certificate c;
  c.cert = kPki + "/" + name + ".chain.pem";
  c.key = kPki + "/" + name + ".key";
  c.names = std::move(names);
  c.is_default = is_default;
  return c;
}

TEST(NameMatches, ExactAndOneLabelWildcards) {
  EXPECT_TRUE(name_matches("a.example", "a.example"));
  EXPECT_FALSE(name_matches("a.example", "b.example"));
  EXPECT_TRUE(name_matches("*.example.com", "api.example.com"));
  EXPECT_FALSE(name_matches("*.example.com", "example.com"));
  EXPECT_FALSE(name_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(name_matches("*.example.com", ".example.com"));
  EXPECT_FALSE(name_matches("*.example.com", "xexample.com"));
}

class CertIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_.reset(SSL_CTX_new(TLS_client_method()));
    ASSERT_TRUE(client_);
    SSL_CTX_set_session_cache_mode(client_.get(), SSL_SESS_CACHE_CLIENT);
    tls_.trusted_ca = kPki + "/root.pem";
  }

  std::unique_ptr<CertIndex> index() {
    auto made = CertIndex::create(tls_, cache_.get(), nullptr);
    EXPECT_TRUE(made.ok()) << made.error().message();
    return made.ok() ? std::move(made).value() : nullptr;
  }

  std::string error() {
    auto made = CertIndex::create(tls_, nullptr, nullptr);
    EXPECT_FALSE(made.ok());
    return made.ok() ? std::string() : made.error().message();
  }

  std::string cn_for(const CertIndex& idx, const std::string& sni) {
    auto out = connect_pair(client_.get(), idx.initial_context(), sni);
    EXPECT_TRUE(out.handshake_ok) << sni << ": " << out.errors;
    return out.server_cert_cn;
  }

  void only(int version) {
    SSL_CTX_set_min_proto_version(client_.get(), version);
    SSL_CTX_set_max_proto_version(client_.get(), version);
  }

  config::Tls tls_;
  SslCtxPtr client_;
  std::unique_ptr<SessionCache> cache_;
};

TEST_F(CertIndexTest, SniSelectsExactThenWildcardThenDefault) {
  tls_.certificates = {entry("localhost"), entry("other-name", {}, /*is_default=*/true), entry("wildcard")};
  auto idx = index();
  ASSERT_TRUE(idx);
  EXPECT_EQ(cn_for(*idx, "localhost"), "localhost");
  EXPECT_EQ(cn_for(*idx, "LocalHost"), "localhost");  // SNI is case-insensitive
  EXPECT_EQ(cn_for(*idx, "localhost."), "localhost");  // a trailing dot is ignored (as nginx does)
  EXPECT_EQ(cn_for(*idx, "other.example"), "other.example");
  EXPECT_EQ(cn_for(*idx, "api.wild.example"), "*.wild.example");
  EXPECT_EQ(cn_for(*idx, "wild.example"), "*.wild.example");
  // Unknown names, a name two labels below the wildcard, and no SNI: the default.
  EXPECT_EQ(cn_for(*idx, "a.b.wild.example"), "other.example");
  EXPECT_EQ(cn_for(*idx, "unknown.test"), "other.example");
  EXPECT_EQ(cn_for(*idx, ""), "other.example");
}

TEST_F(CertIndexTest, FirstEntryIsTheDefaultWhenNoneIsMarked) {
  tls_.certificates = {entry("other-name"), entry("localhost")};
  auto idx = index();
  ASSERT_TRUE(idx);
  EXPECT_EQ(cn_for(*idx, ""), "other.example");
  EXPECT_EQ(idx->find(""), idx->find("other.example"));
  EXPECT_EQ(cn_for(*idx, "localhost"), "localhost");
}

TEST_F(CertIndexTest, StrictSniRefusesUnknownNamesWithUnrecognizedName) {
  tls_.strict_sni = true;
  tls_.certificates = {entry("localhost"), entry("other-name")};
  auto idx = index();
  ASSERT_TRUE(idx);
  EXPECT_EQ(idx->find("nope.example"), nullptr);
  EXPECT_EQ(idx->find(""), nullptr);
  EXPECT_EQ(cn_for(*idx, "other.example"), "other.example");
  for (const std::string sni : {"nope.example", ""}) {
    auto out = connect_pair(client_.get(), idx->initial_context(), sni);
    EXPECT_FALSE(out.handshake_ok);
    EXPECT_NE(out.errors.find("unrecognized name"), std::string::npos) << out.errors;
  }
}

TEST_F(CertIndexTest, EcdsaAndRsaForTheSameNamesShareAContextAndFollowTheClient) {
  tls_.certificates = {entry("localhost"), entry("rsa")};
  auto idx = index();
  ASSERT_TRUE(idx);
  EXPECT_EQ(idx->find("localhost"), idx->find(""));
  // A modern client: ECDSA.
  auto ec = connect_pair(client_.get(), idx->initial_context(), "localhost");
  ASSERT_TRUE(ec.handshake_ok) << ec.errors;
  EXPECT_EQ(ec.server_key_type, "EC");
  // TLS 1.2 with RSA suites only: RSA.
  only(TLS1_2_VERSION);
  ASSERT_EQ(SSL_CTX_set_cipher_list(client_.get(), "ECDHE-RSA-AES128-GCM-SHA256"), 1);
  auto rsa12 = connect_pair(client_.get(), idx->initial_context(), "localhost");
  ASSERT_TRUE(rsa12.handshake_ok) << rsa12.errors;
  EXPECT_EQ(rsa12.server_key_type, "RSA");
  // TLS 1.3 with RSA-PSS signatures only: RSA.
  only(TLS1_3_VERSION);
  ASSERT_EQ(SSL_CTX_set1_sigalgs_list(client_.get(), "rsa_pss_rsae_sha256"), 1);
  auto rsa13 = connect_pair(client_.get(), idx->initial_context(), "localhost");
  ASSERT_TRUE(rsa13.handshake_ok) << rsa13.errors;
  EXPECT_EQ(rsa13.server_key_type, "RSA");
}

// A session made under one certificate is refused under another, by ID
// (TLS 1.2) and by PSK (TLS 1.3), while it resumes under its own.
TEST_F(CertIndexTest, SessionsNeverResumeUnderAnotherCertificate) {
  config::SessionCache cfg;
  cfg.size_bytes = 1 << 20;
  static const SystemClock clock;
  cache_ = std::make_unique<SessionCache>(cfg, clock);
  tls_.certificates = {entry("localhost"), entry("other-name")};
  auto idx = index();
  ASSERT_TRUE(idx);
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version == TLS1_2_VERSION ? "TLS 1.2" : "TLS 1.3");
    only(version);
    auto first = connect_pair(client_.get(), idx->initial_context(), "localhost");
    ASSERT_TRUE(first.handshake_ok) << first.errors;
    ASSERT_TRUE(first.session);
    auto same = connect_pair(client_.get(), idx->initial_context(), "localhost", first.session.get());
    ASSERT_TRUE(same.handshake_ok) << same.errors;
    EXPECT_TRUE(same.reused);
    auto other = connect_pair(client_.get(), idx->initial_context(), "other.example", first.session.get());
    ASSERT_TRUE(other.handshake_ok) << other.errors;
    EXPECT_FALSE(other.reused);
    EXPECT_EQ(other.server_cert_cn, "other.example");
  }
}

TEST_F(CertIndexTest, ExplicitNamesMustBeCoveredByTheCertificate) {
  tls_.certificates = {entry("wildcard", {"api.wild.example", "*.wild.example"})};
  auto idx = index();
  ASSERT_TRUE(idx);
  EXPECT_EQ(idx->certificates()[0]->names, (std::vector<std::string>{"api.wild.example", "*.wild.example"}));
  EXPECT_FALSE(idx->certificates()[0]->names_from_san);

  tls_.certificates = {entry("wildcard", {"a.b.wild.example"})};
  tls_.certificates[0].names_setting = "certificate[0].names";
  tls_.certificates[0].names_origin = "t.toml:9:1";
  const std::string m = error();
  EXPECT_EQ(m.rfind("t.toml:9:1: certificate[0].names: \"a.b.wild.example\" is not covered", 0), 0u) << m;
  EXPECT_NE(m.find("*.wild.example, wild.example"), std::string::npos) << m;

  // A single name under the wildcard does not make the wildcard a valid name.
  tls_.certificates = {entry("localhost", {"*.localhost.example"})};
  EXPECT_NE(error().find("not covered"), std::string::npos);
}

TEST_F(CertIndexTest, TwoCertificatesOfOneKeyTypeForTheSameNamesIsAnError) {
  tls_.certificates = {entry("localhost"), entry("localhost")};
  tls_.certificates[1].cert_setting = "certificate[1].cert";
  const std::string m = error();
  EXPECT_NE(m.find("certificate[1].cert: a second ECDSA certificate for the same names as tls.certificate"),
            std::string::npos)
      << m;
}

TEST_F(CertIndexTest, NamesClaimedEarlierAreReportedAsShadowed) {
  // The second entry's name set differs from the first's, so it gets its own
  // context, but the first already serves its only name.
  tls_.certificates = {entry("wildcard"), entry("wildcard", {"wild.example"})};
  tls_.certificates[1].names_setting = "certificate[1].names";
  auto idx = index();
  ASSERT_TRUE(idx);
  const auto warnings = idx->warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("certificate[1].names: \"wild.example\" is served by an earlier certificate"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(idx->find("wild.example"), idx->find("api.wild.example"));
}

TEST_F(CertIndexTest, ReportNamesEachEntryAndTheDefault) {
  tls_.certificates = {entry("localhost"), entry("wildcard", {}, true)};
  auto idx = index();
  ASSERT_TRUE(idx);
  const auto lines = idx->report_lines();
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("tls.certificate: ECDSA certificate for localhost (from its SAN)\n"), std::string::npos) << all;
  EXPECT_NE(all.find("ECDSA certificate for *.wild.example, wild.example (from its SAN); default"), std::string::npos)
      << all;
}

}  // namespace
}  // namespace tlsfront::tls
