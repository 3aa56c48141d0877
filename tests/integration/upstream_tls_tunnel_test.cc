// Tunnels and gRPC to upstreams over TLS ([upstream.tls]), with real peers
// that serve TLS only: the WebSocket server (ws_peer.py --tls, wss) behind
// HTTP/1.1 Upgrade and HTTP/2 extended CONNECT (RFC 8441) tunnels, and the
// gRPC service (grpc_peer.py --tls) behind protocol = "h2". Echo; messages
// the server sends in the same flight as its 101 (bytes the TLS layer has
// already read when the tunnel takes it over); 8 MB in order to either
// client, ended by the server's close_notify; a unary call and 2000-message
// streams. The peers refuse cleartext, which the first tests of each show
// through tlsfront.
#include <string>
#include <vector>

#include "grpc_peer.h"
#include "h2_frames.h"
#include "harness.h"
#include "ws_peer.h"

namespace tlsfront::itest {
namespace {

const std::string kTrustedCa = "trusted_ca = \"" + pki("root.pem") + "\"";

// ws_peer.py's GREETING (sent with the 101 of /greet): a text message, then
// a 40,000-byte binary one (byte i is i % 256).
const std::string kGreetingText = "hello from upstream";
std::string greeting_binary() {
  std::string s(40000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i % 256);
  return s;
}

// ws_peer.py's seq_message(k, n): message k of /seq/N holds (k + i) % 251.
std::string seq_message(size_t k, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((k + i) % 251);
  return s;
}

// `got` == `want`, without printing kilobytes when not: the first difference.
testing::AssertionResult same_bytes(const std::string& got, const std::string& want) {
  if (got == want) return testing::AssertionSuccess();
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return testing::AssertionFailure() << got.size() << " bytes, " << want.size() << " expected, first difference at "
                                     << i;
}

constexpr size_t kSeqChunk = 64 * 1024;               // ws_peer.py's CHUNK
constexpr size_t kEightMegabytes = 8u * 1024 * 1024;  // 128 messages
const std::string kCloseNormal("\x03\xe8", 2);        // close code 1000 (RFC 6455 §7.4.1)

// The upstream TLS handshake counter of `server` ("127.0.0.1:PORT") of
// upstream "backend".
double upstream_handshakes(int admin_port, int server_port) {
  auto m = scrape_metrics(admin_port);
  return m["tlsfront_upstream_tls_handshakes_total{upstream=\"backend\",server=\"127.0.0.1:" +
           std::to_string(server_port) + "\"}"];
}

class UpstreamTlsTunnel : public ProxyTest {
 protected:
  // The TLS WebSocket server (the localhost chain, issued for 127.0.0.1
  // too), and tlsfront in front of it: over TLS trusting the test root, or
  // in cleartext when `tls` is false.
  bool start(ProxyOptions o = {}, bool tls = true) {
    ws_port_ = start_ws_server(ws_, dir_, {"--tls", pki("localhost.chain.pem"), pki("localhost.key")});
    if (ws_port_ == 0) return false;
    o.workers = 1;
    o.upstream_servers = {"127.0.0.1:" + std::to_string(ws_port_)};
    o.upstream_extra += "connect_timeout = \"3s\"\n";
    if (tls) o.upstream_extra += "tls = { " + kTrustedCa + " }\n";
    return start_proxy(o);
  }
  // Runs a ws_peer client mode against wss://localhost:<proxy>/<path>; its stdout (and stderr).
  std::string client(const std::vector<std::string>& args, milliseconds timeout = milliseconds(60'000)) {
    return run_ws_client(dir_, port(), args, timeout);
  }
  // An HTTP/1.1 tunnel on `c` to `path`: the 101's head checked; what came
  // after it is left in `rest`.
  void open_h1(TlsClient& c, const std::string& path, std::string& rest) {
    ASSERT_TRUE(c.connect(port())) << c.error();
    ASSERT_TRUE(c.write(upgrade_request(path)));
    std::string buf;
    ASSERT_TRUE(read_until(c, buf, "\r\n\r\n")) << buf;
    ASSERT_TRUE(buf.starts_with("HTTP/1.1 101 ")) << buf;
    ASSERT_NE(buf.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), std::string::npos) << buf;
    rest = buf.substr(buf.find("\r\n\r\n") + 4);
  }
  // The next server message on the HTTP/1.1 tunnel `c` (`buf`: bytes read
  // but not yet taken); nullopt on close or timeout.
  static std::optional<WsMessage> next_h1(TlsClient& c, std::string& buf, milliseconds timeout = kDefaultDeadline) {
    const auto deadline = Clock::now() + timeout;
    while (true) {
      if (auto m = take_ws_frame(buf)) return m;
      if (c.closed() || Clock::now() > deadline) return std::nullopt;
      buf += c.read_available(milliseconds(200));
    }
  }
  // An h2 client with a tunnel to `path` open on stream 1 (its 200 checked).
  void open_h2(h2::Client& c, const std::string& path) {
    ASSERT_TRUE(c.connect(port()));
    c.set_auto_window_update(true);
    auto head = open_h2_tunnel(c, 1, path);
    ASSERT_TRUE(head.has_value());
    ASSERT_EQ(head->type, h2::kHeaders) << "reset " << head->error_code();
    ASSERT_EQ(status_of(*head), 200);
  }
  // The one access log line: a tunnel to the TLS upstream, ended without an error.
  void expect_clean_tunnel_line(const std::string& status) {
    auto lines = proxy_.wait_log_lines(1);
    ASSERT_EQ(lines.size(), 1u);
    const std::string& line = lines[0];
    EXPECT_EQ(json_raw(line, "status"), status) << line;
    EXPECT_EQ(json_raw(line, "tunnel"), std::string("true")) << line;
    EXPECT_EQ(json_raw(line, "upstream_status"), std::string("101")) << line;
    EXPECT_EQ(json_raw(line, "response_complete"), std::string("true")) << line;
    EXPECT_EQ(json_raw(line, "upstream_error").value_or("null"), "null") << line;
  }
  // ws_peer logs "closed PATH" when the upstream side of a tunnel ends.
  bool upstream_closed(const std::string& path) {
    return wait_until(
        [&] { return read_file(dir_.file("ws.out")).find("closed " + path + "\n") != std::string::npos; });
  }
  void TearDown() override {
    ws_.stop();
    ProxyTest::TearDown();
  }

