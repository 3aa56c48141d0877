// LogStats: what an access log says about handshakes, latency and errors,
// for `tlsfront logstats` (tools/logstats_command.h).
//
// LineParser reads one line of tlsfront's access log (log/access_log.h: one
// JSON object per line) with simdjson's DOM API (its kernel is chosen for the
// CPU at run time), taking only the fields the statistics need, by name (so
// lines from older or newer versions with more or fewer fields still count). A line that is not a JSON object with a
// numeric "status" is malformed: counted, never fatal.
//
// Stats aggregates lines. A handshake is a line with a non-null
// tls_handshake_ms: tlsfront logs the handshake time on a connection's first
// request only, so a connection that completed its handshake but sent no
// request is in /metrics (tlsfront_tls_handshakes_total), not here. Versions,
// ciphers and resumption ("none", "cache", "ticket", ...) are counted per
// handshake; latencies and statuses per request. StatsTable keeps the overall
// Stats and, with a Grouping, one per key (at most kMaxGroups; later keys are
// counted under "(other)"), so memory is bounded whatever the input.
// Thread affinity: none (one owner).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tools/quantile_sketch.h"

namespace tlsfront::tools {

// The fields of one line; the views are valid until the next parse().
struct LogRecord {
  std::string_view time, sni, alpn, ssl_protocol, ssl_cipher, ssl_resumption, upstream_addr;
  int status = 0;
  std::optional<double> request_time_ms, tls_handshake_ms, upstream_response_ms;
  std::optional<bool> upstream_connection_reused;
  bool tunnel = false;  // an Upgrade tunnel's line (its times are the tunnel's life)
};

class LineParser {
 public:
  LineParser();
  ~LineParser();
  LineParser(const LineParser&) = delete;
  LineParser& operator=(const LineParser&) = delete;

  // Fills `out` from `line`; false when the line is malformed.
  bool parse(std::string_view line, LogRecord& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct Stats {
  uint64_t requests = 0;
  uint64_t handshakes = 0;
  // Per handshake, by value; keys are at most kMaxKeys distinct (then "(other)").
  std::map<std::string, uint64_t, std::less<>> resumption, versions, ciphers;
  QuantileSketch handshake_full_ms, handshake_resumed_ms;  // tls_handshake_ms
  // Of requests that were not tunnels: a tunnel's times are how long it
  // stayed open (a WebSocket's hours would be the p99).
  QuantileSketch request_ms, upstream_response_ms;
  uint64_t tunnels = 0;
  uint64_t upstream_requests = 0, upstream_reused = 0;  // lines with upstream_connection_reused set
  std::array<uint64_t, 6> status_class{};               // [1..5]: 1xx..5xx; [0]: anything else
  uint64_t status_499 = 0, status_502 = 0, status_504 = 0;

  static constexpr size_t kMaxKeys = 64;
  void add(const LogRecord& r);
};

enum class Grouping { None, Sni, Alpn, Upstream, Hour };

// "sni", "alpn", "upstream", "hour" -> the Grouping; nullopt otherwise.
std::optional<Grouping> parse_grouping(std::string_view name);
std::string_view to_string(Grouping g);

class StatsTable {
 public:
  static constexpr size_t kMaxGroups = 1000;

  explicit StatsTable(Grouping by = Grouping::None) : by_(by) {}

  // Parses `line` and adds it (or counts it malformed).
  void add_line(std::string_view line);
  void add_too_long(uint64_t n) { malformed_ += n; lines_ += n; }

  Grouping grouping() const { return by_; }
  uint64_t lines() const { return lines_; }
  uint64_t malformed() const { return malformed_; }
  const Stats& overall() const { return overall_; }
  const std::map<std::string, Stats, std::less<>>& groups() const { return groups_; }

 private:
  std::string_view key_of(const LogRecord& r) const;

  Grouping by_;
  LineParser parser_;
  LogRecord record_;
  uint64_t lines_ = 0, malformed_ = 0;
  Stats overall_;
  std::map<std::string, Stats, std::less<>> groups_;
};

}  // namespace tlsfront::tools
