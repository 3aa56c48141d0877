// gRPC through tlsfront: a real gRPC client (python3-grpcio, over TLS with
// the test CA) to a real gRPC service behind an h2c upstream
// (tests/integration/peers/grpc_peer.py): every call shape, a 10,000-message
// server stream, a deadline, the service killed mid-stream and unreachable
// (the client gets UNAVAILABLE), gRPC routed to an HTTP/1.1 upstream
// (UNAVAILABLE, trailers-only), the service rolling its connections over
// with GOAWAY under load (no call fails), 200 concurrent calls on one
// upstream connection, and the upstream read_timeout bounding a call (not
// a client stream that keeps sending).
#include <set>
#include <string>

#include "grpc_peer.h"
#include "harness.h"

namespace tlsfront::itest {
namespace {

class Grpc : public ProxyTest {
 protected:
  // Starts the gRPC service (`server_args` after its port file) and
  // tlsfront with it as an h2c upstream (`protocol`).
  bool start(std::vector<std::string> server_args = {}, ProxyOptions o = {}, std::string protocol = "h2c") {
    port_file_ = dir_.file("grpc.port");
    const int grpc_port = start_grpc_server(server_, dir_, port_file_, server_args);
    if (grpc_port == 0) return false;
    if (o.upstream_servers.empty()) {
      o.upstream_servers = {"127.0.0.1:" + std::to_string(grpc_port)};
    }
    o.upstream_extra += "protocol = \"" + protocol + "\"\n";
    return start_proxy(o);
  }
  // One grpc_peer client call against tlsfront; its output line.
  std::string call(const std::vector<std::string>& args, milliseconds timeout = milliseconds(90'000)) {
    return grpc_call(dir_, port(), args, timeout);
  }
  // Distinct peers (upstream connections) the service saw.
  size_t upstream_connections() const {
    std::set<std::string> peers;
    const std::string text = read_file(port_file_ + ".peers");
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (end > start) peers.insert(text.substr(start, end - start));
      start = end + 1;
    }
    return peers.size();
  }
  void TearDown() override {
    server_.stop();
    ProxyTest::TearDown();
  }