  Process ws_;
  int ws_port_ = 0;
};

// The peer speaks TLS only: tlsfront in cleartext gets no 101 (a 502).
TEST_F(UpstreamTlsTunnel, ThePeerRefusesCleartext) {
  ASSERT_TRUE(start({}, /*tls=*/false));
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write(upgrade_request("/echo")));
  const std::string got = c.read_all(milliseconds(10'000));
  EXPECT_TRUE(got.starts_with("HTTP/1.1 502 ")) << got;
}

TEST_F(UpstreamTlsTunnel, EchoOverHttp1) {
  ASSERT_TRUE(start());
  EXPECT_EQ(client({"echo", "/echo", "200"}), "ok 200\n");
  expect_clean_tunnel_line("101");
  EXPECT_EQ(upstream_handshakes(proxy_.admin_port(), ws_port_), 1);
}

TEST_F(UpstreamTlsTunnel, EchoOverHttp2) {
  ProxyOptions o;
  o.extra = "[http2]\ninitial_window_size = 1048576\n";  // room for the 200 kB message (the client sends blindly)
  ASSERT_TRUE(start(o));
  h2::Client c;
  open_h2(c, "/echo");
  if (HasFatalFailure()) return;
  H2WsReader tunnel;
  for (size_t n : {1u, 126u, 16'000u, 65536u, 200'000u}) {
    const std::string text(n, static_cast<char>('a' + n % 26));
    ASSERT_TRUE(send_h2_ws(c, 1, 0x1, text));
    auto m = tunnel.next(c, 1);
    ASSERT_TRUE(m.has_value()) << "no echo of a " << n << "-byte message";
    EXPECT_EQ(m->opcode, 0x1);
    EXPECT_TRUE(same_bytes(m->payload, text));
  }
  // A close handshake: the server answers, then ends its connection
  // (close_notify, FIN), which ends the stream with END_STREAM. (Not our
  // END_STREAM with the close, as over cleartext: Python's TLS transport
  // writes nothing after a close_notify, not even the close's answer.)
  ASSERT_TRUE(send_h2_ws(c, 1, 0x8, kCloseNormal));
  auto close = tunnel.next(c, 1);
  ASSERT_TRUE(close.has_value());
  EXPECT_EQ(close->opcode, 0x8);
  ASSERT_TRUE(tunnel.wait_end(c, 1));
  EXPECT_EQ(tunnel.end->type, h2::kData) << "RST_STREAM " << tunnel.end->error_code();
  EXPECT_TRUE(upstream_closed("/echo")) << read_file(dir_.file("ws.out"));
  ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 1, ""));  // our half ends too
  expect_clean_tunnel_line("200");
  EXPECT_EQ(upstream_handshakes(proxy_.admin_port(), ws_port_), 1);
}

// The client's END_STREAM becomes tlsfront's close_notify and FIN upstream:
// the server reads the end of its connection and ends its side, which ends
// the stream.
TEST_F(UpstreamTlsTunnel, ClientEndStreamIsACloseNotifyToTheServer) {
  ASSERT_TRUE(start());
  h2::Client c;
  open_h2(c, "/echo");
  if (HasFatalFailure()) return;
  H2WsReader tunnel;
  ASSERT_TRUE(send_h2_ws(c, 1, 0x1, "half"));
  auto m = tunnel.next(c, 1);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->payload, "half");
  ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 1, ""));
  EXPECT_TRUE(upstream_closed("/echo")) << read_file(dir_.file("ws.out"));
  ASSERT_TRUE(tunnel.wait_end(c, 1));
  EXPECT_EQ(tunnel.end->type, h2::kData) << "RST_STREAM " << tunnel.end->error_code();
  expect_clean_tunnel_line("200");
}

