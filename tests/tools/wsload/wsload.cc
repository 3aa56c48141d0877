// tlsfront_wsload: the WebSocket load tool of scripts/bench.sh's ws_echo_1,
// ws_echo_100 and ws_idle tests (issue #16 §3). Two modes:
//
//   tlsfront_wsload --serve IP:PORT [--corrupt-every N]
//       a cleartext WebSocket echo server (echo_server.h)
//   tlsfront_wsload --connect IP:PORT [--tls] [--sni localhost] [--path /]
//       [--tunnels N] [--message-bytes 64] [--timeout-ms 5000]
//       [--duration S | --hold S [--open-rate R]]
//       N tunnels that echo messages for S seconds, or that open, echo once
//       and stay idle for S seconds (load_client.h for states and output)
//
// Exit status: as serve() and run_load() say; 2 on a usage error.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include "wsload/echo_server.h"
#include "wsload/load_client.h"
#include "wsload/net.h"

namespace {

using namespace tlsfront::wsload;

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "tlsfront_wsload: %s\n"
               "usage: tlsfront_wsload --serve IP:PORT [--corrupt-every N]\n"
               "       tlsfront_wsload --connect IP:PORT [--tls] [--sni NAME] [--path /P] [--tunnels N]\n"
               "           [--message-bytes B] [--timeout-ms MS] [--duration S | --hold S [--open-rate R]]\n",
               why.c_str());
  std::exit(2);
}

long parse_long(const char* v, long min, long max, const char* what) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < min || n > max) usage(what);
  return n;
}

double parse_seconds(const char* v, double max, const char* what) {
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d > 0 && d <= max)) usage(what);
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  ServeOptions serve_o;
  LoadOptions load_o;
  std::string serve_at, connect_to;
  bool duration_set = false, open_rate_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tls") {
      load_o.tls = true;
      continue;
    }
    static const std::string kValued[] = {"--serve",    "--connect", "--corrupt-every", "--sni",
                                          "--path",     "--tunnels", "--message-bytes", "--timeout-ms",
                                          "--duration", "--hold",    "--open-rate"};
    if (std::find(std::begin(kValued), std::end(kValued), a) == std::end(kValued)) usage("unknown argument " + a);
    if (i + 1 >= argc) usage("missing value for " + a);
    const char* v = argv[++i];
    if (a == "--serve") {
      serve_at = v;
    } else if (a == "--connect") {
      connect_to = v;
    } else if (a == "--corrupt-every") {
      serve_o.corrupt_every = parse_long(v, 1, 1'000'000'000, "--corrupt-every wants 1..1000000000");
    } else if (a == "--sni") {
      load_o.sni = v;
      if (load_o.sni.empty() || load_o.sni.size() > 253 || load_o.sni.find_first_of(" \r\n") != std::string::npos)
        usage("--sni wants a host name");
    } else if (a == "--path") {
      load_o.path = v;
      if (!load_o.path.starts_with("/") || load_o.path.find_first_of(" \r\n") != std::string::npos)
        usage("--path wants an origin-form target (/...) without spaces");
    } else if (a == "--tunnels") {
      load_o.tunnels = static_cast<int>(parse_long(v, 1, 100'000, "--tunnels wants 1..100000"));
    } else if (a == "--message-bytes") {
      load_o.message_bytes = static_cast<size_t>(parse_long(v, 1, 1 << 20, "--message-bytes wants 1..1048576"));
    } else if (a == "--timeout-ms") {
      load_o.timeout_ms = static_cast<int>(parse_long(v, 1, 600'000, "--timeout-ms wants 1..600000"));
    } else if (a == "--duration") {
      load_o.duration_s = parse_seconds(v, 86400, "--duration wants 0 < S <= 86400");
      duration_set = true;
    } else if (a == "--hold") {
      load_o.hold_s = parse_seconds(v, 86400, "--hold wants 0 < S <= 86400");
    } else if (a == "--open-rate") {
      load_o.open_rate = parse_seconds(v, 1e6, "--open-rate wants 0 < R <= 1000000");
      open_rate_set = true;
    }
  }
  if (serve_at.empty() == connect_to.empty()) usage("one of --serve and --connect");
  if (!serve_at.empty()) {
    if (argc != 3 && !(argc == 5 && serve_o.corrupt_every > 0)) usage("--serve takes only --corrupt-every");
    if (!parse_address(serve_at, serve_o.ip, serve_o.port)) usage("--serve wants IPV4:PORT or [IPV6]:PORT");
    return serve(serve_o);
  }
  if (serve_o.corrupt_every > 0) usage("--corrupt-every is for --serve");
  if (duration_set && load_o.hold_s > 0) usage("--duration and --hold exclude each other");
  if (open_rate_set && load_o.hold_s == 0) usage("--open-rate is for --hold");
  if (!parse_address(connect_to, load_o.ip, load_o.port)) usage("--connect wants IPV4:PORT or [IPV6]:PORT");
  return run_load(load_o);
}
