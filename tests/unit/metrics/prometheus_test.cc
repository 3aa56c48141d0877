// Counters and their Prometheus rendering: histogram buckets are cumulative
// with le="+Inf" equal to _count, workers are summed, status classes and
// label values escaped.
#include "metrics/prometheus.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tlsfront::metrics {
namespace {

using namespace std::chrono_literals;

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(Prometheus, SumsWorkersAndRendersCumulativeBuckets) {
  WorkerCounters a, b;
  a.count_request("HTTP/1.1", 200, 700us);  // le 0.001
  a.count_request("HTTP/1.1", 204, 3ms);    // le 0.005
  b.count_request("HTTP/2.0", 503, 40s);    // above the last bound
  b.count_request("HTTP/1.1", 0, 1ms);      // no response: "none"; exactly on a bound: le 0.001
  a.connections_accepted.add(3);
  a.connections_closed.add(1);
  b.connections_accepted.add(2);
  ProcessMetrics m;
  m.workers = {&a, &b};
  const std::string text = render_prometheus(m);
  EXPECT_TRUE(has_line(text, "tlsfront_connections_accepted_total 5")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_connections_active 4")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{protocol=\"HTTP/1.1\",code=\"2xx\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{protocol=\"HTTP/1.1\",code=\"none\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{protocol=\"HTTP/2.0\",code=\"5xx\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"0.0005\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"0.001\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"0.005\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"30\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"+Inf\"} 4")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_count 4")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_sum 40.004700000")) << text;
  EXPECT_NE(text.find("# TYPE tlsfront_request_duration_seconds histogram\n"), std::string::npos);
}

TEST(Prometheus, UpstreamRowsAreSummedAndLabelsEscaped) {
  WorkerCounters a, b;
  a.upstream("api", "127.0.0.1:9000")->connections_created.add(2);
  b.upstream("api", "127.0.0.1:9000")->connections_created.add(3);
  b.upstream("we\"ird\\", "[::1]:80")->idle.set(4);
  ProcessMetrics m;
  m.workers = {&a, &b};
  const std::string text = render_prometheus(m);
  EXPECT_TRUE(has_line(text,
                       "tlsfront_upstream_connections_created_total{upstream=\"api\",server=\"127.0.0.1:9000\"} 5"))
      << text;
  EXPECT_TRUE(has_line(text, "tlsfront_upstream_idle_connections{upstream=\"we\\\"ird\\\\\",server=\"[::1]:80\"} 4"))
      << text;
}

TEST(Prometheus, HandshakeDurationIsOneHistogramPerKind) {
  WorkerCounters a;
  a.handshake_duration[static_cast<size_t>(HandshakeKind::Full)].observe(3ms);
  a.handshake_duration[static_cast<size_t>(HandshakeKind::ResumedTicket)].observe(700us);
  ProcessMetrics m;
  m.workers = {&a};
  const std::string text = render_prometheus(m);
  EXPECT_TRUE(has_line(text, "tlsfront_tls_handshake_duration_seconds_bucket{kind=\"full\",le=\"0.001\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_tls_handshake_duration_seconds_bucket{kind=\"full\",le=\"0.005\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_tls_handshake_duration_seconds_count{kind=\"full\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_tls_handshake_duration_seconds_sum{kind=\"resumed_ticket\"} 0.000700000"))
      << text;
  EXPECT_TRUE(has_line(text, "tlsfront_tls_handshake_duration_seconds_count{kind=\"resumed_cache\"} 0")) << text;
  // One family: one TYPE line.
  const std::string type = "# TYPE tlsfront_tls_handshake_duration_seconds histogram\n";
  EXPECT_EQ(text.find(type), text.rfind(type));
}

TEST(Prometheus, NegotiatedPairsMergeByValueAndOverflowToOther) {
  WorkerCounters a, b;
  // Equal strings at different addresses (two workers, or two tables) are one series.
  static const char kV13[] = "TLSv1.3", kAes[] = "TLS_AES_128_GCM_SHA256";
  static const std::string v13_copy = kV13, aes_copy = kAes;
  a.negotiated.add(kV13, kAes);
  a.negotiated.add(kV13, kAes);
  b.negotiated.add(v13_copy.c_str(), aes_copy.c_str());
  static std::vector<std::string> many;
  for (size_t i = 0; i < LabelPairCounters::kSlots + 2; ++i) many.push_back("C" + std::to_string(i));
  for (const auto& c : many) b.negotiated.add("TLSv1.2", c.c_str());  // 1 slot taken already: 3 over
  ProcessMetrics m;
  m.workers = {&a, &b};
  const std::string text = render_prometheus(m);
  EXPECT_TRUE(has_line(text, "tlsfront_tls_negotiated_total{version=\"TLSv1.3\",cipher=\"TLS_AES_128_GCM_SHA256\"} 3"))
      << text;
  EXPECT_TRUE(has_line(text, "tlsfront_tls_negotiated_total{version=\"other\",cipher=\"other\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_tls_negotiated_total{version=\"TLSv1.2\",cipher=\"C0\"} 1")) << text;
}

TEST(Prometheus, OfferedVersionsAndRefusalsAreLabelled) {
  EXPECT_EQ(offered_version(0x0304), OfferedVersion::Tls13);
  EXPECT_EQ(offered_version(0x0302), OfferedVersion::Tls11);
  EXPECT_EQ(offered_version(0x0300), OfferedVersion::Ssl3);
  EXPECT_EQ(offered_version(0x7f1c), OfferedVersion::Other);  // a TLS 1.3 draft
  WorkerCounters a;
  a.client_hello_versions[static_cast<size_t>(OfferedVersion::Tls10)].add(2);
  a.handshakes_refused[static_cast<size_t>(Refusal::NoAlpnOverlap)].add();
  ProcessMetrics m;
  m.workers = {&a};
  const std::string text = render_prometheus(m);
  EXPECT_TRUE(has_line(text, "tlsfront_tls_client_hello_versions_total{max_version=\"TLSv1.0\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_tls_client_hello_versions_total{max_version=\"TLSv1.3\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_tls_handshakes_refused_total{reason=\"no_alpn_overlap\"} 1")) << text;
}

}  // namespace
}  // namespace tlsfront::metrics
