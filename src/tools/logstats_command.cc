#include "tools/logstats_command.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "log/access_log.h"
#include "tools/line_reader.h"

namespace tlsfront::tools {
namespace {

constexpr const char* kUsage =
    "Usage: tlsfront logstats [--by sni|alpn|upstream|hour] [--json] [FILE...]\n"
    "  Statistics of tlsfront access logs (plain or .gz; none or \"-\": standard input):\n"
    "  handshakes and resumption, TLS versions and ciphers, latency percentiles,\n"
    "  upstream connection reuse, status classes.\n"
    "  --by KEY   also per SNI, ALPN protocol, upstream address or hour (UTC)\n"
    "  --json     one JSON object instead of the table\n";

using Out = std::back_insert_iterator<std::string>;

double share(uint64_t part, uint64_t whole) { return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole); }

// "a 88.0%, b 12.0%", largest first.
std::string shares(const std::map<std::string, uint64_t, std::less<>>& m, uint64_t whole) {
  std::vector<std::pair<std::string_view, uint64_t>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
  std::string out;
  for (const auto& [k, n] : v) fmt::format_to(std::back_inserter(out), "{}{} {:.1f}%", out.empty() ? "" : ", ", k, share(n, whole));
  return out.empty() ? "-" : out;
}

std::string percentiles(const QuantileSketch& s) {
  if (s.count() == 0) return "-";
  return fmt::format("p50 {:.3f}  p95 {:.3f}  p99 {:.3f}  ({} values)", *s.quantile(0.5), *s.quantile(0.95),
                     *s.quantile(0.99), s.count());
}

void text_stats(std::string& out, const Stats& s) {
  Out o(out);
  fmt::format_to(o, "  {:<22}{}\n", "requests", s.requests);
  fmt::format_to(o, "  {:<22}{}\n", "handshakes", s.handshakes);
  const auto full = s.resumption.find("none");
  const uint64_t resumed = s.handshakes - (full == s.resumption.end() ? 0 : full->second);
  fmt::format_to(o, "  {:<22}{:.1f}%  ({})\n", "resumed", share(resumed, s.handshakes), shares(s.resumption, s.handshakes));
  fmt::format_to(o, "  {:<22}{}\n", "TLS versions", shares(s.versions, s.handshakes));
  fmt::format_to(o, "  {:<22}{}\n", "ciphers", shares(s.ciphers, s.handshakes));
  fmt::format_to(o, "  {:<22}full     {}\n", "tls_handshake_ms", percentiles(s.handshake_full_ms));
  fmt::format_to(o, "  {:<22}resumed  {}\n", "", percentiles(s.handshake_resumed_ms));
  if (s.tunnels > 0) {
    fmt::format_to(o, "  {:<22}{} (Upgrade tunnels: not in the times below, which are how long they stayed open)\n",
                   "tunnels", s.tunnels);
  }
  fmt::format_to(o, "  {:<22}{}\n", "request_time_ms", percentiles(s.request_ms));
  fmt::format_to(o, "  {:<22}{}\n", "upstream_response_ms", percentiles(s.upstream_response_ms));
  fmt::format_to(o, "  {:<22}{:.1f}% of {} requests sent upstream\n", "upstream reuse", share(s.upstream_reused, s.upstream_requests),
                 s.upstream_requests);
  fmt::format_to(o, "  {:<22}1xx {:.1f}%, 2xx {:.1f}%, 3xx {:.1f}%, 4xx {:.1f}%, 5xx {:.1f}%; 499: {}, 502: {}, 504: {}\n",
                 "status", share(s.status_class[1], s.requests), share(s.status_class[2], s.requests),
                 share(s.status_class[3], s.requests), share(s.status_class[4], s.requests),
                 share(s.status_class[5], s.requests), s.status_499, s.status_502, s.status_504);
}

void json_counts(std::string& out, const std::map<std::string, uint64_t, std::less<>>& m) {
  out += '{';
  bool first = true;
  for (const auto& [k, n] : m) {
    if (!first) out += ',';
    first = false;
    log::append_json_string(out, k);
    fmt::format_to(Out(out), ":{}", n);
  }
  out += '}';
}

void json_sketch(std::string& out, const QuantileSketch& s) {
  if (s.count() == 0) {
    out += "{\"count\":0,\"p50\":null,\"p95\":null,\"p99\":null}";
    return;
  }
  fmt::format_to(Out(out), "{{\"count\":{},\"p50\":{:.3f},\"p95\":{:.3f},\"p99\":{:.3f}}}", s.count(), *s.quantile(0.5),
                 *s.quantile(0.95), *s.quantile(0.99));
}

void json_stats(std::string& out, const Stats& s) {
  fmt::format_to(Out(out), "{{\"requests\":{},\"handshakes\":{},\"resumption\":", s.requests, s.handshakes);
  json_counts(out, s.resumption);
  out += ",\"versions\":";
  json_counts(out, s.versions);
  out += ",\"ciphers\":";
  json_counts(out, s.ciphers);
  out += ",\"tls_handshake_ms\":{\"full\":";
  json_sketch(out, s.handshake_full_ms);
  out += ",\"resumed\":";
  json_sketch(out, s.handshake_resumed_ms);
  fmt::format_to(Out(out), "}},\"tunnels\":{},\"request_time_ms\":", s.tunnels);
  json_sketch(out, s.request_ms);
  out += ",\"upstream_response_ms\":";
  json_sketch(out, s.upstream_response_ms);
  fmt::format_to(Out(out),
                 ",\"upstream_requests\":{},\"upstream_reused\":{},\"status\":{{\"1xx\":{},\"2xx\":{},\"3xx\":{},"
                 "\"4xx\":{},\"5xx\":{},\"other\":{},\"499\":{},\"502\":{},\"504\":{}}}}}",
                 s.upstream_requests, s.upstream_reused, s.status_class[1], s.status_class[2], s.status_class[3],
                 s.status_class[4], s.status_class[5], s.status_class[0], s.status_499, s.status_502, s.status_504);
}

// The groups, most requests first.
std::vector<const std::pair<const std::string, Stats>*> by_requests(const StatsTable& t) {
  std::vector<const std::pair<const std::string, Stats>*> v;
  for (const auto& g : t.groups()) v.push_back(&g);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) {
    return a->second.requests > b->second.requests || (a->second.requests == b->second.requests && a->first < b->first);
  });
  return v;
}

}  // namespace

