// ACME Renewal Information (RFC 9773): the certificate identifier (the RFC's
// own example, and a certificate of the test PKI checked against what the
// openssl command prints), the RenewalInfo object's parsing (good and
// hostile answers), Retry-After clamping, the choice inside the window and
// the per-certificate request schedule.
#include "control/acme/renewal_info.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "control/acme/jws.h"
#include "util/openssl_ptr.h"

namespace tlsfront::acme {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

std::string pki(const std::string& file) { return std::string(TLSFRONT_TEST_PKI_DIR) + "/" + file; }

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// "AB:CD:..." or "ABCD..." (hex digits, other characters skipped) -> bytes.
std::string hex_bytes(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (std::isxdigit(static_cast<unsigned char>(c))) digits += c;
  }
  std::string out;
  for (size_t i = 0; i + 1 < digits.size(); i += 2) out += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  return out;
}

SystemTime at(int y, int mo, int d, int h = 0, int mi = 0, int s = 0) {
  return SystemTime(std::chrono::sys_days(std::chrono::year{y} / mo / d)) + hours(h) + minutes(mi) + seconds(s);
}

// RFC 9773 §4.1's example: AKI keyIdentifier 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4,
// serial 0x87654321 (DER 00 87 65 43 21) -> "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE".
TEST(AriCertId, TheRfcExample) {
  X509Ptr cert(X509_new());
  ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert.get()), 0x87654321);
  AUTHORITY_KEYID* akid = AUTHORITY_KEYID_new();
  akid->keyid = ASN1_OCTET_STRING_new();
  const std::string keyid = hex_bytes("69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4");
  ASN1_OCTET_STRING_set(akid->keyid, reinterpret_cast<const unsigned char*>(keyid.data()),
                        static_cast<int>(keyid.size()));
  ASSERT_EQ(X509_add1_ext_i2d(cert.get(), NID_authority_key_identifier, akid, 0, 0), 1);
  AUTHORITY_KEYID_free(akid);
  auto id = cert_id(cert.get());
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_EQ(*id, "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE");
}

TEST(AriCertId, AWithoutAuthorityKeyIdIsRefused) {
  X509Ptr cert(X509_new());
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 7);
  EXPECT_FALSE(cert_id(cert.get()));
}

// The test PKI's localhost leaf: the identifier from what `openssl x509`
// prints (the AKI's key id; the serial in hex, given a leading 00 octet
// when its first bit is set, RFC 9773 §4.1), not from the code under test.
TEST(AriCertId, ATestPkiLeafMatchesWhatOpensslPrints) {
  for (const std::string file : {"localhost.pem", "rsa.pem"}) {
    const std::string text = run("openssl x509 -in " + pki(file) + " -noout -serial -ext authorityKeyIdentifier");
    const size_t serial_at = text.find("serial=");
    const size_t aki_at = text.find("Authority Key Identifier:");
    ASSERT_NE(serial_at, std::string::npos) << text;
    ASSERT_NE(aki_at, std::string::npos) << text;
    std::string serial_hex = text.substr(serial_at + 7, text.find('\n', serial_at) - serial_at - 7);
    if (serial_hex.size() % 2 == 1) serial_hex = "0" + serial_hex;
    std::string serial = hex_bytes(serial_hex);
    if (!serial.empty() && (static_cast<unsigned char>(serial[0]) & 0x80) != 0) serial.insert(serial.begin(), '\0');
    std::string aki_line = text.substr(text.find('\n', aki_at) + 1);
    aki_line = aki_line.substr(0, aki_line.find('\n'));
    if (const size_t k = aki_line.find("keyid:"); k != std::string::npos) aki_line = aki_line.substr(k + 6);
    const std::string keyid = hex_bytes(aki_line);
    ASSERT_EQ(keyid.size(), 20u) << text;  // SHA-1 key ids, as gen-test-pki.sh makes them

    auto leaf = read_leaf(read_all(pki(file)));
    ASSERT_TRUE(leaf) << leaf.error().message();
    EXPECT_EQ(leaf->cert_id, base64url(keyid) + "." + base64url(serial)) << text;
    EXPECT_EQ(leaf->cert_id.find('='), std::string::npos);
    EXPECT_EQ(leaf->ecdsa, file == "localhost.pem");
    EXPECT_LT(leaf->not_before, leaf->not_after);
  }
}

