// The three renderings of `tlsfront probe` results (tools/probe_report.h):
// a table for people, one JSON object, and the Prometheus text exposition
// format (version 0.0.4) that node_exporter's textfile collector reads.
// Every time is in the unit its name says (ms in the table and JSON,
// seconds in Prometheus). Shapes are documented in docs/operations.md,
// "tlsfront probe". Thread affinity: none (pure functions).
#pragma once

#include <string>
#include <vector>

#include "tools/probe_report.h"

namespace tlsfront::tools {

std::string render_probe_text(const std::vector<TargetReport>& reports);
std::string render_probe_json(const std::vector<TargetReport>& reports);
// `now`: the probe's wall-clock time, for the *_timestamp_seconds metrics.
std::string render_probe_prom(const std::vector<TargetReport>& reports, WallTime now);

}  // namespace tlsfront::tools