  Process server_;
  std::string port_file_;
};

TEST_F(Grpc, EveryCallShape) {
  ASSERT_TRUE(start());
  EXPECT_EQ(call({"unary", "hello"}), "ok echo:hello t1\n");  // t1: the response trailer came through
  EXPECT_EQ(call({"server_stream", "10"}), "ok 10\n");
  EXPECT_EQ(call({"client_stream", "100"}), "ok 100 10000\n");
  EXPECT_EQ(call({"bidi", "50"}), "ok 50\n");
  auto lines = proxy_.wait_log_lines(4);
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& line : lines) {
    EXPECT_EQ(json_raw(line, "status"), std::string("200")) << line;
    EXPECT_EQ(json_raw(line, "grpc_status"), std::string("0")) << line;
    EXPECT_EQ(json_string(line, "upstream_protocol"), std::string("h2c")) << line;
    EXPECT_EQ(json_raw(line, "response_complete"), std::string("true")) << line;
  }
}

TEST_F(Grpc, TenThousandMessageServerStream) {
  ASSERT_TRUE(start());
  EXPECT_EQ(call({"server_stream", "10000"}), "ok 10000\n");
}

TEST_F(Grpc, DeadlineExceeded) {
  ASSERT_TRUE(start());
  EXPECT_EQ(call({"deadline", "300"}), "error DEADLINE_EXCEEDED Deadline Exceeded\n");
  // The next call still works (the cancelled stream left the connection usable).
  EXPECT_EQ(call({"unary", "after"}), "ok echo:after t1\n");
}

TEST_F(Grpc, ServiceKilledMidStreamIsUnavailable) {
  ASSERT_TRUE(start());
  std::vector<std::string> argv = {kGrpcPython, kGrpcPeer, "stream_until_killed", "localhost:" + std::to_string(port()),
                                   pki("root.pem")};
  Process client;
  const std::string out = dir_.file("stream.out");
  ASSERT_TRUE(client.start(argv, out, dir_.file("stream.err")));
  ASSERT_TRUE(wait_until([&] { return read_file(out).find("streaming") != std::string::npos; }, milliseconds(20'000)))
      << read_file(dir_.file("stream.err"));
  server_.signal(SIGKILL);
  ASSERT_TRUE(client.wait_exit(milliseconds(20'000)).has_value());
  EXPECT_NE(read_file(out).find("error UNAVAILABLE "), std::string::npos) << read_file(out);
  // With the service gone, a new call is UNAVAILABLE too (connect refused).
  EXPECT_EQ(call({"unary", "x"}).rfind("error UNAVAILABLE ", 0), 0u);
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& line : lines) {
    EXPECT_EQ(json_raw(line, "status"), std::string("200")) << line;
    EXPECT_EQ(json_raw(line, "grpc_status"), std::string("14")) << line;
  }
  EXPECT_EQ(json_string(lines[1], "upstream_error"), std::string("refused")) << lines[1];
}

TEST_F(Grpc, Http1UpstreamGetsNoGrpcCall) {
  // A gRPC call routed to an http/1.1 upstream: UNAVAILABLE at once, never forwarded.
  ASSERT_TRUE(start({}, {}, "http/1.1"));
  EXPECT_EQ(call({"unary", "x"}),
            "error UNAVAILABLE upstream backend speaks HTTP/1.1; gRPC needs protocol = \"h2c\" or \"h2\"\n");
  EXPECT_EQ(upstream_connections(), 0u);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("grpc_needs_h2c")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "upstream_protocol"), std::string("http/1.1")) << lines[0];
}

TEST_F(Grpc, UpstreamReadTimeoutBoundsTheCallNotAPacedClientStream) {
  ProxyOptions o;
  o.workers = 1;
  o.upstream_extra = "read_timeout = \"1500ms\"\n";
  ASSERT_TRUE(start({}, o));
  // Twelve messages 300 ms apart: every write re-arms read_timeout, as on an
  // HTTP/1.1 upstream, so the call outlives it.
  EXPECT_EQ(call({"paced_client_stream", "12", "300"}), "ok 12 1200\n");
  // A service that does not answer within read_timeout: UNAVAILABLE (the
  // gRPC form of tlsfront's 504), and the connection stays for the next call.
  EXPECT_EQ(call({"slow", "5000"}), "error UNAVAILABLE upstream timed out while reading response header\n");
  EXPECT_EQ(call({"unary", "after"}), "ok echo:after t1\n");
  EXPECT_EQ(upstream_connections(), 1u);
  auto lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json_raw(lines[0], "grpc_status"), std::string("0")) << lines[0];
  EXPECT_EQ(json_raw(lines[1], "grpc_status"), std::string("14")) << lines[1];
  EXPECT_EQ(json_string(lines[1], "upstream_error"), std::string("timeout_read")) << lines[1];
}

TEST_F(Grpc, GoawayUnderLoadFailsNoCall) {
  // The service closes every connection after 300 ms with GOAWAY
  // (max_connection_age): calls roll over to new connections for 4 s.
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start({"--max-age-ms", "300"}, o));
  const std::string result = call({"load", "4"});
  EXPECT_EQ(result.rfind("ok ", 0), 0u) << result;
  EXPECT_GE(upstream_connections(), 3u);
}

TEST_F(Grpc, AThousandConcurrentCallsShareOneUpstreamConnection) {
  ProxyOptions o;
  o.workers = 1;
  o.extra = "[http2]\nmax_concurrent_streams = 1024\n";
  ASSERT_TRUE(start({}, o));
  EXPECT_EQ(call({"concurrent", "1000"}), "ok 1000\n");
  EXPECT_EQ(upstream_connections(), 1u);
}

}  // namespace
}  // namespace tlsfront::itest
