// Tests for what import-nginx does with what a migration commonly meets
// beyond the directive families of nginx_import_test.cc: a sites-available
// file (no http block), ssl_trusted_certificate (not a trust anchor), and
// no access_log (nginx's default log). Each produced TOML is read back with
// config::load_string.
#include <string>

#include <gtest/gtest.h>

#include "nginx_import_support.h"

namespace tlsfront::tools::nginx {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared helpers

// A sites-available file: server and upstream blocks, no http block. nginx
// reads it inside nginx.conf's http block; so does the import, and says so.
TEST(NginxImport, ASitesAvailableFileIsTheContentOfAnHttpBlock) {
  Outcome r =
      run("upstream app { server 127.0.0.1:9000; keepalive 8; }\n"
          "server {\n  listen 443 ssl;\n  ssl_certificate c.pem;\n  ssl_certificate_key c.key;\n"
          "  location / { proxy_pass http://app; }\n}\n"
          "server { listen 80; return 301 https://$host$request_uri; }\n");
  ASSERT_TRUE(r.ok) << r.error << "\n" << r.report;
  ASSERT_EQ(r.cfg.upstreams.size(), 1u);
  EXPECT_EQ(r.cfg.upstreams[0].name, "app");
  EXPECT_EQ(r.cfg.upstreams[0].keepalive, 8u);
  ASSERT_EQ(r.cfg.listeners.size(), 2u);
  EXPECT_TRUE(r.cfg.listeners[0].tls);
  EXPECT_TRUE(r.cfg.listeners[1].redirect_https);
  EXPECT_EQ(r.cfg.tls.certificates.at(0).cert, "/etc/nginx/c.pem");
  EXPECT_EQ(r.report.find("unsupported"), std::string::npos) << r.report;
  EXPECT_EQ(r.report.find("n.conf:1: http: no http block: the file's directives are read as the content of one, as "
                          "nginx reads a sites-available file that nginx.conf's http block includes"),
            0u)
      << r.report;
  // A file with an http block, or without server and upstream blocks, is read as before.
  EXPECT_EQ(run("events { }\n").error, "nothing to import: no http block");
  EXPECT_EQ(run("http { }\nserver { listen 443 ssl; }\n").error,
            "nothing to import: no server with a TLS listen (listen ... ssl)");
}

// ssl_trusted_certificate is, in nginx, the CA chain that verifies OCSP
// responses and client certificates (typically the intermediate: chain.pem),
// not what tlsfront's trusted_ca is (the roots a server chain ends at): it
// is listed, never written as trusted_ca, wherever it is set.
TEST(NginxImport, SslTrustedCertificateIsNotTrustedCa) {
  Outcome r = run(server("ssl_stapling on;\nssl_stapling_verify on;\nssl_trusted_certificate chain.pem;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.trusted_ca, "");
  EXPECT_EQ(r.toml.find("trusted_ca"), std::string::npos) << r.toml;
  EXPECT_REPORTS(r,
                 "n.conf:9: ssl_trusted_certificate: not carried over: nginx verifies OCSP responses (and client "
                 "certificates) with it; tlsfront verifies a response against the leaf's issuer");
  r = run(server("", "ssl_trusted_certificate /etc/ssl/chain.pem;"));  // inherited from http
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.tls.trusted_ca, "");
  EXPECT_REPORTS(r, "n.conf:2: ssl_trusted_certificate: not carried over: nginx verifies OCSP responses");
}

// nginx logs every request unless told otherwise; tlsfront only to a
// configured file. No access_log that applies to the default server:
// tlsfront's usual path, and a report line; `off` stays off.
TEST(NginxImport, NoAccessLogIsNginxsDefaultLog) {
  Outcome r = run(server(""));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.log.access_log, "/var/log/tlsfront/access.log");
  EXPECT_REPORTS(r,
                 "n.conf:3: server: no access_log: nginx logs every request by default (to its compiled-in path, "
                 "e.g. /var/log/nginx/access.log, combined format), tlsfront only to a configured file: written as "
                 "[log] access_log = \"/var/log/tlsfront/access.log\"");
  r = run(server("location /l/ { proxy_pass http://127.0.0.1:9000; access_log /var/log/l.log; }"));  // not the server's
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.log.access_log, "/var/log/tlsfront/access.log");
  r = run(server("", "access_log off;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.log.access_log, "");
  EXPECT_EQ(r.report.find("no access_log"), std::string::npos) << r.report;
  r = run(server("access_log /srv/log/api.log;"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cfg.log.access_log, "/srv/log/api.log");
  EXPECT_EQ(r.report.find("no access_log"), std::string::npos) << r.report;
}

}  // namespace
}  // namespace tlsfront::tools::nginx
