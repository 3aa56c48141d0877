// [acme] (config/parse_acme.cc): its keys, defaults and errors.
#include "config/loader_test_support.h"

namespace tlsfront::config {
namespace {

// Lines 14-16: the store [acme] needs; [acme] starts on line 17.
constexpr std::string_view kStore = "[tls.store]\nregion = \"eu\"\nseal_key_files = [\"/k/seal.key\"]\n";

std::string acme(std::string_view lines) { return with(std::string(kStore) + "[acme]\n" + std::string(lines)); }

TEST(LoaderAcme, KeysAndDefaults) {
  Config c = load_ok(acme("directory = \"https://ca.example/dir\"\ncontact = [\"mailto:ops@example.com\"]\n"
                          "names = [\"example.com\", \"www.example.com\"]\nkey_type = \"both\"\n"
                          "challenges = [\"tls-alpn-01\"]\nrenew_before = \"30d\"\nca_bundle = \"ca.pem\"\n"
                          "eab_kid = \"kid-1\"\neab_hmac_key_file = \"/k/eab\"\ncheck_interval = \"5s\"\n"));
  const Acme& a = c.acme;
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.directory, "https://ca.example/dir");
  EXPECT_EQ(a.contact, (std::vector<std::string>{"mailto:ops@example.com"}));
  EXPECT_EQ(a.names, (std::vector<std::string>{"example.com", "www.example.com"}));
  EXPECT_EQ(a.key_type, AcmeKeyType::Both);
  EXPECT_EQ(a.challenges, (std::vector<AcmeChallenge>{AcmeChallenge::TlsAlpn01}));
  EXPECT_EQ(a.renew_before, Millis{30LL * 86'400'000});
  EXPECT_EQ(a.ca_bundle, "/etc/tlsfront/ca.pem");
  EXPECT_EQ(a.eab_kid, "kid-1");
  EXPECT_EQ(a.check_interval, Millis{5000});
  EXPECT_EQ(a.lock_lease, Millis{600'000});

  Config d = load_ok(acme("directory = \"https://ca.example/dir\"\nnames = [\"example.com\"]\n"));
  EXPECT_EQ(d.acme.key_type, AcmeKeyType::Ecdsa);
  EXPECT_EQ(d.acme.renew_before, Millis{0});  // 2/3 of the lifetime
  EXPECT_EQ(d.acme.challenges, (std::vector<AcmeChallenge>{AcmeChallenge::Http01, AcmeChallenge::TlsAlpn01}));
  EXPECT_FALSE(load_ok(kMinimal).acme.enabled);
}

TEST(LoaderAcme, NamesFromRoutes) {
  // Exact DNS hosts only: "" (any host), a wildcard and an IP address are skipped.
  Config c = load_ok(with("host = \"api.example.com\"\n[[route]]\nhost = \"*.example.com\"\nupstream = \"demo\"\n"
                          "[[route]]\nhost = \"10.0.0.1\"\nupstream = \"demo\"\n[[route]]\nhost = \"www.example.com\"\n"
                          "upstream = \"demo\"\n" +
                          std::string(kStore) + "[acme]\ndirectory = \"https://ca.example/dir\"\nnames = \"from_routes\"\n"));
  EXPECT_TRUE(c.acme.names_from_routes);
  EXPECT_EQ(c.acme.names, (std::vector<std::string>{"api.example.com", "www.example.com"}));
  EXPECT_EQ(load_error(with(std::string(kStore) + "[acme]\ndirectory = \"https://ca.example/d\"\nnames = \"from_routes\"\n")),
            "t.toml:19:1: acme.names: no [[route]] has a host that can be ordered (an exact DNS name)");
}

TEST(LoaderAcme, Errors) {
  EXPECT_EQ(load_error(with("[acme]\ndirectory = \"https://ca.example/dir\"\nnames = [\"example.com\"]\n")),
            "t.toml:14:1: acme: needs [tls.store]: the account key and the certificates are kept there, sealed");
  EXPECT_EQ(load_error(acme("names = [\"example.com\"]\n")), "t.toml:17:1: acme.directory: missing required key");
  EXPECT_EQ(load_error(acme("directory = \"http://ca.example/dir\"\nnames = [\"a.example\"]\n")),
            "t.toml:18:1: acme.directory: expected an https:// URL (RFC 8555 §6.1), got \"http://ca.example/dir\"");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\n")), "t.toml:17:1: acme.names: missing required key");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\nnames = [\"a.example\", \"*.example.com\"]\n")),
            "t.toml:19:23: acme.names[1]: \"*.example.com\" is not a lowercase DNS name an HTTP-01 or TLS-ALPN-01 "
            "challenge can prove (no wildcard, no IP address)");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\nnames = [\"a.example\", \"a.example\"]\n")),
            "t.toml:19:23: acme.names[1]: \"a.example\" is listed twice");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\nnames = [\"a.example\"]\nkey_type = \"dsa\"\n")),
            "t.toml:20:1: acme.key_type: unknown key type \"dsa\" (expected \"ecdsa\", \"rsa\" or \"both\")");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\nnames = [\"a.example\"]\nchallenges = [\"dns-01\"]\n")),
            "t.toml:20:1: acme.challenges: unknown challenge \"dns-01\" (expected \"http-01\" or \"tls-alpn-01\")");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\nnames = [\"a.example\"]\neab_kid = \"k\"\n")),
            "t.toml:20:1: acme.eab_kid: External Account Binding needs both eab_kid and eab_hmac_key_file");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\nnames = [\"a.example\"]\ncontact = [\"ops@example.com\"]\n")),
            "t.toml:20:1: acme.contact: expected \"mailto:<address>\" entries, got \"ops@example.com\"");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\nnames = [\"a.example\"]\nrenew_before = \"1m\"\n")).substr(0, 32),
            "t.toml:20:1: acme.renew_before: ");
  EXPECT_EQ(load_error(acme("directory = \"https://ca/d\"\nnames = [\"a.example\"]\ncolour = 1\n")).substr(0, 26),
            "t.toml:20:1: acme.colour: ");
}

}  // namespace
}  // namespace tlsfront::config
