// What the import-nginx unit tests share: run an nginx configuration
// through parse_string() and import(), read the TOML it made back with
// config::load_string (so assertions are on the configuration tlsfront
// would run), and the report it wrote.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/loader.h"
#include "tools/nginx_conf.h"
#include "tools/nginx_import.h"

namespace tlsfront::tools::nginx::test {

struct Outcome {
  bool ok = false;
  std::string error, toml, report;
  config::Config cfg;
};

inline Outcome run_tree(const Result<std::vector<Directive>>& tree, const std::string& base) {
  Outcome r;
  if (!tree.ok()) {
    r.error = tree.error().message();
    return r;
  }
  std::vector<Note> failed;
  auto imported = import(*tree, base, "n.conf", &failed);
  const std::vector<Note>& notes = imported.ok() ? imported->notes : failed;
  for (const Note& n : notes) r.report += n.file + ":" + std::to_string(n.line) + ": " + n.directive + ": " + n.why + "\n";
  if (!imported.ok()) {
    r.error = imported.error().message();
    return r;
  }
  r.toml = imported->toml;
  auto cfg = config::load_string(r.toml, "/tmp/out.toml");
  EXPECT_TRUE(cfg.ok()) << cfg.error().message() << "\n" << r.toml;
  if (!cfg.ok()) return r;
  r.cfg = std::move(cfg).value();
  r.ok = true;
  return r;
}

inline Outcome run(const std::string& conf) { return run_tree(parse_string(conf, "n.conf", "/etc/nginx"), "/etc/nginx"); }

// One TLS server around `body`, `http` before it.
inline std::string server(const std::string& body, const std::string& http = "") {
  return "http {\n" + http + "\nserver {\nlisten 443 ssl;\nssl_certificate c.pem;\nssl_certificate_key c.key;\n" + body +
         "\nlocation / { proxy_pass http://127.0.0.1:9000; }\n}\n}\n";
}

#define EXPECT_REPORTS(run, text) EXPECT_NE((run).report.find(text), std::string::npos) << (run).report

}  // namespace tlsfront::tools::nginx::test
