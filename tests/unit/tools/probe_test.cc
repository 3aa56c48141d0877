// Tests for `tlsfront probe`'s pure parts: URL, --resolve and duration
// parsing, the min/median/max summary, the verdict rules, and the JSON and
// Prometheus renderings (strictly parsed / line by line). The exchanges
// themselves are tested end to end against tlsfront and nginx
// (tests/integration/probe_test.cc).
#include <openssl/x509_vfy.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "tools/probe_output.h"
#include "tools/probe_report.h"
#include "tools/probe_target.h"

namespace tlsfront::tools {
namespace {

TEST(ProbeUrl, TakesHttpsUrlsApart) {
  auto t = parse_probe_url("https://Example.COM:8443/a/b?c=d#frag");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->host, "example.com");
  EXPECT_EQ(t->port, 8443);
  EXPECT_EQ(t->path, "/a/b?c=d");
  EXPECT_FALSE(t->host_is_ip);
  EXPECT_EQ(t->authority(), "example.com:8443");

  t = parse_probe_url("https://example.com");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->port, 443);
  EXPECT_EQ(t->path, "/");
  EXPECT_EQ(t->authority(), "example.com");

  t = parse_probe_url("https://example.com?q");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->path, "/?q");

  t = parse_probe_url("https://[::1]:9443/x");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->host, "::1");
  EXPECT_TRUE(t->host_is_ip);
  EXPECT_EQ(t->authority(), "[::1]:9443");
  EXPECT_EQ(t->host_port(), "[::1]:9443");

  t = parse_probe_url("https://127.0.0.1/");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->host_is_ip);
}

TEST(ProbeUrl, RefusesWhatItCannotProbe) {
  for (const char* bad : {"http://example.com/", "example.com", "https://", "https://:443/", "https://a:0/",
                          "https://a:65536/", "https://a:/", "https://user@a/", "https://[::1/", "https://[zz]/",
                          "https://a b/", "https://a/b c", "https://a/\x01"}) {
    auto t = parse_probe_url(bad);
    EXPECT_FALSE(t) << bad;
    if (!t) EXPECT_EQ(t.error().code, Errc::InvalidArgument);
  }
  EXPECT_NE(parse_probe_url("http://x/").error().message().find("expected https://"), std::string::npos);
}

TEST(ProbeResolve, ParsesCurlSyntax) {
  auto r = parse_resolve("Example.com:443:127.0.0.1");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->host, "example.com");
  EXPECT_EQ(r->port, 443);
  EXPECT_EQ(r->address, "127.0.0.1");
  r = parse_resolve("a:8443:[::1]");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->address, "::1");
  for (const char* bad : {"a", "a:443", "a:x:127.0.0.1", "a:443:host.example", ":443:127.0.0.1", "a:0:127.0.0.1"}) {
    EXPECT_FALSE(parse_resolve(bad)) << bad;
  }
}