TEST(AriCertId, TheLeafOfAChainIsTheOneNotACa) {
  auto chain = read_leaf(read_all(pki("localhost.shuffled.pem")));  // root, intermediate, other root, leaf
  auto leaf = read_leaf(read_all(pki("localhost.pem")));
  ASSERT_TRUE(chain);
  ASSERT_TRUE(leaf);
  EXPECT_EQ(chain->cert_id, leaf->cert_id);
  EXPECT_FALSE(read_leaf(read_all(pki("root.pem"))));
  EXPECT_FALSE(read_leaf("not a certificate"));
}

TEST(AriParse, AGoodAnswer) {
  auto w = parse_renewal_info(R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z"},
                                  "explanationURL":"https://acme.example.com/docs/ari"})");
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->start, at(2025, 1, 2, 4));
  EXPECT_EQ(w->end, at(2025, 1, 3, 4));
  EXPECT_EQ(w->explanation_url, "https://acme.example.com/docs/ari");
  // Offsets, fractions, lowercase separators, no explanation.
  w = parse_renewal_info(R"({"suggestedWindow":{"start":"2025-01-02t06:30:00.123456+02:30","end":"2025-01-02T23:59:60-01:00"}})");
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->start, at(2025, 1, 2, 4));
  EXPECT_EQ(w->end, at(2025, 1, 3, 0, 59, 59));
  EXPECT_EQ(w->explanation_url, "");
}

TEST(AriParse, HostileAnswersAreRefused) {
  const char* bad[] = {
      "",
      "[]",
      "null",
      R"({"suggestedWindow":"soon"})",
      R"({"suggestedWindow":{}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z"}})",
      R"({"suggestedWindow":{"end":"2025-01-02T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":1735790400,"end":1735876800}})",
      // end before or at start
      R"({"suggestedWindow":{"start":"2025-01-03T04:00:00Z","end":"2025-01-02T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-02T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T05:00:00+01:00","end":"2025-01-02T04:00:00Z"}})",
      // absurd or malformed dates
      R"({"suggestedWindow":{"start":"0001-01-01T00:00:00Z","end":"2025-01-02T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"99999-01-01T00:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"9999-12-31T23:59:59Z"}})",  // past the clock
      R"({"suggestedWindow":{"start":"1969-12-31T23:59:59Z","end":"2025-01-02T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-02-30T04:00:00Z","end":"2025-03-02T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T24:00:00Z","end":"2025-01-03T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00","end":"2025-01-03T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02 04:00:00Z","end":"2025-01-03T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00.Z","end":"2025-01-03T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00+25:00","end":"2025-01-03T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-1-2T4:00:00Z","end":"2025-01-03T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Zjunk","end":"2025-01-03T04:00:00Z"}})",
      R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z")",  // truncated
  };
  for (const char* body : bad) EXPECT_FALSE(parse_renewal_info(body)) << body;
  // A huge body is refused before it is parsed, whatever it holds.
  std::string huge = R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z"},"pad":")";
  huge += std::string(kMaxRenewalInfoBody, 'x') + "\"}";
  auto r = parse_renewal_info(huge);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("octets"), std::string::npos);
  // So is a deeply nested one (simdjson's depth limit), without a crash.
  std::string deep(kMaxRenewalInfoBody / 2 - 1, '[');
  EXPECT_FALSE(parse_renewal_info(deep + std::string(deep.size(), ']')));
}

TEST(AriParse, AnExplanationThatCannotBeLoggedIsDroppedTheWindowKept) {
  for (std::string url : {std::string("javascript:alert(1)"), std::string("https://a\n injected log line"),
                          "https://" + std::string(kMaxExplanationUrl, 'a'), std::string("https://x\x1b[31m")}) {
    auto w = parse_renewal_info(R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z"},)"
                                R"("explanationURL":)" + json_string(url) + "}");
    ASSERT_TRUE(w) << url;
    EXPECT_EQ(w->explanation_url, "") << url;
  }
  auto w = parse_renewal_info(R"({"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z"},)"
                              R"("explanationURL":42})");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->explanation_url, "");
}

