// The command line: --version/--help, --test (config, certificate and key
// validation with precise messages; it creates no file), startup failures,
// SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

class Cli : public ::testing::Test {
 protected:
  // A valid config (upstream on a closed port: --test does not connect).
  ProxyOptions good_options() const {
    ProxyOptions o;
    o.upstream_servers = {"127.0.0.1:" + std::to_string(free_port())};
    return o;
  }
  // Writes `text` as DIR/tlsfront.toml and returns its path.
  std::string write_config(const std::string& text) const {
    std::string path = dir_.file("tlsfront.toml");
    write_file(path, text);
    return path;
  }
  std::string config_text(const ProxyOptions& o) const {
    return make_config(o, kAnyPort, dir_.file("access.log"));
  }
  // Number of lines in `text` (the next appended line's number is this + 1).
  static int line_count(const std::string& text) {
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  RunResult run_test(const std::string& config) {
    return run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", config});
  }

  TempDir dir_;
};

TEST_F(Cli, VersionExitsZero) {
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--version"});
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 0);
  EXPECT_EQ(r.out.rfind("tlsfront ", 0), 0u) << r.out;
}

TEST_F(Cli, HelpExitsZero) {
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--help"});
  EXPECT_EQ(r.status.code, 0);
  EXPECT_NE(r.out.find("--config"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--test"), std::string::npos) << r.out;
}

TEST_F(Cli, UnknownOptionExitsOne) {
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--bogus"});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
}

TEST_F(Cli, TestGoodConfig) {
  std::string path = write_config(config_text(good_options()));
  RunResult r = run_test(path);
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find("configuration file " + path + " test is successful"), std::string::npos) << r.err;
}

TEST_F(Cli, TestSyntaxErrorReportsPosition) {
  std::string text = config_text(good_options());
  int line = line_count(text) + 1;
  // The value is missing: the error is on this line, right after "= ".
  text += "[limits]\n";
  ++line;
  text += "max_header_bytes = \n";  // the value would start at column 20, where the newline is
  std::string path = write_config(text);
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  std::string expected = path + ":" + std::to_string(line) + ":20: ";
  EXPECT_NE(r.err.find(expected), std::string::npos) << "expected \"" << expected << "\" in:\n" << r.err;
  EXPECT_NE(r.err.find("test failed"), std::string::npos) << r.err;
}

TEST_F(Cli, TestUnknownKeyReportsLineAndColumn) {
  std::string text = config_text(good_options());
  text += "[timeouts]\n";
  int line = line_count(text) + 1;
  text += "handshake = \"5s\"\n";
  ++line;
  text += "  bogus_key = 1\n";  // column 3
  std::string path = write_config(text);
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  std::string expected = path + ":" + std::to_string(line) + ":3: timeouts.bogus_key";
  EXPECT_NE(r.err.find(expected), std::string::npos) << "expected \"" << expected << "\" in:\n" << r.err;
  EXPECT_NE(r.err.find("test failed"), std::string::npos) << r.err;
}

TEST_F(Cli, TestBadDurationNamesKey) {
  ProxyOptions o = good_options();
  o.upstream_extra = "read_timeout = \"5x\"\n";
  std::string text = config_text(o);
  // Line of the read_timeout key.
  size_t at = text.find("read_timeout");
  int line = static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n')) + 1;
  std::string path = write_config(text);
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  std::string expected = path + ":" + std::to_string(line) + ":1: upstream[0].read_timeout";
  EXPECT_NE(r.err.find(expected), std::string::npos) << "expected \"" << expected << "\" in:\n" << r.err;
  EXPECT_NE(r.err.find("5x"), std::string::npos) << r.err;
}

// OpenSSL accepts a cipher list as long as one entry is usable; --test names
// the misspelled one with the key's position.
TEST_F(Cli, TestUnknownCipherNamesTheEntryAndTheKey) {
  ProxyOptions o = good_options();
  o.tls_extra = "ciphers = \"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA348\"\n";
  const std::string text = config_text(o);
  const size_t at = text.find("ciphers = ");
  const int line = static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n')) + 1;
  std::string path = write_config(text);
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  const std::string expected = path + ":" + std::to_string(line) +
                               ":1: tls.ciphers: unknown cipher \"ECDHE-ECDSA-AES256-GCM-SHA348\" (entry 2)";
  EXPECT_NE(r.err.find(expected), std::string::npos) << "expected \"" << expected << "\" in:\n" << r.err;
  EXPECT_NE(r.err.find("test failed"), std::string::npos) << r.err;
}

// A URL where an upstream address belongs is named as one (not "IPv6
// addresses must be in brackets").
TEST_F(Cli, TestUpstreamUrlIsNotAnAddress) {
  ProxyOptions o = good_options();
  o.upstream_servers = {"https://10.0.0.1:8443"};
  std::string path = write_config(config_text(o));
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("upstream[0].servers[0]: invalid address \"https://10.0.0.1:8443\" (a URL is not an address: "
                       "expected \"host:port\" without a scheme"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("for TLS to the servers, set tls = true or write an [upstream.tls] table"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("brackets"), std::string::npos) << r.err;
}

TEST_F(Cli, TestCertKeyMismatch) {
  ProxyOptions o = good_options();
  o.key = pki("mismatch.key");
  std::string path = write_config(config_text(o));
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("does not match"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mismatch.key"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("test failed"), std::string::npos) << r.err;
}

TEST_F(Cli, TestMissingCertificate) {
  ProxyOptions o = good_options();
  o.certificate = dir_.file("no-such-cert.pem");
  std::string path = write_config(config_text(o));
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find(o.certificate), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("test failed"), std::string::npos) << r.err;
}

// redis_tls' files are opened by --test (it does not connect to Redis):
// one that does not load names its file:line:column and its key.
TEST_F(Cli, TestRedisTlsFileThatDoesNotLoadNamesTheKey) {
  ProxyOptions o = good_options();
  o.tls_extra = "[tls.session_cache]\nstore = \"redis\"\nredis = \"127.0.0.1:6380\"\nredis_tls = { trusted_ca = \"" +
                dir_.file("no-such-ca.pem") + "\" }\n";
  const std::string text = config_text(o);
  std::string path = write_config(text);
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  const auto at = text.find("redis_tls = {");
  ASSERT_NE(at, std::string::npos);
  const long line = std::count(text.begin(), text.begin() + static_cast<long>(at), '\n') + 1;
  EXPECT_NE(r.err.find(":" + std::to_string(line) + ":1: tls.session_cache.redis_tls.trusted_ca: cannot load " +
                       dir_.file("no-such-ca.pem")),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("test failed"), std::string::npos) << r.err;
  // Limit zones' files too, named by zone.
  o.tls_extra.clear();
  std::string zone = config_text(o) + "\n[[limit_req]]\nname = \"api\"\nrate = \"5r/s\"\nstore = \"redis\"\n"
                     "redis_tls = { certificate = \"" + dir_.file("no-such.pem") + "\", key = \"" + pki("client.key") + "\" }\n";
  r = run_test(write_config(zone));
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("limit_req[api].redis_tls.certificate: cannot load " + dir_.file("no-such.pem")),
            std::string::npos)
      << r.err;
}

TEST_F(Cli, TestUnwritableAccessLogFails) {
  std::string path =
      write_config(make_config(good_options(), kAnyPort, dir_.file("no-such-dir/access.log")));
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("no-such-dir/access.log"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("test failed"), std::string::npos) << r.err;
}

// --test may be run as another user than the server (root, by hand): it
// checks that the access log and the pid file could be created, and creates
// neither, nor the OCSP cache directory (a root-owned log would lock the
// server's user out of it).
TEST_F(Cli, TestCreatesNoFile) {
  const std::string tree = dir_.file("tree");  // what --test may not add to (the command's own output is beside it)
  std::filesystem::create_directories(tree + "/logs");
  std::filesystem::create_directories(tree + "/run");
  ProxyOptions o = good_options();
  o.top_level = "pid_file = \"" + tree + "/run/tlsfront.pid\"";
  o.tls_extra = "ocsp_cache_dir = \"" + tree + "/ocsp-cache\"\n[tls.ocsp]\nresponder = \"http://127.0.0.1:" +
                std::to_string(free_port()) + "/\"\n";
  const std::string path = tree + "/tlsfront.toml";
  write_file(path, make_config(o, kAnyPort, tree + "/logs/access.log"));
  auto listing = [&] {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(tree)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
  };
  const std::vector<std::string> before = listing();
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_EQ(listing(), before);
}

TEST_F(Cli, TestMissingConfigFile) {
  std::string path = dir_.file("absent.toml");
  RunResult r = run_test(path);
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

TEST_F(Cli, RunWithBadConfigExitsOne) {
  ProxyOptions o = good_options();
  o.upstream_extra = "read_timeout = \"5x\"\n";
  std::string path = write_config(config_text(o));
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--config", path});
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("upstream[0].read_timeout"), std::string::npos) << r.err;
}

TEST_F(Cli, RunWithKeyMismatchExitsOne) {
  ProxyOptions o = good_options();
  o.key = pki("mismatch.key");
  std::string path = write_config(config_text(o));
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--config", path});
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find("does not match"), std::string::npos) << r.err;
}

