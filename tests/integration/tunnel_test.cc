// HTTP/1.1 Upgrade tunnels (WebSocket, RFC 6455 over RFC 9110 §7.8) through
// tlsfront to a real WebSocket server (python3-websockets,
// tests/integration/peers/ws_peer.py): echo, a 50 MB stream to a slow reader
// with bounded proxy memory, a refused upgrade, either side closing, the
// idle timeout, the graceful stop, and no request smuggled past a refused
// upgrade.
#include <signal.h>

#include <fstream>
#include <string>
#include <thread>

#include "harness.h"
#include "ws_peer.h"

namespace tlsfront::itest {
namespace {

// A masked client text frame (RFC 6455 §5.2; the masking key 0 leaves the payload as is).
std::string client_frame(std::string_view text) {
  std::string f = "\x81";
  f.push_back(static_cast<char>(0x80 | text.size()));
  f.append(4, '\0');
  f.append(text);
  return f;
}
std::string server_frame(std::string_view text) {
  std::string f = "\x81";
  f.push_back(static_cast<char>(text.size()));
  f.append(text);
  return f;
}

size_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6));
  }
  return 0;
}

class Tunnel : public ProxyTest {
 protected:
  // Starts the WebSocket server and tlsfront in front of it.
  bool start(ProxyOptions o = {}) {
    ws_port_ = start_ws_server(ws_, dir_);
    if (ws_port_ == 0) return false;
    if (o.upstream_servers.empty()) o.upstream_servers = {"127.0.0.1:" + std::to_string(ws_port_)};
    return start_proxy(o);
  }
  // Runs a ws_peer client mode against wss://localhost:<proxy>/<path>; its stdout.
  std::string client(const std::vector<std::string>& args, milliseconds timeout = milliseconds(60'000)) {
    return run_ws_client(dir_, port(), args, timeout);
  }
  std::string metrics() {
    return plain_request(proxy_.admin_port(), "GET /metrics HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n");
  }
  // An open tunnel on `c` to /echo: the 101 read, one message echoed.
  void open_echo(TlsClient& c) {
    ASSERT_TRUE(c.connect(port())) << c.error();
    ASSERT_TRUE(c.write(upgrade_request("/echo")));
    std::string buf;
    ASSERT_TRUE(read_until(c, buf, "\r\n\r\n")) << buf;
    ASSERT_TRUE(buf.starts_with("HTTP/1.1 101 ")) << buf;
    ASSERT_NE(buf.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), std::string::npos) << buf;
    ASSERT_NE(buf.find("Upgrade: websocket"), std::string::npos) << buf;
    ASSERT_TRUE(c.write(client_frame("ping")));
    buf.clear();
    ASSERT_TRUE(read_until(c, buf, server_frame("ping"))) << buf;
  }
  // An upstream answering `response` to an Upgrade: the client gets a 502,
  // the log no tunnel.
  void expect_101_refused(const std::string& response) {
    FakeUpstream other(response);
    ProxyOptions o;
    o.upstream_servers = {other.address()};
    ASSERT_TRUE(start(o));
    TlsClient c;
    ASSERT_TRUE(c.connect(port())) << c.error();
    ASSERT_TRUE(c.write(upgrade_request("/echo")));
    const std::string got = c.read_all(milliseconds(10'000));
    EXPECT_TRUE(got.starts_with("HTTP/1.1 502 ")) << got;
    auto lines = proxy_.wait_log_lines(1);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("invalid_response")) << lines[0];
    EXPECT_EQ(json_raw(lines[0], "tunnel"), std::string("false")) << lines[0];
  }
  void expect_tunnel_line(const std::string& line) {
    EXPECT_EQ(json_raw(line, "status"), std::string("101")) << line;
    EXPECT_EQ(json_raw(line, "tunnel"), std::string("true")) << line;
    EXPECT_EQ(json_raw(line, "upstream_connection_reused"), std::string("false")) << line;
    EXPECT_EQ(json_raw(line, "upstream_status"), std::string("101")) << line;
  }

  Process ws_;
  int ws_port_ = 0;
};

TEST_F(Tunnel, EchoOverHttp1) {
  ASSERT_TRUE(start());
  EXPECT_EQ(client({"echo", "/echo", "200"}), "ok 200\n");
  EXPECT_EQ(client({"echo", "/echo", "3"}), "ok 3\n");
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& line : lines) expect_tunnel_line(line);
  EXPECT_EQ(json_raw(lines[0], "response_complete"), std::string("true")) << lines[0];
  EXPECT_GT(std::stoull(json_raw(lines[0], "bytes_received").value_or("0")), 200u * 10) << lines[0];
  EXPECT_GT(std::stoull(json_raw(lines[0], "bytes_sent").value_or("0")), 200u * 10) << lines[0];
  const std::string m = metrics();
  EXPECT_NE(m.find("\ntlsfront_tunnels_total 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\ntlsfront_tunnels_open 0\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("tlsfront_tunnel_bytes_total{direction=\"to_client\"} 0\n"), std::string::npos) << m;
}

// An Upgrade request a [[limit_req]] zone delayed keeps the zone's name in
// its tunnel's log line, as any other request's.
TEST_F(Tunnel, ALimitedUpgradeNamesItsZoneInTheTunnelLine) {
  ProxyOptions o;
  o.workers = 1;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_req = [\"ws\"]\n";
  o.extra = "[[limit_req]]\nname = \"ws\"\nrate = \"1r/s\"\nburst = 1\n";
  ASSERT_TRUE(start(o));
  {
    TlsClient first, second;
    ASSERT_NO_FATAL_FAILURE(open_echo(first));
    ASSERT_NO_FATAL_FAILURE(open_echo(second));  // spaced to the rate: about 1 s later
  }
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  int limited = 0;
  for (const auto& line : lines) {
    expect_tunnel_line(line);
    limited += json_string(line, "limit").value_or("") == "ws";
  }
  EXPECT_EQ(limited, 1) << lines[0] << "\n" << lines[1];
}

TEST_F(Tunnel, FiftyMegabytesToASlowReaderKeepsMemoryBounded) {
  [[maybe_unused]] SmallAsanQuarantine small_quarantine;
  ASSERT_TRUE(start());
  const size_t before = rss_kib(proxy_.process().pid());
  Process p;
  const size_t total = 50u * 1024 * 1024;
  ASSERT_TRUE(
      p.start({kPython, kWsPeer, "slow",
               "wss://localhost:" + std::to_string(port()) + "/stream/" + std::to_string(total), std::to_string(total)},
              dir_.file("slow.out"), dir_.file("slow.err")));
  size_t peak = before;
  const auto deadline = Clock::now() + milliseconds(100'000);
  while (p.running() && Clock::now() < deadline) {
    peak = std::max(peak, rss_kib(proxy_.process().pid()));
    std::this_thread::sleep_for(milliseconds(20));
  }
  if (p.running()) p.stop();
  EXPECT_EQ(read_file(dir_.file("slow.out")), "ok " + std::to_string(total) + "\n") << read_file(dir_.file("slow.err"));
  // 50 MB went through; the proxy held at most its buffers (64 KiB
  // watermarks each way, TLS records, libuv reads) at a time.
  EXPECT_LT(peak - before, 16u * 1024) << "RSS grew from " << before << " KiB to " << peak << " KiB";
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  EXPECT_GT(std::stoull(json_raw(lines[0], "bytes_sent").value_or("0")), total) << lines[0] << metrics();
}

TEST_F(Tunnel, RefusedUpgradeIsAnOrdinaryResponse) {
  ASSERT_TRUE(start());
  EXPECT_EQ(client({"expect_status", "/refuse"}), "403\n");
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("403")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "tunnel"), std::string("false")) << lines[0];
  EXPECT_NE(metrics().find("\ntlsfront_tunnels_total 0\n"), std::string::npos);
}

// The recording backend ignores Upgrade and answers 200: the bytes after
// the Upgrade request are neither a tunnel nor a second request upstream.
TEST_F(Tunnel, NoRequestSmuggledAfterARefusedUpgrade) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write(upgrade_request("/first") + "GET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  const std::string got = c.read_all(milliseconds(10'000));
  EXPECT_TRUE(c.closed()) << "the connection stays open after a refused upgrade";
  EXPECT_TRUE(got.starts_with("HTTP/1.1 200 ")) << got;
  EXPECT_EQ(got.find("HTTP/1.1", 1), std::string::npos) << "a second response: " << got;
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  auto requests = backend_.wait_requests(1);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_TRUE(requests[0].starts_with("GET /first ")) << requests[0];
  EXPECT_NE(requests[0].find("Upgrade: websocket\r\n"), std::string::npos) << requests[0];
  EXPECT_NE(requests[0].find("Connection: upgrade\r\n"), std::string::npos) << requests[0];
  EXPECT_EQ(backend_.count("req"), 1u);
}

// A 101 that switches to another protocol (or names none) is no tunnel the
// client asked for: 502, never passed on as "Upgrade: websocket".
TEST_F(Tunnel, A101ToAnotherProtocolIs502) {
  expect_101_refused("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n");
}

TEST_F(Tunnel, A101WithoutUpgradeIs502) {
  expect_101_refused("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n");
}

TEST_F(Tunnel, ClientClosesMidStream) {
  ASSERT_TRUE(start());
  {
    TlsClient c;
    open_echo(c);
    if (HasFatalFailure()) return;
  }  // closed here
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  EXPECT_EQ(json_raw(lines[0], "upstream_response_ms"), std::string("null")) << lines[0];
  ASSERT_TRUE(wait_until([&] { return metrics().find("\ntlsfront_tunnels_open 0\n") != std::string::npos; }));
}

TEST_F(Tunnel, UpstreamClosesMidStream) {
  ASSERT_TRUE(start());
  EXPECT_EQ(client({"expect_close", "/close"}), "closed\n");
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  // The upstream ended it: the tunnel is its response, complete.
  EXPECT_NE(json_raw(lines[0], "upstream_response_ms").value_or("null"), "null") << lines[0];
}

TEST_F(Tunnel, IdleTimeoutClosesTheTunnel) {
  ProxyOptions o;
  o.extra = "[timeouts]\ntunnel = \"300ms\"\n";
  ASSERT_TRUE(start(o));
  TlsClient c;
  open_echo(c);
  if (HasFatalFailure()) return;
  c.read_all(milliseconds(10'000));
  EXPECT_TRUE(c.closed()) << "an idle tunnel stayed open past timeouts.tunnel";
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  EXPECT_EQ(json_raw(lines[0], "response_complete"), std::string("false")) << lines[0];
}

TEST_F(Tunnel, GracefulStopLetsTheTunnelRunUntilShutdownTimeout) {
  ProxyOptions o;
  o.top_level = "shutdown_timeout = \"1500ms\"\n";
  ASSERT_TRUE(start(o));
  TlsClient c;
  open_echo(c);
  if (HasFatalFailure()) return;
  proxy_.process().signal(SIGTERM);
  // Draining: the open tunnel still carries messages.
  ASSERT_TRUE(c.write(client_frame("during stop")));
  std::string buf;
  EXPECT_TRUE(read_until(c, buf, server_frame("during stop"))) << buf;
  c.read_all(milliseconds(10'000));
  EXPECT_TRUE(c.closed()) << "the tunnel outlived shutdown_timeout";
  auto st = proxy_.process().wait_exit(milliseconds(10'000));
  EXPECT_TRUE(st.has_value()) << "tlsfront still running after shutdown_timeout";
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
}

TEST_F(Tunnel, RouteWithoutUpgradeDropsIt) {
  ProxyOptions o;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nupgrade = []\n";
  ASSERT_TRUE(start_proxy(o));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write(upgrade_request("/plain")));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  auto requests = backend_.wait_requests(1);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].find("Upgrade:"), std::string::npos) << requests[0];
}

}  // namespace
}  // namespace tlsfront::itest
