// Tests for import-nginx's mapping: nginx times and sizes, each directive
// family, the report of what is not carried over, and the fixtures (the
// write-up's API edge, Debian's default site, several servers in included
// files). Each produced TOML is read back with config::load_string, so the
// assertions are on the configuration tlsfront would run.
#include "tools/nginx_import.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <re2/re2.h>

#include "config/loader.h"
#include "shared/temp_dir.h"
#include "tools/nginx_values.h"
#include "nginx_import_support.h"

namespace tlsfront::tools::nginx {
namespace {

using config::Millis;

using namespace test;  // NOLINT(google-build-using-namespace): the shared helpers


TEST(NginxValues, TimesAndSizesAsNginxReadsThem) {
  EXPECT_EQ(parse_time("10m"), Millis{600'000});  // minutes, as a time
  EXPECT_EQ(parse_size("10m"), 10u << 20);        // MiB, as a size
  EXPECT_EQ(parse_time("30s"), Millis{30'000});
  EXPECT_EQ(parse_time("65"), Millis{65'000});  // bare: seconds
  EXPECT_EQ(parse_time("1h"), Millis{3'600'000});
  EXPECT_EQ(parse_time("1d"), Millis{86'400'000});
  EXPECT_EQ(parse_time("1h30m"), Millis{5'400'000});
  EXPECT_EQ(parse_time("1h 30m"), Millis{5'400'000});
  EXPECT_EQ(parse_time("500ms"), Millis{500});
  EXPECT_EQ(parse_time("2w"), Millis{14 * 86'400'000LL});
  EXPECT_EQ(parse_time("1M"), Millis{30 * 86'400'000LL});
  EXPECT_EQ(parse_time("1y"), Millis{365 * 86'400'000LL});
  for (const char* bad : {"", "5x", "m", "1.5s", "-1s", "1hh", "99999999999999999999"}) EXPECT_FALSE(parse_time(bad)) << bad;
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("1g"), 1u << 30);
  EXPECT_EQ(parse_size("512"), 512u);
  for (const char* bad : {"", "k", "10x", "1.5m", "-1"}) EXPECT_FALSE(parse_size(bad)) << bad;
  EXPECT_EQ(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000A\"");
}

TEST(NginxImport, SessionSettingsReadSizesAndTimesByDirective) {
  Outcome r = run(server("ssl_session_cache shared:SSL:10m;\nssl_session_timeout 10m;\nssl_session_tickets off;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.session_cache.size_bytes, 10u << 20);
  EXPECT_EQ(r.cfg.tls.session_cache.timeout, Millis{600'000});
  EXPECT_FALSE(r.cfg.tls.session_tickets);

  r = run(server("ssl_session_cache off;"));  // and nginx's 5-minute default session timeout
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.cfg.tls.session_cache.enabled);
  EXPECT_EQ(r.cfg.tls.session_cache.timeout, Millis{300'000});

  r = run(server("ssl_session_cache shared:S:16k;\nssl_session_timeout 30d;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.session_cache.size_bytes, 64u << 10);
  EXPECT_EQ(r.cfg.tls.session_cache.timeout, Millis{7 * 86'400'000LL});
  EXPECT_REPORTS(r, "n.conf:7: ssl_session_cache: shared:S:16k: raised to tlsfront's minimum, 64k\n");
  EXPECT_REPORTS(r, "n.conf:8: ssl_session_timeout: clamped to tlsfront's range 1s..7d (RFC 8446 §4.6.1): 7d\n");
}

TEST(NginxImport, ProtocolsCiphersAndGroups) {
  Outcome r = run(server("ssl_protocols TLSv1 TLSv1.1 TLSv1.3;\nssl_ciphers HIGH:!aNULL;\n"
                     "ssl_conf_command Ciphersuites TLS_AES_256_GCM_SHA384;\nssl_conf_command Options KTLS;\n"
                     "ssl_ecdh_curve X25519;\nssl_prefer_server_ciphers on;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.protocols, std::vector<config::TlsVersion>{config::TlsVersion::Tls13});
  EXPECT_EQ(r.cfg.tls.ciphers, "HIGH:!aNULL");
  EXPECT_EQ(r.cfg.tls.ciphersuites, "TLS_AES_256_GCM_SHA384");
  EXPECT_EQ(r.cfg.tls.groups, "X25519");
  EXPECT_TRUE(r.cfg.tls.prefer_server_ciphers);
  EXPECT_REPORTS(r, "n.conf:7: ssl_protocols: TLSv1 not carried over: TLS 1.2 and 1.3 only\n");
  EXPECT_REPORTS(r, "n.conf:7: ssl_protocols: TLSv1.1 not carried over: TLS 1.2 and 1.3 only\n");
  EXPECT_REPORTS(r, "n.conf:10: ssl_conf_command: not carried over: only Ciphersuites and Groups");

  r = run(server("ssl_protocols TLSv1;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.protocols.size(), 2u);  // tlsfront's default
  EXPECT_REPORTS(r, "ssl_protocols: not carried over: no version tlsfront supports");
}

TEST(NginxImport, ListenAddressesAndParameters) {
  Outcome r = run(
      "http { server {\n"
      "listen 443 ssl http2 backlog=1024 deferred;\n"
      "listen [::]:443 ssl reuseport;\n"
      "listen 127.0.0.1:8443 ssl proxy_protocol;\n"
      "listen localhost:9443 ssl;\n"
      "listen 80;\n"
      "listen 10.1.2.3 ssl;\n"
      "ssl_certificate c.pem; ssl_certificate_key c.key;\n"
      "location / { proxy_pass http://127.0.0.1:9000; }\n"
      "} }\n");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.listeners.size(), 5u);
  EXPECT_EQ(r.cfg.listeners[0].address.to_string(), "0.0.0.0:443");
  EXPECT_EQ(r.cfg.listeners[0].backlog, 1024);
  EXPECT_EQ(r.cfg.listeners[0].alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  EXPECT_EQ(r.cfg.listeners[1].address.to_string(), "[::]:443");
  EXPECT_EQ(r.cfg.listeners[1].alpn, std::vector<std::string>{"http/1.1"});
  EXPECT_EQ(r.cfg.listeners[2].address.to_string(), "127.0.0.1:8443");
  EXPECT_TRUE(r.cfg.listeners[2].proxy_protocol);
  EXPECT_FALSE(r.cfg.listeners[0].proxy_protocol);
  EXPECT_EQ(r.cfg.listeners[3].address.to_string(), "10.1.2.3:80");  // nginx's default port
  // listen 80 in a TLS server: nginx serves its locations there too.
  EXPECT_EQ(r.cfg.listeners[4].address.to_string(), "0.0.0.0:80");
  EXPECT_FALSE(r.cfg.listeners[4].tls);
  EXPECT_FALSE(r.cfg.listeners[4].redirect_https);
  EXPECT_EQ(r.cfg.listeners[0].tcp_fastopen, config::Listener::kTcpFastOpenAuto);  // no fastopen=: tlsfront's "auto"
  EXPECT_REPORTS(r, "n.conf:2: listen: parameter deferred not carried over");
  EXPECT_REPORTS(r, "n.conf:3: listen: parameter reuseport not needed");
  EXPECT_REPORTS(r, "n.conf:4: listen: parameter proxy_protocol carried over as proxy_protocol = true");
  EXPECT_REPORTS(r, "n.conf:5: listen: not carried over: invalid address \"localhost:9443\"");
  EXPECT_REPORTS(r,
                 "n.conf:6: listen: carried over as a cleartext listener that routes like the TLS ones "
                 "(redirect_https = false)");

  // `ssl on` (before nginx 1.25) makes every listen of its server TLS.
  r = run("http { server { listen 8443; ssl on; ssl_certificate c.pem; ssl_certificate_key c.key;\n"
          "location / { proxy_pass http://127.0.0.1:9000; } } }");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.listeners[0].address.to_string(), "0.0.0.0:8443");
}

// nginx's `listen ... fastopen=N` is the TFO queue length, tlsfront's tcp_fastopen.
TEST(NginxImport, ListenFastOpen) {
  Outcome r = run(
      "http { server {\n"
      "listen 443 ssl fastopen=256;\n"
      "listen 8443 ssl fastopen=0;\n"
      "listen 9443 ssl fastopen=70000;\n"
      "listen 80 fastopen=16;\n"
      "ssl_certificate c.pem; ssl_certificate_key c.key;\n"
      "location / { proxy_pass http://127.0.0.1:9000; }\n"
      "} }\n");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.listeners.size(), 4u);
  EXPECT_EQ(r.cfg.listeners[0].address.to_string(), "0.0.0.0:443");
  EXPECT_EQ(r.cfg.listeners[0].tcp_fastopen, 256);
  EXPECT_EQ(r.cfg.listeners[1].tcp_fastopen, 0);  // nginx's off, kept off
  EXPECT_EQ(r.cfg.listeners[2].tcp_fastopen, config::Listener::kTcpFastOpenAuto);
  EXPECT_REPORTS(r, "n.conf:4: listen: parameter fastopen=70000 not carried over: fastopen is 0..65535");
  EXPECT_EQ(r.cfg.listeners[3].address.to_string(), "0.0.0.0:80");
  EXPECT_FALSE(r.cfg.listeners[3].tls);
  EXPECT_EQ(r.cfg.listeners[3].tcp_fastopen, 16);
  EXPECT_EQ(r.report.find("fastopen=256"), std::string::npos) << r.report;  // carried over, not listed
}

// nginx's HTTP/3 listen (`listen 443 quic reuseport;` beside `listen 443
// ssl;`) is quic = true on the TLS listener of that address; quic_retry on
// is quic_retry = true there.
TEST(NginxImport, ListenQuic) {
  Outcome r = run(
      "http { server {\n"
      "listen 443 quic reuseport;\n"
      "listen 443 ssl;\n"
      "listen 8443 ssl;\n"
      "http2 on;\n"
      "quic_retry on;\n"
      "ssl_certificate c.pem; ssl_certificate_key c.key;\n"
      "location / { proxy_pass http://127.0.0.1:9000; }\n"
      "} }\n");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.listeners.size(), 2u);
  EXPECT_EQ(r.cfg.listeners[0].address.to_string(), "0.0.0.0:443");
  EXPECT_TRUE(r.cfg.listeners[0].quic);
  EXPECT_TRUE(r.cfg.listeners[0].quic_retry);  // quic_retry on: on the quic listen only
  EXPECT_TRUE(r.cfg.listeners[0].tls);
  EXPECT_FALSE(r.cfg.listeners[1].quic);
  EXPECT_FALSE(r.cfg.listeners[1].quic_retry);
  EXPECT_REPORTS(r, "n.conf:2: listen: parameter quic carried over as quic = true");
}

TEST(NginxImport, StaplingFileResponderAndDefaults) {
  Outcome r = run(server("ssl_stapling on;\nssl_stapling_file ocsp.der;\nssl_stapling_responder http://ocsp.example/;"));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.cfg.tls.certificates.size(), 1u);
  EXPECT_TRUE(r.cfg.tls.certificates[0].ocsp.stapling);
  EXPECT_EQ(r.cfg.tls.certificates[0].ocsp.response_file, "/etc/nginx/ocsp.der");
  EXPECT_EQ(r.cfg.tls.certificates[0].cert, "/etc/nginx/c.pem");
  EXPECT_REPORTS(r, "n.conf:9: ssl_stapling_responder: not needed: ssl_stapling_file is used instead");

  r = run(server("ssl_stapling on;\nssl_stapling_responder http://ocsp.example/;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.certificates[0].ocsp.responder, "http://ocsp.example/");

  r = run(server(""));  // nginx staples nothing unless told to
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.cfg.tls.certificates[0].ocsp.stapling);
}

TEST(NginxImport, ClientSideSettings) {
  Outcome r = run(server("keepalive_timeout 65 60;\nkeepalive_requests 1000;\nclient_max_body_size 0;\n"
                     "client_header_timeout 1m;\nsend_timeout 2h;\nhttp2_max_concurrent_streams 64;",
                     "worker_processes 4;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.timeouts.keepalive, Millis{65'000});
  r = run("pid run/nginx.pid;\n" + server("keepalive_requests 007;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.limits.keepalive_requests, 7u);
  EXPECT_EQ(r.cfg.pid_file, "");  // nginx's file stays nginx's
  EXPECT_REPORTS(r, "n.conf:1: pid: not carried over: nginx's own pid file");
  r = run(server("keepalive_requests 0;"));
  EXPECT_REPORTS(r, "keepalive_requests: not carried over: [limits] keepalive_requests is 1..1000000000");
  r = run(server("keepalive_timeout 65 60;\nkeepalive_requests 1000;\nclient_max_body_size 0;\n"
                 "client_header_timeout 1m;\nsend_timeout 2h;\nhttp2_max_concurrent_streams 64;",
                 "worker_processes 4;"));
  EXPECT_EQ(r.cfg.limits.max_body_bytes, 0u);
  EXPECT_EQ(r.cfg.timeouts.header, Millis{60'000});
  EXPECT_EQ(r.cfg.timeouts.send, Millis{7'200'000});
  EXPECT_EQ(r.cfg.http2.max_concurrent_streams, 64u);
  EXPECT_REPORTS(r, "n.conf:7: keepalive_timeout: second value 60 not carried over: no Keep-Alive response header\n");
  EXPECT_EQ(r.cfg.limits.keepalive_requests, 1000u);
  EXPECT_EQ(r.report.find("keepalive_requests"), std::string::npos) << r.report;  // carried over
  EXPECT_REPORTS(r, "n.conf:2: worker_processes: unsupported");  // not in the main context: nginx refuses it there

  r = run(server("keepalive_timeout 0;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, "keepalive_timeout: not carried over: 0 turns client keepalive off");
}

TEST(NginxImport, NginxsDefaultsWhereTlsfrontsDiffer) {
  Outcome r = run(server(""));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.cfg.tls.session_cache.enabled);                   // ssl_session_cache none
  EXPECT_EQ(r.cfg.tls.session_cache.timeout, Millis{300'000});     // ssl_session_timeout 5m
  EXPECT_FALSE(r.cfg.tls.certificates[0].ocsp.stapling);           // ssl_stapling off
  EXPECT_EQ(r.cfg.timeouts.header, Millis{60'000});                // client_header_timeout 60s
  ASSERT_EQ(r.cfg.upstreams.size(), 1u);
  EXPECT_EQ(r.cfg.upstreams[0].keepalive, 0u);                     // no upstream keepalive
  EXPECT_EQ(r.cfg.upstreams[0].connect_timeout, Millis{60'000});   // proxy_connect_timeout 60s
  EXPECT_EQ(r.cfg.listeners[0].alpn, std::vector<std::string>{"http/1.1"});  // no http2
  EXPECT_REPORTS(r, "n.conf:8: proxy_pass: carried over, but nginx sends the backend Host: 127.0.0.1:9000 (its default, $proxy_host)");
}

TEST(NginxImport, ServerNamesUnusedUpstreamsAndInheritedHttp2) {
  Outcome r = run(
      "http { http2 on; upstream spare { server 127.0.0.1:1; }\n"
      "server { listen 443 ssl default_server; server_name Default.Example.; ssl_certificate a.pem; ssl_certificate_key a.key;\n"
      "location / { proxy_pass http://127.0.0.1:9000; proxy_set_header Host $host; } }\n"
      "server { listen 443 ssl; server_name b.example ~^(?<x>.+)\\.c\\.example$ www.b.*; ssl_certificate b.pem; ssl_certificate_key b.key;\n"
      "location /b/ { proxy_pass http://127.0.0.1:9000; proxy_set_header Host $host; } } }\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.listeners[0].alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  ASSERT_EQ(r.cfg.tls.certificates.size(), 2u);
  EXPECT_EQ(r.cfg.tls.certificates[0].names, std::vector<std::string>{"default.example"});
  EXPECT_TRUE(r.cfg.tls.certificates[0].is_default);
  EXPECT_EQ(r.cfg.tls.certificates[1].names, std::vector<std::string>{"b.example"});
  ASSERT_EQ(r.cfg.routes.size(), 2u);
  EXPECT_EQ(r.cfg.routes[0].host, "b.example");
  EXPECT_EQ(r.cfg.routes[1].host, "");
  EXPECT_REPORTS(r, "n.conf:1: upstream: not carried over: no imported location proxies to it (its 1 directive(s) neither)\n");
  EXPECT_REPORTS(r, "n.conf:4: server_name: name ~^(?<x>.+)\\.c\\.example$ not carried over: no regex server names\n");
  EXPECT_REPORTS(r, "n.conf:4: server_name: name www.b.* not carried over: only a leading \"*.\" wildcard is supported\n");
  EXPECT_EQ(r.report.find("proxy_pass: carried over, but"), std::string::npos) << r.report;
}

TEST(NginxImport, AnotherServersDifferentSettingsAreListed) {
  Outcome r = run(
      "http { server { listen 443 ssl; ssl_certificate a.pem; ssl_certificate_key a.key; ssl_session_timeout 1h; keepalive_timeout 10s;\n"
      "location / { proxy_pass http://127.0.0.1:9000; } }\n"
      "server { listen 443 ssl; server_name b.example; ssl_certificate b.pem; ssl_certificate_key b.key; keepalive_timeout 20s;\n"
      "location = /x { proxy_set_header X-A b; }\n"
      "location / { proxy_pass http://127.0.0.1:9000; } } }\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.timeouts.keepalive, Millis{10'000});
  EXPECT_EQ(r.cfg.tls.session_cache.timeout, Millis{3'600'000});
  EXPECT_REPORTS(r, "n.conf:3: keepalive_timeout: not carried over: differs from the default server's (n.conf:1), which tlsfront applies to all servers\n");
  EXPECT_REPORTS(r, "n.conf:3: server: ssl_session_timeout not carried over for this server: nginx's default here; tlsfront applies "
                    "the default server's (n.conf:1) to all\n");
  EXPECT_REPORTS(r, "n.conf:4: location: no route: no usable proxy_pass, grpc_pass, return or root in it (what it does instead is listed)\n");
  EXPECT_REPORTS(r, "n.conf:4: proxy_set_header: not carried over: it applies to no imported route\n");
}

TEST(NginxImport, LocationLevelCopiesOfGlobalSettingsAreListed) {
  Outcome r = run(server("location /l/ { proxy_pass http://127.0.0.1:9000; access_log /var/log/l.log; client_max_body_size 1g; }"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, "n.conf:7: access_log: not carried over: tlsfront has this setting once for all servers and paths, not per location\n");
  EXPECT_REPORTS(r, "n.conf:7: client_max_body_size: not carried over: tlsfront has this setting once");
  EXPECT_EQ(r.cfg.limits.max_body_bytes, 1u << 20);
}

TEST(NginxImport, WhatTlsfrontWouldRefuseIsListedOrAnError) {
  Outcome r = run(
      "http { server { listen 443 ssl default_server; server_name a.example; ssl_certificate a.pem; ssl_certificate_key a.key;\n"
      "ssl_ciphers \"\"; ssl_session_cache shared:S:100g; ssl_trusted_certificate \"\";\n"
      "location / { proxy_pass http://127.0.0.1:9000; } }\n"
      "server { listen 443 ssl; server_name b_c.example *.example \"x y\" B.Example; ssl_certificate b.pem; ssl_certificate_key b.key;\n"
      "ssl_stapling on; ssl_stapling_responder \"http://a b/\";\n"
      "location / { proxy_pass http://127.0.0.1:9000; } } }\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.session_cache.size_bytes, uint64_t{1} << 36);
  ASSERT_EQ(r.cfg.tls.certificates.size(), 2u);
  EXPECT_EQ(r.cfg.tls.certificates[1].names, std::vector<std::string>{"b.example"});
  EXPECT_EQ(r.cfg.tls.certificates[1].ocsp.responder, "");
  EXPECT_REPORTS(r, "n.conf:2: ssl_ciphers: not carried over: one non-empty cipher list\n");
  EXPECT_REPORTS(r, "n.conf:2: ssl_session_cache: shared:S:100g: lowered to tlsfront's maximum, 64g\n");
  EXPECT_REPORTS(r, "n.conf:2: ssl_trusted_certificate: not carried over: nginx verifies OCSP responses");
  EXPECT_REPORTS(r, "n.conf:4: server_name: name b_c.example not carried over: b_c.example is not a DNS name");
  EXPECT_REPORTS(r, "n.conf:4: server_name: name *.example not carried over: *.example a wildcard needs at least two labels");
  EXPECT_REPORTS(r, "n.conf:4: server_name: name x y not carried over: x y is not a DNS name");
  EXPECT_REPORTS(r, "n.conf:5: ssl_stapling_responder: not carried over: an http:// URL\n");

  // nginx takes any bytes; a TOML file is UTF-8.
  r = run(server("", "access_log /var/log/\xff.log;"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "n.conf:2: access_log: not valid UTF-8, which a tlsfront configuration must be");
  r = run(server("", "log_format x '\xff';"));  // not carried over: listed, no harm
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(parse_size("999999999999999g"));

  // The nginx_import fuzz target's first find: "032" is no TOML integer.
  r = run(server("location /k/ { proxy_pass http://k; }", "upstream k { server 127.0.0.1:1; keepalive 032; keepalive_requests 007; }"));
  ASSERT_TRUE(r.ok) << r.error;
  for (const auto& u : r.cfg.upstreams) {
    if (u.name == "k") EXPECT_EQ(u.keepalive, 32u);
    if (u.name == "k") EXPECT_EQ(u.keepalive_requests, 7u);
  }

  // Its third: "0000" is 0, which keepalive_requests cannot be.
  r = run(server("location /k/ { proxy_pass http://k; }", "upstream k { server 127.0.0.1:1; keepalive_requests 0000; }"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, "n.conf:2: keepalive_requests: not carried over: keepalive_requests is >= 1\n");

  // Its fourth: routes that are all fixed answers leave no [[upstream]], which tlsfront needs.
  r = run("http { server { listen 443 ssl; ssl_certificate c.pem; ssl_certificate_key c.key;\n"
          "location / { return 200 ok; } } }");
  EXPECT_EQ(r.error, "nothing to import: no location with a usable proxy_pass or grpc_pass in a TLS server");

  // Its fifth: a location's own proxy_set_header beside its return (a route with return takes no request_headers).
  r = run(server("location = /h { proxy_set_header X-A 1; return 204; }"));
  ASSERT_TRUE(r.ok) << r.error;

  // Its second: a directive repeated, or two setting one key.
  r = run(server("location /k/ { proxy_pass http://k; }\nssl_conf_command Groups X25519;\nssl_ecdh_curve P-256;",
                 "upstream k { server 127.0.0.1:1; keepalive 8; keepalive 9; }"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.groups, "X25519");
  EXPECT_REPORTS(r, "n.conf:2: keepalive: not carried over: keepalive is set already (n.conf:2: keepalive 8)\n");
  EXPECT_REPORTS(r, "n.conf:9: ssl_ecdh_curve: not carried over: groups is set already (n.conf:8: ssl_conf_command Groups X25519)\n");
}

TEST(NginxImport, NothingUsable) {
  Outcome r = run("events { }\n");
  EXPECT_EQ(r.error, "nothing to import: no http block");
  r = run("http { server { listen 443 ssl; location / { proxy_pass http://127.0.0.1:1; } } }");
  EXPECT_EQ(r.error, "nothing to import: no usable certificate (ssl_certificate + ssl_certificate_key)");
  EXPECT_REPORTS(r, "n.conf:1: server: not carried over: a TLS server without ssl_certificate");
  r = run("http { server { listen 443 ssl; ssl_certificate a; ssl_certificate_key b; root /srv; } }");
  EXPECT_EQ(r.error, "nothing to import: no location with a usable proxy_pass or grpc_pass in a TLS server");
  EXPECT_REPORTS(r, "n.conf:1: root: not carried over: no imported location serves files with it\n");
}

// A fixture of tests/data/nginx, with the report's file names relative to its directory.
Outcome fixture(const std::string& name) {
  const std::string dir = std::string(TLSFRONT_SOURCE_DIR) + "/tests/data/nginx/";
  const std::string path = dir + name;
  Outcome r = run_tree(parse_file(path), std::filesystem::path(path).parent_path().string());
  for (size_t p; (p = r.report.find(dir)) != std::string::npos;) r.report.erase(p, dir.size());
  return r;
}

TEST(NginxImport, TheWriteupsApiEdge) {
  Outcome r = fixture("writeup.conf");
  ASSERT_TRUE(r.ok) << r.error;
  const std::string dir = std::string(TLSFRONT_SOURCE_DIR) + "/tests/data/nginx/";
  const config::Config& c = r.cfg;
  EXPECT_EQ(c.workers, 0);  // auto
  ASSERT_EQ(c.listeners.size(), 2u);
  EXPECT_EQ(c.listeners[0].address.to_string(), "0.0.0.0:443");
  EXPECT_EQ(c.listeners[0].alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  EXPECT_EQ(c.listeners[1].address.to_string(), "0.0.0.0:80");  // the redirect server
  EXPECT_FALSE(c.listeners[1].tls);
  EXPECT_TRUE(c.listeners[1].redirect_https);
  EXPECT_EQ(c.tls.protocols, (std::vector<config::TlsVersion>{config::TlsVersion::Tls12, config::TlsVersion::Tls13}));
  EXPECT_EQ(c.tls.ciphers, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES256-GCM-SHA384");
  EXPECT_TRUE(c.tls.prefer_server_ciphers);
  ASSERT_EQ(c.tls.certificates.size(), 1u);
  EXPECT_EQ(c.tls.certificates[0].cert, dir + "pki/localhost.chain.pem");
  EXPECT_EQ(c.tls.certificates[0].key, dir + "pki/localhost.key");
  EXPECT_TRUE(c.tls.certificates[0].ocsp.stapling);
  EXPECT_EQ(c.tls.trusted_ca, "");  // ssl_trusted_certificate is not a trust anchor for the server chain
  EXPECT_EQ(c.tls.session_cache.size_bytes, 10u << 20);
  EXPECT_EQ(c.tls.session_cache.timeout, Millis{86'400'000});
  EXPECT_TRUE(c.tls.session_tickets);
  EXPECT_EQ(c.tls.ticket_keys.source, config::TicketKeySource::Files);
  EXPECT_EQ(c.tls.session_id_context, config::SessionIdContext::Nginx);  // resumes the nginx nodes' sessions
  EXPECT_EQ(c.tls.ticket_keys.files, std::vector<std::string>{dir + "pki/ticket.key"});
  ASSERT_EQ(c.upstreams.size(), 1u);
  const config::Upstream& u = c.upstreams[0];
  EXPECT_EQ(u.name, "backend");
  ASSERT_EQ(u.servers.size(), 1u);
  EXPECT_EQ(u.servers[0].to_string(), "127.0.0.1:9000");
  EXPECT_EQ(u.keepalive, 32u);
  EXPECT_EQ(u.keepalive_timeout, Millis{60'000});
  EXPECT_EQ(u.keepalive_requests, 1000u);
  EXPECT_EQ(u.fail_timeout, Millis{10'000});
  EXPECT_EQ(u.connect_timeout, Millis{3'000});
  EXPECT_EQ(u.read_timeout, Millis{10'000});
  EXPECT_EQ(u.send_timeout, Millis{60'000});
  ASSERT_EQ(c.routes.size(), 2u);
  EXPECT_EQ(c.routes[0].host, "");
  EXPECT_EQ(c.routes[0].path, "/api/config/");
  EXPECT_EQ(c.routes[0].upstream, "backend");
  ASSERT_EQ(c.routes[0].response_headers.add.size(), 1u);  // HSTS: [tls] hsts
  EXPECT_EQ(c.routes[0].response_headers.add[0].name, "Cache-Control");
  EXPECT_EQ(c.routes[1].path, "/api/");
  EXPECT_EQ(c.routes[1].upstream, "backend");
  EXPECT_TRUE(c.routes[1].response_headers == config::HeaderRules{});
  EXPECT_EQ(c.log.access_log, dir + "logs/api_access.log");
  EXPECT_EQ(c.tls.hsts, "max-age=31536000");
  EXPECT_EQ(c.timeouts.keepalive, Millis{65'000});
  EXPECT_EQ(
      r.report,
      "writeup.conf:8: worker_connections: not carried over: it counts upstream connections too; tlsfront's [limits] "
      "max_connections (client connections per worker) is off by default: set it to about half of this if wanted\n"
      "writeup.conf:12: log_format: not carried over: tlsfront's access log is JSON with fixed fields; its fields: "
      "$remote_addr → remote_addr, $time_local → time, $request → method, path, protocol, $status → status, "
      "$request_time → request_time_ms, $upstream_response_time → upstream_response_ms, $ssl_protocol → ssl_protocol, "
      "$ssl_cipher → ssl_cipher, $ssl_session_reused → ssl_session_reused\n"
      "writeup.conf:39: ssl_stapling_verify: not needed: tlsfront always verifies a response before stapling it\n"
      "writeup.conf:40: ssl_trusted_certificate: not carried over: nginx verifies OCSP responses (and client "
      "certificates) with it; tlsfront verifies a response against the leaf's issuer, from the certificate's "
      "chain, and client certificates against client_ca only (add any CA they need there). It is not [tls] "
      "trusted_ca, the root(s) a server chain must end at (an intermediate there fails tlsfront --test): set that "
      "by hand only for a private CA's root\n"
      "writeup.conf:43: ssl_buffer_size: no equivalent: tlsfront sets no TLS record size (OpenSSL's records, up to "
      "16k)\n"
      "writeup.conf:44: ssl_early_data: carried over; only GET, HEAD and OPTIONS without a body go up before the "
      "handshake completes (with Early-Data: 1), any other request waits for it (nginx forwards all of them)\n"
      "writeup.conf:50: access_log: format tls not carried over: tlsfront writes one JSON object per request, its own "
      "fields\n"
      "writeup.conf:54: proxy_http_version: not needed: HTTP/1.1 to http/1.1 upstreams is the default\n"
      "writeup.conf:55: proxy_set_header: not needed: tlsfront removes the client's Connection and keeps upstream "
      "connections alive\n"
      "writeup.conf:56: proxy_set_header: not needed: Host is forwarded as the client sent it\n"
      "writeup.conf:64: proxy_http_version: not needed: HTTP/1.1 to http/1.1 upstreams is the default\n"
      "writeup.conf:65: proxy_set_header: not needed: tlsfront removes the client's Connection and keeps upstream "
      "connections alive\n"
      "writeup.conf:66: proxy_set_header: not needed: Host is forwarded as the client sent it\n"
      "writeup.conf:69: add_header: carried over; nginx adds it only to 200, 201, 204, 206, 301, 302, 303, 304, 307 "
      "and "
      "308 responses, tlsfront to every upstream response (not to its own error answers)\n"
      "writeup.conf:76: server_name: carried over: a redirecting cleartext listener redirects every valid host\n"
      "writeup.conf:77: return: carried over as a cleartext listener's redirect_https: tlsfront answers 301 to GET and "
      "HEAD, 308 to other methods (a 301 turns a POST into a GET)\n");
}

TEST(NginxImport, DebiansDefaultSiteHasNothingToCarryOver) {
  Outcome r = fixture("debian/nginx.conf");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "nothing to import: no server with a TLS listen (listen ... ssl)");
  EXPECT_EQ(
      r.report,
      "debian/nginx.conf:1: user: not needed: the systemd unit runs tlsfront as its own user (User=)\n"
      "debian/nginx.conf:3: pid: not carried over: nginx's own pid file; tlsfront's is pid_file or --pid-file (the "
      "systemd unit passes /run/tlsfront/tlsfront.pid), and it never takes over a file a running process holds\n"
      "debian/nginx.conf:4: error_log: not carried over: errors and events go to stderr (the journal under systemd)\n"
      "debian/nginx.conf:8: worker_connections: not carried over: it counts upstream connections too; tlsfront's "
      "[limits] max_connections (client connections per worker) is off by default: set it to about half of this if "
      "wanted\n"
      "debian/nginx.conf:18: sendfile: not needed: over TLS a file is copied through OpenSSL (no kernel TLS)\n"
      "debian/nginx.conf:19: tcp_nopush: not needed: over TLS a file is copied through OpenSSL (no kernel TLS)\n"
      "debian/nginx.conf:20: types_hash_max_size: not needed\n"
      "debian/mime.types:2: types: not carried over: a built-in table covers web formats; add others as a route's "
      "types = { ext = \"type\" } (a block: its 86 directive(s) neither)\n"
      "debian/nginx.conf:27: default_type: no equivalent: a file of an unknown type is application/octet-stream\n"
      "debian/nginx.conf:33: ssl_protocols: not carried over: no imported server uses it (a TLS server overrides it, "
      "or there is none)\n"
      "debian/nginx.conf:34: ssl_prefer_server_ciphers: not carried over: no imported server uses it (a TLS server "
      "overrides it, or there is none)\n"
      "debian/nginx.conf:40: access_log: not carried over: no imported server uses it (a TLS server overrides it, or "
      "there is none)\n"
      "debian/nginx.conf:46: gzip: not carried over: [compression] is the default server's gzip settings; write a route's compress keys for this one (docs/configuration.md, [compression])\n"
      "debian/sites-enabled/default:21: server: not carried over: no TLS listen (listen ... ssl), and not a redirect "
      "to https (return 301 https://$host$request_uri): tlsfront's routes are those of every listener (its 7 "
      "directive(s) neither)\n");
}

TEST(NginxImport, SeveralServersInIncludedFiles) {
  Outcome r = fixture("multi/nginx.conf");
  ASSERT_TRUE(r.ok) << r.error;
  const std::string pki = std::string(TLSFRONT_SOURCE_DIR) + "/tests/data/nginx/multi/pki/";
  const config::Config& c = r.cfg;
  EXPECT_EQ(c.workers, 2);
  ASSERT_EQ(c.listeners.size(), 3u);
  EXPECT_EQ(c.listeners[0].address.to_string(), "0.0.0.0:8443");
  EXPECT_EQ(c.listeners[0].alpn, (std::vector<std::string>{"h2", "http/1.1"}));  // http2 on one listen of the address
  EXPECT_EQ(c.listeners[1].address.to_string(), "[::1]:8443");
  EXPECT_EQ(c.listeners[1].alpn, std::vector<std::string>{"http/1.1"});
  // The :80 server that only redirects: a cleartext listener redirecting to https.
  EXPECT_EQ(c.listeners[2].address.to_string(), "0.0.0.0:80");
  EXPECT_FALSE(c.listeners[2].tls);
  EXPECT_TRUE(c.listeners[2].redirect_https);
  EXPECT_EQ(c.tls.protocols, (std::vector<config::TlsVersion>{config::TlsVersion::Tls12, config::TlsVersion::Tls13}));
  EXPECT_EQ(c.tls.session_cache.size_bytes, 1u << 20);
  EXPECT_EQ(c.limits.max_body_bytes, 8u << 20);
  EXPECT_EQ(c.log.access_log, "");
  // ECDSA + RSA for the default server, then one certificate per other server, names from server_name.
  ASSERT_EQ(c.tls.certificates.size(), 4u);
  EXPECT_EQ(c.tls.certificates[0].cert, pki + "localhost.chain.pem");
  EXPECT_TRUE(c.tls.certificates[0].is_default);
  EXPECT_EQ(c.tls.certificates[0].names, std::vector<std::string>{"localhost"});
  EXPECT_EQ(c.tls.certificates[1].cert, pki + "rsa.chain.pem");
  EXPECT_FALSE(c.tls.certificates[1].is_default);
  EXPECT_EQ(c.tls.certificates[1].names, std::vector<std::string>{"localhost"});
  EXPECT_EQ(c.tls.certificates[2].names, std::vector<std::string>{"other.example"});
  EXPECT_TRUE(c.tls.certificates[2].ocsp.stapling);
  EXPECT_FALSE(c.tls.certificates[0].ocsp.stapling);
  EXPECT_EQ(c.tls.certificates[3].names, (std::vector<std::string>{"wild.example", "*.wild.example"}));
  // Other servers' routes by exact host first, then the default server's for any host, longest prefix first.
  std::vector<std::string> routes;
  for (const auto& route : c.routes) routes.push_back(route.host + " " + route.path + " " + route.upstream);
  EXPECT_EQ(routes, (std::vector<std::string>{"other.example /static/ ", "other.example / shop",
                                              "wild.example / 127.0.0.1_9003", " /health ", " /v2/ api-2", " / api"}));
  // location /static/ { root /srv/shop; }: a route that serves files.
  EXPECT_EQ(c.routes[0].action, config::RouteAction::Files);
  EXPECT_EQ(c.routes[0].files->dir, "/srv/shop");
  // location = /health { return 200 "ok"; }: an exact route with a fixed answer.
  EXPECT_EQ(c.routes[3].path_match, config::PathMatch::Exact);
  EXPECT_EQ(c.routes[3].action, config::RouteAction::Return);
  EXPECT_EQ(c.routes[3].answer.status, 200);
  EXPECT_EQ(c.routes[3].answer.body, "ok");
  ASSERT_EQ(c.upstreams.size(), 4u);
  EXPECT_EQ(c.upstreams[0].servers.size(), 2u);  // localhost:9002 is 127.0.0.1:9002
  EXPECT_EQ(c.upstreams[0].keepalive, 16u);
  EXPECT_EQ(c.upstreams[1].read_timeout, Millis{5'000});
  EXPECT_EQ(c.upstreams[2].servers[0].to_string(), "127.0.0.1:80");
  // A server by name is carried over: tlsfront resolves it at its TTL.
  ASSERT_EQ(c.upstreams[2].servers.size(), 2u);
  EXPECT_EQ(c.upstreams[2].servers[1].to_string(), "backend.internal:8080");
  EXPECT_REPORTS(r, "multi/nginx.conf:7: ssl_protocols: TLSv1 not carried over: TLS 1.2 and 1.3 only\n");
  EXPECT_REPORTS(r, "multi/conf.d/upstreams.conf:4: keepalive: carried over, but nginx keeps at most 16 idle connections per "
                    "worker for the whole group, tlsfront 16 per worker for each of its 2 servers\n");
  EXPECT_REPORTS(r, "multi/nginx.conf:9: ssl_session_cache: builtin:1000 not carried over");
  EXPECT_EQ(r.report.find("multi/sites/10-api.conf:16:"), std::string::npos) << r.report;  // carried over
  EXPECT_EQ(r.report.find("multi/sites/10-api.conf:19:"), std::string::npos) << r.report;  // return: carried over
  EXPECT_REPORTS(r, "multi/sites/10-api.conf:21: location: no route: no usable proxy_pass, grpc_pass, return or root in it");
  EXPECT_REPORTS(r, "multi/sites/10-api.conf:22: fastcgi_pass: ");
  EXPECT_EQ(r.report.find("multi/sites/20-shop.conf:11:"), std::string::npos) << r.report;  // root: carried over
  EXPECT_REPORTS(r, "multi/sites/20-shop.conf:14: proxy_pass: not carried over: with the URI /v2/");
  EXPECT_REPORTS(r, "multi/sites/30-wild.conf:3: server_name: wildcard names: routes match exact hosts");
  EXPECT_REPORTS(r, "multi/sites/30-wild.conf:6: ssl_protocols: not carried over: differs from the default server's "
                    "(multi/nginx.conf:7), which tlsfront applies to all servers\n");
  EXPECT_REPORTS(r, "multi/sites/40-redirect.conf:3: server_name: carried over: a redirecting cleartext listener redirects every valid host\n");
  EXPECT_REPORTS(r, "multi/sites/40-redirect.conf:4: return: carried over as a cleartext listener's redirect_https: tlsfront answers 301 to GET and HEAD, 308 to other methods (a 301 turns a POST into a GET)\n");
}

TEST(NginxImport, DebiansDefaultSiteWithItsTlsLinesUncommentedStillNeedsAProxyPass) {
  TempDir dir;
  std::string site = read_file(std::string(TLSFRONT_SOURCE_DIR) + "/tests/data/nginx/debian/sites-enabled/default");
  for (const char* line : {"# listen 443 ssl default_server;", "# listen [::]:443 ssl default_server;", "# include snippets/snakeoil.conf;"}) {
    size_t p = site.find(line);
    ASSERT_NE(p, std::string::npos) << line;
    site.erase(p, 2);
  }
  std::filesystem::create_directories(dir.file("snippets"));
  {
    std::ofstream(dir.file("default")) << site;
    std::ofstream(dir.file("snippets/snakeoil.conf"))
        << "ssl_certificate /etc/ssl/certs/ssl-cert-snakeoil.pem;\nssl_certificate_key /etc/ssl/private/ssl-cert-snakeoil.key;\n";
    std::ofstream(dir.file("nginx.conf")) << "events {}\nhttp {\n  include default;\n}\n";
  }
  Outcome r = run_tree(parse_file(dir.file("nginx.conf")), dir.path());
  EXPECT_EQ(r.error, "nothing to import: no location with a usable proxy_pass or grpc_pass in a TLS server");
  EXPECT_REPORTS(r, dir.file("default") + ":22: listen: carried over as a cleartext listener that routes like the TLS ones");
  // Its location / serves files (root, index, try_files carried over), but
  // tlsfront needs an [[upstream]]: a site of files alone is not an edge.
  for (const char* line : {":41:", ":44:", ":48:", ":51:"}) {
    EXPECT_EQ(r.report.find(dir.file("default") + line), std::string::npos) << line << "\n" << r.report;
  }
}

// What the loader would refuse is reported, never written (the fuzzer found
// a root with NUL bytes; a try_files status out of range likewise).
TEST(NginxImport, FileValuesTheLoaderRefusesAreNotCarriedOver) {
  Outcome r = run(server(std::string("location /static/ { root /srv/s\0\0hop; }\n", 39) +
                         "location /app/ { root /srv/app; try_files $uri =999; }\n"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_REPORTS(r, ": root: not carried over: contains a NUL");
  EXPECT_REPORTS(r, ": try_files: not carried over: \"=999\": a status is \"=\" and 200..599");
  auto cfg = config::load_string(r.toml, "/fuzz/tlsfront.toml");
  EXPECT_TRUE(cfg.ok()) << (cfg.ok() ? "" : cfg.error().message()) << "\n" << r.toml;
}

}  // namespace
}  // namespace tlsfront::tools::nginx