TEST(ProbeDuration, SecondsOrMilliseconds) {
  EXPECT_EQ(*parse_probe_duration("10"), std::chrono::milliseconds(10'000));
  EXPECT_EQ(*parse_probe_duration("3s"), std::chrono::milliseconds(3'000));
  EXPECT_EQ(*parse_probe_duration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(*parse_probe_duration("1m"), std::chrono::milliseconds(60'000));  // the config's syntax
  EXPECT_EQ(*parse_probe_duration("1h"), std::chrono::milliseconds(3'600'000));
  for (const char* bad : {"", "0", "-1", "1h1s", "ms", "s", "3601", "1.5"}) EXPECT_FALSE(parse_probe_duration(bad)) << bad;
}

TEST(ProbeSummary, MinMedianMaxAreMeasuredSamples) {
  const PhaseStat s = summarize({Micros(40), Micros(10), Micros(30), Micros(20)});
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.min, Micros(10));
  EXPECT_EQ(s.median, Micros(20));  // the lower middle one, not an average
  EXPECT_EQ(s.max, Micros(40));
  EXPECT_EQ(summarize({}).count, 0u);
}

// A report that passes every rule.
TargetReport healthy() {
  TargetReport r;
  r.target = *parse_probe_url("https://localhost:8443/");
  r.rounds = r.rounds_done = r.resumed_tried = r.resumed_ok = 2;
  r.peer = "127.0.0.1:8443";
  r.http_status = 200;
  r.http_version = "HTTP/1.1";
  TlsFacts f;
  f.version = "TLSv1.3";
  f.cipher = "TLS_AES_128_GCM_SHA256";
  f.group = "x25519";
  f.alpn = "http/1.1";
  f.chain = {{"CN=localhost", "CN=int", 479, false, {}}, {"CN=int", "CN=root", 424, false, {}}};
  f.chain_bytes = 903;
  f.verified_path = 3;
  f.leaf_covers_host = true;
  f.leaf_days_left = 100;
  f.staple.present = f.staple.verified = true;
  f.staple.status = "good";
  r.facts = f;
  r.tls12_served = true;
  r.tls12_ticket = {true, true, ""};
  r.tls12_id = {true, true, ""};
  for (int i = 0; i < 2; ++i) {
    PhaseTimes t;
    t.connect = Micros(50 + i);
    t.tls = Micros(1000 + i);
    t.request = Micros(10);
    t.first_byte = Micros(300);
    t.total = Micros(1400 + i);
    r.full.add(t);
    r.resumed.add(t);
  }
  return r;
}

std::vector<std::string> reasons(const TargetReport& r, Severity s) {
  std::vector<std::string> out;
  for (const Alarm& a : r.alarms) {
    if (a.severity == s) out.push_back(a.reason);
  }
  return out;
}

TEST(ProbeVerdict, HealthyIsOk) {
  TargetReport r = healthy();
  evaluate(r, {});
  EXPECT_EQ(r.status, Severity::Ok);
  EXPECT_TRUE(r.alarms.empty()) << r.alarms[0].reason;
}

TEST(ProbeVerdict, WarningsOfTheIssue) {
  TargetReport r = healthy();
  r.facts->leaf_days_left = 21;
  evaluate(r, {});
  EXPECT_EQ(r.status, Severity::Warning);
  ASSERT_EQ(reasons(r, Severity::Warning).size(), 1u);
  EXPECT_NE(reasons(r, Severity::Warning)[0].find("expires in 21 days"), std::string::npos);
  evaluate(r, {.warn_days = 20});
  EXPECT_EQ(r.status, Severity::Ok);

  r = healthy();
  r.facts->staple = {};
  evaluate(r, {});
  EXPECT_EQ(reasons(r, Severity::Warning), std::vector<std::string>{"no OCSP staple"});
  evaluate(r, {.staple_required = false});
  EXPECT_EQ(r.status, Severity::Ok);

  r = healthy();
  r.resumed_ok = 0;
  evaluate(r, {});
  EXPECT_EQ(r.status, Severity::Warning);
  r = healthy();
  r.resumed_tried = r.resumed_ok = 0;
  evaluate(r, {});
  EXPECT_NE(reasons(r, Severity::Warning).at(0).find("no resumption"), std::string::npos);

  r = healthy();
  r.facts->version = "TLSv1.2";
  evaluate(r, {});
  EXPECT_NE(reasons(r, Severity::Warning).at(0).find("TLS 1.2 only"), std::string::npos);

  r = healthy();  // the leaf alone, verified through an intermediate from the local store
  r.facts->chain.resize(1);
  evaluate(r, {});
  EXPECT_NE(reasons(r, Severity::Warning).at(0).find("the server sends the leaf only"), std::string::npos);
  r.facts->verified_path = 2;  // a leaf the root issued itself: complete as sent
  evaluate(r, {});
  EXPECT_EQ(r.status, Severity::Ok);
}

TEST(ProbeVerdict, CriticalsOfTheIssue) {
  TargetReport r = healthy();
  r.facts->leaf_days_left = -3;
  r.facts->verify_code = X509_V_ERR_CERT_HAS_EXPIRED;
  r.facts->verify_error = "certificate has expired";
  evaluate(r, {});
  EXPECT_EQ(r.status, Severity::Critical);
  ASSERT_EQ(reasons(r, Severity::Critical).size(), 1u);  // one reason, not also "verification failed"
  EXPECT_NE(reasons(r, Severity::Critical)[0].find("expired on"), std::string::npos);

  r = healthy();
  r.facts->verify_code = X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY;
  r.facts->verify_error = "unable to get local issuer certificate";
  r.facts->verified_path = 0;
  evaluate(r, {});
  EXPECT_NE(reasons(r, Severity::Critical).at(0).find("certificate verification failed"), std::string::npos);

  r = healthy();
  r.facts->leaf_covers_host = false;
  evaluate(r, {});
  EXPECT_NE(reasons(r, Severity::Critical).at(0).find("does not cover \"localhost\""), std::string::npos);

  r = healthy();
  r.facts->staple.status = "revoked";
  evaluate(r, {});
  EXPECT_EQ(r.status, Severity::Critical);

  r = TargetReport{};
  r.target = *parse_probe_url("https://localhost:1/");
  r.failure = "127.0.0.1:1: Connection refused";
  r.failed_at = ProbeStage::Connect;
  evaluate(r, {});
  EXPECT_EQ(reasons(r, Severity::Critical), std::vector<std::string>{"unreachable: 127.0.0.1:1: Connection refused"});
}

TEST(ProbeOutput, JsonIsOneStrictObject) {
  TargetReport a = healthy();
  a.target.url = "https://localhost:8443/\"quoted\"";
  evaluate(a, {});
  TargetReport b = TargetReport{};
  b.target = *parse_probe_url("https://localhost:1/");
  b.failure = "refused";
  b.failed_at = ProbeStage::Connect;
  evaluate(b, {});
  const std::string json = render_probe_json({a, b});
  EXPECT_EQ(json.find('\n'), json.size() - 1);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["status"]), "critical");
  EXPECT_EQ(int64_t(doc["exit_status"]), 2);
  simdjson::dom::array probes = doc["probes"];
  ASSERT_EQ(probes.size(), 2u);
  simdjson::dom::element p0 = probes.at(0);
  EXPECT_EQ(std::string_view(p0["url"]), "https://localhost:8443/\"quoted\"");
  EXPECT_EQ(int64_t(p0["chain"]["count"]), 2);
  EXPECT_TRUE(bool(p0["ocsp_staple"]["present"]));
  EXPECT_EQ(int64_t(p0["resumption"]["rounds_resumed"]), 2);
  EXPECT_DOUBLE_EQ(double(p0["times_ms"]["full"]["tls"]["min"]), 1.0);
  EXPECT_TRUE(p0["times_ms"]["full"]["dns"].is_null());
  simdjson::dom::element p1 = probes.at(1);
  EXPECT_EQ(std::string_view(p1["failure"]["stage"]), "connect");
  EXPECT_TRUE(p1["tls"].is_null());
}

TEST(ProbeOutput, PrometheusTextFormat) {
  TargetReport a = healthy();
  TargetReport b = healthy();
  b.target.url = "https://x/\"\\\n";
  evaluate(a, {});
  evaluate(b, {});
  const std::string prom = render_probe_prom({a, b}, std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000)));
  size_t help = 0;
  for (size_t p = prom.find("# HELP tlsfront_probe_status "); p != std::string::npos;
       p = prom.find("# HELP tlsfront_probe_status ", p + 1)) {
    ++help;
  }
  EXPECT_EQ(help, 1u) << prom;  // one family, two samples
  EXPECT_NE(prom.find("tlsfront_probe_status{url=\"https://localhost:8443/\"} 0\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("tlsfront_probe_status{url=\"https://x/\\\"\\\\\\n\"} 0\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("tlsfront_probe_timestamp_seconds{url=\"https://localhost:8443/\"} 1800000000\n"), std::string::npos);
  EXPECT_NE(prom.find("tlsfront_probe_phase_seconds{url=\"https://localhost:8443/\",handshake=\"full\",phase=\"tls\",stat=\"min\"} 0.001\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("tlsfront_probe_ocsp_staple_good{url=\"https://localhost:8443/\"} 1\n"), std::string::npos);
  // Every line is a comment or `name{labels} value`.
  size_t start = 0;
  while (start < prom.size()) {
    const size_t end = prom.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    const std::string line = prom.substr(start, end - start);
    EXPECT_TRUE(line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0 ||
                (line.rfind("tlsfront_probe_", 0) == 0 && line.find("} ") != std::string::npos))
        << line;
    start = end + 1;
  }
}

}  // namespace
}  // namespace tlsfront::tools
