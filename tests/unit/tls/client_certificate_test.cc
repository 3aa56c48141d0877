// The client certificate's variables (tls/client_certificate.h): the SHA-256
// fingerprint ($ssl_client_fingerprint, and a limit_req key) and the
// URL-encoding of $ssl_client_cert.
#include "tls/client_certificate.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>

#include <cstdio>
#include <string>

namespace tlsfront::tls {
namespace {

TEST(ClientCertificate, FingerprintIsSha256OfTheDerInLowercaseHex) {
  EXPECT_EQ(client_fingerprint(nullptr), "");
  FILE* f = std::fopen(TLSFRONT_TEST_PKI_DIR "/client.pem", "r");
  ASSERT_NE(f, nullptr);
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  ASSERT_NE(cert, nullptr);
  unsigned char* der = nullptr;
  const int len = i2d_X509(cert, &der);
  ASSERT_GT(len, 0);
  unsigned char md[32];
  ASSERT_EQ(EVP_Digest(der, static_cast<size_t>(len), md, nullptr, EVP_sha256(), nullptr), 1);
  OPENSSL_free(der);
  std::string expected;
  char hex[3];
  for (unsigned char b : md) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    expected += hex;
  }
  EXPECT_EQ(client_fingerprint(cert), expected);
  EXPECT_EQ(expected.size(), 64u);
  X509_free(cert);
}

TEST(ClientCertificate, UriComponentKeepsOnlyUnreservedBytes) {
  std::string out;
  append_uri_component(out, "-----BEGIN CERTIFICATE-----\nMIIB+/a=\n~._\xff");
  EXPECT_EQ(out, "-----BEGIN%20CERTIFICATE-----%0AMIIB%2B%2Fa%3D%0A~._%FF");
}

}  // namespace
}  // namespace tlsfront::tls
