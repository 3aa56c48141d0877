// tlsfront_wsload (tests/tools/wsload/, the bench's WebSocket echo server
// and tunnel load client) against itself directly and through a real
// tlsfront over TLS: every message echoed and checked octet for octet, the
// tunnels held open, and the failures it must count instead of hiding: a
// corrupted echo, a route that does not allow the upgrade, usage errors.
#include <unistd.h>

#include <string>
#include <vector>

#include "harness.h"
#include "tool_run.h"

namespace tlsfront::itest {
namespace {

using WsloadRun = ToolRun;

const std::string kWsRoute = "[[route]]\npath_prefix = \"/ws/\"\nupstream = \"backend\"\nupgrade = [\"websocket\"]\n";

class WsloadTest : public ProxyTest {
 protected:
  WsloadRun wsload(std::vector<std::string> args) {
    args.insert(args.begin(), TLSFRONT_WSLOAD_BINARY);
    return run_tool(dir_, args);
  }
  // Starts `tlsfront_wsload --serve` (plus `extra`) on a free port; false after a test failure.
  bool start_server(std::vector<std::string> extra = {}) {
    server_port_ = free_port();
    std::vector<std::string> argv = {TLSFRONT_WSLOAD_BINARY, "--serve", server_address()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (!server_.start(argv, dir_.file("wsload.out"), dir_.file("wsload.err"))) return false;
    bool up = wait_until([&] {
      int fd = tcp_connect(server_port_);
      if (fd >= 0) close(fd);
      return fd >= 0;
    });
    EXPECT_TRUE(up) << read_file(dir_.file("wsload.err"));
    return up;
  }
  bool start_proxy_to_server(std::string routes = kWsRoute) {
    ProxyOptions o;
    o.upstream_servers = {server_address()};
    o.routes = std::move(routes);
    return start_proxy(o);
  }
  std::string server_address() const { return "127.0.0.1:" + std::to_string(server_port_); }
  std::vector<std::string> through_proxy(std::vector<std::string> more) {
    std::vector<std::string> a = {
        "--connect", "127.0.0.1:" + std::to_string(port()), "--tls", "--sni", "localhost", "--path", "/ws/"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  void TearDown() override {
    server_.stop();
    ProxyTest::TearDown();
  }

  Process server_;
  int server_port_ = 0;
};

TEST_F(WsloadTest, DirectCleartextEchoesEveryMessage) {
  ASSERT_TRUE(start_server());
  WsloadRun r = wsload({"--connect", server_address(), "--tunnels", "4", "--message-bytes", "300", "--duration", "1"});
  ASSERT_TRUE(r.exited(0)) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("tunnels"), 4) << r.result.out;
  EXPECT_GT(r.num("messages"), 0) << r.result.out;
  EXPECT_EQ(r.num("errors"), 0) << r.result.out;
}

TEST_F(WsloadTest, ThroughTlsfrontOverTlsEchoesEveryMessageAndEachTunnelIsLogged) {
  ASSERT_TRUE(start_server());
  ASSERT_TRUE(start_proxy_to_server());
  WsloadRun r = wsload(through_proxy({"--tunnels", "8", "--message-bytes", "64", "--duration", "1"}));
  ASSERT_TRUE(r.exited(0)) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("tunnels"), 8) << r.result.out;
  EXPECT_GT(r.num("messages"), 0) << r.result.out;
  EXPECT_EQ(r.num("errors"), 0) << r.result.out;
  // One line per tunnel once it closed: status 101, tunnel true.
  auto lines = proxy_.wait_log_lines(8);
  ASSERT_EQ(lines.size(), 8u);
  for (const auto& line : lines) {
    EXPECT_EQ(json_raw(line, "status"), std::string("101")) << line;
    EXPECT_EQ(json_raw(line, "tunnel"), std::string("true")) << line;
    EXPECT_EQ(json_string(line, "path"), "/ws/") << line;
  }
}

TEST_F(WsloadTest, HoldOpensEveryTunnelThroughTlsfrontAndKeepsThemOpen) {
  ASSERT_TRUE(start_server());
  ASSERT_TRUE(start_proxy_to_server());
  WsloadRun r = wsload(through_proxy({"--tunnels", "30", "--hold", "0.5", "--open-rate", "300"}));
  ASSERT_TRUE(r.exited(0)) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("open"), 30) << r.result.out;
  EXPECT_EQ(r.num("errors"), 0) << r.result.out;
  EXPECT_EQ(r.num("held"), 30) << r.result.out;
}

TEST_F(WsloadTest, ACorruptedEchoIsAnErrorDirectAndThroughTlsfront) {
  ASSERT_TRUE(start_server({"--corrupt-every", "10"}));
  WsloadRun direct = wsload({"--connect", server_address(), "--tunnels", "2", "--duration", "1"});
  EXPECT_GT(direct.num("errors"), 0) << direct.result.out;
  EXPECT_GT(direct.num("error_reason:echo_mismatch"), 0) << direct.result.out;
  ASSERT_TRUE(start_proxy_to_server());
  WsloadRun proxied = wsload(through_proxy({"--tunnels", "2", "--duration", "1"}));
  EXPECT_GT(proxied.num("errors"), 0) << proxied.result.out;
  EXPECT_EQ(proxied.num("errors"), proxied.num("error_reason:echo_mismatch")) << proxied.result.out;
}

// upgrade = []: tlsfront drops the Upgrade, the echo server answers the
// plain GET with 400, and no tunnel opens: every attempt is an error.
TEST_F(WsloadTest, ARouteWithoutTheUpgradeOpensNoTunnel) {
  ASSERT_TRUE(start_server());
  ASSERT_TRUE(start_proxy_to_server("[[route]]\npath_prefix = \"/ws/\"\nupstream = \"backend\"\nupgrade = []\n"));
  WsloadRun r = wsload(through_proxy({"--tunnels", "2", "--duration", "0.5"}));
  EXPECT_TRUE(r.exited(1)) << r.result.out << r.result.err;
  EXPECT_EQ(r.num("messages"), 0) << r.result.out;
  EXPECT_GT(r.num("error_reason:http_status_400"), 0) << r.result.out;
}

TEST_F(WsloadTest, BadArgumentsAreUsageErrors) {
  for (std::vector<std::string> bad : {std::vector<std::string>{"--tunnels", "3"},
                                       {"--serve", "127.0.0.1:1", "--connect", "127.0.0.1:1"},
                                       {"--connect", "127.0.0.1:1", "--duration", "1", "--hold", "1"},
                                       {"--connect", "127.0.0.1:1", "--open-rate", "5"},
                                       {"--connect", "127.0.0.1:0"},
                                       {"--serve", "127.0.0.1:1", "--tunnels", "2"},
                                       {"--connect", "127.0.0.1:1", "--tunnels"},
                                       {"--connect", "127.0.0.1:1", "--bogus"}}) {
    WsloadRun r = wsload(bad);
    EXPECT_TRUE(r.exited(2)) << bad[0] << " " << r.result.err;
    EXPECT_NE(r.result.err.find("usage:"), std::string::npos) << r.result.err;
  }
}

}  // namespace
}  // namespace tlsfront::itest
