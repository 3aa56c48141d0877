// Counters and their Prometheus rendering: histogram buckets are cumulative
// with le="+Inf" equal to _count, workers are summed, status classes and
// label values escaped; requests by listener and route, across reloads.
#include "metrics/prometheus.h"

#include <memory>
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
  a.request_duration.observe(700us);  // le 0.001
  a.request_duration.observe(3ms);    // le 0.005
  b.request_duration.observe(40s);    // above the last bound
  b.request_duration.observe(1ms);    // exactly on a bound: le 0.001
  a.connections_accepted.add(3);
  a.connections_closed.add(1);
  b.connections_accepted.add(2);
  ProcessMetrics m;
  m.workers = {&a, &b};
  const std::string text = render_prometheus(m);
  EXPECT_TRUE(has_line(text, "tlsfront_connections_accepted_total 5")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_connections_active 4")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"0.0005\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"0.001\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"0.005\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"30\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_bucket{le=\"+Inf\"} 4")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_count 4")) << text;
  EXPECT_TRUE(has_line(text, "tlsfront_request_duration_seconds_sum 40.004700000")) << text;
  EXPECT_NE(text.find("# TYPE tlsfront_request_duration_seconds histogram\n"), std::string::npos);
}

TEST(Prometheus, RequestsByListenerRouteProtocolAndClassSummedOverWorkers) {
  auto table = std::make_shared<RequestCounterTable>(std::vector<std::string>{"public", "[::1]:8443"},
                                                     std::vector<std::string>{"api", "*/"}, 2);
  const RequestSlots a = table->worker(0), b = table->worker(1);
  a.count(0, 0, "HTTP/1.1", 200);
  a.count(0, 0, "HTTP/1.1", 204);
  b.count(0, 0, "HTTP/1.1", 201);
  b.count(1, 1, "HTTP/2.0", 503);
  b.count(0, 2, "HTTP/1.1", 404);                   // no route
  a.count(2, 2, "HTTP/1.0", 0);                     // no listener, no route, no response
  a.count(7, 9, "HTTP/1.1", 200);                   // out of range: the "(none)" slots
  EXPECT_FALSE(table->worker(2).base);               // no such worker: not counted
  ProcessMetrics m;
  m.requests = table;
  const std::string text = render_prometheus(m);
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{listener=\"public\",route=\"api\",protocol=\"HTTP/1.1\",code=\"2xx\"} 3"))
      << text;
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{listener=\"[::1]:8443\",route=\"*/\",protocol=\"HTTP/2.0\",code=\"5xx\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{listener=\"public\",route=\"(none)\",protocol=\"HTTP/1.1\",code=\"4xx\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{listener=\"(none)\",route=\"(none)\",protocol=\"HTTP/1.0\",code=\"none\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{listener=\"(none)\",route=\"(none)\",protocol=\"HTTP/1.1\",code=\"2xx\"} 1"))
      << text;
  size_t series = 0;
  for (size_t at = text.find("\ntlsfront_requests_total{"); at != std::string::npos;
       at = text.find("\ntlsfront_requests_total{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, 5u) << "only the slots that counted something: " << text;
}

// A reload keeps the table while the labels stay; new labels get a new
// table that starts from the old totals of the labels it shares, so no
// series mixes two routes and none goes backwards.
TEST(Prometheus, RequestTableAcrossReloads) {
  auto first = RequestCounterTable::for_labels({"public"}, {"api", "web"}, 1, nullptr);
  first->worker(0).count(0, 0, "HTTP/1.1", 200);
  first->worker(0).count(0, 0, "HTTP/1.1", 200);
  first->worker(0).count(0, 1, "HTTP/1.1", 200);
  EXPECT_EQ(RequestCounterTable::for_labels({"public"}, {"api", "web"}, 1, first), first);
  // "web" gone, "static" new, "api" moved to index 1.
  auto second = RequestCounterTable::for_labels({"public"}, {"static", "api"}, 2, first);
  ASSERT_NE(second, first);
  second->worker(1).count(0, 1, "HTTP/1.1", 200);  // api
  ProcessMetrics m;
  m.requests = second;
  const std::string text = render_prometheus(m);
  EXPECT_TRUE(has_line(text, "tlsfront_requests_total{listener=\"public\",route=\"api\",protocol=\"HTTP/1.1\",code=\"2xx\"} 3"))
      << text;
  EXPECT_EQ(text.find("route=\"web\""), std::string::npos) << text;
  EXPECT_EQ(text.find("route=\"static\""), std::string::npos) << text;
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
