// Counters and their Prometheus rendering: histogram buckets are cumulative
// with le="+Inf" equal to _count, workers are summed, status classes and
// label values escaped.
#include "metrics/prometheus.h"

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

}  // namespace
}  // namespace tlsfront::metrics
