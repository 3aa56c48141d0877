// tlsfront_hsload (tests/tools/hsload/, the bench's TLS 1.3 handshake load
// generator) against a real tlsfront: full and resumed handshakes for a
// bounded --count, every one of which must succeed, and the proxy's access
// log must agree with the generator's counts (one line per connection,
// ssl_session_reused true exactly for the ones it counted resumed). Also
// an RSA certificate (rsa_pss_rsae_sha256), handshake messages spanning
// records (openssl s_server -max_send_frag 512), and the failures it must count
// instead of hiding: a non-200 answer, a plain-HTTP server, a refused port,
// a usage error.
#include <unistd.h>

#include <string>
#include <vector>

#include "harness.h"
#include "tool_run.h"

namespace tlsfront::itest {
namespace {

using HsloadRun = ToolRun;

class HsloadTest : public ProxyTest {
 protected:
  HsloadRun hsload(std::vector<std::string> args) {
    args.insert(args.begin(), TLSFRONT_HSLOAD_BINARY);
    return run_tool(dir_, args);
  }
  std::vector<std::string> args(const std::string& mode, long count, int concurrency, const std::string& path) {
    return {"--connect",     "127.0.0.1:" + std::to_string(port()), "--mode", mode, "--count", std::to_string(count),
            "--concurrency", std::to_string(concurrency),           "--path", path};
  }
  // The access-log lines for `path`, once there are `n` of them.
  std::vector<std::string> logged(const std::string& path, size_t n) {
    std::vector<std::string> found;
    wait_until([&] {
      found.clear();
      for (const auto& line : proxy_.wait_log_lines(0, milliseconds(0)))
        if (json_string(line, "path") == path) found.push_back(line);
      return found.size() >= n;
    });
    return found;
  }
  static size_t count_reused(const std::vector<std::string>& lines) {
    size_t n = 0;
    for (const auto& line : lines) n += json_raw(line, "ssl_session_reused") == "true";
    return n;
  }
};

TEST_F(HsloadTest, FullHandshakesAllSucceedAndTheProxyLogsEachOne) {
  ASSERT_TRUE(start_proxy());
  HsloadRun r = hsload(args("full", 60, 4, "/hsload-full"));
  ASSERT_TRUE(r.result.status.exited && r.result.status.code == 0) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("handshakes"), 60) << r.result.out;
  EXPECT_EQ(r.num("errors"), 0) << r.result.out;
  EXPECT_EQ(r.num("resumed"), 0) << r.result.out;
  EXPECT_EQ(r.num("full"), 60) << r.result.out;
  std::vector<std::string> lines = logged("/hsload-full", 60);
  ASSERT_EQ(lines.size(), 60u);
  EXPECT_EQ(count_reused(lines), 0u);
  for (const auto& line : lines) {
    EXPECT_EQ(json_string(line, "ssl_protocol"), "TLSv1.3") << line;
    EXPECT_EQ(json_raw(line, "status"), "200") << line;
  }
}

TEST_F(HsloadTest, ResumedModeResumesAllButEachSlotsFirstAndTheProxyAgrees) {
  ASSERT_TRUE(start_proxy());
  constexpr int kSlots = 4;
  constexpr long kCount = 80;
  HsloadRun r = hsload(args("resumed", kCount, kSlots, "/hsload-resumed"));
  ASSERT_TRUE(r.result.status.exited && r.result.status.code == 0) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("handshakes"), kCount) << r.result.out;
  EXPECT_EQ(r.num("errors"), 0) << r.result.out;
  EXPECT_EQ(r.num("resumed"), kCount - kSlots) << r.result.out;
  EXPECT_EQ(r.num("full"), kSlots) << r.result.out;
  std::vector<std::string> lines = logged("/hsload-resumed", kCount);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kCount));
  EXPECT_EQ(count_reused(lines), static_cast<size_t>(kCount - kSlots));
}