// /greet: the 101 and two messages in one write (the 101 and the text in one
// TLS record, the 40 kB message in the records after it). Nothing more
// comes from the server until we send, so a message the tunnel did not take
// from the TLS layer at the handover would never arrive.
TEST_F(UpstreamTlsTunnel, MessagesSentWithThe101ReachAnHttp1Client) {
  ASSERT_TRUE(start());
  TlsClient c;
  std::string buf;
  open_h1(c, "/greet", buf);
  if (HasFatalFailure()) return;
  auto text = next_h1(c, buf);
  ASSERT_TRUE(text.has_value()) << "the message sent with the 101 did not arrive";
  EXPECT_EQ(text->opcode, 0x1);
  EXPECT_EQ(text->payload, kGreetingText);
  auto binary = next_h1(c, buf);
  ASSERT_TRUE(binary.has_value()) << "the message in the records after the 101's did not arrive; " << buf.size()
                                  << " bytes of it did";
  EXPECT_EQ(binary->opcode, 0x2);
  EXPECT_TRUE(same_bytes(binary->payload, greeting_binary()));
  // And the tunnel goes on.
  ASSERT_TRUE(c.write(ws_frame(0x1, "after")));
  auto echo = next_h1(c, buf);
  ASSERT_TRUE(echo.has_value());
  EXPECT_EQ(echo->payload, "after");
}

