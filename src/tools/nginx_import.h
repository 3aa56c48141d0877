// `tlsfront import-nginx`: the server blocks of an nginx configuration
// (tools/nginx_conf.h, includes resolved) turned into a tlsfront TOML file,
// with every directive that is not carried over listed with its place and
// why. docs/migrating-from-nginx.md has the
// directive-by-directive table; in short:
//
//   - servers with a TLS listen (`listen ... ssl`, or `ssl on`) are
//     imported; their listen addresses become [[listen]] tables (`http2` →
//     alpn h2), their certificates [tls] certificate/key (one pair in all) or
//     [[certificate]] tables (several: names from server_name, the default
//     server's first certificate `default`), stapling settings their OCSP
//     tables. A plain listen in a TLS server becomes a tls = false listener
//     with redirect_https = false; a plain-HTTP server that only redirects
//     to https (return 301 https://...$request_uri) one that redirects; any
//     other plain-HTTP server is listed.
//   - where the default server has no access_log at all (nginx then logs to
//     its compiled-in default), [log] access_log is tlsfront's usual
//     /var/log/tlsfront/access.log, and the report says so; `access_log off`
//     is access_log = "".
//   - the default server's gzip settings become [compression].
//   - settings tlsfront has once (protocols, ciphers, session cache, tickets,
//     client keepalive_timeout, access_log, ...) are taken from the default
//     server (the first with `default_server`, else the first TLS server), as
//     nginx applies them there (http-level values inherited); another
//     server's different value is listed.
//   - `location` with `proxy_pass` becomes a [[route]]: `=` path_exact,
//     prefix and `^~` path_prefix, `~` / `~*` path_regex (RE2 over the whole
//     path: ".*" added where the PCRE pattern is not anchored, "(?i)" for
//     `~*`; what RE2 cannot compile is listed). nginx tries exact, then the
//     longest prefix, then regexes unless that prefix is `^~`; tlsfront the
//     first in file order, so routes are written exact, `^~` (longest first),
//     regex (file order), other prefixes (longest first), and a prefix that a
//     shorter `^~` one now takes is listed. The default server's routes match
//     any host and come last, another server's match each of its exact
//     server names.
//   - add_header, proxy_hide_header and proxy_set_header become header rules
//     (import_headers in tools/nginx_import_detail.h), with nginx's
//     inheritance reproduced and its trap (a block with its own drops the
//     outer ones) reported where it bites.
//   - proxy_pass names an `upstream` block (servers, keepalive,
//     keepalive_timeout, keepalive_requests, fail_timeout) or an address; the
//     location's proxy_connect/read/send_timeout (nginx defaults when unset:
//     60s each) go into the [[upstream]], one per distinct combination
//     ("name", "name-2", ...). An upstream block without `keepalive` keeps no
//     idle connections in nginx, hence keepalive = 0.
//   - grpc_pass (grpc://ADDR, ADDR or an upstream block's name) becomes a
//     route to an [[upstream]] with protocol = "h2c" (never keepalive = 0),
//     its timeouts from grpc_connect/read/send_timeout, its header rules
//     from grpc_set_header / grpc_hide_header; grpcs:// the same with
//     protocol = "h2".
//   - proxy_pass https:// (grpc_pass grpcs://): the [[upstream]] gets a
//     `tls` table from the proxy_ssl_* (grpc_ssl_*) directives that apply
//     (nginx_import_upstream_tls.cc); nginx verifies nothing by default, so
//     without proxy_ssl_verify on it says verify = false, reported.
//
// A file with server or upstream blocks and no http block (a
// sites-available file, which nginx.conf's http block includes) is read as
// the content of an http block, and the report's first line says so.
//
// Relative paths resolve against the main file's directory (nginx: its
// configuration prefix for certificates and includes, which is that directory
// in the usual layouts; its prefix for access_log) and are written absolute.
// Thread affinity: none (one owner).
#pragma once

#include <string>
#include <vector>

#include "tools/nginx_conf.h"
#include "util/result.h"

namespace tlsfront::tools::nginx {

// A directive (or one of its parameters) not carried over.
struct Note {
  std::string file;
  int line = 0;
  std::string directive;
  std::string why;
};

struct Imported {
  std::string toml;
  std::vector<Note> notes;  // in file order, includes where they are included
};

// `base_dir` resolves relative paths; `source` names the main file in the
// TOML's header comment. Errc::NotFound when no TLS server with a usable
// certificate and proxy_pass location exists (the notes say why: `notes`).
[[nodiscard]] Result<Imported> import(const std::vector<Directive>& tree, const std::string& base_dir,
                                      const std::string& source, std::vector<Note>* notes_on_failure = nullptr);

}  // namespace tlsfront::tools::nginx
