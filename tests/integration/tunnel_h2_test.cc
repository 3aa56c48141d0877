// WebSocket over HTTP/2 (RFC 8441 extended CONNECT) through tlsfront to a
// real WebSocket server (tests/integration/peers/ws_peer.py, on
// python3-websockets, which speaks RFC 6455 over HTTP/1.1 only), driven by
// the frame-level HTTP/2 client (h2_frames.h) sending masked WebSocket
// frames in DATA: no Debian client speaks RFC 8441. Echo, 5 MB to a client
// that stops reading (bounded proxy memory), a refused upgrade, either side
// ending the stream, malformed extended CONNECTs (never forwarded), other
// streams beside a tunnel, the idle timeout and the graceful stop.
#include <signal.h>

#include <string>
#include <thread>

#include "h2_frames.h"
#include "harness.h"
#include "ws_peer.h"

namespace tlsfront::itest {
namespace {

constexpr uint16_t kEnableConnectProtocol = 0x8;  // RFC 8441 §3
constexpr uint32_t kConnectError = 0xa;           // RFC 9113 §7

class H2Tunnel : public ProxyTest {
 protected:
  // Starts the WebSocket server and tlsfront in front of it.
  bool start(ProxyOptions o = {}) {
    ws_port_ = start_ws_server(ws_, dir_);
    if (ws_port_ == 0) return false;
    if (o.upstream_servers.empty()) o.upstream_servers = {"127.0.0.1:" + std::to_string(ws_port_)};
    return start_proxy(o);
  }
  std::string metrics() {
    return plain_request(proxy_.admin_port(), "GET /metrics HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n");
  }
  // The value the server's SETTINGS gave SETTINGS_ENABLE_CONNECT_PROTOCOL (0: absent).
  static uint32_t connect_protocol_setting(h2::Client& c) {
    auto f = c.wait_for([](const h2::Frame& x) { return x.type == h2::kSettings && !(x.flags & h2::kAck); });
    if (!f) return 0;
    uint32_t value = 0;
    for (size_t i = 0; i + 6 <= f->payload.size(); i += 6) {
      const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(f->payload[i + k])); };
      if ((b(0) << 8 | b(1)) == kEnableConnectProtocol) value = b(2) << 24 | b(3) << 16 | b(4) << 8 | b(5);
    }
    return value;
  }
  std::optional<h2::Frame> open(h2::Client& c, uint32_t stream, const std::string& path) {
    return open_h2_tunnel(c, stream, path);
  }
  static bool send_ws(h2::Client& c, uint32_t stream, uint8_t opcode, std::string_view payload,
                      bool end_stream = false) {
    return send_h2_ws(c, stream, opcode, payload, end_stream);
  }
  std::optional<WsMessage> next_ws(h2::Client& c, uint32_t stream, milliseconds timeout = kDefaultDeadline) {
    return tunnel_.next(c, stream, timeout);
  }
  bool wait_stream_end(h2::Client& c, uint32_t stream, milliseconds timeout = kDefaultDeadline) {
    return tunnel_.wait_end(c, stream, timeout);
  }
  void expect_echo(h2::Client& c, uint32_t stream, const std::string& text) {
    ASSERT_TRUE(send_ws(c, stream, 0x1, text));
    auto m = next_ws(c, stream);
    ASSERT_TRUE(m.has_value()) << "no echo of a " << text.size() << "-byte message";
    EXPECT_EQ(m->opcode, 0x1);
    EXPECT_EQ(m->payload, text);
  }
  void expect_tunnel_line(const std::string& line) {
    EXPECT_EQ(json_raw(line, "status"), std::string("200")) << line;
    EXPECT_EQ(json_raw(line, "tunnel"), std::string("true")) << line;
    EXPECT_EQ(json_string(line, "protocol"), std::string("HTTP/2.0")) << line;
    EXPECT_EQ(json_raw(line, "upstream_connection_reused"), std::string("false")) << line;
    EXPECT_EQ(json_raw(line, "upstream_status"), std::string("101")) << line;
  }
  // ws_peer logs "closed PATH" when the upstream side of a tunnel ends.
  bool upstream_closed(const std::string& path) {
    return wait_until(
        [&] { return read_file(dir_.file("ws.out")).find("closed " + path + "\n") != std::string::npos; });
  }