TEST_F(HsloadTest, AnRsaCertificateAnswersWithRsaPss) {
  ProxyOptions o;
  o.certificate = pki("rsa.chain.pem");
  o.key = pki("rsa.key");
  ASSERT_TRUE(start_proxy(o));
  HsloadRun r = hsload(args("resumed", 12, 2, "/hsload-rsa"));
  ASSERT_TRUE(r.result.status.exited && r.result.status.code == 0) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("handshakes"), 12) << r.result.out;
  EXPECT_EQ(r.num("resumed"), 10) << r.result.out;
  EXPECT_EQ(r.num("errors"), 0) << r.result.out;
}

// openssl s_server with 512-octet records: its Certificate (leaf and
// intermediate, ~950 octets) spans two records and has to be reassembled.
TEST_F(HsloadTest, HandshakeMessagesSpanningRecordsAreReassembled) {
  int ss_port = free_port();
  Process server;
  ASSERT_TRUE(server.start({"/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:" + std::to_string(ss_port), "-cert",
                            pki("localhost.pem"), "-cert_chain", pki("intermediate.pem"), "-key", pki("localhost.key"),
                            "-www", "-quiet", "-max_send_frag", "512", "-naccept", "1000"},
                           dir_.path() + "/s_server.out", dir_.path() + "/s_server.err"));
  ASSERT_TRUE(wait_until([&] {
    int fd = tcp_connect(ss_port);
    if (fd >= 0) close(fd);
    return fd >= 0;
  })) << server.err();
  for (std::string mode : {"full", "resumed"}) {
    HsloadRun r = hsload(
        {"--connect", "127.0.0.1:" + std::to_string(ss_port), "--mode", mode, "--count", "12", "--concurrency", "2"});
    EXPECT_TRUE(r.result.status.exited && r.result.status.code == 0) << r.result.out << r.result.err;
    EXPECT_EQ(r.num("handshakes"), 12) << mode << " " << r.result.out;
    EXPECT_EQ(r.num("resumed"), mode == "full" ? 0 : 10) << mode << " " << r.result.out;
  }
  server.stop();
}

TEST_F(HsloadTest, ANon200AnswerIsAnErrorNotAHandshake) {
  ProxyOptions o;
  o.routes = "[[route]]\npath_prefix = \"/\"\nreturn = { status = 404, body = \"no\" }\n";
  ASSERT_TRUE(start_proxy(o));
  HsloadRun r = hsload(args("full", 5, 2, "/missing"));
  EXPECT_TRUE(r.result.status.exited && r.result.status.code == 1) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("handshakes"), 0) << r.result.out;
  EXPECT_EQ(r.num("errors"), 5) << r.result.out;
  EXPECT_EQ(r.num("error_reason:http_status_404"), 5) << r.result.out;
}

TEST_F(HsloadTest, APlainHttpServerIsNotTls) {
  HsloadRun r = hsload({"--connect", backend_.address(), "--count", "3"});
  EXPECT_TRUE(r.result.status.exited && r.result.status.code == 1) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("error_reason:not_a_tls_record"), 3) << r.result.out;
}

TEST_F(HsloadTest, ARefusedPortAndBadArgumentsFailCleanly) {
  HsloadRun refused = hsload({"--connect", "127.0.0.1:" + std::to_string(free_port()), "--count", "3"});
  EXPECT_TRUE(refused.result.status.exited && refused.result.status.code == 1) << refused.result.out;
  EXPECT_EQ(refused.num("errors"), 3) << refused.result.out;
  EXPECT_EQ(refused.num("error_reason:connect_failed"), 3) << refused.result.out;

  for (std::vector<std::string> bad : {std::vector<std::string>{"--count", "3"},
                                       {"--connect", "127.0.0.1:1", "--mode", "half"},
                                       {"--connect", "127.0.0.1:1", "--count", "2", "--duration", "1"},
                                       {"--connect", "127.0.0.1:0"},
                                       {"--connect", "127.0.0.1:1", "--concurrency"}}) {
    HsloadRun r = hsload(bad);
    EXPECT_TRUE(r.result.status.exited && r.result.status.code == 2) << bad[0] << " " << r.result.err;
    EXPECT_NE(r.result.err.find("usage:"), std::string::npos) << r.result.err;
  }
}

}  // namespace
}  // namespace tlsfront::itest
