// tlsfront entry point: turns argv into Server::run() or a configuration test.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "config/loader.h"
#include "log/log.h"
#include "control/server.h"
#include "tls/replay_recorder.h"
#include "tools/cert_command.h"
#include "tools/import_nginx_command.h"
#include "tools/logstats_command.h"
#include "tools/probe_command.h"

namespace {

constexpr const char* kUsage =
    "Usage: tlsfront --config FILE [--test] [--pid-file FILE]\n"
    "       tlsfront logstats [--by sni|alpn|upstream|hour] [--json] [FILE...]\n"
    "       tlsfront probe [--count N] [--ca FILE] [--resolve HOST:PORT:ADDR] [--timeout DURATION]\n"
    "                      [--warn-days N] [--json | --prom] URL...   (tlsfront probe --help)\n"
    "       tlsfront import-nginx [-o FILE] NGINX.CONF\n"
    "       tlsfront cert --config FILE put|get|list|rm|reseal ...   (tlsfront cert --help)\n"
    "       tlsfront --version | --help\n"
    "\n"
    "  -c, --config FILE  configuration file (TOML)\n"
    "  -t, --test         check the configuration, certificates and keys, then exit\n"
    "                     (0 when valid, 1 otherwise), like nginx -t\n"
    "      --pid-file FILE  write the PID there while running (overrides pid_file;\n"
    "                     \"\" for none)\n"
    "  -v, --version      print the version and exit\n"
    "  -h, --help         print this help and exit\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "logstats")) return tlsfront::tools::logstats_main(argc - 1, argv + 1);
  if (argc > 1 && !std::strcmp(argv[1], "probe")) return tlsfront::tools::probe_main(argc - 1, argv + 1);
  if (argc > 1 && !std::strcmp(argv[1], "cert")) return tlsfront::tools::cert_main(argc - 1, argv + 1);
  if (argc > 1 && !std::strcmp(argv[1], "import-nginx")) return tlsfront::tools::import_nginx_main(argc - 1, argv + 1);
  std::string config_path;
  std::optional<std::string> pid_file;  // --pid-file: overrides the config's pid_file
  bool test = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "--config") || !std::strcmp(a, "-c")) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tlsfront: %s needs a file name\n%s", a, kUsage);
        return 1;
      }
      config_path = argv[++i];
    } else if (!std::strncmp(a, "--config=", 9)) {
      config_path = a + 9;
    } else if (!std::strcmp(a, "--pid-file")) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tlsfront: %s needs a file name\n%s", a, kUsage);
        return 1;
      }
      pid_file = argv[++i];
    } else if (!std::strncmp(a, "--pid-file=", 11)) {
      pid_file = a + 11;
    } else if (!std::strcmp(a, "--test") || !std::strcmp(a, "-t")) {
      test = true;
    } else if (!std::strcmp(a, "--version") || !std::strcmp(a, "-v")) {
      std::printf("tlsfront %s\n", TLSFRONT_VERSION);
      return 0;
    } else if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
      std::printf("%s", kUsage);
      return 0;
    } else {
      std::fprintf(stderr, "tlsfront: unknown option \"%s\"\n%s", a, kUsage);
      return 1;
    }
  }
  if (config_path.empty()) {
    std::fprintf(stderr, "tlsfront: --config FILE is required\n%s", kUsage);
    return 1;
  }

  auto cfg = tlsfront::config::load_file(config_path);
  if (!cfg) {
    std::fprintf(stderr, "tlsfront: %s\n", cfg.error().message().c_str());
    if (test) std::fprintf(stderr, "tlsfront: configuration file %s test failed\n", config_path.c_str());
    return 1;
  }
  if (pid_file && !pid_file->empty()) pid_file = std::filesystem::absolute(*pid_file).lexically_normal().string();
  if (test) {
    if (pid_file) cfg->pid_file = *pid_file;
    if (auto st = tlsfront::control::Server::test(std::move(cfg).value()); !st) {
      std::fprintf(stderr, "tlsfront: %s\n", st.error().message().c_str());
      std::fprintf(stderr, "tlsfront: configuration file %s test failed\n", config_path.c_str());
      return 1;
    }
    std::fprintf(stderr, "tlsfront: configuration file %s test is successful\n", config_path.c_str());
    return 0;
  }
  tlsfront::tls::ReplayRecorder::node();  // the early-data recording starts now (its start window)
  tlsfront::control::Server server;
  auto rc = server.run(std::move(cfg).value(), pid_file);
  if (!rc) {
    tlsfront::log::error("{}", rc.error().message());
    return 1;
  }
  return *rc;
}