TEST_F(UpstreamTlsTunnel, MessagesSentWithThe101ReachAnHttp2Client) {
  ASSERT_TRUE(start());
  h2::Client c;
  open_h2(c, "/greet");
  if (HasFatalFailure()) return;
  H2WsReader tunnel;
  auto text = tunnel.next(c, 1);
  ASSERT_TRUE(text.has_value()) << "the message sent with the 101 did not arrive";
  EXPECT_EQ(text->opcode, 0x1);
  EXPECT_EQ(text->payload, kGreetingText);
  auto binary = tunnel.next(c, 1);
  ASSERT_TRUE(binary.has_value()) << "the message in the records after the 101's did not arrive; " << tunnel.buf.size()
                                  << " bytes of it did";
  EXPECT_EQ(binary->opcode, 0x2);
  EXPECT_TRUE(same_bytes(binary->payload, greeting_binary()));
  ASSERT_TRUE(send_h2_ws(c, 1, 0x1, "after"));
  auto echo = tunnel.next(c, 1);
  ASSERT_TRUE(echo.has_value());
  EXPECT_EQ(echo->payload, "after");
}

// 8 MB from the server, each 64 KiB message checked in place; then its
// close, our answer, and the server's close_notify and FIN end the tunnel:
// tlsfront closes the client connection, the log says complete.
TEST_F(UpstreamTlsTunnel, EightMegabytesInOrderToAnHttp1ClientThenTheServerCloses) {
  ASSERT_TRUE(start());
  TlsClient c;
  std::string buf;
  open_h1(c, "/seq/" + std::to_string(kEightMegabytes), buf);
  if (HasFatalFailure()) return;
  size_t got = 0;
  size_t k = 0;
  bool closed_by_server = false;
  while (auto m = next_h1(c, buf, milliseconds(30'000))) {
    if (m->opcode == 0x8) {
      closed_by_server = true;
      ASSERT_TRUE(c.write(ws_frame(0x8, kCloseNormal)));
      break;
    }
    ASSERT_EQ(m->opcode, 0x2);
    ASSERT_EQ(m->payload.size(), std::min(kSeqChunk, kEightMegabytes - got)) << "message " << k;
    ASSERT_TRUE(same_bytes(m->payload, seq_message(k, m->payload.size())))
        << "message " << k << " out of order or corrupt";
    got += m->payload.size();
    ++k;
  }
  EXPECT_EQ(got, kEightMegabytes);
  ASSERT_TRUE(closed_by_server) << "no close frame after " << got << " bytes";
  // The server's end ends the tunnel: tlsfront closes our connection.
  buf += c.read_all(milliseconds(10'000));
  EXPECT_TRUE(c.closed()) << "the tunnel outlived the server's close_notify and FIN";
  EXPECT_TRUE(buf.empty()) << buf.size() << " bytes after the close frame";
  EXPECT_TRUE(upstream_closed("/seq/" + std::to_string(kEightMegabytes)));
  expect_clean_tunnel_line("101");
}

TEST_F(UpstreamTlsTunnel, EightMegabytesInOrderToAnHttp2ClientThenTheServerCloses) {
  ASSERT_TRUE(start());
  h2::Client c;
  open_h2(c, "/seq/" + std::to_string(kEightMegabytes));
  if (HasFatalFailure()) return;
  const std::string inc = {0x7f, 0x00, 0x00, 0x00};  // the connection window: open it wide
  ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 0, inc));
  H2WsReader tunnel;
  size_t got = 0;
  size_t k = 0;
  bool closed_by_server = false;
  while (auto m = tunnel.next(c, 1, milliseconds(30'000))) {
    if (m->opcode == 0x8) {
      closed_by_server = true;
      ASSERT_TRUE(send_h2_ws(c, 1, 0x8, kCloseNormal, true));
      break;
    }
    ASSERT_EQ(m->opcode, 0x2);
    ASSERT_EQ(m->payload.size(), std::min(kSeqChunk, kEightMegabytes - got)) << "message " << k;
    ASSERT_TRUE(same_bytes(m->payload, seq_message(k, m->payload.size())))
        << "message " << k << " out of order or corrupt";
    got += m->payload.size();
    ++k;
  }
  EXPECT_EQ(got, kEightMegabytes);
  ASSERT_TRUE(closed_by_server) << "no close frame after " << got << " bytes";
  // The server's close_notify and FIN end the stream with END_STREAM, not a reset.
  ASSERT_TRUE(tunnel.wait_end(c, 1));
  EXPECT_EQ(tunnel.end->type, h2::kData) << "RST_STREAM " << tunnel.end->error_code();
  EXPECT_TRUE(tunnel.buf.empty()) << tunnel.buf.size() << " bytes after the close frame";
  EXPECT_TRUE(upstream_closed("/seq/" + std::to_string(kEightMegabytes)));
  expect_clean_tunnel_line("200");
}

// gRPC over protocol = "h2" (HTTP/2 over TLS, ALPN h2) to the TLS-only service.
class UpstreamTlsGrpc : public ProxyTest {
 protected:
  // `tls`: the [upstream.tls] keys for protocol = "h2".
  bool start(const std::string& protocol = "h2", const std::string& tls = kTrustedCa) {
    grpc_port_ = start_grpc_server(server_, dir_, dir_.file("grpc.port"),
                                   {"--tls", pki("localhost.chain.pem"), pki("localhost.key")});
    if (grpc_port_ == 0) return false;
    ProxyOptions o;
    o.workers = 1;
    o.upstream_servers = {"127.0.0.1:" + std::to_string(grpc_port_)};
    o.upstream_extra = "protocol = \"" + protocol + "\"\nconnect_timeout = \"3s\"\n";
    if (protocol == "h2") o.upstream_extra += "tls = { " + tls + " }\n";
    return start_proxy(o);
  }
  std::string call(const std::vector<std::string>& args) { return grpc_call(dir_, port(), args); }
  void TearDown() override {
    server_.stop();
    ProxyTest::TearDown();
  }

  Process server_;
  int grpc_port_ = 0;
};

// The service speaks TLS only: as an h2c upstream it answers no call.
TEST_F(UpstreamTlsGrpc, TheServiceRefusesCleartext) {
  ASSERT_TRUE(start("h2c"));
  EXPECT_EQ(call({"unary", "hello"}).rfind("error UNAVAILABLE ", 0), 0u);
}

// A failed handshake's reasons stay in the error log: the caller learns
// the fact, not the names checked or the settings to change.
TEST_F(UpstreamTlsGrpc, AFailedHandshakeIsUnavailableWithoutItsReasons) {
  ASSERT_TRUE(start("h2", "trusted_ca = \"" + pki("other-root.pem") + "\""));
  EXPECT_EQ(call({"unary", "hello"}), "error UNAVAILABLE upstream TLS handshake failed\n");
  EXPECT_TRUE(wait_until([&] {
    return read_file(dir_.file("tlsfront.err")).find("certificate verify failed") != std::string::npos;
  })) << read_file(dir_.file("tlsfront.err"));
}

TEST_F(UpstreamTlsGrpc, UnaryAndLongStreams) {
  ASSERT_TRUE(start());
  EXPECT_EQ(call({"unary", "hello"}), "ok echo:hello t1\n");  // t1: the response trailer came through
  EXPECT_EQ(call({"server_stream", "2000"}), "ok 2000\n");    // in order (grpc_peer checks each)
  EXPECT_EQ(call({"client_stream", "2000"}), "ok 2000 200000\n");
  EXPECT_EQ(call({"bidi", "2000"}), "ok 2000\n");
  auto lines = proxy_.wait_log_lines(4);
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& line : lines) {
    EXPECT_EQ(json_raw(line, "status"), std::string("200")) << line;
    EXPECT_EQ(json_raw(line, "grpc_status"), std::string("0")) << line;
    EXPECT_EQ(json_string(line, "upstream_protocol"), std::string("h2")) << line;
    EXPECT_EQ(json_raw(line, "response_complete"), std::string("true")) << line;
  }
  // One TLS connection carried the four calls.
  EXPECT_EQ(upstream_handshakes(proxy_.admin_port(), grpc_port_), 1);
}

}  // namespace
}  // namespace tlsfront::itest
