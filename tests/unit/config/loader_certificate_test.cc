// TOML -> Config for the certificates: [[certificate]] entries (cert, key,
// names, default), tls.strict_sni, and the [tls] certificate/key shorthand.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

// kMinimal with `tls_extra` in place of its [tls] certificate/key lines, then `tables`.
std::string entries(std::string_view tls_extra, std::string_view tables) {
  std::string base(kMinimal);
  const std::string shorthand = "certificate = \"/pki/cert.pem\"\nkey = \"/pki/key.pem\"\n";
  base.replace(base.find(shorthand), shorthand.size(), std::string(tls_extra));
  return base + std::string(tables);
}

TEST(LoaderCertificates, ShorthandIsTheOneDefaultEntry) {
  Config c = load_ok(kMinimal, "t.toml");
  ASSERT_EQ(c.tls.certificates.size(), 1u);
  const Certificate& e = c.tls.certificates[0];
  EXPECT_EQ(e.cert, "/pki/cert.pem");
  EXPECT_EQ(e.key, "/pki/key.pem");
  EXPECT_TRUE(e.names.empty());
  EXPECT_TRUE(e.is_default);
  EXPECT_EQ(e.cert_setting, "tls.certificate");
  EXPECT_EQ(e.key_setting, "tls.key");
  EXPECT_FALSE(c.tls.strict_sni);
}

TEST(LoaderCertificates, EntriesInFileOrderWithNamesAndDefault) {
  Config c = load_ok(entries("strict_sni = false\n",
                             "[[certificate]]\ncert = \"/pki/api.ecdsa.pem\"\nkey = \"/pki/api.ecdsa.key\"\n"
                             "names = [\"API.Example.com\", \"*.example.com\"]\n"
                             "[[certificate]]\ncert = \"rsa.pem\"\nkey = \"rsa.key\"\ndefault = true\n"),
                     "/etc/tlsfront/t.toml");
  ASSERT_EQ(c.tls.certificates.size(), 2u);
  const Certificate& a = c.tls.certificates[0];
  EXPECT_EQ(a.cert, "/pki/api.ecdsa.pem");
  EXPECT_EQ(a.names, (std::vector<std::string>{"api.example.com", "*.example.com"}));  // folded to lowercase
  EXPECT_FALSE(a.is_default);
  EXPECT_EQ(a.cert_setting, "certificate[0].cert");
  EXPECT_EQ(a.key_setting, "certificate[0].key");
  EXPECT_EQ(a.names_setting, "certificate[0].names");
  EXPECT_EQ(a.cert_origin, "/etc/tlsfront/t.toml:14:1");
  EXPECT_EQ(a.names_origin, "/etc/tlsfront/t.toml:16:1");
  const Certificate& b = c.tls.certificates[1];
  EXPECT_EQ(b.cert, "/etc/tlsfront/rsa.pem");  // relative to the config file
  EXPECT_TRUE(b.names.empty());
  EXPECT_TRUE(b.is_default);
  EXPECT_EQ(b.names_origin, "/etc/tlsfront/t.toml:17:1");  // the table: no names key
}

TEST(LoaderCertificates, Errors) {
  const std::string one = "[[certificate]]\ncert = \"/c.pem\"\nkey = \"/k.pem\"\n";
  EXPECT_EQ(load_error(with(one)),
            "t.toml:5:1: tls.certificate: use either [tls] certificate/key or [[certificate]] entries, not both");
  EXPECT_EQ(load_error(entries("", "")), "t.toml:4:1: tls.certificate: missing required key");
  EXPECT_EQ(load_error(entries("", "[[certificate]]\ncert = \"/c.pem\"\n")),
            "t.toml:12:1: certificate[0].key: missing required key");
  EXPECT_EQ(load_error(entries("", one + "sni = [\"a\"]\n")), "t.toml:15:1: certificate[0].sni: unknown key \"sni\"");
  EXPECT_EQ(load_error(entries("", one + "default = true\n" + one + "default = true\n")),
            "t.toml:19:1: certificate[1].default: only one certificate can be the default (the other is at "
            "t.toml:15:1)");
  EXPECT_EQ(load_error(entries("strict_sni = true\n", one + "default = true\n")),
            "t.toml:16:1: certificate[0].default: a default certificate is never used with tls.strict_sni = true");
  EXPECT_EQ(load_error(entries("", one + "names = []\n")),
            "t.toml:15:1: certificate[0].names: must not be empty (omit it to use the certificate's names)");
}

TEST(LoaderCertificates, NameErrors) {
  auto name_error = [](std::string_view name) {
    return load_error(entries("", "[[certificate]]\ncert = \"/c.pem\"\nkey = \"/k.pem\"\nnames = [\"ok.example\", \"" +
                                      std::string(name) + "\"]\n"));
  };
  const std::string at = "t.toml:15:24: certificate[0].names[1]: ";
  EXPECT_EQ(name_error("ok.example"), at + "duplicate name \"ok.example\"");
  EXPECT_EQ(name_error("OK.example"), at + "duplicate name \"ok.example\"");
  EXPECT_EQ(name_error("a.example."), at + "\"a.example.\" must not end with a dot");
  EXPECT_EQ(name_error("a..example"), at + "\"a..example\" has an empty label");
  EXPECT_EQ(name_error("*.com"), at + "\"*.com\" a wildcard needs at least two labels after \"*.\"");
  EXPECT_EQ(name_error("a.*.example"),
            at + "\"a.*.example\" \"*\" is only allowed as the whole left-most label (\"*.example.com\")");
  EXPECT_EQ(name_error("w*.example.com"),
            at + "\"w*.example.com\" \"*\" is only allowed as the whole left-most label (\"*.example.com\")");
  EXPECT_EQ(name_error("-a.example"), at + "\"-a.example\" has a label starting or ending with '-'");
  EXPECT_EQ(name_error("a_b.example"),
            at + "\"a_b.example\" is not a DNS name (letters, digits, '-' and '.' only; IDNs in A-label form "
                 "\"xn--...\")");
  EXPECT_EQ(name_error(std::string(64, 'a') + ".example"), at + "\"" + std::string(64, 'a') +
                                                               ".example\" has a label longer than 63 bytes");
}

TEST(LoaderCertificates, OcspPerEntry) {
  Config c = load_ok(entries("", "[[certificate]]\ncert = \"/a.pem\"\nkey = \"/a.key\"\n"
                                 "[certificate.ocsp]\nstaple_policy = \"strict\"\n"
                                 "[[certificate]]\ncert = \"/b.pem\"\nkey = \"/b.key\"\n"),
                     "t.toml");
  ASSERT_EQ(c.tls.certificates.size(), 2u);
  EXPECT_EQ(c.tls.certificates[0].ocsp.staple_policy, StaplePolicy::Strict);
  EXPECT_EQ(c.tls.certificates[1].ocsp.staple_policy, StaplePolicy::Lenient);
  EXPECT_EQ(load_error(entries("", "[tls.ocsp]\nstapling = false\n[[certificate]]\ncert = \"/a.pem\"\nkey = \"/a.key\"\n")),
            "t.toml:12:6: tls.ocsp: with [[certificate]] entries, OCSP settings go in each entry's [certificate.ocsp]");
}

}  // namespace
}  // namespace tlsfront::config
