// `tlsfront import-nginx` run as the real binary on the fixtures of
// tests/data/nginx (copied next to the test PKI, which their relative paths
// name), and the configuration it writes checked by `tlsfront --test`;
// Debian's default site (nothing to carry over), syntax and usage errors.
#include <filesystem>
#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = std::string(TLSFRONT_SOURCE_DIR) + "/tests/data/nginx/";

// `fixture` (a file or a directory) copied into `dir`, with pki/ (the test
// PKI's files the fixtures name, a ticket key file) and logs/ beside it.
void stage(const TempDir& dir, const std::string& fixture) {
  fs::copy(kFixtures + fixture, dir.path() + (fs::is_directory(kFixtures + fixture) ? "" : "/" + fixture),
           fs::copy_options::recursive);
  fs::create_directories(dir.file("pki"));
  fs::create_directories(dir.file("logs"));
  for (const char* f : {"localhost.chain.pem", "localhost.key", "rsa.chain.pem", "rsa.key", "other-name.chain.pem",
                        "other-name.key", "wildcard.chain.pem", "wildcard.key", "root.pem"}) {
    fs::copy_file(std::string(TLSFRONT_TEST_PKI_DIR) + "/" + f, dir.file(std::string("pki/") + f));
    if (std::string(f).ends_with(".key")) fs::permissions(dir.file(std::string("pki/") + f), fs::perms::owner_read | fs::perms::owner_write);
  }
  write_file(dir.file("pki/ticket.key"), std::string(80, '\x5a'));
  fs::permissions(dir.file("pki/ticket.key"), fs::perms::owner_read | fs::perms::owner_write);
}

TEST(ImportNginx, TheWriteupsServerBlockImportsAndPassesTest) {
  TempDir dir;
  stage(dir, "writeup.conf");
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"), dir.file("writeup.conf")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string conf = dir.file("writeup.conf");
  EXPECT_NE(r.err.find(conf + ":44: ssl_early_data: no equivalent yet: TLS 1.3 early data (0-RTT)\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(conf + ":54: proxy_http_version: not needed: HTTP/1.1 is the only mode to upstreams\n"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("tlsfront import-nginx: " + conf + ": written to " + dir.file("out.toml") +
                       "; 17 report line(s) above (not carried over, or carried over with a difference)\n"),
            std::string::npos)
      << r.err;
  std::string toml = read_file(dir.file("out.toml"));
  EXPECT_NE(toml.find("size = \"10m\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("keepalive = 32"), std::string::npos) << toml;
  EXPECT_NE(toml.find("hsts = \"max-age=31536000\""), std::string::npos) << toml;  // add_header ... always

  r = run_command(dir, {TLSFRONT_BINARY, "--test", "-c", dir.file("out.toml")});
  EXPECT_EQ(r.status.code, 0) << r.err << "\n" << toml;
  EXPECT_NE(r.err.find("test is successful"), std::string::npos) << r.err;
}

TEST(ImportNginx, SeveralServersFromIncludedFilesPassTest) {
  TempDir dir;
  stage(dir, "multi");
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", dir.file("nginx.conf")});  // TOML on stdout
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find(dir.file("sites/40-redirect.conf") + ":4: return: carried over as a cleartext listener's redirect_https"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("names = [\"wild.example\", \"*.wild.example\"]"), std::string::npos) << r.out;
  write_file(dir.file("out.toml"), r.out);
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