TEST_F(Cli, RunWithPortInUseExitsOne) {
  // Keep a listening socket on the port the proxy is told to use.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  int port = ntohs(sa.sin_port);
  std::string path = write_config(make_config(good_options(), port, dir_.file("access.log")));
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--config", path});
  ::close(fd);
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.err.find(std::to_string(port)), std::string::npos) << r.err;
}

TEST_F(Cli, SigtermExitsZero) {
  Proxy proxy(dir_);
  ASSERT_TRUE(proxy.start(good_options()));
  ExitStatus st = proxy.stop(milliseconds(5'000));
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.code, 0);
}

TEST_F(Cli, SigtermWithIdleClientConnectionExitsZero) {
  Backend backend(dir_);
  ASSERT_TRUE(backend.start());
  Proxy proxy(dir_);
  ProxyOptions o;
  o.upstream_servers = {backend.address()};
  ASSERT_TRUE(proxy.start(o));
  // An idle keepalive client connection (and a pooled upstream one) must not
  // hold up a graceful stop.
  TlsClient c;
  ASSERT_TRUE(c.connect(proxy.port())) << c.error();
  ASSERT_TRUE(c.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  auto start = Clock::now();
  ExitStatus st = proxy.stop(milliseconds(5'000));
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.code, 0);
  EXPECT_LT(took.count(), 5'000);
  c.read_all(milliseconds(2'000));
  EXPECT_TRUE(c.closed());
  backend.stop();
}

TEST_F(Cli, SigtermCompletesInFlightRequest) {
  Backend backend(dir_);
  ASSERT_TRUE(backend.start());
  Proxy proxy(dir_);
  ProxyOptions o;
  o.upstream_servers = {backend.address()};
  ASSERT_TRUE(proxy.start(o));
  HttpResponse r;
  std::thread client([&] { r = http_get(proxy.port(), "/slow/1000"); });
  // The backend records the request before it starts sleeping.
  EXPECT_TRUE(wait_until([&] { return backend.count("req") >= 1; }));
  proxy.process().signal(SIGTERM);
  auto st = proxy.process().wait_exit(milliseconds(8'000));
  client.join();
  EXPECT_EQ(r.curl_code, 0) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "slow\n");
  ASSERT_TRUE(st.has_value()) << "still running 8 s after SIGTERM";
  EXPECT_TRUE(st->exited);
  EXPECT_EQ(st->code, 0);
  proxy.stop();
  backend.stop();
}

// A response streaming when SIGTERM arrives completes; meanwhile the
// listener is closed, so new connections are refused.
TEST_F(Cli, SigtermLetsAStreamingResponseFinishAndRefusesNewConnections) {
  Backend backend(dir_);
  ASSERT_TRUE(backend.start());
  Proxy proxy(dir_);
  ProxyOptions o;
  o.upstream_servers = {backend.address()};
  ASSERT_TRUE(proxy.start(o));
  HttpResponse r;
  std::thread client([&] { r = http_get(proxy.port(), "/slow-body/1500"); });
  EXPECT_TRUE(wait_until([&] { return backend.count("req") >= 1; }));
  proxy.process().signal(SIGTERM);
  EXPECT_TRUE(wait_until([&] { return proxy.process().err().find("stopping gracefully") != std::string::npos; }));
  // Connecting now fails (the listening sockets are closed), bounded by the wait.
  bool refused = wait_until([&] {
    TlsClient late;
    return !late.connect(proxy.port(), TlsOptions{}, milliseconds(500));
  });
  EXPECT_TRUE(refused);
  auto st = proxy.process().wait_exit(milliseconds(8'000));
  client.join();
  EXPECT_EQ(r.curl_code, 0) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), 10u);
  ASSERT_TRUE(st.has_value()) << "still running 8 s after SIGTERM";
  EXPECT_EQ(st->code, 0);
  proxy.stop();
  backend.stop();
}

// shutdown_timeout bounds the drain: a request still waiting for its
// upstream after it is cut off, and the process exits 0.
TEST_F(Cli, ShutdownTimeoutCutsOffWhatIsStillInFlight) {
  Backend backend(dir_);
  ASSERT_TRUE(backend.start());
  Proxy proxy(dir_);
  ProxyOptions o;
  o.upstream_servers = {backend.address()};
  ASSERT_TRUE(proxy.start(o));
  const std::string conf = read_file(proxy.config_path());
  write_file(proxy.config_path(), "shutdown_timeout = \"500ms\"\n" + conf);
  proxy.process().signal(SIGHUP);  // a reload applies it
  ASSERT_TRUE(wait_until([&] { return proxy.process().err().find("generation 2 is live") != std::string::npos; }))
      << proxy.process().err();
  HttpResponse r;
  std::thread client([&] { r = http_get(proxy.port(), "/slow/6000"); });
  EXPECT_TRUE(wait_until([&] { return backend.count("req") >= 1; }));
  const auto start = Clock::now();
  proxy.process().signal(SIGTERM);
  auto st = proxy.process().wait_exit(milliseconds(5'000));
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  client.join();
  ASSERT_TRUE(st.has_value()) << "still running 5 s after SIGTERM with shutdown_timeout = 500ms";
  EXPECT_EQ(st->code, 0);
  EXPECT_LT(took.count(), 5'000);
  EXPECT_NE(r.status, 200);  // cut off: the 6 s response never came
  EXPECT_NE(proxy.process().err().find("in-flight requests get up to 500 ms"), std::string::npos)
      << proxy.process().err();
  // Logged all the same, as the answer tlsfront gave up with.
  auto lines = proxy.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("503")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "response_complete"), std::string("false")) << lines[0];
  proxy.stop();
  backend.stop();
}

}  // namespace
}  // namespace tlsfront::itest
