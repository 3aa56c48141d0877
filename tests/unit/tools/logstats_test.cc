// Tests for `tlsfront logstats`' parts: the quantile sketch, the line reader
// (plain, gzip, over-long lines, a missing file), the line parser fed with
// lines from the real access-log encoder, and the aggregation and reports.
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "log/access_log.h"
#include "shared/temp_dir.h"
#include "tools/line_reader.h"
#include "tools/log_stats.h"
#include "tools/logstats_command.h"
#include "tools/quantile_sketch.h"

namespace tlsfront::tools {
namespace {

TEST(QuantileSketch, PercentilesWithinTheBucketError) {
  QuantileSketch s;
  EXPECT_FALSE(s.quantile(0.5));
  for (int i = 1; i <= 10000; ++i) s.add(i * 0.1);  // 0.1 .. 1000 ms
  EXPECT_EQ(s.count(), 10000u);
  for (double q : {0.5, 0.95, 0.99}) {
    const double truth = q * 1000;
    EXPECT_NEAR(*s.quantile(q), truth, truth * 0.016) << q;
  }
  EXPECT_NEAR(*s.quantile(1.0), 1000, 16);
  EXPECT_FALSE(s.quantile(0));
  EXPECT_FALSE(s.quantile(1.5));
}

TEST(QuantileSketch, OutOfRangeValuesAreClampedAndNanIgnored) {
  QuantileSketch s;
  s.add(0);
  s.add(-1);  // not counted
  s.add(std::nan(""));
  s.add(1e300);
  s.add(INFINITY);
  EXPECT_EQ(s.count(), 3u);
  EXPECT_LT(*s.quantile(0.3), 0.002);
  EXPECT_EQ(*s.quantile(1.0), std::ldexp(1.0, QuantileSketch::kMaxExponent));
  QuantileSketch other;
  other.add(5);
  s.merge(other);
  EXPECT_EQ(s.count(), 4u);
}

std::string line_of(const log::AccessLogEntry& e) {
  std::string out;
  log::append_json_line(out, e);
  out.pop_back();  // '\n'
  return out;
}

log::AccessLogEntry entry(int status, std::optional<double> handshake_ms, std::string_view resumption = "none") {
  log::AccessLogEntry e;
  e.time = std::chrono::system_clock::time_point(std::chrono::hours(24 * 20000 + 13));
  e.sni = "api.test";
  e.alpn = "h2";
  e.protocol = "HTTP/2.0";
  e.method = "GET";
  e.path = "/";
  e.status = status;
  e.request_time_ms = 2.5;
  e.ssl_protocol = "TLSv1.3";
  e.ssl_cipher = "TLS_AES_128_GCM_SHA256";
  e.ssl_resumption = resumption;
  e.ssl_session_reused = resumption != "none";
  e.tls_handshake_ms = handshake_ms;
  e.upstream_addr = "127.0.0.1:9000";
  e.upstream_status = status;
  e.upstream_response_ms = 2.0;
  e.upstream_connection_reused = true;
  return e;
}

TEST(LineParser, ReadsTheEncodersLines) {
  LineParser p;
  LogRecord r;
  ASSERT_TRUE(p.parse(line_of(entry(200, 3.25, "ticket")), r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.sni, "api.test");
  EXPECT_EQ(r.alpn, "h2");
  EXPECT_EQ(r.time.substr(0, 13), "2024-10-04T13");
  EXPECT_EQ(r.ssl_protocol, "TLSv1.3");
  EXPECT_EQ(r.ssl_resumption, "ticket");
  EXPECT_EQ(r.tls_handshake_ms, 3.25);
  EXPECT_EQ(r.request_time_ms, 2.5);
  EXPECT_EQ(r.upstream_connection_reused, true);
  // A default entry: nulls stay unset.
  ASSERT_TRUE(p.parse(line_of(log::AccessLogEntry{}), r));
  EXPECT_EQ(r.sni, "");
  EXPECT_FALSE(r.tls_handshake_ms);
  EXPECT_FALSE(r.upstream_response_ms);
  EXPECT_FALSE(r.upstream_connection_reused);
}

TEST(LineParser, MalformedLinesAreRefused) {
  LineParser p;
  LogRecord r;
  for (std::string_view bad : {"", "not json", "[1,2]", "{\"status\":\"200\"}", "{\"time\":\"x\"}",
                               "{\"status\":200", "{\"status\":200} trailing", "{\"status\":200,\"sni\":5}",
                               "{\"status\":-1}", "{\"status\":200,\"tls_handshake_ms\":\"fast\"}"}) {
    EXPECT_FALSE(p.parse(bad, r)) << bad;
  }
  EXPECT_TRUE(p.parse("{\"status\":204,\"extra\":{\"nested\":[1]}}", r));
  EXPECT_EQ(r.status, 204);
}

TEST(StatsTable, CountsHandshakesPerConnectionAndGroups) {
  StatsTable t(Grouping::Sni);
  t.add_line(line_of(entry(200, 10.0)));            // full handshake
  t.add_line(line_of(entry(200, std::nullopt)));    // same connection, second request
  t.add_line(line_of(entry(502, 2.0, "ticket")));   // resumed
  t.add_line(line_of(entry(499, 3.0, "cache")));    // resumed
  log::AccessLogEntry other = entry(504, std::nullopt);
  other.sni = "";
  t.add_line(line_of(other));
  t.add_line("garbage");
  EXPECT_EQ(t.lines(), 6u);
  EXPECT_EQ(t.malformed(), 1u);
  const Stats& s = t.overall();
  EXPECT_EQ(s.requests, 5u);
  EXPECT_EQ(s.handshakes, 3u);
  EXPECT_EQ(s.resumption.at("none"), 1u);
  EXPECT_EQ(s.resumption.at("ticket"), 1u);
  EXPECT_EQ(s.resumption.at("cache"), 1u);
  EXPECT_EQ(s.handshake_full_ms.count(), 1u);
  EXPECT_EQ(s.handshake_resumed_ms.count(), 2u);
  EXPECT_EQ(s.versions.at("TLSv1.3"), 3u);
  EXPECT_EQ(s.status_class[2], 2u);
  EXPECT_EQ(s.status_class[4], 1u);
  EXPECT_EQ(s.status_class[5], 2u);
  EXPECT_EQ(s.status_499 + s.status_502 + s.status_504, 3u);
  EXPECT_EQ(s.upstream_requests, 5u);
  ASSERT_EQ(t.groups().size(), 2u);
  EXPECT_EQ(t.groups().at("api.test").requests, 4u);
  EXPECT_EQ(t.groups().at("(none)").requests, 1u);
}

TEST(StatsTable, GroupsAreBounded) {
  StatsTable t(Grouping::Sni);
  for (size_t i = 0; i < StatsTable::kMaxGroups + 50; ++i) {
    log::AccessLogEntry e = entry(200, 1.0);
    const std::string sni = "h" + std::to_string(i) + ".test";
    e.sni = sni;
    t.add_line(line_of(e));
  }
  EXPECT_EQ(t.groups().size(), StatsTable::kMaxGroups + 1);
  EXPECT_EQ(t.groups().at("(other)").requests, 50u);
}

// A tunnel's line says how long it stayed open: counted, not a latency.
TEST(StatsTable, TunnelsAreCountedApartFromTheLatencies) {
  StatsTable t;
  t.add_line(line_of(entry(200, 1.0)));
  log::AccessLogEntry tunnel = entry(101, std::nullopt);
  tunnel.tunnel = true;
  tunnel.request_time_ms = 3'600'000;
  tunnel.upstream_response_ms = 3'600'000;
  t.add_line(line_of(tunnel));
  const Stats& s = t.overall();
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.tunnels, 1u);
  EXPECT_EQ(s.request_ms.count(), 1u);
  EXPECT_EQ(s.upstream_response_ms.count(), 1u);
  EXPECT_LT(*s.request_ms.quantile(0.99), 10.0);
  EXPECT_EQ(s.status_class[1], 1u);
  EXPECT_NE(render_json(t, 2).find("\"tunnels\":1,"), std::string::npos) << render_json(t, 2);
  EXPECT_NE(render_text(t, 2).find("tunnels               1 (Upgrade tunnels"), std::string::npos) << render_text(t, 2);
}

TEST(LogstatsReport, JsonIsOneObjectAndEscapesKeys) {
  StatsTable t(Grouping::Sni);
  log::AccessLogEntry e = entry(200, 1.0);
  e.sni = "evil\"\n.test";
  t.add_line(line_of(e));
  const std::string json = render_json(t, 1);
  EXPECT_EQ(json.find('\n'), json.size() - 1);
  EXPECT_NE(json.find(R"("key":"evil\"\n.test")"), std::string::npos) << json;
  // The report is valid JSON for a strict parser (LineParser alone could not
  // tell: it also refuses a valid object without "status").
  simdjson::dom::parser strict;
  simdjson::dom::element doc;
  EXPECT_EQ(strict.parse(json).get(doc), simdjson::SUCCESS) << json;
  LineParser p;
  LogRecord r;
  EXPECT_FALSE(p.parse(json.substr(0, json.size() - 1), r));  // no "status": not a log line
  const std::string text = render_text(t, 1);
  EXPECT_NE(text.find("sni \"evil\\\"\\n.test\""), std::string::npos) << text;
  EXPECT_NE(text.find("resumed               0.0%"), std::string::npos) << text;
}

class LineReaderTest : public ::testing::Test {
 protected:
  std::vector<std::string> read_all(const std::string& path, uint64_t* too_long = nullptr) {
    auto r = LineReader::open(path);
    EXPECT_TRUE(r.ok()) << r.error().message();
    std::vector<std::string> lines;
    if (!r) return lines;
    std::string_view line;
    for (;;) {
      auto more = r->next(line);
      EXPECT_TRUE(more.ok());
      if (!more || !*more) break;
      lines.emplace_back(line);
    }
    if (too_long) *too_long = r->too_long();
    return lines;
  }
  TempDir tmp_{"tlsfront_logstats"};
};

TEST_F(LineReaderTest, PlainAndGzipAndLastLineWithoutNewline) {
  const std::string text = "a\nbb\n\nccc";
  std::ofstream(tmp_.file("plain.log")) << text;
  gzFile gz = gzopen(tmp_.file("rotated.log.gz").c_str(), "wb");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  const std::vector<std::string> want = {"a", "bb", "", "ccc"};
  EXPECT_EQ(read_all(tmp_.file("plain.log")), want);
  EXPECT_EQ(read_all(tmp_.file("rotated.log.gz")), want);
}

TEST_F(LineReaderTest, OverLongLineIsSkippedWhole) {
  std::ofstream out(tmp_.file("long.log"));
  out << "first\n" << std::string(LineReader::kMaxLine + 300'000, 'x') << "\nlast\n";
  out.close();
  uint64_t too_long = 0;
  EXPECT_EQ(read_all(tmp_.file("long.log"), &too_long), (std::vector<std::string>{"first", "last"}));
  EXPECT_EQ(too_long, 1u);
}

TEST_F(LineReaderTest, MissingFileNamesPathAndError) {
  auto r = LineReader::open(tmp_.file("nope.log"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("nope.log\": No such file or directory"), std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace tlsfront::tools
