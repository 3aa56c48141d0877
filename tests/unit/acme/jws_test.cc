// The ACME account key and its signed requests (RFC 8555 §6.2, RFC 7515,
// RFC 7638), and the TLS-ALPN-01 certificate (RFC 8737 §3), checked with
// OpenSSL's own verification, not with the code under test.
#include "control/acme/jws.h"

#include <gtest/gtest.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>

#include <string>

#include "control/acme/acme_client.h"

namespace tlsfront::acme {
namespace {

std::string unbase64url(std::string_view s) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const size_t v = alphabet.find(c);
    if (v == std::string::npos) return "<bad>";
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The value of "key":"..." in a flat JSON text.
std::string field(const std::string& json, const std::string& key) {
  const std::string open = "\"" + key + "\":\"";
  const size_t at = json.find(open);
  if (at == std::string::npos) return "";
  const size_t from = at + open.size();
  return json.substr(from, json.find('"', from) - from);
}

bool verifies(const AccountKey& key, const std::string& input, const std::string& raw_sig) {
  if (raw_sig.size() != 64) return false;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  ECDSA_SIG_set0(sig, BN_bin2bn(reinterpret_cast<const unsigned char*>(raw_sig.data()), 32, nullptr),
                 BN_bin2bn(reinterpret_cast<const unsigned char*>(raw_sig.data()) + 32, 32, nullptr));
  unsigned char* der = nullptr;
  const int der_len = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key.pkey()) == 1 &&
                  EVP_DigestVerify(ctx, der, static_cast<size_t>(der_len),
                                   reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  OPENSSL_free(der);
  return ok;
}

TEST(AcmeJws, Base64UrlWithoutPadding) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url("foob"), "Zm9vYg");
  EXPECT_EQ(base64url(std::string("\xfb\xff\xbf", 3)), "-_-_");
}

TEST(AcmeJws, JwkAndThumbprintOfAKnownKey) {
  // RFC 7638's members in order; x and y are the key's 32-octet coordinates.
  auto key = AccountKey::generate();
  ASSERT_TRUE(key) << key.error().message();
  const std::string& jwk = key->jwk();
  EXPECT_TRUE(jwk.starts_with(R"({"crv":"P-256","kty":"EC","x":")")) << jwk;
  EXPECT_EQ(unbase64url(field(jwk, "x")).size(), 32u);
  EXPECT_EQ(unbase64url(field(jwk, "y")).size(), 32u);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(jwk.data()), jwk.size(), digest);
  EXPECT_EQ(unbase64url(key->thumbprint()), std::string(reinterpret_cast<char*>(digest), sizeof digest));
  // The same key from its PEM has the same JWK.
  auto again = AccountKey::from_pem(*key->pem());
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->jwk(), jwk);
}

TEST(AcmeJws, SignedRequestVerifiesWithTheKey) {
  auto key = AccountKey::generate();
  ASSERT_TRUE(key);
  auto body = jws(*key, "https://ca.test/acct/1", "nonce-1", "https://ca.test/new-order", R"({"a":1})");
  ASSERT_TRUE(body) << body.error().message();
  const std::string protected_b64 = field(*body, "protected"), payload_b64 = field(*body, "payload");
  const std::string header = unbase64url(protected_b64);
  EXPECT_EQ(header, R"({"alg":"ES256","kid":"https://ca.test/acct/1","nonce":"nonce-1","url":"https://ca.test/new-order"})");
  EXPECT_EQ(unbase64url(payload_b64), R"({"a":1})");
  EXPECT_TRUE(verifies(*key, protected_b64 + "." + payload_b64, unbase64url(field(*body, "signature"))));
  EXPECT_FALSE(verifies(*key, protected_b64 + ".e30", unbase64url(field(*body, "signature"))));
  // newAccount: the jwk instead of a kid; POST-as-GET: an empty payload.
  auto account = jws(*key, "", "n\"2", "https://ca.test/new-acct", "");
  ASSERT_TRUE(account);
  EXPECT_EQ(unbase64url(field(*account, "protected")),
            R"({"alg":"ES256","jwk":)" + key->jwk() + R"(,"nonce":"n\"2","url":"https://ca.test/new-acct"})");
  EXPECT_EQ(field(*account, "payload"), "");
}

TEST(AcmeJws, OnlyP256KeysAreAccountKeys) {
  EVP_PKEY* rsa = EVP_RSA_gen(2048);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, rsa, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  auto r = AccountKey::from_pem(std::string_view(data, static_cast<size_t>(n)));
  BIO_free(bio);
  EVP_PKEY_free(rsa);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::InvalidArgument);
  EXPECT_FALSE(AccountKey::from_pem("not a key"));
}

// RFC 8737 §3: the name alone as SAN, and the critical acmeIdentifier
// extension whose value is the DER OCTET STRING of SHA-256(key authorization).
TEST(AcmeJws, TlsAlpn01Certificate) {
  auto made = tls_alpn01_certificate("api.example.test", "token.thumb");
  ASSERT_TRUE(made) << made.error().message();
  BIO* bio = BIO_new_mem_buf(made->first.data(), static_cast<int>(made->first.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(X509_check_host(cert, "api.example.test", 0, 0, nullptr), 1);
  ASN1_OBJECT* oid = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
  const int at = X509_get_ext_by_OBJ(cert, oid, -1);
  ASN1_OBJECT_free(oid);
  ASSERT_GE(at, 0);
  X509_EXTENSION* ext = X509_get_ext(cert, at);
  EXPECT_EQ(X509_EXTENSION_get_critical(ext), 1);
  const ASN1_OCTET_STRING* value = X509_EXTENSION_get_data(ext);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>("token.thumb"), 11, digest);
  std::string expected("\x04\x20", 2);
  expected.append(reinterpret_cast<char*>(digest), sizeof digest);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)), ASN1_STRING_length(value)),
            expected);
  // Self-signed with the key that came with it.
  BIO* kbio = BIO_new_mem_buf(made->second.data(), static_cast<int>(made->second.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kbio, nullptr, nullptr, nullptr);
  BIO_free(kbio);
  EXPECT_EQ(X509_verify(cert, key), 1);
  EVP_PKEY_free(key);
  X509_free(cert);
}

}  // namespace
}  // namespace tlsfront::acme
