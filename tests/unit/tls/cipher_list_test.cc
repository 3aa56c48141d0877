// check_cipher_lists: the entries OpenSSL would skip without a word are
// named, with the key's position and their place in the list.
#include "tls/cipher_list.h"

#include <gtest/gtest.h>

namespace tlsfront::tls {
namespace {

config::Tls with(std::string ciphers, std::string ciphersuites = config::Tls{}.ciphersuites) {
  config::Tls t;
  t.ciphers = std::move(ciphers);
  t.ciphersuites = std::move(ciphersuites);
  t.ciphers_origin = "t.toml:9:1";
  t.ciphersuites_origin = "t.toml:10:1";
  return t;
}

std::string error_of(const config::Tls& t, std::vector<std::string>* warnings = nullptr) {
  std::vector<std::string> w;
  Status st = check_cipher_lists(t, warnings ? *warnings : w);
  EXPECT_FALSE(st.ok());
  if (st.ok()) return "(ok)";
  EXPECT_EQ(st.error().code, Errc::Config);
  return st.error().detail;
}

TEST(CipherList, DefaultsAliasesCombinationsAndCommandsPass) {
  std::vector<std::string> warnings;
  EXPECT_TRUE(check_cipher_lists(config::Tls{}, warnings).ok());
  EXPECT_TRUE(check_cipher_lists(with("ECDHE+AESGCM:HIGH,!aNULL;-kRSA +ECDHE-RSA-AES128-GCM-SHA256:@STRENGTH:@SECLEVEL=2",
                                      "TLS_AES_256_GCM_SHA384 : TLS_AES_128_CCM_SHA256"),
                                 warnings)
                  .ok());
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

TEST(CipherList, EveryUnknownSelectionIsNamedWithItsPlace) {
  std::vector<std::string> warnings;
  EXPECT_EQ(error_of(with("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA265:HIGH:FOO:@BOGUS"), &warnings),
            "t.toml:9:1: tls.ciphers: unknown cipher \"ECDHE-ECDSA-AES128-GCM-SHA265\" (entry 2), unknown cipher "
            "\"FOO\" (entry 4), unknown cipher \"@BOGUS\" (entry 5); OpenSSL would skip unknown entries silently "
            "(`openssl ciphers -v ALL` lists this OpenSSL's ciphers)");
  EXPECT_NE(error_of(with("HIGH:TLS_AES_128_GCM_SHA256")).find("\"TLS_AES_128_GCM_SHA256\" (entry 2), a TLS 1.3 suite "
                                                               "name: those go in tls.ciphersuites"),
            std::string::npos);
}

// "!RC4" and the like (nginx-era configurations) name ciphers OpenSSL 3 no
// longer has: harmless, but worth a warning, since a misspelled exclusion
// looks the same.
TEST(CipherList, AnExclusionOfNothingIsAWarning) {
  std::vector<std::string> warnings;
  EXPECT_TRUE(check_cipher_lists(with("HIGH:!aNUL:!RC4"), warnings).ok());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "t.toml:9:1: tls.ciphers: \"!aNUL\" (entry 2) excludes nothing: no cipher of this OpenSSL "
                         "matches \"aNUL\"");
  EXPECT_NE(warnings[1].find("\"!RC4\" (entry 3) excludes nothing"), std::string::npos) << warnings[1];
}

TEST(CipherList, EveryUnknownTls13SuiteIsNamed) {
  EXPECT_EQ(error_of(with(config::Tls{}.ciphers, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA348:tls_chacha20_poly1305_sha256")),
            "t.toml:10:1: tls.ciphersuites: unknown TLS 1.3 ciphersuite \"TLS_AES_256_GCM_SHA348\" (entry 2), unknown "
            "TLS 1.3 ciphersuite \"tls_chacha20_poly1305_sha256\" (entry 3); OpenSSL would skip unknown entries "
            "silently (names are case-sensitive, e.g. \"TLS_AES_128_GCM_SHA256\")");
  EXPECT_NE(error_of(with(config::Tls{}.ciphers, "ECDHE-RSA-AES128-GCM-SHA256"))
                .find("(entry 1), a TLS 1.2 cipher: those go in tls.ciphers"),
            std::string::npos);
}

}  // namespace
}  // namespace tlsfront::tls
