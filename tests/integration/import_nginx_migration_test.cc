// `tlsfront import-nginx` run as the real binary on what a migration meets
// beyond the fixtures of import_nginx_test.cc: a server with tens of
// thousands of add_header lines, a sites-available file (no http block),
// ssl_trusted_certificate naming an intermediate, no access_log (nginx's
// default log); the configurations it writes checked by `tlsfront --test`
// or served.
#include <filesystem>
#include <string>

#include "harness.h"
#include "import_nginx_support.h"

namespace tlsfront::itest {
namespace {

// One TLS server with the test PKI's certificate around `body`, in an http block.
std::string tls_server(const std::string& body) {
  return "http {\n  server {\n    listen 443 ssl;\n    ssl_certificate pki/localhost.chain.pem;\n"
         "    ssl_certificate_key pki/localhost.key;\n" +
         body + "  }\n}\n";
}

// 100k add_header lines in one server (each a different field, every 1000th
// name repeated in other case with a second value), and a location with its
// own two: the import groups them by name and writes each once, and the
// loader and `--test` take the result. Both were quadratic in the number of
// fields (the import of 20k took 8 s): at this size the run_command
// deadline (10 s) is far below what they took.
TEST(ImportNginxMigration, ManyAddHeadersImportOnceEachInOrder) {
  TempDir dir;
  stage(dir, "");
  constexpr int kHeaders = 100'000;
  std::string body;
  body.reserve(kHeaders * 40);
  for (int i = 0; i < kHeaders; ++i) {
    body += "    add_header X-H" + std::to_string(i) + " v" + std::to_string(i) + ";\n";
    if (i % 1000 == 0) body += "    add_header x-h" + std::to_string(i) + " w" + std::to_string(i) + ";\n";
  }
  body += "    location / { proxy_pass http://127.0.0.1:9000; }\n";
  body += "    location /own/ { proxy_pass http://127.0.0.1:9000; add_header X-H1 v1; add_header X-Own 1; }\n";
  write_file(dir.file("nginx.conf"), tls_server(body));
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"), dir.file("nginx.conf")});
  ASSERT_TRUE(r.status.exited) << "import-nginx did not finish within the deadline";
  ASSERT_EQ(r.status.code, 0) << r.err.substr(0, 2000);
  const std::string toml = read_file(dir.file("out.toml"));
  // The defaults: every field once, in file order, a repeated name's values together.
  const size_t add = toml.find("\n[response_headers]\nadd = { X-H0 = [\"v0\", \"w0\"], X-H1 = \"v1\", X-H2 = \"v2\", ");
  ASSERT_NE(add, std::string::npos) << toml.substr(0, 3000);
  const size_t last = toml.find("X-H99999 = \"v99999\" }", add);
  EXPECT_NE(last, std::string::npos);
  EXPECT_NE(toml.find("X-H999 = \"v999\", X-H1000 = [\"v1000\", \"w1000\"], X-H1001 = \"v1001\"", add),
            std::string::npos);
  EXPECT_NE(toml.find("X-H99000 = [\"v99000\", \"w99000\"]", add), std::string::npos);
  // The location with its own: only those (nginx's inheritance), and the
  // report names what it drops, without the one it repeats.
  EXPECT_NE(toml.find("response_headers = { inherit = false, add = { X-H1 = \"v1\", X-Own = \"1\" } }"),
            std::string::npos);
  const std::string dropped =
      dir.file("nginx.conf") + ":" + std::to_string(kHeaders + kHeaders / 1000 + 7) +
      ": add_header: nginx applies none of the enclosing blocks' add_header here (X-H0, x-h0, X-H2, X-H3, ";
  EXPECT_NE(r.err.find(dropped), std::string::npos) << r.err.substr(r.err.size() > 3000 ? r.err.size() - 3000 : 0);

  write_file(dir.file("out.toml"), runnable_here(toml, dir));
  r = run_command(dir, {TLSFRONT_BINARY, "--test", "-c", dir.file("out.toml")});
  ASSERT_TRUE(r.status.exited) << "--test did not finish within the deadline";
  EXPECT_EQ(r.status.code, 0) << r.err.substr(0, 2000);
  EXPECT_NE(r.err.find("test is successful"), std::string::npos) << r.err.substr(0, 2000);
}

// A sites-available file (server and upstream blocks, no http block: the
// usual layout, where nginx.conf's http block includes it) imports as the
// content of an http block, says so first, and the result passes --test.
TEST(ImportNginxMigration, ASitesAvailableFileImportsAsAnHttpBlocksContent) {
  TempDir dir;
  stage(dir, "");
  write_file(dir.file("api.conf"),
             "upstream api {\n    server 127.0.0.1:9000;\n    keepalive 16;\n}\n\n"
             "server {\n    listen 443 ssl;\n    http2 on;\n    server_name localhost;\n"
             "    ssl_certificate pki/localhost.chain.pem;\n    ssl_certificate_key pki/localhost.key;\n"
             "    location /api/ {\n        proxy_pass http://api;\n    }\n}\n\n"
             "server {\n    listen 80;\n    server_name localhost;\n    return 301 https://$host$request_uri;\n}\n");
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"), dir.file("api.conf")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  const std::string file = dir.file("api.conf");
  EXPECT_EQ(r.err.find(file + ":1: http: no http block: the file's directives are read as the content of one"), 0u)
      << r.err;
  EXPECT_EQ(r.err.find("unsupported"), std::string::npos) << r.err;
  const std::string toml = read_file(dir.file("out.toml"));
  EXPECT_NE(toml.find("name = \"api\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("keepalive = 16"), std::string::npos) << toml;
  EXPECT_NE(toml.find("path_prefix = \"/api/\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("alpn = [\"h2\", \"http/1.1\"]"), std::string::npos) << toml;
  write_file(dir.file("out.toml"), runnable_here(toml, dir));
  r = run_command(dir, {TLSFRONT_BINARY, "--test", "-c", dir.file("out.toml")});
  EXPECT_EQ(r.status.code, 0) << r.err << "\n" << toml;
  EXPECT_NE(r.err.find("test is successful"), std::string::npos) << r.err;
}

// ssl_trusted_certificate naming the usual chain.pem (the intermediate
// alone, which nginx uses to verify OCSP responses): not written as
// trusted_ca, where tlsfront --test refuses an intermediate as the anchor
// of the server chain ("incomplete chain ... not a trust anchor in
// trusted_ca"), but listed with the reason.
TEST(ImportNginxMigration, SslTrustedCertificateChainIsListedNotTrustedCa) {
  TempDir dir;
  stage(dir, "");
  std::filesystem::copy_file(pki("intermediate.pem"), dir.file("pki/chain.pem"));
  write_file(dir.file("nginx.conf"), tls_server("    ssl_stapling on;\n    ssl_stapling_verify on;\n"
                                                "    ssl_trusted_certificate pki/chain.pem;\n"
                                                "    location / { proxy_pass http://127.0.0.1:9000; }\n"));
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"), dir.file("nginx.conf")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find(dir.file("nginx.conf") + ":8: ssl_trusted_certificate: not carried over: nginx verifies OCSP "
                                                "responses (and client certificates) with it"),
            std::string::npos)
      << r.err;
  const std::string toml = read_file(dir.file("out.toml"));
  EXPECT_EQ(toml.find("trusted_ca"), std::string::npos) << toml;
  // What the operator adds for the test PKI's private root (a public chain needs nothing): --test passes.
  write_file(dir.file("out.toml"), runnable_here(toml, dir));
  r = run_command(dir, {TLSFRONT_BINARY, "--test", "-c", dir.file("out.toml")});
  EXPECT_EQ(r.status.code, 0) << r.err << "\n" << toml;
}

// No access_log anywhere: nginx logs every request (its compiled-in
// default), so the migrated node must too. The import writes tlsfront's
// default path, /var/log/tlsfront/access.log, and says so; served (that path
// moved into the test directory), a request leaves its JSON line.
TEST(ImportNginxMigration, NoAccessLogMeansNginxsDefaultAndTheNodeKeepsLogging) {
  TempDir dir;
  stage(dir, "");
  Backend backend(dir);
  ASSERT_TRUE(backend.start());
  write_file(dir.file("nginx.conf"), tls_server("    location / { proxy_pass http://" + backend.address() + "; }\n"));
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"), dir.file("nginx.conf")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find(dir.file("nginx.conf") + ":2: server: no access_log: nginx logs every request by default"),
            std::string::npos)
      << r.err;
  const std::string toml = read_file(dir.file("out.toml"));
  EXPECT_NE(toml.find("\n[log]\naccess_log = \"/var/log/tlsfront/access.log\""), std::string::npos) << toml;

  std::string served = runnable_here(toml, dir);
  const std::string listen = "\"0.0.0.0:443\"";
  served.replace(served.find(listen), listen.size(), "\"127.0.0.1:0\"");
  served += "\n[admin]\nenabled = false\n";
  Proxy proxy(dir);
  ProxyOptions o;
  o.config_text = served;
  o.admin_port = -1;
  ASSERT_TRUE(proxy.start(o));
  EXPECT_EQ(http_get(proxy.port(), "/logged").status, 200);
  auto lines = proxy.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "path"), "/logged") << lines[0];
  EXPECT_EQ(proxy.stop().code, 0);

  // `access_log off` stays off.
  write_file(dir.file("off.conf"), "http {\n  access_log off;\n" +
                                       tls_server("    location / { proxy_pass http://127.0.0.1:9000; }\n").substr(7));
  r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", dir.file("off.conf")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.out.find("\n[log]\naccess_log = \"\""), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("no access_log"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
