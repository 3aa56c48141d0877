// Fuzz target nginx_import: the bytes are an nginx configuration file, read
// by tools::nginx::parse_string() (which must answer a tree or a positioned
// error) and imported; whenever the import succeeds, the TOML it made must
// be a valid tlsfront configuration (config::load_string), or the target
// aborts. Inputs naming `include` are skipped: they would read whatever
// files the machine has.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/loader.h"
#include "tools/nginx_conf.h"
#include "tools/nginx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find("include") != std::string::npos) return 0;
  auto tree = tlsfront::tools::nginx::parse_string(text, "/fuzz/nginx.conf", "/fuzz");
  if (!tree.ok()) return 0;
  auto imported = tlsfront::tools::nginx::import(*tree, "/fuzz", "/fuzz/nginx.conf");
  if (!imported.ok()) return 0;
  auto cfg = tlsfront::config::load_string(imported->toml, "/fuzz/tlsfront.toml");
  if (!cfg.ok()) {
    std::fprintf(stderr, "import made an invalid configuration: %s\n%s", cfg.error().message().c_str(), imported->toml.c_str());
    std::abort();
  }
  return 0;
}