  Process ws_;
  int ws_port_ = 0;
  H2WsReader tunnel_;  // the tunnel stream under test
};

bool has_field(const h2::Frame& f, const std::string& name) {
  for (const auto& [k, v] : f.fields) {
    if (k == name) return true;
  }
  return false;
}

TEST_F(H2Tunnel, EchoOverHttp2) {
  ProxyOptions o;
  o.extra = "[http2]\ninitial_window_size = 1048576\n";  // room for the 200 kB message (the client sends blindly)
  ASSERT_TRUE(start(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  c.set_auto_window_update(true);
  EXPECT_EQ(connect_protocol_setting(c), 1u);
  auto head = open(c, 1, "/echo");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(head->type, h2::kHeaders);
  EXPECT_EQ(status_of(*head), 200);
  EXPECT_FALSE(head->flags & h2::kEndStream) << "the tunnel's 200 ended the stream";
  EXPECT_FALSE(has_field(*head, "sec-websocket-accept")) << "RFC 8441 §5: no Sec-WebSocket-Accept";
  for (size_t n : {1u, 125u, 126u, 4000u, 65535u, 65536u, 200'000u}) {
    expect_echo(c, 1, std::string(n, static_cast<char>('a' + n % 26)));
    if (HasFatalFailure()) return;
  }
  // A close handshake (RFC 6455 §5.5.1), then our END_STREAM: the server
  // answers and closes, which ends the stream from tlsfront's side.
  ASSERT_TRUE(send_ws(c, 1, 0x8, std::string("\x03\xe8", 2), true));
  auto close = next_ws(c, 1);
  ASSERT_TRUE(close.has_value());
  EXPECT_EQ(close->opcode, 0x8);
  ASSERT_TRUE(wait_stream_end(c, 1));
  EXPECT_EQ(tunnel_.end->type, h2::kData) << "the upstream's close was not END_STREAM";
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  EXPECT_EQ(json_raw(lines[0], "response_complete"), std::string("true")) << lines[0];
  EXPECT_GT(std::stoull(json_raw(lines[0], "bytes_received").value_or("0")), 335'323u) << lines[0];
  EXPECT_GT(std::stoull(json_raw(lines[0], "bytes_sent").value_or("0")), 335'323u) << lines[0];
  const std::string m = metrics();
  EXPECT_NE(m.find("\ntlsfront_tunnels_total 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\ntlsfront_tunnels_open 0\n"), std::string::npos) << m;
}

TEST_F(H2Tunnel, FiveMegabytesToAClientThatStopsReadingKeepsMemoryBounded) {
  [[maybe_unused]] SmallAsanQuarantine small_quarantine;
  ASSERT_TRUE(start());
  const size_t total = 5u * 1024 * 1024;
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  const long before = rss_kib(proxy_.process().pid());
  auto head = open(c, 1, "/stream/" + std::to_string(total));
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(status_of(*head), 200);
  // The client opens no window: tlsfront may hold one stream window's worth
  // and its buffers, not the 5 MB the upstream has to send.
  long peak = before;
  const auto until = Clock::now() + milliseconds(1500);
  while (Clock::now() < until) {
    peak = std::max(peak, rss_kib(proxy_.process().pid()));
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_LT(peak - before, 2 * 1024) << "RSS grew from " << before << " KiB to " << peak << " KiB";
  // Now it reads, and everything arrives.
  c.set_auto_window_update(true);
  std::string inc = {0x7f, 0x00, 0x00, 0x00};  // the connection window is only 64 KiB: open it wide
  ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 0, inc));
  size_t got = 0;
  while (auto m = next_ws(c, 1, milliseconds(30'000))) {
    if (m->opcode == 0x8) {
      ASSERT_TRUE(send_ws(c, 1, 0x8, std::string("\x03\xe8", 2), true));
      break;
    }
    got += m->payload.size();
  }
  EXPECT_EQ(got, total);
  EXPECT_TRUE(wait_stream_end(c, 1));
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  EXPECT_GT(std::stoull(json_raw(lines[0], "bytes_sent").value_or("0")), total) << lines[0];
}

TEST_F(H2Tunnel, RefusedUpgradeIsTheStreamsStatus) {
  ASSERT_TRUE(start());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  auto head = open(c, 1, "/refuse");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(head->type, h2::kHeaders);
  EXPECT_EQ(status_of(*head), 403);
  ASSERT_TRUE(wait_stream_end(c, 1));
  EXPECT_EQ(tunnel_.end->type, h2::kData);
  EXPECT_EQ(tunnel_.buf, "upgrade refused\n");
  // RFC 9113 §8.1: the response is complete and no tunnel follows, so the
  // rest of the request is not wanted.
  auto reset = c.wait_for([](const h2::Frame& x) { return x.stream == 1 && x.type == h2::kRstStream; });
  ASSERT_TRUE(reset.has_value());
  EXPECT_EQ(reset->error_code(), h2::kNoError);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("403")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "tunnel"), std::string("false")) << lines[0];
  EXPECT_NE(metrics().find("\ntlsfront_tunnels_total 0\n"), std::string::npos);
}

TEST_F(H2Tunnel, ClientResetClosesTheUpstreamConnection) {
  ASSERT_TRUE(start());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  c.set_auto_window_update(true);
  auto head = open(c, 1, "/echo");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(status_of(*head), 200);
  expect_echo(c, 1, "before the reset");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(c.send_frame(h2::kRstStream, 0, 1, std::string("\0\0\0\x08", 4)));  // CANCEL
  EXPECT_TRUE(upstream_closed("/echo")) << read_file(dir_.file("ws.out"));
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  EXPECT_EQ(json_raw(lines[0], "response_complete"), std::string("true")) << lines[0];
  ASSERT_TRUE(wait_until([&] { return metrics().find("\ntlsfront_tunnels_open 0\n") != std::string::npos; }));
  // The connection goes on: a new tunnel on it works.
  tunnel_.buf.clear();
  head = open(c, 3, "/echo");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(status_of(*head), 200);
  expect_echo(c, 3, "after the reset");
}

TEST_F(H2Tunnel, ClientEndStreamIsAFinToTheUpstream) {
  ASSERT_TRUE(start());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  c.set_auto_window_update(true);
  auto head = open(c, 1, "/echo");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(status_of(*head), 200);
  expect_echo(c, 1, "half");
  if (HasFatalFailure()) return;
  // END_STREAM without a close frame: the upstream reads EOF (a FIN), ends
  // the connection, and that ends our stream with END_STREAM.
  ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 1, ""));
  EXPECT_TRUE(upstream_closed("/echo")) << read_file(dir_.file("ws.out"));
  ASSERT_TRUE(wait_stream_end(c, 1));
  EXPECT_EQ(tunnel_.end->type, h2::kData) << "RST_STREAM code " << tunnel_.end->error_code();
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  EXPECT_EQ(json_raw(lines[0], "response_complete"), std::string("true")) << lines[0];
}

TEST_F(H2Tunnel, UpstreamCloseEndsTheStream) {
  ASSERT_TRUE(start());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  auto head = open(c, 1, "/close");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(status_of(*head), 200);
  // The upstream aborts its connection: END_STREAM (its FIN) or
  // RST_STREAM CONNECT_ERROR (a reset), never a stream left open.
  ASSERT_TRUE(wait_stream_end(c, 1));
  if (tunnel_.end->type == h2::kRstStream) {
    EXPECT_EQ(tunnel_.end->error_code(), kConnectError);
  } else {
    ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 1, ""));  // our half ends too
  }
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
}

