// tlsfront_config_keys FILE...: prints every key the configuration loader
// accepts in the tables the FILEs hold, one dotted path a line, sorted
// ("workers", "upstream.tls.verify"), from config::accepted_keys, i.e. from
// the loader's own unknown-key checks. Several files, because some tables
// exclude each other ([tls.ocsp] and [certificate.ocsp]). The
// config_reference test compares them with docs/configuration.md
// (tests/docs/check_config_reference.py).
// Exit status: 0, or 1 when a FILE does not load (the error on stderr).
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "config/loader.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tlsfront_config_keys FILE...\n");
    return 2;
  }
  std::set<std::string> all;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::fprintf(stderr, "tlsfront_config_keys: cannot read %s\n", argv[i]);
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto keys = tlsfront::config::accepted_keys(text.str(), argv[i]);
    if (!keys.ok()) {
      std::fprintf(stderr, "tlsfront_config_keys: %s\n", keys.error().message().c_str());
      return 1;
    }
    all.insert(keys->begin(), keys->end());
  }
  for (const std::string& key : all) std::printf("%s\n", key.c_str());
  return 0;
}
