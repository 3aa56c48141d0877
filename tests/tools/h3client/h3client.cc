// tlsfront_h3client: one HTTP/3 request over one QUIC connection (ngtcp2,
// nghttp3, GnuTLS), for the integration tests. Unlike gtlsclient it can send
// an extended CONNECT (RFC 9220, WebSocket over HTTP/3: :protocol).
//
//   tlsfront_h3client [--ca FILE] [--sni NAME] [--header "name: value"]...
//       [--method M] [--protocol P] [--data FILE [--then FILE --after N]] [--timeout-ms N]
//       [--extra N] [--packet-per-stream] [--go-file F] [--order [--linger-ms N]]
//       HOST PORT PATH
//
// The response's fields go to stderr (":status: 200", "name: value"; names
// as received, trailers too), its body raw to stdout. Exit status: 0 the
// server ended the stream (FIN); 2 the server reset it ("reset: 0x10c" on
// stderr); 3 --protocol was given but the server's SETTINGS did not enable
// extended CONNECT; 1 anything else (handshake, certificate, connection
// error, timeout; the reason on stderr); 64 a usage error.
//
// --protocol makes the method CONNECT (unless --method says otherwise) and
// waits for the server's SETTINGS before the request leaves. Its --data
// bytes are sent only after a 2xx response (a tunnel), then FIN; without
// --data the request ends with its headers. --then's bytes follow --data's
// once --after N response body octets arrived (a WebSocket close frame
// after the echoes it closes), then FIN. Field names of --header are
// lowercased (HTTP/3 requires it).
//
// --extra N sends N more GETs of PATH with the request, on their own
// streams (their responses are read, not printed); --packet-per-stream
// puts every stream's data in a datagram of its own; --go-file F holds the
// requests after the handshake until F exists, and creates F.sent once the
// datagrams carrying them were sent (a test can stop the server meanwhile,
// so that they all wait in its socket). --order prints "order: EVENT" on
// stderr as each of these first arrives: answer (the response's first
// bytes), last_answer_end (the last response's end, --extra's included),
// session_ticket, new_token, large_datagram (above 1,200 bytes:
// a path-MTU probe while the path's MTU is not known yet); --linger-ms N
// reads N ms more after the response, for the events that follow it.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "h3client/client.h"

namespace {

using tlsfront::h3client::Client;
using tlsfront::h3client::Options;

[[noreturn]] void usage(const char* why) {
  if (why) std::fprintf(stderr, "tlsfront_h3client: %s\n", why);
  std::fprintf(stderr,
               "usage: tlsfront_h3client [--ca FILE] [--sni NAME] [--header \"name: value\"]... [--method M]\n"
               "         [--protocol P] [--data FILE [--then FILE --after N]] [--timeout-ms N]\n"
               "         [--extra N] [--packet-per-stream] [--go-file F] [--order [--linger-ms N]] HOST PORT PATH\n");
  std::exit(64);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--ca") {
      o.ca = value();
    } else if (a == "--sni") {
      o.sni = value();
    } else if (a == "--method") {
      o.method = value();
    } else if (a == "--protocol") {
      o.protocol = value();
    } else if (a == "--data") {
      o.data_file = value();
    } else if (a == "--then") {
      o.then_file = value();
    } else if (a == "--after") {
      o.then_after = std::strtoul(value().c_str(), nullptr, 10);
    } else if (a == "--timeout-ms") {
      o.timeout_ms = std::strtol(value().c_str(), nullptr, 10);
      if (o.timeout_ms <= 0) usage("--timeout-ms must be positive");
    } else if (a == "--header") {
      const std::string h = value();
      const size_t colon = h.find(':', 1);  // a pseudo-header's own colon is not the separator
      if (colon == std::string::npos) usage("--header wants \"name: value\"");
      std::string name = h.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
      const size_t start = h.find_first_not_of(' ', colon + 1);
      o.headers.emplace_back(name, start == std::string::npos ? std::string() : h.substr(start));
    } else if (a == "--extra") {
      o.extra = std::strtoul(value().c_str(), nullptr, 10);
    } else if (a == "--packet-per-stream") {
      o.packet_per_stream = true;
    } else if (a == "--order") {
      o.order = true;
    } else if (a == "--linger-ms") {
      o.linger_ms = std::strtol(value().c_str(), nullptr, 10);
    } else if (a == "--go-file") {
      o.go_file = value();
    } else if (a == "--help" || a == "-h") {
      usage(nullptr);
    } else if (a.size() > 1 && a[0] == '-') {
      usage(("unknown option " + a).c_str());
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 3) usage("HOST PORT PATH expected");
  o.host = positional[0];
  o.port = positional[1];
  o.path = positional[2];
  std::string body, then;
  for (auto [file, bytes] : {std::pair{&o.data_file, &body}, std::pair{&o.then_file, &then}}) {
    if (file->empty()) continue;
    std::ifstream f(*file, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "%s: %s\n", file->c_str(), std::strerror(errno));
      return 1;
    }
    bytes->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  if (!then.empty() && o.data_file.empty()) usage("--then needs --data");
  Client client(std::move(o), std::move(body), std::move(then));
  return client.run();
}