TEST_F(H2Tunnel, OtherStreamsGoOnBesideATunnel) {
  ASSERT_TRUE(start());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  c.set_auto_window_update(true);
  auto head = open(c, 1, "/echo");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(status_of(*head), 200);
  expect_echo(c, 1, "one");
  if (HasFatalFailure()) return;
  // An ordinary request on stream 3 (ws_peer answers /refuse with 403),
  // then the tunnel again.
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/refuse"), true));
  EXPECT_EQ(c.wait_status(3), 403);
  expect_echo(c, 1, "two");
  if (HasFatalFailure()) return;
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("403")) << lines[0];
}

TEST_F(H2Tunnel, IdleTimeoutResetsTheStream) {
  ProxyOptions o;
  o.extra = "[timeouts]\ntunnel = \"300ms\"\n";
  ASSERT_TRUE(start(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  c.set_auto_window_update(true);
  auto head = open(c, 1, "/echo");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(status_of(*head), 200);
  expect_echo(c, 1, "ping");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(wait_stream_end(c, 1));
  ASSERT_EQ(tunnel_.end->type, h2::kRstStream);
  EXPECT_EQ(tunnel_.end->error_code(), h2::kCancel);
  EXPECT_TRUE(upstream_closed("/echo")) << read_file(dir_.file("ws.out"));
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
  EXPECT_EQ(json_raw(lines[0], "response_complete"), std::string("false")) << lines[0];
}

TEST_F(H2Tunnel, GracefulStopLetsTheTunnelRunUntilShutdownTimeout) {
  ProxyOptions o;
  o.top_level = "shutdown_timeout = \"1500ms\"\n";
  ASSERT_TRUE(start(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  c.set_auto_window_update(true);
  auto head = open(c, 1, "/echo");
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(status_of(*head), 200);
  proxy_.process().signal(SIGTERM);
  ASSERT_TRUE(c.wait_for([](const h2::Frame& x) { return x.type == h2::kGoaway; }).has_value());
  // Draining: the open tunnel still carries messages, until shutdown_timeout.
  expect_echo(c, 1, "during stop");
  if (HasFatalFailure()) return;
  EXPECT_TRUE(c.wait_closed()) << "the tunnel outlived shutdown_timeout";
  EXPECT_TRUE(proxy_.process().wait_exit(milliseconds(10'000)).has_value());
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  expect_tunnel_line(lines[0]);
}

// The recording backend ignores Upgrade and answers 200: the request it got
// is the HTTP/1.1 form of the extended CONNECT, and its 200 (which would
// tell an RFC 8441 client the tunnel is open) becomes a 502.
TEST_F(H2Tunnel, UpstreamGetsAnHttp11UpgradeAndItsNon101TwoHundredIsA502) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  h2::Fields f = extended_connect("/ws?room=1");
  f.push_back({"sec-websocket-protocol", "chat, superchat"});
  f.push_back({"sec-websocket-extensions", "permessage-deflate"});
  f.push_back({"sec-websocket-key", "c2VudCBieSB0aGUgY2xpZW50"});
  ASSERT_TRUE(c.send_headers(1, f, false));
  EXPECT_EQ(c.wait_status(1), 502);
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  const std::string& r = reqs[0];
  EXPECT_EQ(r.rfind("GET /ws?room=1 HTTP/1.1\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("\r\nUpgrade: websocket\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\nConnection: upgrade\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\nsec-websocket-version: 13\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\nsec-websocket-protocol: chat, superchat\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\nsec-websocket-extensions: permessage-deflate\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.find("c2VudCBieSB0aGUgY2xpZW50"), std::string::npos) << "the client's key went up: " << r;
  const size_t key = r.find("\r\nsec-websocket-key: ");
  ASSERT_NE(key, std::string::npos) << r;
  EXPECT_EQ(r.find("\r\n", key + 2) - (key + 21), 24u) << "not 16 bytes in base64: " << r;
  EXPECT_EQ(r.find("ransfer-Encoding"), std::string::npos) << r;
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("502")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "upstream_status"), std::string("200")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "tunnel"), std::string("false")) << lines[0];
}

// A 101 whose Sec-WebSocket-Accept is not our key's: the upstream did not
// understand the handshake (RFC 6455 §4.2.2), so no tunnel opens.
TEST_F(H2Tunnel, WrongSecWebSocketAcceptIsA502) {
  FakeUpstream up(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
  ProxyOptions o;
  o.upstream_servers = {up.address()};
  ASSERT_TRUE(start_proxy(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  auto head = open(c, 1, "/ws");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(status_of(*head), 502);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("502")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("invalid_response")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "tunnel"), std::string("false")) << lines[0];
  EXPECT_NE(metrics().find("\ntlsfront_tunnels_total 0\n"), std::string::npos);
}

// Each malformed or refused extended CONNECT is a stream error (nghttp2's
// checks, RFC 8441 §4 / RFC 9113 §8.3) or our 4xx, and never reaches the
// backend (the recording one here, which would log any request).
TEST_F(H2Tunnel, MalformedExtendedConnectIsNeverForwarded) {
  ProxyOptions o;
  o.routes =
      "[[route]]\npath_prefix = \"/plain\"\nupstream = \"backend\"\nupgrade = []\n"
      "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\n";
  ASSERT_TRUE(start_proxy(o));
  struct Case {
    const char* name;
    h2::Fields fields;
    int status;  // 0: RST_STREAM PROTOCOL_ERROR
  };
  const auto without = [](h2::Fields f, const std::string& name) {
    std::erase_if(f, [&](const auto& kv) { return kv.first == name; });
    return f;
  };
  h2::Fields twice = extended_connect("/ws");
  twice.insert(twice.begin() + 2, {":protocol", "websocket"});
  h2::Fields get_with_protocol = extended_connect("/ws");
  get_with_protocol[0].second = "GET";
  const std::vector<Case> cases = {
      {"missing :path", without(extended_connect("/ws"), ":path"), 0},
      {"missing :scheme", without(extended_connect("/ws"), ":scheme"), 0},
      {"missing :authority", without(extended_connect("/ws"), ":authority"), 0},
      {"empty :protocol", extended_connect("/ws", ""), 0},
      {"two :protocol", twice, 0},
      {":protocol on GET", get_with_protocol, 0},
      {"protocol the route does not allow", extended_connect("/ws", "h2c"), 400},
      {"route without upgrade", extended_connect("/plain/ws"), 400},
      {"CONNECT without :protocol", {{":method", "CONNECT"}, {":authority", "localhost:443"}}, 405},
  };
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  EXPECT_EQ(connect_protocol_setting(c), 1u);
  uint32_t id = 1;
  for (const auto& k : cases) {
    ASSERT_TRUE(c.send_headers(id, k.fields, false)) << k.name;
    auto f = c.wait_for([id](const h2::Frame& x) {
      return (x.stream == id && (x.type == h2::kRstStream || x.type == h2::kHeaders)) || x.type == h2::kGoaway;
    });
    ASSERT_TRUE(f.has_value()) << k.name << ": no answer";
    if (k.status == 0) {
      ASSERT_EQ(f->type, h2::kRstStream) << k.name << ": status " << status_of(*f);
      EXPECT_EQ(f->error_code(), h2::kProtocolError) << k.name;
    } else {
      ASSERT_EQ(f->type, h2::kHeaders) << k.name << ": reset " << f->error_code();
      EXPECT_EQ(status_of(*f), k.status) << k.name;
    }
    id += 2;
  }
  ASSERT_TRUE(c.send_headers(id, h2::get_request("/ok"), true));
  EXPECT_EQ(c.wait_status(id), 200);
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].rfind("GET /ok HTTP/1.1\r\n", 0), 0u) << reqs[0];
}

// SETTINGS_ENABLE_CONNECT_PROTOCOL follows the routes: sent while one
// allows an upgrade; after a reload to routes that allow none, new
// connections get no setting, and a :protocol is a stream error (RFC 8441
// §3) that never reaches the backend.
TEST_F(H2Tunnel, TheSettingFollowsTheRoutesAcrossAReload) {
  ASSERT_TRUE(start_proxy());
  {
    h2::Client c;
    ASSERT_TRUE(c.connect(port()));
    EXPECT_EQ(connect_protocol_setting(c), 1u);
  }
  ProxyOptions o;
  o.upstream_servers = {backend_.address()};
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nupgrade = []\n";
  write_file(proxy_.config_path(), make_config(o, kAnyPort, proxy_.access_log()));
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] {
    h2::Client probe;
    return probe.connect(port()) && connect_protocol_setting(probe) == 0;
  })) << "still sent after the reload";
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, extended_connect("/ws"), false));
  auto f = c.wait_for([](const h2::Frame& x) { return x.stream == 1 || x.type == h2::kGoaway; });
  ASSERT_TRUE(f.has_value());
  ASSERT_EQ(f->type, h2::kRstStream);
  EXPECT_EQ(f->error_code(), h2::kProtocolError);
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/ok"), true));
  EXPECT_EQ(c.wait_status(3), 200);
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].rfind("GET /ok HTTP/1.1\r\n", 0), 0u) << reqs[0];
}

}  // namespace
}  // namespace tlsfront::itest