std::string render_text(const StatsTable& t, size_t files) {
  std::string out;
  fmt::format_to(Out(out), "{} file{}, {} lines ({} malformed)\n\noverall\n", files, files == 1 ? "" : "s", t.lines(),
                 t.malformed());
  text_stats(out, t.overall());
  for (const auto* g : by_requests(t)) {
    std::string key;
    log::append_json_string(key, g->first);  // quoted and escaped: keys are client-controlled (SNI)
    fmt::format_to(Out(out), "\n{} {}\n", to_string(t.grouping()), key);
    text_stats(out, g->second);
  }
  out += "\nA handshake is a connection's first request (the line with tls_handshake_ms); handshakes of\n"
         "connections that sent no request are counted in /metrics (tlsfront_tls_handshakes_total) only.\n";
  return out;
}

std::string render_json(const StatsTable& t, size_t files) {
  std::string out;
  fmt::format_to(Out(out), "{{\"files\":{},\"lines\":{},\"malformed\":{},\"by\":", files, t.lines(), t.malformed());
  if (t.grouping() == Grouping::None) out += "null";
  else log::append_json_string(out, to_string(t.grouping()));
  out += ",\"overall\":";
  json_stats(out, t.overall());
  out += ",\"groups\":[";
  bool first = true;
  for (const auto* g : by_requests(t)) {
    if (!first) out += ',';
    first = false;
    out += "{\"key\":";
    log::append_json_string(out, g->first);
    out += ",\"stats\":";
    json_stats(out, g->second);
    out += '}';
  }
  out += "]}\n";
  return out;
}

int logstats_main(int argc, char** argv) {
  Grouping by = Grouping::None;
  bool json = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--by" || a.substr(0, 5) == "--by=") {
      std::string_view name;
      if (a == "--by") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "tlsfront logstats: --by needs sni, alpn, upstream or hour\n%s", kUsage);
          return 2;
        }
        name = argv[++i];
      } else {
        name = a.substr(5);
      }
      const auto g = parse_grouping(name);
      if (!g) {
        std::fprintf(stderr, "tlsfront logstats: --by %.*s: expected sni, alpn, upstream or hour\n%s",
                     static_cast<int>(name.size()), name.data(), kUsage);
        return 2;
      }
      by = *g;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "tlsfront logstats: unknown option \"%s\"\n%s", argv[i], kUsage);
      return 2;
    } else {
      files.emplace_back(a);
    }
  }
  if (files.empty()) files.emplace_back("-");

  StatsTable table(by);
  int status = 0;
  for (const auto& path : files) {
    auto reader = LineReader::open(path);
    if (!reader) {
      std::fprintf(stderr, "tlsfront logstats: %s\n", reader.error().message().c_str());
      status = 1;
      continue;
    }
    std::string_view line;
    for (;;) {
      auto more = reader->next(line);
      if (!more) {
        std::fprintf(stderr, "tlsfront logstats: %s\n", more.error().message().c_str());
        status = 1;
        break;
      }
      if (!*more) break;
      if (!line.empty()) table.add_line(line);
    }
    table.add_too_long(reader->too_long());
  }
  const std::string report = json ? render_json(table, files.size()) : render_text(table, files.size());
  std::fwrite(report.data(), 1, report.size(), stdout);
  return status;
}

}  // namespace tlsfront::tools
