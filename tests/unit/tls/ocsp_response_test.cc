// verify_ocsp_response and the request helpers, with responses built by the
// test (ocsp_test_support.h) from the generated test PKI.
#include "tls/ocsp_response.h"

#include <gtest/gtest.h>

#include "ocsp_test_support.h"

namespace tlsfront::tls {
namespace {

using namespace std::chrono_literals;
using testing::ResponseSpec;
using testing::load_cert;
using testing::load_key;
using testing::make_response;

class OcspResponseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    leaf_ = load_cert("localhost.pem");
    issuer_ = load_cert("intermediate.pem");
    issuer_key_ = load_key("intermediate.key");
    signer_ = load_cert("ocsp-signer.pem");
    signer_key_ = load_key("ocsp-signer.key");
    ASSERT_TRUE(leaf_ && issuer_ && issuer_key_ && signer_ && signer_key_);
    now_ = std::chrono::system_clock::now();
  }

  // Good, signed by the delegated responder, valid now-1h .. now+1h.
  ResponseSpec spec() const {
    ResponseSpec s;
    s.leaf = leaf_.get();
    s.issuer = issuer_.get();
    s.signer = signer_.get();
    s.signer_key = signer_key_.get();
    s.this_update = now_ - 1h;
    s.next_update = now_ + 1h;
    return s;
  }

  Result<OcspStaple> verify(const std::vector<uint8_t>& der) const {
    return verify_ocsp_response(der, leaf_.get(), issuer_.get(), now_);
  }

  X509Ptr leaf_, issuer_, signer_;
  EvpPkeyPtr issuer_key_, signer_key_;
  OcspTime now_;
};

TEST_F(OcspResponseTest, DelegatedResponderGood) {
  auto der = make_response(spec());
  ASSERT_FALSE(der.empty());
  auto r = verify(der);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, OcspCertStatus::Good);
  EXPECT_EQ(r->der, der);
  EXPECT_EQ(std::chrono::system_clock::to_time_t(r->this_update), std::chrono::system_clock::to_time_t(now_ - 1h));
  EXPECT_EQ(std::chrono::system_clock::to_time_t(r->next_update), std::chrono::system_clock::to_time_t(now_ + 1h));
}

TEST_F(OcspResponseTest, SignedByTheIssuerItselfWithoutCertificates) {
  ResponseSpec s = spec();
  s.signer = issuer_.get();
  s.signer_key = issuer_key_.get();
  s.include_signer = false;
  auto r = verify(make_response(s));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, OcspCertStatus::Good);
}

TEST_F(OcspResponseTest, Sha256CertIdAccepted) {
  ResponseSpec s = spec();
  s.id_md = EVP_sha256();
  auto r = verify(make_response(s));
  ASSERT_TRUE(r.ok()) << r.error().message();
}

TEST_F(OcspResponseTest, RevokedIsReportedNotRejected) {
  ResponseSpec s = spec();
  s.status = V_OCSP_CERTSTATUS_REVOKED;
  auto r = verify(make_response(s));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, OcspCertStatus::Revoked);
  EXPECT_EQ(r->revocation_reason, 1);  // keyCompromise
}

TEST_F(OcspResponseTest, UnrelatedSignerRejected) {
  auto cert = load_cert("ocsp-unrelated.pem");
  auto key = load_key("ocsp-unrelated.key");
  ResponseSpec s = spec();
  s.signer = cert.get();
  s.signer_key = key.get();
  auto r = verify(make_response(s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Tls) << r.error().message();
}

TEST_F(OcspResponseTest, ResponderIssuedByAnotherCaRejected) {
  // Holds id-kp-OCSPSigning and chains to the same root, but was not issued
  // by the leaf's issuer (RFC 6960 §4.2.2.2).
  auto cert = load_cert("ocsp-root-signed.pem");
  auto key = load_key("ocsp-root-signed.key");
  ResponseSpec s = spec();
  s.signer = cert.get();
  s.signer_key = key.get();
  auto r = verify(make_response(s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Tls) << r.error().message();
}

TEST_F(OcspResponseTest, SiblingLeafWithoutOcspSigningRejected) {
  // Issued by the same intermediate, but not a delegated responder.
  auto cert = load_cert("rsa.pem");
  auto key = load_key("rsa.key");
  ResponseSpec s = spec();
  s.signer = cert.get();
  s.signer_key = key.get();
  auto r = verify(make_response(s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Tls) << r.error().message();
}

TEST_F(OcspResponseTest, TamperedSignatureRejected) {
  ResponseSpec s = spec();
  s.include_signer = false;  // the signature is then the last field
  auto der = make_response(s);
  ASSERT_FALSE(der.empty());
  der.back() ^= 0x01;
  auto r = verify(der);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Tls) << r.error().message();
}

TEST_F(OcspResponseTest, ExpiredRejected) {
  auto der = make_response(spec());
  auto r = verify_ocsp_response(der, leaf_.get(), issuer_.get(), now_ + 1h + 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Timeout);  // told apart from a response that was never valid
  EXPECT_NE(r.error().message().find("expired"), std::string::npos) << r.error().message();
}

TEST_F(OcspResponseTest, MissingNextUpdateRejected) {
  ResponseSpec s = spec();
  s.next_update.reset();
  auto r = verify(make_response(s));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("nextUpdate"), std::string::npos) << r.error().message();
}

TEST_F(OcspResponseTest, ThisUpdateInTheFutureRejectedBeyondSkew) {
  ResponseSpec s = spec();
  s.this_update = now_ + kOcspClockSkew + 60s;
  s.next_update = now_ + 2h;
  auto r = verify(make_response(s));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("in the future"), std::string::npos) << r.error().message();

  s.this_update = now_ + kOcspClockSkew - 60s;  // within the allowance
  EXPECT_TRUE(verify(make_response(s)).ok());
}

