// WebSocket over HTTP/3 (RFC 9220 extended CONNECT) through tlsfront to a
// real WebSocket server (tests/integration/peers/ws_peer.py, on
// python3-websockets, RFC 6455 over HTTP/1.1). No Debian client speaks
// RFC 9220 (Chromium does not ship it either), so the client is the test
// tool tests/tools/h3client (ngtcp2 + nghttp3 + GnuTLS): it waits for the
// server's SETTINGS_ENABLE_CONNECT_PROTOCOL, sends the CONNECT, and after
// the 200 the masked WebSocket frames of a file as the stream's DATA, then
// FIN; it prints the response's fields to stderr and its DATA to stdout.
#include <string>
#include <vector>

#include "harness.h"
#include "ws_peer.h"

namespace tlsfront::itest {
namespace {

const std::string kH3client = TLSFRONT_H3CLIENT_BINARY;

class H3Tunnel : public ProxyTest {
 protected:
  bool start(ProxyOptions o = {}) {
    ws_port_ = start_ws_server(ws_, dir_);
    if (ws_port_ == 0) return false;
    o.listen_extra = "quic = true";
    o.upstream_servers = {"127.0.0.1:" + std::to_string(ws_port_)};
    return start_proxy(o);
  }
  void TearDown() override {
    ws_.stop();
    ProxyTest::TearDown();
  }
  // h3client's extended CONNECT (websocket) to `path`, sending `frames`
  // once the tunnel is open, then `last` once `after` response octets
  // arrived, then FIN.
  RunResult connect(const std::string& path, const std::string& frames, const std::string& last = "",
                    size_t after = 0) {
    write_file(dir_.file("frames.bin"), frames);
    write_file(dir_.file("last.bin"), last);
    std::vector<std::string> argv = {kH3client,
                                     "--ca",
                                     pki("root.pem"),
                                     "--protocol",
                                     "websocket",
                                     "--header",
                                     "sec-websocket-version: 13",
                                     "--data",
                                     dir_.file("frames.bin")};
    if (!last.empty()) {
      argv.insert(argv.end(), {"--then", dir_.file("last.bin"), "--after", std::to_string(after)});
    }
    argv.insert(argv.end(), {"127.0.0.1", std::to_string(port()), path});
    return run_command(dir_, argv, milliseconds(30'000));
  }
  std::string metrics() {
    return plain_request(proxy_.admin_port(), "GET /metrics HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n");
  }

  Process ws_;
  int ws_port_ = 0;
};

TEST_F(H3Tunnel, EchoOverHttp3) {
  ASSERT_TRUE(start());
  const std::vector<size_t> sizes = {1, 125, 126, 4000, 65535, 65536, 200'000};
  std::string frames;
  size_t echoes = 0;  // octets of the server's (unmasked) echo frames
  for (size_t n : sizes) {
    const std::string message(n, static_cast<char>('a' + n % 26));
    frames += ws_frame(0x1, message);
    echoes += ws_frame(0x1, message, /*masked=*/false).size();
  }
  // After the echoes, a close handshake (RFC 6455 §5.5.1), then FIN: the
  // server answers and closes, which ends the stream from tlsfront's side.
  // (Sent at once, the close raced the server's last echo.)
  RunResult r = connect("/echo", frames, ws_frame(0x8, std::string("\x03\xe8", 2)), echoes);
  ASSERT_TRUE(r.status.exited) << r.err;
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find(":status: 200"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sec-websocket-accept"), std::string::npos) << "RFC 9220 §3: no Sec-WebSocket-Accept";
  std::string buf = r.out;
  for (size_t n : sizes) {
    auto m = take_ws_frame(buf);
    ASSERT_TRUE(m.has_value()) << "no echo of the " << n << "-octet message";
    EXPECT_EQ(m->opcode, 0x1) << n;
    EXPECT_EQ(m->payload.size(), n);
    EXPECT_TRUE(m->payload == std::string(n, static_cast<char>('a' + n % 26))) << "the " << n << "-octet echo differs";
  }
  auto close = take_ws_frame(buf);
  ASSERT_TRUE(close.has_value());
  EXPECT_EQ(close->opcode, 0x8);
  EXPECT_TRUE(buf.empty()) << buf.size() << " octets after the close frame";
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "protocol"), "HTTP/3.0") << lines[0];
  EXPECT_EQ(json_string(lines[0], "path"), "/echo") << lines[0];
  EXPECT_EQ(json_raw(lines[0], "status"), "200") << lines[0];
  EXPECT_EQ(json_raw(lines[0], "tunnel"), "true") << lines[0];
  EXPECT_EQ(json_raw(lines[0], "upstream_status"), "101") << lines[0];
  EXPECT_EQ(json_raw(lines[0], "response_complete"), "true") << lines[0];
  EXPECT_GT(std::stoull(json_raw(lines[0], "bytes_received").value_or("0")), 335'000u) << lines[0];
  EXPECT_GT(std::stoull(json_raw(lines[0], "bytes_sent").value_or("0")), 335'000u) << lines[0];
  const std::string m = metrics();
  EXPECT_NE(m.find("\ntlsfront_tunnels_total 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\ntlsfront_tunnels_open 0\n"), std::string::npos) << m;
}

// The server refuses the upgrade: its status is the stream's, no tunnel.
TEST_F(H3Tunnel, RefusedUpgradeIsTheStreamsStatus) {
  ASSERT_TRUE(start());
  RunResult r = connect("/refuse", ws_frame(0x1, "never sent"));
  ASSERT_TRUE(r.status.exited) << r.err;
  EXPECT_NE(r.err.find(":status: 403"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "upgrade refused\n");
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), "403") << lines[0];
  EXPECT_EQ(json_raw(lines[0], "tunnel"), "false") << lines[0];
  EXPECT_NE(metrics().find("\ntlsfront_tunnels_total 0\n"), std::string::npos);
}

// A tunnel idle for timeouts.tunnel is reset (H3_REQUEST_CANCELLED) and its
// upstream connection closed. (The client waits for an echo that never
// comes before it would send its close frame.)
TEST_F(H3Tunnel, IdleTimeoutResetsTheStream) {
  ProxyOptions o;
  o.extra = "[timeouts]\ntunnel = \"300ms\"\n";
  ASSERT_TRUE(start(o));
  const std::string ping = ws_frame(0x1, "ping");
  RunResult r = connect("/echo", ping, ws_frame(0x8, std::string("\x03\xe8", 2)), 1'000'000);
  ASSERT_TRUE(r.status.exited) << r.err;
  EXPECT_EQ(r.status.code, 2) << r.err;
  EXPECT_NE(r.err.find("reset: 0x10c"), std::string::npos) << r.err;
  std::string buf = r.out;
  auto echo = take_ws_frame(buf);
  ASSERT_TRUE(echo.has_value());
  EXPECT_EQ(echo->payload, "ping");
  EXPECT_TRUE(wait_until([&] { return read_file(dir_.file("ws.out")).find("closed /echo\n") != std::string::npos; }))
      << read_file(dir_.file("ws.out"));
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "tunnel"), "true") << lines[0];
  EXPECT_EQ(json_raw(lines[0], "response_complete"), "false") << lines[0];
}

// RFC 9220 §3: no route allows an upgrade, so the SETTINGS do not offer
// extended CONNECT (and nghttp3 refuses a :protocol).
TEST_F(H3Tunnel, NoExtendedConnectWhenNoRouteAllowsAnUpgrade) {
  ProxyOptions o;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nupgrade = []\n";
  ASSERT_TRUE(start(o));
  RunResult r = connect("/echo", ws_frame(0x1, "never sent"));
  ASSERT_TRUE(r.status.exited) << r.err;
  EXPECT_EQ(r.status.code, 3) << r.err;
  EXPECT_NE(r.err.find("no SETTINGS_ENABLE_CONNECT_PROTOCOL"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
