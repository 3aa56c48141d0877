// `tlsfront import-nginx` run as the real binary on the fixtures of
// tests/data/nginx (copied next to the test PKI, which their relative paths
// name), and the configuration it writes checked by `tlsfront --test`;
// Debian's default site (nothing to carry over), syntax and usage errors.
#include <filesystem>
#include <string>

#include "harness.h"
#include "import_nginx_support.h"

namespace tlsfront::itest {
namespace {

TEST(ImportNginx, TheWriteupsServerBlockImportsAndPassesTest) {
  TempDir dir;
  stage(dir, "writeup.conf");
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"), dir.file("writeup.conf")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string conf = dir.file("writeup.conf");
  EXPECT_NE(r.err.find(conf + ":44: ssl_early_data: carried over; only GET, HEAD and OPTIONS without a body"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(conf + ":54: proxy_http_version: not needed: HTTP/1.1 to http/1.1 upstreams is the default\n"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("tlsfront import-nginx: " + conf + ": written to " + dir.file("out.toml") +
                       "; 16 report line(s) above (not carried over, or carried over with a difference)\n"),
            std::string::npos)
      << r.err;
  std::string toml = read_file(dir.file("out.toml"));
  EXPECT_NE(toml.find("size = \"10m\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("keepalive = 32"), std::string::npos) << toml;
  EXPECT_NE(toml.find("hsts = \"max-age=31536000\""), std::string::npos) << toml;  // add_header ... always
  EXPECT_NE(toml.find("early_data = true"), std::string::npos) << toml;  // ssl_early_data on
  EXPECT_EQ(toml.find("trusted_ca"), std::string::npos) << toml;         // ssl_trusted_certificate: listed

  write_file(dir.file("out.toml"), runnable_here(toml, dir));
  r = run_command(dir, {TLSFRONT_BINARY, "--test", "-c", dir.file("out.toml")});
  EXPECT_EQ(r.status.code, 0) << r.err << "\n" << toml;
  EXPECT_NE(r.err.find("test is successful"), std::string::npos) << r.err;
}

// `text` with every `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = text.find(from, p)) != std::string::npos; p += to.size()) text.replace(p, from.size(), to);
  return text;
}

// The write-up's whole server block — both proxying locations, the cache
// header, HSTS and the :80 redirect — imported and served by tlsfront alone
// (addresses moved to test ports, the upstream to the recording backend).
TEST(ImportNginx, TheWriteupsServerBlockRunsOnTlsfrontAlone) {
  TempDir dir;
  stage(dir, "writeup.conf");
  Backend backend(dir);
  ASSERT_TRUE(backend.start());
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"), dir.file("writeup.conf")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  std::string toml = runnable_here(read_file(dir.file("out.toml")), dir);
  toml = replace_all(toml, "\"0.0.0.0:443\"", "\"127.0.0.1:0\"");
  toml = replace_all(toml, "\"0.0.0.0:80\"", std::string("\"") + kCleartextIp + ":0\"");
  toml = replace_all(toml, "\"127.0.0.1:9000\"", "\"" + backend.address() + "\"");
  toml = replace_all(toml, "stapling = true", "stapling = false");  // the test PKI names no responder
  toml += "\n[admin]\nenabled = false\n";  // its default port, 9901, may be another test's
  Proxy proxy(dir);
  ProxyOptions o;
  o.config_text = toml;
  o.cleartext = "";
  o.admin_port = -1;
  ASSERT_TRUE(proxy.start(o));

  CurlClient tls(proxy.port());
  HttpResponse config = tls.perform({.path = "/api/config/app.json", .http2 = true});
  EXPECT_EQ(config.status, 200) << config.error;
  EXPECT_EQ(config.header("cache-control"), "public, max-age=300");
  EXPECT_EQ(config.header("strict-transport-security"), "max-age=31536000");
  HttpResponse api = tls.perform({.path = "/api/v1/users/42?x=1", .http2 = true});
  EXPECT_EQ(api.status, 200);
  EXPECT_EQ(api.header("cache-control"), std::nullopt);
  EXPECT_EQ(api.header("strict-transport-security"), "max-age=31536000");
  HttpResponse none = tls.perform({.path = "/static/x"});  // no location: 404, HSTS still (always)
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(none.header("strict-transport-security"), "max-age=31536000");
  auto seen = backend.wait_requests(2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0].find("/api/config/app.json"), std::string::npos) << seen[0];
  EXPECT_NE(seen[1].find("/api/v1/users/42?x=1"), std::string::npos) << seen[1];

  CurlClient plain(proxy.cleartext_port());
  HttpResponse redirect =
      plain.perform({.path = "/api/v1/users/42?x=1", .headers = {"Host: api.example.com"}, .cleartext = true});
  EXPECT_EQ(redirect.status, 301);
  EXPECT_EQ(redirect.header("location"), "https://api.example.com/api/v1/users/42?x=1");
  EXPECT_EQ(redirect.header("strict-transport-security"), std::nullopt);  // RFC 6797 §7.2
  HttpResponse post = plain.perform(
      {.method = "POST", .path = "/api/login", .headers = {"Host: api.example.com"}, .body = "x", .cleartext = true});
  EXPECT_EQ(post.status, 308);
  EXPECT_EQ(proxy.stop().code, 0);
}

TEST(ImportNginx, SeveralServersFromIncludedFilesPassTest) {
  TempDir dir;
  stage(dir, "multi");
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", dir.file("nginx.conf")});  // TOML on stdout
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find(dir.file("sites/40-redirect.conf") + ":4: return: carried over as a cleartext listener's redirect_https"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("names = [\"wild.example\", \"*.wild.example\"]"), std::string::npos) << r.out;
  write_file(dir.file("out.toml"), runnable_here(r.out, dir));
  r = run_command(dir, {TLSFRONT_BINARY, "--test", "-c", dir.file("out.toml")});
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find("certificate[3].cert: ECDSA certificate for wild.example, *.wild.example"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("test is successful"), std::string::npos) << r.err;
}

TEST(ImportNginx, DebiansDefaultSiteHasNothingToImport) {
  TempDir dir;
  stage(dir, "debian");
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"), dir.file("nginx.conf")});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(file_exists(dir.file("out.toml")));
  EXPECT_NE(r.err.find(dir.file("sites-enabled/default") +
                       ":21: server: not carried over: no TLS listen (listen ... ssl), and not a redirect to https"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("tlsfront import-nginx: " + dir.file("nginx.conf") +
                       ": nothing to import: no server with a TLS listen (listen ... ssl); 14 report line(s) above\n"),
            std::string::npos)
      << r.err;
}

TEST(ImportNginx, SyntaxAndUsageErrors) {
  TempDir dir;
  write_file(dir.file("nginx.conf"), "http {\n  include site.conf;\n}\n");
  write_file(dir.file("site.conf"), "server {\n  listen 443 ssl\n}\n");
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", dir.file("nginx.conf")});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tlsfront import-nginx: " + dir.file("site.conf") + ":3:1: unexpected \"}\": directive \"listen\" is not terminated by \";\"\n");

  r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", dir.file("none.conf")});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("none.conf\": No such file or directory"), std::string::npos) << r.err;
  r = run_command(dir, {TLSFRONT_BINARY, "import-nginx"});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_NE(r.err.find("no nginx configuration file given"), std::string::npos) << r.err;
  r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "--bogus", "x"});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_NE(r.err.find("unknown option \"--bogus\""), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