TEST(AriRetryAfter, ClampedToAMinuteAndADay) {
  const SystemTime now = at(2025, 1, 2);
  EXPECT_EQ(retry_after("21600", now), seconds(21600));
  EXPECT_EQ(retry_after(" 120 ", now), seconds(120));
  EXPECT_EQ(retry_after("0", now), kMinRetry);
  EXPECT_EQ(retry_after("1", now), kMinRetry);
  EXPECT_EQ(retry_after("86401", now), kMaxRetry);
  EXPECT_EQ(retry_after("99999999999999999999999999", now), kMaxRetry);
  EXPECT_EQ(retry_after("Thu, 02 Jan 2025 06:00:00 GMT", now), hours(6));
  EXPECT_EQ(retry_after("Wed, 01 Jan 2025 06:00:00 GMT", now), kMinRetry);  // in the past
  EXPECT_EQ(retry_after("Fri, 31 Dec 2100 23:59:59 GMT", now), kMaxRetry);
  for (const char* bad : {"", "-5", "1.5", "soon", "Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 32 Jan 2025 06:00:00 GMT", "Thu, 02 Foo 2025 06:00:00 GMT",
                          "Thu, 02 Jan 2025 06:00:00 UTC"}) {
    EXPECT_FALSE(retry_after(bad, now)) << bad;
  }
}

TEST(AriWindow, TheChosenTimeIsInsideTheWindowAndSpreadOverIt) {
  std::mt19937_64 rng(1);
  const RenewalWindow w{at(2025, 1, 2), at(2025, 1, 3), {}};
  SystemTime lo = w.end, hi = w.start;
  for (int i = 0; i < 1000; ++i) {
    const SystemTime t = choose_time(w, rng);
    ASSERT_GE(t, w.start);
    ASSERT_LE(t, w.end);
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  // 1000 uniform draws: both ends of the day are reached within an hour.
  EXPECT_LT(lo, w.start + hours(1));
  EXPECT_GT(hi, w.end - hours(1));
}

TEST(AriState, AskedAtOnceThenAfterRetryAfterAndTheChoiceKeptWhileTheWindowStays) {
  std::mt19937_64 rng(2);
  const SystemTime now = at(2025, 1, 2);
  AriState s("id");
  EXPECT_TRUE(s.fetch_due(now));
  EXPECT_FALSE(s.chosen());
  const RenewalWindow w{at(2025, 1, 10), at(2025, 1, 12), "https://ca/why"};
  s.answered(w, seconds(3600), now, rng);
  ASSERT_TRUE(s.chosen());
  const SystemTime first = *s.chosen();
  EXPECT_GE(first, w.start);
  EXPECT_LE(first, w.end);
  EXPECT_FALSE(s.fetch_due(now + seconds(3599)));
  EXPECT_TRUE(s.fetch_due(now + seconds(3600)));
  for (int i = 0; i < 20; ++i) s.answered(w, seconds(3600), now, rng);
  EXPECT_EQ(*s.chosen(), first);
  // A window moved (into the past: the CA wants it now) gets a new choice.
  const RenewalWindow past{at(2024, 12, 1), at(2024, 12, 2), {}};
  s.answered(past, std::nullopt, now, rng);  // no Retry-After: long-term
  EXPECT_LE(*s.chosen(), now);
  EXPECT_EQ(s.next_fetch(), now + kLongTermRetry);
}

TEST(AriState, ErrorsBackOffThenWaitSixHoursAndKeepTheLastWindow) {
  std::mt19937_64 rng(3);
  const SystemTime now = at(2025, 1, 2);
  AriState s("id");
  s.failed(true, now);
  EXPECT_EQ(s.next_fetch(), now + minutes(1));
  s.failed(true, now);
  EXPECT_EQ(s.next_fetch(), now + minutes(2));
  s.failed(true, now);
  s.failed(true, now);
  EXPECT_EQ(s.next_fetch(), now + minutes(8));
  s.failed(true, now);  // tries exhausted: a long-term error
  EXPECT_EQ(s.next_fetch(), now + kLongTermRetry);
  s.failed(false, now);
  EXPECT_EQ(s.next_fetch(), now + kLongTermRetry);
  EXPECT_FALSE(s.chosen());
  s.answered({at(2025, 1, 10), at(2025, 1, 12), {}}, seconds(60), now, rng);
  const auto chosen = s.chosen();
  s.failed(false, now);
  EXPECT_EQ(s.chosen(), chosen);
}

}  // namespace
}  // namespace tlsfront::acme
