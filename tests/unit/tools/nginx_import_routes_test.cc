// Tests for import-nginx's request path: locations become routes in
// nginx's order, return and :80 redirect servers, gzip, upstream blocks and
// the header directives with nginx's inheritance (including HSTS becoming
// [tls] hsts), grpc_pass as an h2c upstream. Each produced TOML is read back with config::load_string.
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <re2/re2.h>

#include "nginx_import_support.h"

namespace tlsfront::tools::nginx {
namespace {

using config::Millis;
using namespace test;  // NOLINT(google-build-using-namespace): the shared helpers

TEST(NginxImport, LocationsBecomeRoutesInNginxsOrder) {
  Outcome r = run(
      "http { upstream app { server 127.0.0.1:9001; keepalive 8; }\n"
      "server { listen 443 ssl; ssl_certificate c.pem; ssl_certificate_key c.key;\n"
      "proxy_connect_timeout 2s;\n"
      "location / { proxy_pass http://app/; }\n"
      "location /a/ { proxy_pass http://app; proxy_read_timeout 1h; }\n"
      "location ^~ /a/b/ { proxy_pass http://app; }\n"
      "location = /x { proxy_pass http://app; }\n"
      "location ~* \\.jpg$ { proxy_pass http://app; }\n"
      "location /s/ { proxy_pass ftp://127.0.0.1:21; }\n"
      "location /v/ { proxy_pass http://$host; }\n"
      "location /n/ { proxy_pass http://10.0.0.256:80; }\n"
      "location /u/ { proxy_pass http://app/other/; }\n"
      "location ~ ^/(v[0-9]+)/x/\\1$ { proxy_pass http://app; }\n"
      "location ~ ^/img/|^/css/ { proxy_pass http://app; }\n"
      "location /a/b/c/ { proxy_pass http://app; }\n"
      "} }\n");
  ASSERT_TRUE(r.ok) << r.error;
  // Exact, then ^~, then regexes in file order, then the other prefixes, longest first.
  ASSERT_EQ(r.cfg.routes.size(), 7u) << r.toml;
  EXPECT_EQ(r.cfg.routes[0].path_match, config::PathMatch::Exact);
  EXPECT_EQ(r.cfg.routes[0].path, "/x");
  EXPECT_EQ(r.cfg.routes[1].path, "/a/b/");
  EXPECT_EQ(r.cfg.routes[2].path_match, config::PathMatch::Regex);
  EXPECT_EQ(r.cfg.routes[2].path, "(?i).*\\.jpg");  // searched: .* before; $: nothing after
  EXPECT_TRUE(re2::RE2::FullMatch("/p/A.JPG", *r.cfg.routes[2].regex));
  EXPECT_FALSE(re2::RE2::FullMatch("/p/a.jpgx", *r.cfg.routes[2].regex));
  EXPECT_EQ(r.cfg.routes[3].path, ".*(?:^/img/|^/css/).*");  // an alternation keeps its anchors
  EXPECT_TRUE(re2::RE2::FullMatch("/css/a.css", *r.cfg.routes[3].regex));
  EXPECT_FALSE(re2::RE2::FullMatch("/x/css/a.css", *r.cfg.routes[3].regex));
  EXPECT_EQ(r.cfg.routes[4].path, "/a/b/c/");
  EXPECT_EQ(r.cfg.routes[5].path, "/a/");
  EXPECT_EQ(r.cfg.routes[6].path, "/");
  for (const auto& route : r.cfg.routes) EXPECT_EQ(route.host, "");
  // Two timeout combinations of one upstream block: two [[upstream]]s.
  ASSERT_EQ(r.cfg.upstreams.size(), 2u);
  EXPECT_EQ(r.cfg.upstreams[0].name, "app");
  EXPECT_EQ(r.cfg.upstreams[0].keepalive, 8u);
  EXPECT_EQ(r.cfg.upstreams[0].connect_timeout, Millis{2'000});
  EXPECT_EQ(r.cfg.upstreams[0].read_timeout, Millis{60'000});  // nginx's default
  EXPECT_EQ(r.cfg.upstreams[1].name, "app-2");
  EXPECT_EQ(r.cfg.upstreams[1].read_timeout, Millis{3'600'000});
  EXPECT_EQ(r.cfg.routes[5].upstream, "app-2");
  EXPECT_EQ(r.cfg.routes[1].upstream, "app");
  EXPECT_REPORTS(r, "n.conf:8: location: carried over as path_regex \"(?i).*\\\\.jpg\": RE2, tried in file order after exact and ^~ routes");
  EXPECT_REPORTS(r, "n.conf:9: proxy_pass: not carried over: not an http:// or https:// URL (no route)\n");
  EXPECT_REPORTS(r, "n.conf:10: proxy_pass: not carried over: proxy_pass with variables (no route)\n");
  EXPECT_REPORTS(r, "n.conf:11: proxy_pass: not carried over: invalid address \"10.0.0.256:80\"");
  EXPECT_REPORTS(r, "n.conf:12: proxy_pass: not carried over: with the URI /other/ nginx replaces the location's prefix /u/");
  EXPECT_REPORTS(r, "n.conf:12: location: no route: no usable proxy_pass, grpc_pass, return or root in it");
  EXPECT_REPORTS(r, "n.conf:13: location: not carried over: regex location: RE2 cannot compile \"/(v[0-9]+)/x/\\\\1\" (");
  EXPECT_REPORTS(r, "n.conf:15: location: carried over, but its requests go to the route of ^~ /a/b/ (tried first); nginx takes the longer prefix\n");
}

TEST(NginxImport, ReturnBecomesAFixedAnswer) {
  Outcome r = run(server(
      "default_type application/json;\n"
      "location = /health { return 200 '{\"ok\":true}'; }\n"
      "location /old/ { return 301 https://$host/new$request_uri; proxy_pass http://127.0.0.1:9000; }\n"
      "location = /gone { return 410; }\n"
      "location = /x { return https://example.com/x; }\n"
      "location = /drop { return 444; }\n"
      "location = /v { return 200 $remote_addr; }\n"
      "location = /u { return 302 https://$server_name/; }"));
  ASSERT_TRUE(r.ok) << r.error;
  auto route = [&](const std::string& path) -> const config::Route* {
    for (const auto& x : r.cfg.routes) {
      if (x.path == path) return &x;
    }
    return nullptr;
  };
  ASSERT_NE(route("/health"), nullptr) << r.toml;
  EXPECT_EQ(route("/health")->action, config::RouteAction::Return);
  EXPECT_EQ(route("/health")->answer.body, "{\"ok\":true}");
  EXPECT_EQ(route("/health")->answer.content_type, "application/json");  // nginx's default_type
  ASSERT_NE(route("/old/"), nullptr);
  EXPECT_EQ(route("/old/")->action, config::RouteAction::Redirect);
  EXPECT_EQ(route("/old/")->answer.status, 301);
  ASSERT_EQ(route("/old/")->answer.location.size(), 4u);  // "https://", $host, "/new", $request_uri
  EXPECT_EQ(route("/old/")->answer.location[3].variable, config::kLocationVariableCount - 1);  // $request_uri
  ASSERT_NE(route("/gone"), nullptr);
  EXPECT_EQ(route("/gone")->answer.status, 410);
  ASSERT_NE(route("/x"), nullptr);
  EXPECT_EQ(route("/x")->answer.status, 302);  // a bare URL
  EXPECT_EQ(route("/drop"), nullptr);
  EXPECT_EQ(route("/v"), nullptr);
  EXPECT_EQ(route("/u"), nullptr);
  EXPECT_REPORTS(r, "n.conf:9: proxy_pass: not needed: nginx's return in this location answers before proxy_pass would\n");
  EXPECT_REPORTS(r, "n.conf:10: return: carried over; nginx sends its own HTML page for the status, tlsfront an empty body\n");
  EXPECT_REPORTS(r, "n.conf:12: return: no equivalent: 444 closes the connection without a response\n");
  EXPECT_REPORTS(r, "n.conf:13: return: not carried over: the text has variables (tlsfront's body is literal)\n");
  EXPECT_REPORTS(r, "n.conf:14: return: not carried over: tlsfront has no $server_name here");
}

TEST(NginxImport, CleartextServers) {
  // A :80 server that redirects (to a fixed name, with 302): a redirecting
  // cleartext listener; one that serves content: listed.
  Outcome r = run(server("",
                         "server { listen 80; listen [::]:80; server_name api.example;\n"
                         "location /.well-known/acme-challenge/ { root /var/www/acme; }\n"
                         "return 302 https://api.example$request_uri; }\n"
                         "server { listen 8080; location / { proxy_pass http://127.0.0.1:9001; } }\n"));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.listeners.size(), 3u) << r.toml;
  EXPECT_FALSE(r.cfg.listeners[0].tls);
  EXPECT_TRUE(r.cfg.listeners[0].redirect_https);
  EXPECT_EQ(r.cfg.listeners[1].address.to_string(), "[::]:80");
  EXPECT_TRUE(r.cfg.listeners[2].tls);
  EXPECT_REPORTS(r, "n.conf:3: location: not carried over by import-nginx: an ACME client's upstream is the listener's acme_upstream");
  EXPECT_REPORTS(r, "n.conf:4: return: carried over as a cleartext listener's redirect_https: tlsfront answers 301 to GET "
                    "and HEAD, 308 to other methods (a 302 turns a POST into a GET)\n");
  EXPECT_REPORTS(r, "n.conf:4: return: carried over as a cleartext listener's redirect_https: it redirects to the request's "
                    "own host ($host), not api.example\n");
  EXPECT_REPORTS(r, "n.conf:5: server: not carried over: no TLS listen (listen ... ssl), and not a redirect to https");

  // The port of nginx's URL is the listener's https_port; $server_name is reported.
  r = run(server("", "server { listen 8080; return 308 https://$server_name:8443$request_uri; }"));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.listeners.size(), 2u) << r.toml;
  EXPECT_EQ(r.cfg.listeners[0].https_port, 8443);
  EXPECT_REPORTS(r, "n.conf:2: return: carried over as a cleartext listener's redirect_https: it redirects to the "
                    "request's own host ($host), not $server_name\n");
}

TEST(NginxImport, GzipBecomesCompression) {
  Outcome r = run(server("gzip on; gzip_types application/json text/css */* bad; gzip_min_length 1k; gzip_comp_level 5;\n"
                         "gzip_vary on; gzip_proxied any;"));
  ASSERT_TRUE(r.ok) << r.error;
  const config::Compression& c = r.cfg.routes[0].compression;  // the defaults every route starts from
  EXPECT_EQ(c.encodings, std::vector<std::string>{"gzip"});
  EXPECT_EQ(c.types, (std::vector<std::string>{"text/html", "application/json", "text/css"}));  // nginx adds text/html
  EXPECT_EQ(c.min_bytes, 1024u);
  EXPECT_EQ(c.gzip_level, 5);
  EXPECT_REPORTS(r, "n.conf:7: gzip_types: */* not carried over: not a type/subtype\n");
  EXPECT_REPORTS(r, "n.conf:7: gzip_types: bad not carried over: not a type/subtype\n");
  EXPECT_REPORTS(r, "n.conf:8: gzip_vary: not needed: tlsfront adds Vary: Accept-Encoding to every compressible response\n");

  // Only gzip on: nginx's 20-byte minimum is not copied; its text/html-only default neither.
  r = run(server("gzip on;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.routes[0].compression.min_bytes, 1024u);
  EXPECT_EQ(r.cfg.routes[0].compression.types, config::Compression{}.types);
  EXPECT_REPORTS(r, "n.conf:7: gzip: carried over; without gzip_min_length nginx compresses answers from 20 bytes");
  r = run(server("gzip off; gzip_comp_level 4;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.cfg.routes[0].compression.encodings.empty());
  EXPECT_REPORTS(r, "n.conf:7: gzip_comp_level: not needed: gzip is off\n");
}

TEST(NginxImport, UpstreamBlocks) {
  Outcome r = run(server("location /b/ { proxy_pass http://b; }",
                     "upstream b { server 127.0.0.1:9001 fail_timeout=30s; server [::1]:9002 fail_timeout=30s;\n"
                     "server 127.0.0.1:9003 backup fail_timeout=30s; server 127.0.0.1:9004 down;\n"
                     "server unix:/run/b.sock; server 127.0.0.1:9005 weight=5 fail_timeout=30s;\n"
                     "keepalive_timeout 5m; keepalive_requests 50; zone b 64k; }"));
  ASSERT_TRUE(r.ok) << r.error;
  const config::Upstream* b = nullptr;
  for (const auto& u : r.cfg.upstreams) {
    if (u.name == "b") b = &u;
  }
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->servers.size(), 4u);
  EXPECT_EQ(b->servers[1].to_string(), "[::1]:9002");
  EXPECT_TRUE(b->options_of(2).backup);
  EXPECT_EQ(b->options_of(3).weight, 5);
  EXPECT_EQ(b->options_of(3), (config::ServerOptions{.weight = 5}));
  EXPECT_EQ(b->keepalive, 0u);  // no `keepalive`: nginx pools nothing
  EXPECT_EQ(b->keepalive_timeout, Millis{300'000});
  EXPECT_EQ(b->keepalive_requests, 50u);
  EXPECT_EQ(b->fail_timeout, Millis{30'000});
  EXPECT_REPORTS(r, "n.conf:3: server: not carried over: marked down\n");
  EXPECT_REPORTS(r, "n.conf:4: server: not carried over: no UNIX-domain upstreams\n");
  EXPECT_REPORTS(r, "n.conf:5: zone: not needed");
}

TEST(NginxImport, HashBalancing) {
  Outcome r = run(server("location /b/ { proxy_pass http://b; }\nlocation /c/ { proxy_pass http://c; }\n"
                         "location /d/ { proxy_pass http://d; }\nlocation /e/ { proxy_pass http://e; }",
                         "upstream b { server 127.0.0.1:9001; server 127.0.0.1:9002; ip_hash; }\n"
                         "upstream c { server 127.0.0.1:9003; hash $http_x_user consistent; }\n"
                         "upstream d { server 127.0.0.1:9004; hash $cookie_session; }\n"
                         "upstream e { server 127.0.0.1:9005; hash $request_uri consistent; }\n"));
  ASSERT_TRUE(r.ok) << r.error;
  std::map<std::string, const config::Upstream*> by_name;
  for (const auto& u : r.cfg.upstreams) by_name[u.name] = &u;
  for (const char* name : {"b", "c", "d", "e"}) ASSERT_TRUE(by_name.count(name)) << name << "\n" << r.toml;
  EXPECT_EQ(by_name["b"]->balance, config::Balance::Hash);
  EXPECT_EQ(by_name["b"]->hash.kind, config::HashKey::Kind::RemoteAddr);
  EXPECT_EQ(by_name["c"]->hash.kind, config::HashKey::Kind::Header);
  EXPECT_EQ(by_name["c"]->hash.name, "x-user");
  EXPECT_EQ(by_name["d"]->hash.kind, config::HashKey::Kind::Cookie);
  EXPECT_EQ(by_name["d"]->hash.name, "session");
  EXPECT_EQ(by_name["e"]->balance, config::Balance::LeastRequest);
  EXPECT_REPORTS(r, "n.conf:2: ip_hash: carried over as balance = \"hash\", hash = \"$remote_addr\"");
  EXPECT_REPORTS(r, "n.conf:4: hash: carried over as a consistent hash");
  EXPECT_REPORTS(r, "n.conf:5: hash: not carried over: tlsfront hashes $remote_addr");
}

TEST(NginxImport, BalancingAndPassiveHealth) {
  Outcome r = run(server("location /b/ { proxy_pass http://b; }\nlocation /c/ { proxy_pass http://c; }",
                     "upstream b { server 127.0.0.1:9001 max_fails=3 fail_timeout=30s;\n"
                     "server 127.0.0.1:9002 max_fails=3 fail_timeout=30s; least_conn; }\n"
                     "upstream c { server 127.0.0.1:9003 max_fails=2; server 127.0.0.1:9004; random; }\n"));
  ASSERT_TRUE(r.ok) << r.error;
  const config::Upstream* b = nullptr;
  const config::Upstream* c = nullptr;
  for (const auto& u : r.cfg.upstreams) {
    if (u.name == "b") b = &u;
    if (u.name == "c") c = &u;
  }
  ASSERT_TRUE(b && c) << r.toml;
  EXPECT_EQ(b->max_fails, 3);
  EXPECT_EQ(b->fail_timeout, Millis{30'000});
  EXPECT_EQ(b->balance, config::Balance::LeastRequest);
  EXPECT_REPORTS(r, "n.conf:3: least_conn: carried over as balance = \"least_request\"");
  EXPECT_EQ(c->balance, config::Balance::Random);
  EXPECT_EQ(c->max_fails, 1);  // differs between servers: tlsfront's default, reported
  EXPECT_REPORTS(r, "max_fails not carried over: it differs between servers");
}

// nginx's three-directive WebSocket pattern is what tlsfront does anyway.
TEST(NginxImport, WebSocketPatternIsNotNeeded) {
  Outcome r = run(server(
      "proxy_http_version 1.1;\nproxy_set_header Upgrade $http_upgrade;\nproxy_set_header Connection \"upgrade\";"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, "n.conf:7: proxy_http_version: not needed: HTTP/1.1 to http/1.1 upstreams is the default\n");
  EXPECT_REPORTS(r, "n.conf:8: proxy_set_header: not needed: tlsfront forwards the Upgrade a route allows");
  EXPECT_REPORTS(r, "n.conf:9: proxy_set_header: not needed: tlsfront forwards the Upgrade a route allows");
  ASSERT_FALSE(r.cfg.routes.empty());
  EXPECT_EQ(r.cfg.routes[0].upgrade, (std::vector<std::string>{"websocket"}));
  EXPECT_TRUE(r.cfg.routes[0].request_headers.set.empty());
}

TEST(NginxImport, ProxySetHeaderBecomesRequestHeaders) {
  Outcome r = run(server(
      "proxy_http_version 1.0;\nproxy_set_header Connection \"\";\nproxy_set_header X-Real-IP $remote_addr;\n"
      "proxy_set_header X-Forwarded-Proto $scheme;\nproxy_set_header X-Tenant $http_x_tenant;\n"
      "proxy_set_header X-Edge \"tls ${ssl_protocol}/$ssl_cipher $\";\nproxy_set_header Accept-Encoding \"\";\n"
      "proxy_set_header Upgrade $http_upgrade;\nproxy_set_header X-Edge again;\nproxy_set_header Host \"\";\n"
      "proxy_set_header Host api.internal;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, "n.conf:7: proxy_http_version: no equivalent: tlsfront speaks HTTP/1.1 or h2c to upstreams ([[upstream]] protocol)\n");
  EXPECT_REPORTS(r, "n.conf:8: proxy_set_header: not needed: tlsfront removes the client's Connection");
  EXPECT_REPORTS(r, "n.conf:9: proxy_set_header: not needed: tlsfront adds X-Real-IP\n");
  EXPECT_REPORTS(r, "n.conf:10: proxy_set_header: not needed: tlsfront adds X-Forwarded-Proto\n");
  EXPECT_REPORTS(r, "n.conf:11: proxy_set_header: not carried over: tlsfront has no $http_x_tenant here (its variables: docs/configuration.md, [response_headers])\n");
  EXPECT_REPORTS(r,
                 "n.conf:14: proxy_set_header: not needed: tlsfront forwards the Upgrade a route allows with "
                 "Connection: upgrade (upgrade = [\"websocket\"] by default)\n");
  EXPECT_REPORTS(r, "n.conf:15: proxy_set_header: not carried over: a second proxy_set_header for X-Edge (tlsfront's set sends one field)\n");
  EXPECT_REPORTS(r, "n.conf:16: proxy_set_header: not carried over: an HTTP/1.1 request needs a Host\n");
  const config::HeaderRules& h = r.cfg.request_headers;  // the server's: the defaults
  EXPECT_EQ(h.remove, std::vector<std::string>{"accept-encoding"});  // nginx passes no field for ""
  ASSERT_EQ(h.set.size(), 2u) << r.toml;
  EXPECT_EQ(h.set[0].name, "Host");  // the TOML table's order
  ASSERT_EQ(h.set[0].value.size(), 1u);
  EXPECT_EQ(h.set[0].value[0].literal, "api.internal");
  EXPECT_EQ(h.set[1].name, "X-Edge");
  ASSERT_EQ(h.set[1].value.size(), 5u);  // "tls ", $ssl_protocol, "/", $ssl_cipher, " $"
  EXPECT_EQ(h.set[1].value[1].variable, 4);
  EXPECT_EQ(h.set[1].value[4].literal, " $");
  EXPECT_TRUE(r.cfg.routes[0].request_headers == config::HeaderRules{});  // the location inherits the server's
}

TEST(NginxImport, AddHeaderBecomesResponseHeadersWithNginxsInheritance) {
  Outcome r = run(
      "http { add_header X-Frame-Options DENY always;\n"
      "add_header Strict-Transport-Security \"max-age=63072000\" always;\n"
      "server { listen 443 ssl; ssl_certificate c.pem; ssl_certificate_key c.key;\n"
      "proxy_hide_header X-Powered-By;\n"
      "location /api/ { proxy_pass http://127.0.0.1:9000; }\n"
      "location /cfg/ { proxy_pass http://127.0.0.1:9000; add_header Cache-Control \"public, max-age=60\";\n"
      "add_header Link \"</a>; rel=preload\"; add_header Link \"</b>; rel=preload\";\n"
      "add_header X-Id $request_id always; add_header X-Up $upstream_addr; add_header X-E \"\"; add_header Connection close; }\n"
      "} }\n");
  ASSERT_TRUE(r.ok) << r.error;
  // Every route gets the same HSTS add_header ... always: [tls] hsts. Not
  // here: /cfg/ has add_header of its own, so nginx sends it no HSTS.
  EXPECT_EQ(r.cfg.tls.hsts, "");
  const config::HeaderRules& d = r.cfg.response_headers;
  EXPECT_TRUE(d.always);
  ASSERT_EQ(d.add.size(), 2u) << r.toml;
  EXPECT_EQ(d.add[0].name, "Strict-Transport-Security");  // the TOML table's order
  EXPECT_EQ(d.add[1].name, "X-Frame-Options");
  EXPECT_EQ(d.remove, std::vector<std::string>{"x-powered-by"});
  ASSERT_EQ(r.cfg.routes.size(), 2u);
  const config::Route& cfg = r.cfg.routes[1];  // same length as /api/: file order
  EXPECT_EQ(cfg.path, "/cfg/");
  EXPECT_FALSE(cfg.response_headers.inherit);
  EXPECT_FALSE(cfg.response_headers.always);  // mixed: nginx's always for X-Id only
  ASSERT_EQ(cfg.response_headers.add.size(), 4u) << r.toml;
  EXPECT_EQ(cfg.response_headers.add[0].name, "Cache-Control");
  EXPECT_EQ(cfg.response_headers.add[1].name, "Link");
  EXPECT_EQ(cfg.response_headers.add[2].name, "Link");
  EXPECT_EQ(cfg.response_headers.add[3].name, "X-Id");
  EXPECT_EQ(cfg.response_headers.remove, std::vector<std::string>{"x-powered-by"});
  EXPECT_TRUE(r.cfg.routes[0].response_headers == config::HeaderRules{}) << r.toml;  // /api/: the defaults
  EXPECT_REPORTS(r, "n.conf:6: add_header: carried over; nginx adds it only to 200, 201, 204, 206, 301, 302, 303, 304, 307 and 308 responses");
  EXPECT_REPORTS(r, "n.conf:6: add_header: nginx applies none of the enclosing blocks' add_header here (X-Frame-Options, "
                    "Strict-Transport-Security): a block with its own inherits none");
  EXPECT_REPORTS(r, "n.conf:8: add_header: carried over without always: tlsfront's always applies to a table as a whole");
  EXPECT_REPORTS(r, "n.conf:8: add_header: not carried over: tlsfront has no $upstream_addr");
  EXPECT_REPORTS(r, "n.conf:8: add_header: not carried over: nginx adds nothing for an empty value\n");
  EXPECT_REPORTS(r, "n.conf:8: add_header: not carried over: header \"Connection\" cannot be set, added or removed");
}

TEST(NginxImport, HstsEveryRouteGetsBecomesTlsHsts) {
  Outcome r = run(server("add_header Strict-Transport-Security \"max-age=300; includeSubDomains\" always;\n"
                         "location /a/ { proxy_pass http://127.0.0.1:9000; add_header X-A 1;\n"
                         "add_header Strict-Transport-Security \"max-age=300; includeSubDomains\" always; }"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.hsts, "max-age=300; includeSubDomains");
  EXPECT_TRUE(r.cfg.response_headers == config::HeaderRules{}) << r.toml;
  ASSERT_EQ(r.cfg.routes.size(), 2u);
  ASSERT_EQ(r.cfg.routes[0].response_headers.add.size(), 1u) << r.toml;  // X-A; HSTS comes from [tls] hsts
  EXPECT_EQ(r.cfg.routes[0].response_headers.add[0].name, "X-A");
  EXPECT_EQ(r.report.find("Strict-Transport-Security"), std::string::npos) << r.report;

  // Without always nginx skips its own error answers: a header rule, not [tls] hsts.
  r = run(server("add_header Strict-Transport-Security max-age=300;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.hsts, "");
  ASSERT_EQ(r.cfg.response_headers.add.size(), 1u);
  EXPECT_FALSE(r.cfg.response_headers.always);
}

// A value [tls] hsts would refuse (the fuzz find: no max-age directive at
// the start or after ";") stays a header rule, which tlsfront takes as it is.
TEST(NginxImport, HstsTheLoaderWouldRefuseStaysAHeaderRule) {
  Outcome r = run(server("add_header Strict-Transport-Security ',\"max-age=31536000\"' always;\n"));
  ASSERT_TRUE(r.ok) << r.error << r.report;
  EXPECT_EQ(r.cfg.tls.hsts, "");
  ASSERT_EQ(r.cfg.response_headers.add.size(), 1u) << r.toml;  // the server's: every route's default
  ASSERT_EQ(r.cfg.response_headers.add[0].value.size(), 1u);
  EXPECT_EQ(r.cfg.response_headers.add[0].value[0].literal, ",\"max-age=31536000\"");
}

TEST(NginxImport, GrpcPassBecomesAnH2cUpstream) {
  Outcome r = run(server(
      "proxy_set_header X-Tenant acme;\n"
      "location /orders.v1.Orders/ { grpc_pass grpc://orders; grpc_read_timeout 1h; grpc_set_header X-Call grpc; "
      "grpc_hide_header X-Debug; grpc_buffer_size 16k; grpc_socket_keepalive on; }\n"
      "location /users.v1.Users/ { grpc_pass 127.0.0.1:50061; }\n"
      "location /secure.v1.S/ { grpc_pass grpcs://127.0.0.1:50071; }\n"
      "location /sock.v1.S/ { grpc_pass unix:/run/g.sock; }\n"
      "location /http/ { proxy_pass http://orders; }",
      "upstream orders { server 127.0.0.1:50051; keepalive 8; }"));
  ASSERT_TRUE(r.ok) << r.error;
  std::map<std::string, const config::Upstream*> ups;
  for (const auto& u : r.cfg.upstreams) ups[u.name] = &u;
  // The block used by grpc_pass and by proxy_pass: one [[upstream]] each.
  ASSERT_EQ(ups.count("orders"), 1u) << r.toml;
  ASSERT_EQ(ups.count("orders-2"), 1u) << r.toml;
  const config::Upstream& grpc = *ups["orders"];
  EXPECT_EQ(grpc.protocol, config::UpstreamProtocol::H2c);
  EXPECT_EQ(grpc.keepalive, 8u);
  EXPECT_EQ(grpc.read_timeout, Millis{3'600'000});
  EXPECT_EQ(grpc.send_timeout, Millis{60'000});  // nginx's default
  EXPECT_EQ(ups["orders-2"]->protocol, config::UpstreamProtocol::Http1);
  EXPECT_EQ(ups["orders-2"]->read_timeout, Millis{60'000});
  // An address without an upstream block: h2c with tlsfront's connection
  // bound (never keepalive = 0, which h2c refuses).
  ASSERT_EQ(ups.count("127.0.0.1_50061"), 1u) << r.toml;
  EXPECT_EQ(ups["127.0.0.1_50061"]->protocol, config::UpstreamProtocol::H2c);
  EXPECT_EQ(ups["127.0.0.1_50061"]->keepalive, config::Upstream{}.keepalive);

  const config::Route* orders = nullptr;
  for (const auto& route : r.cfg.routes) {
    if (route.path == "/orders.v1.Orders/") orders = &route;
  }
  ASSERT_NE(orders, nullptr) << r.toml;
  EXPECT_EQ(orders->upstream, "orders");
  // grpc_set_header, not the server's proxy_set_header (nginx's grpc module
  // never reads proxy_*): its own rules, nothing inherited.
  EXPECT_FALSE(orders->request_headers.inherit);
  ASSERT_EQ(orders->request_headers.set.size(), 1u) << r.toml;
  EXPECT_EQ(orders->request_headers.set[0].name, "X-Call");
  EXPECT_EQ(orders->response_headers.remove, std::vector<std::string>{"x-debug"});

  EXPECT_REPORTS(r, "n.conf:8: grpc_pass: carried over as an h2c upstream; the upstream block's keepalive bounds");
  EXPECT_REPORTS(r, "n.conf:8: grpc_buffer_size: not needed: gRPC messages are streamed frame by frame");
  EXPECT_REPORTS(r, "n.conf:8: grpc_socket_keepalive: not carried over: no TCP keepalive; h2_ping_interval checks");
  EXPECT_REPORTS(r, "n.conf:9: grpc_pass: carried over as an h2c upstream: calls share up to keepalive (32)");
  // grpcs://: HTTP/2 over TLS; nginx's grpc_ssl_verify is off by default.
  ASSERT_EQ(ups.count("127.0.0.1_50071"), 1u) << r.toml;
  EXPECT_EQ(ups["127.0.0.1_50071"]->protocol, config::UpstreamProtocol::H2);
  EXPECT_TRUE(ups["127.0.0.1_50071"]->tls.enabled);
  EXPECT_FALSE(ups["127.0.0.1_50071"]->tls.verify);
  EXPECT_REPORTS(r, "n.conf:10: grpc_pass: carried over as an h2 upstream (HTTP/2 over TLS): calls share");
  EXPECT_REPORTS(r,
                 "n.conf:10: grpc_pass: carried over as verify = false: nginx checks no certificate of the server "
                 "(grpc_ssl_verify off, its default), tlsfront checks it by default; set trusted_ca and drop "
                 "verify = false\n");
  EXPECT_REPORTS(r, "n.conf:11: grpc_pass: not carried over: no UNIX-domain upstreams (no route)\n");
  EXPECT_EQ(r.report.find("grpc_read_timeout"), std::string::npos) << r.report;  // carried over
  EXPECT_EQ(r.report.find("grpc_set_header"), std::string::npos) << r.report;
  EXPECT_NE(r.toml.find("protocol = \"h2c\""), std::string::npos) << r.toml;
}

TEST(NginxImport, ProxyPassHttpsBecomesAnUpstreamWithTls) {
  Outcome r = run(server(
      "location /pay/ { proxy_pass https://pay; proxy_ssl_verify on; proxy_ssl_trusted_certificate ca.pem;\n"
      "  proxy_ssl_name payments.internal; proxy_ssl_server_name on; proxy_ssl_certificate /etc/c/client.pem;\n"
      "  proxy_ssl_certificate_key client.key; proxy_ssl_protocols TLSv1 TLSv1.2 TLSv1.3;\n"
      "  proxy_ssl_session_reuse off; proxy_ssl_ciphers HIGH; }\n"
      "location /checked/ { proxy_pass https://pay; proxy_ssl_verify on; proxy_ssl_trusted_certificate ca.pem; }\n"
      "location /any/ { proxy_pass https://10.0.0.9; }\n"
      "location /cleartext/ { proxy_pass http://10.0.0.9; }\n"
      "location /local/ { proxy_pass https://localhost:8443; proxy_ssl_verify on; proxy_ssl_trusted_certificate "
      "ca.pem; }",
      "upstream pay { server 10.0.3.7:443; keepalive 4; }\nproxy_ssl_verify_depth 3;"));
  ASSERT_TRUE(r.ok) << r.error;
  std::map<std::string, const config::Upstream*> ups;
  for (const auto& u : r.cfg.upstreams) ups[u.name] = &u;
  ASSERT_EQ(ups.count("pay"), 1u) << r.toml;
  const config::UpstreamTls& pay = ups["pay"]->tls;
  EXPECT_TRUE(pay.enabled);
  EXPECT_TRUE(pay.verify);
  EXPECT_EQ(pay.trusted_ca, "/etc/nginx/ca.pem");
  EXPECT_EQ(pay.server_name, "payments.internal");
  EXPECT_EQ(pay.certificate, "/etc/c/client.pem");
  EXPECT_EQ(pay.key, "/etc/nginx/client.key");
  EXPECT_EQ(pay.protocols, (std::vector<config::TlsVersion>{config::TlsVersion::Tls12, config::TlsVersion::Tls13}));
  EXPECT_FALSE(pay.session_reuse);
  EXPECT_EQ(ups["pay"]->keepalive, 4u);
  // Other TLS settings on the same block: another [[upstream]]; the name
  // nginx checks by default is $proxy_host, the block's name.
  ASSERT_EQ(ups.count("pay-2"), 1u) << r.toml;
  EXPECT_EQ(ups["pay-2"]->tls.server_name, "pay");
  EXPECT_TRUE(ups["pay-2"]->tls.session_reuse);
  // An address: port 443 for https://, 80 for http:// (two upstreams).
  ASSERT_EQ(ups.count("10.0.0.9_443"), 1u) << r.toml;
  EXPECT_EQ(ups["10.0.0.9_443"]->servers.at(0).port, 443);
  EXPECT_FALSE(ups["10.0.0.9_443"]->tls.verify);
  ASSERT_EQ(ups.count("10.0.0.9_80"), 1u) << r.toml;
  EXPECT_FALSE(ups["10.0.0.9_80"]->tls.enabled);
  // localhost is 127.0.0.1 to tlsfront, but the name nginx checks and sends.
  ASSERT_EQ(ups.count("127.0.0.1_8443"), 1u) << r.toml;
  EXPECT_EQ(ups["127.0.0.1_8443"]->tls.server_name, "localhost");

  EXPECT_REPORTS(r, "n.conf:10: proxy_ssl_protocols: carried over without what is older than TLSv1.2\n");
  EXPECT_REPORTS(r, "n.conf:11: proxy_ssl_ciphers: no equivalent yet: TLS to upstreams takes OpenSSL's defaults");
  EXPECT_REPORTS(r, "proxy_ssl_verify_depth: no equivalent yet: TLS to upstreams takes OpenSSL's defaults");
  EXPECT_REPORTS(r, "n.conf:12: proxy_pass: carried over as server_name \"pay\", which tlsfront also sends as SNI");
  EXPECT_REPORTS(r, "n.conf:13: proxy_pass: carried over as verify = false: nginx checks no certificate");
  for (const char* carried : {"proxy_ssl_trusted_certificate", "proxy_ssl_name", "proxy_ssl_server_name",
                              "proxy_ssl_certificate", "proxy_ssl_certificate_key", "proxy_ssl_session_reuse",
                              "proxy_ssl_verify"}) {
    EXPECT_EQ(r.report.find(std::string(": ") + carried + ":"), std::string::npos) << carried << "\n" << r.report;
  }
}

// A proxy_ssl_name the loader would refuse as server_name (an empty label,
// a leading dot, a label over 63 octets) is reported, not carried over:
// the import made a configuration that failed to load, the whole of it.
TEST(NginxImport, ProxySslNameTheLoaderRefusesIsNotCarriedOver) {
  const std::string long_label(64, 'a');
  Outcome r =
      run(server("location /a/ { proxy_pass https://10.0.0.7; proxy_ssl_verify on; proxy_ssl_name a..b; }\n"
                 "location /b/ { proxy_pass https://10.0.0.8; proxy_ssl_verify on; proxy_ssl_name .a.b; }\n"
                 "location /c/ { proxy_pass https://10.0.0.9; proxy_ssl_verify on; proxy_ssl_name " +
                 long_label + ".example; }"));
  ASSERT_TRUE(r.ok) << r.error;
  for (const auto& u : r.cfg.upstreams) EXPECT_EQ(u.tls.server_name, "") << u.name;
  EXPECT_REPORTS(r, "proxy_ssl_name: not carried over: \"a..b\" is not a name tlsfront can send or check");
  EXPECT_REPORTS(r, "proxy_ssl_name: not carried over: \".a.b\" is not a name tlsfront can send or check");
  EXPECT_REPORTS(r, "proxy_ssl_name: not carried over: \"" + long_label + ".example\" is not a name");
}

// proxy_ssl_name $host: nginx checks (and sends) the client's Host, which
// tlsfront cannot; the report says so, and which name is checked instead.
// It said "no proxy_pass https:// location that was imported uses it".
TEST(NginxImport, ProxySslNameWithAVariableIsReported) {
  Outcome r = run(server("location /a/ { proxy_pass https://pay; proxy_ssl_verify on; proxy_ssl_name $host; }",
                         "upstream pay { server 10.0.3.7:443; }"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r,
                 "proxy_ssl_name: not carried over: a name with a variable has no equivalent (one name per "
                 "upstream); the name checked is \"pay\", nginx's default ($proxy_host)");
  EXPECT_EQ(r.report.find("proxy_ssl_name: not carried over: no proxy_pass"), std::string::npos) << r.report;
}

}  // namespace
}  // namespace tlsfront::tools::nginx
