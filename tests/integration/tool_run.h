// ToolRun: one run of a bench tool of tests/tools (tlsfront_hsload,
// tlsfront_wsload), whose summary is `key=value` words on stdout: the run's
// exit status and output, and those pairs parsed.
#pragma once

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "shared/process.h"

namespace tlsfront::itest {

struct ToolRun {
  RunResult result;
  std::map<std::string, std::string> kv;  // key=value words of every output line
  // The value of `key` as a number; -1 when the output has no such key.
  long num(const std::string& key) const {
    auto it = kv.find(key);
    return it == kv.end() ? -1 : std::stol(it->second);
  }
  bool exited(int code) const { return result.status.exited && result.status.code == code; }
};

// Runs `argv` (argv[0] the tool) in `dir`, killed after 60 s.
inline ToolRun run_tool(const TempDir& dir, const std::vector<std::string>& argv) {
  ToolRun run;
  run.result = run_command(dir, argv, std::chrono::milliseconds(60'000));
  std::istringstream words(run.result.out);
  for (std::string w; words >> w;) {
    size_t eq = w.find('=');
    if (eq != std::string::npos) run.kv[w.substr(0, eq)] = w.substr(eq + 1);
  }
  return run;
}

}  // namespace tlsfront::itest