TEST_F(OcspResponseTest, FarFutureNextUpdateRejected) {
  ResponseSpec s = spec();
  s.next_update_raw = 253402300799;  // 9999-12-31T23:59:59Z
  auto r = verify(make_response(s));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("nextUpdate malformed"), std::string::npos) << r.error().message();
}

TEST_F(OcspResponseTest, OtherCertificatesCertIdRejected) {
  auto other = load_cert("rsa.pem");
  ResponseSpec s = spec();
  s.leaf = other.get();
  auto r = verify(make_response(s));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("CertID"), std::string::npos) << r.error().message();
}

TEST_F(OcspResponseTest, UnsuccessfulStatusRejected) {
  ResponseSpec s = spec();
  s.response_status = OCSP_RESPONSE_STATUS_TRYLATER;
  auto r = verify(make_response(s));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("trylater"), std::string::npos) << r.error().message();
}

TEST_F(OcspResponseTest, GarbageRejected) {
  EXPECT_FALSE(verify({}).ok());
  EXPECT_FALSE(verify({0x30, 0x03, 0x0a, 0x01, 0x00}).ok());
  std::vector<uint8_t> junk(4096, 0x41);
  EXPECT_FALSE(verify(junk).ok());
  auto der = make_response(spec());
  auto truncated = der;
  truncated.resize(der.size() - 10);
  EXPECT_FALSE(verify(truncated).ok());
  auto trailing = der;
  trailing.push_back(0);
  auto r = verify(trailing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("trailing"), std::string::npos);
}

TEST(OcspRequest, GetForSmallRequestsPostOtherwise) {
  auto leaf = load_cert("localhost.pem");
  auto issuer = load_cert("intermediate.pem");
  auto der = make_ocsp_request(leaf.get(), issuer.get());
  ASSERT_TRUE(der.ok()) << der.error().message();
  const unsigned char* p = der->data();
  OCSP_REQUEST* req = d2i_OCSP_REQUEST(nullptr, &p, static_cast<long>(der->size()));
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(OCSP_request_onereq_count(req), 1);
  OCSP_REQUEST_free(req);

  auto get = make_ocsp_http_request("http://ocsp.example/", *der);
  EXPECT_FALSE(get.post);
  EXPECT_TRUE(get.url.starts_with("http://ocsp.example/M"));  // base64 of a DER SEQUENCE
  EXPECT_EQ(get.url.find_first_of("+=", 20), std::string::npos);  // percent-encoded
  auto no_slash = make_ocsp_http_request("http://ocsp.example/path", *der);
  EXPECT_TRUE(no_slash.url.starts_with("http://ocsp.example/path/M"));

  std::vector<uint8_t> big(200, 0x30);  // base64 of 200 bytes > 255 characters
  auto post = make_ocsp_http_request("http://ocsp.example/", big);
  EXPECT_TRUE(post.post);
  EXPECT_EQ(post.url, "http://ocsp.example/");
  EXPECT_EQ(post.body, big);
}

TEST(OcspRequest, ResponderUrlMustStapleAndIssuer) {
  auto aia = load_cert("aia.pem");
  auto plain = load_cert("localhost.pem");
  auto must = load_cert("must-staple.pem");
  auto issuer = load_cert("intermediate.pem");
  auto root = load_cert("root.pem");
  EXPECT_EQ(ocsp_responder_url(aia.get()), "http://ocsp.tlsfront.invalid/");
  EXPECT_EQ(ocsp_responder_url(plain.get()), "");
  EXPECT_TRUE(has_must_staple(must.get()));
  EXPECT_FALSE(has_must_staple(plain.get()));

  X509StackPtr chain(sk_X509_new_null());
  sk_X509_push(chain.get(), root.release());
  EXPECT_EQ(find_issuer(plain.get(), chain.get()), nullptr);
  X509* raw_issuer = issuer.get();
  sk_X509_push(chain.get(), issuer.release());
  EXPECT_EQ(find_issuer(plain.get(), chain.get()), raw_issuer);
  EXPECT_EQ(find_issuer(plain.get(), nullptr), nullptr);
}

}  // namespace
}  // namespace tlsfront::tls
