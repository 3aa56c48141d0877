// `tlsfront logstats [--by sni|alpn|upstream|hour] [--json] [FILE...]`:
// handshake, latency and status statistics of access logs (tools/log_stats.h),
// overall and per group. FILEs may be plain or gzip-compressed, rotated sets
// in any order; none (or "-") reads standard input. Output: a table, or with
// --json one JSON object (shape in docs/operations.md, "tlsfront logstats").
// Exit status: 0, 1 when a file cannot be read (the others are still
// counted), 2 for a usage error.
// Thread affinity: the main thread (a command, not part of the server).
#pragma once

#include <string>

#include "tools/log_stats.h"

namespace tlsfront::tools {

// `argv[0]` is "logstats".
int logstats_main(int argc, char** argv);

// The report of `table` read from `files` files.
std::string render_text(const StatsTable& table, size_t files);
std::string render_json(const StatsTable& table, size_t files);

}  // namespace tlsfront::tools
