#include "tools/import_nginx_command.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "config/loader.h"
#include "tools/nginx_conf.h"
#include "tools/nginx_import.h"

namespace tlsfront::tools {
namespace {

constexpr const char* kUsage =
    "Usage: tlsfront import-nginx [-o FILE] NGINX.CONF\n"
    "  The server blocks of an nginx configuration (and the files it includes) as a\n"
    "  tlsfront TOML configuration, on standard output or in FILE; every directive\n"
    "  not carried over is listed on standard error as \"file:line: directive: why\".\n"
    "  Relative paths (includes, certificates, logs) resolve against NGINX.CONF's directory.\n"
    "  -o FILE   write the configuration to FILE instead of standard output\n";

void report(const std::vector<nginx::Note>& notes) {
  for (const auto& n : notes) std::fprintf(stderr, "%s:%d: %s: %s\n", n.file.c_str(), n.line, n.directive.c_str(), n.why.c_str());
}

}  // namespace

int import_nginx_main(int argc, char** argv) {
  std::string input, output;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-o" || a == "--output") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tlsfront import-nginx: %s needs a file name\n%s", argv[i], kUsage);
        return 2;
      }
      output = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "tlsfront import-nginx: unknown option \"%s\"\n%s", argv[i], kUsage);
      return 2;
    } else if (!input.empty()) {
      std::fprintf(stderr, "tlsfront import-nginx: one nginx configuration file at a time\n%s", kUsage);
      return 2;
    } else {
      input = argv[i];
    }
  }
  if (input.empty()) {
    std::fprintf(stderr, "tlsfront import-nginx: no nginx configuration file given\n%s", kUsage);
    return 2;
  }
  auto tree = nginx::parse_file(input);
  if (!tree.ok()) {
    std::fprintf(stderr, "tlsfront import-nginx: %s\n", tree.error().message().c_str());
    return 1;
  }
  std::filesystem::path dir = std::filesystem::path(input).parent_path();
  std::vector<nginx::Note> notes;
  auto imported = nginx::import(*tree, dir.empty() ? "." : dir.string(), input, &notes);
  if (!imported.ok()) {
    report(notes);
    std::fprintf(stderr, "tlsfront import-nginx: %s: %s; %zu report line(s) above\n",
                 input.c_str(), imported.error().message().c_str(), notes.size());
    return 1;
  }
  report(imported->notes);
  // The schema check, as if the file were where it is going (relative paths: none are written).
  std::string name = output.empty() ? "import-nginx output" : output;
  if (auto cfg = config::load_string(imported->toml, name); !cfg.ok()) {
    std::fprintf(stderr, "tlsfront import-nginx: the configuration made from %s is not valid: %s\n", input.c_str(),
                 cfg.error().message().c_str());
    return 1;
  }
  if (output.empty()) {
    std::fwrite(imported->toml.data(), 1, imported->toml.size(), stdout);
  } else {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out << imported->toml;
    out.close();
    if (!out) {
      std::fprintf(stderr, "tlsfront import-nginx: cannot write \"%s\": %s\n", output.c_str(), std::strerror(errno));
      return 1;
    }
  }
  std::fprintf(stderr,
               "tlsfront import-nginx: %s: written%s%s; %zu report line(s) above (not carried over, or carried over "
               "with a difference)\n",
               input.c_str(), output.empty() ? "" : " to ", output.c_str(), imported->notes.size());
  return 0;
}

}  // namespace tlsfront::tools
