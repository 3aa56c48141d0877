// `tlsfront probe [OPTIONS] URL...`: an outside-in check of HTTPS endpoints
// (tlsfront or any other server) for a terminal, cron or a monitoring
// system. Per URL: --count rounds of a full handshake plus a resumption with
// that connection's session, each exchange a GET of the URL's path over
// HTTP/1.1 (tools/probe_connection.h); the TLS facts of the first handshake
// (tools/probe_facts.h); TLS 1.2 resumption by ticket and by session ID;
// 0-RTT and TCP Fast Open. Output: a table, --json (one object) or --prom
// (Prometheus text format for node_exporter's textfile collector); shapes
// in docs/operations.md, "tlsfront probe".
// Exit status: the worst over the URLs, 0 ok, 1 warning, 2 critical (the
// reasons on stderr, one line each), 3 usage error.
// Thread affinity: the main thread (a command, not part of the server).
#pragma once

namespace tlsfront::tools {

// `argv[0]` is "probe".
int probe_main(int argc, char** argv);

}  // namespace tlsfront::tools
