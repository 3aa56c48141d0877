// HTTP/2 cleartext upstreams that fail or misbehave, with a real HTTP/2
// server (h2c_upstream_fixture.h): a GOAWAY under load (the streams above
// its last-stream-id retried on a new connection, none failed, none
// processed twice); streams refused every time (retried three times, no
// more); control-frame floods (GOAWAY ENHANCE_YOUR_CALM, invalid_response,
// counted); an extended CONNECT refused before it is sent; a request the
// client cancelled before its HEADERS went out never sent; PING liveness of
// idle connections (RFC 9113 §6.7); the send timeout of one stalled stream
// and the read timeout counted from the last write.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "h2_frames.h"
#include "h2c_upstream_fixture.h"
#include "harness.h"
#include "ws_peer.h"

namespace tlsfront::itest {
namespace {

TEST_F(H2cUpstream, GoawayUnderLoadRetriesUnprocessedStreams) {
  // Each upstream connection takes 25 requests, then GOAWAY (last-stream-id
  // = the 25th): 60 concurrent requests need three connections.
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start({"--goaway-after", "25"}, o));
  std::vector<HttpRequest> reqs(60);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].http2 = true;
    reqs[i].path = "/echo?i=" + std::to_string(i);
  }
  auto responses = http2_parallel(port(), reqs);
  ASSERT_EQ(responses.size(), 60u);
  for (const auto& r : responses) EXPECT_EQ(r.status, 200) << r.error;
  // Every request processed exactly once (a retried one was never seen).
  std::set<std::string> paths;
  for (const auto& line : requests()) {
    const size_t at = line.find("\"path\": \"");
    ASSERT_NE(at, std::string::npos) << line;
    paths.insert(line.substr(at, line.find('"', at + 9) - at));
  }
  EXPECT_EQ(requests().size(), 60u);
  EXPECT_EQ(paths.size(), 60u);
  EXPECT_GE(connections(), 3u);
  auto lines = proxy_.wait_log_lines(60);
  size_t retried = 0;
  for (const auto& line : lines) {
    EXPECT_EQ(json_raw(line, "status"), std::string("200")) << line;
    retried += json_string(line, "upstream_error").value_or("").find("unprocessed") != std::string::npos;
  }
  // How many went up above a last-stream-id depends on how many requests
  // reached a connection before its GOAWAY reached us: 35 when all 60 were
  // on the first one at once, 26 in a sanitizer run where the GOAWAY came
  // sooner (this asked for 35 and failed 2 runs in 14 under ASan).
  EXPECT_GE(retried, 1u);
}

TEST_F(H2cUpstream, StreamsRefusedEveryTimeAreRetriedThreeTimes) {
  // RFC 9113 §8.7: REFUSED_STREAM means unprocessed, so any method may go
  // again; a server that refuses everything gets the request four times in
  // all (three retries), then the client a 502. (An idempotent request's
  // fourth refusal once fell through to the retry of a stale pooled
  // connection: a fifth.)
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start({}, o));
  for (const char* method : {"GET", "POST"}) {
    for (bool http2 : {false, true}) {
      SCOPED_TRACE(std::string(method) + (http2 ? " h2 client" : " h1 client"));
      const size_t before = requests().size();
      HttpRequest post;
      post.method = method;
      post.path = "/refuse";
      if (post.method == "POST") post.body = "payload";
      post.http2 = http2;
      HttpResponse r = http(port(), post);
      EXPECT_EQ(r.status, 502) << r.error;
      // The peer records each request before it refuses it, so all are here
      // by the time the 502 is.
      EXPECT_EQ(requests().size() - before, 4u);
    }
  }
  for (const auto& line : proxy_.wait_log_lines(4)) {
    EXPECT_EQ(json_string(line, "upstream_error"), std::string("unprocessed, unprocessed, unprocessed, unprocessed"))
        << line;
  }
}

TEST_F(H2cUpstream, ControlFrameFloodsCloseTheConnection) {
  // A server that answers with HEADERS, then frames that move nothing
  // forward (CVE-2019-9512/-9515/-9518 and their kin), gets GOAWAY
  // ENHANCE_YOUR_CALM and the connection closes: the response fails
  // (invalid_response), the flood is counted, and the next request goes
  // to a new connection. Without a bound the worker spent a core on each
  // for as long as the server liked, every request still a 200.
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start({}, o));
  const std::vector<std::string> kinds = {"data0", "window", "priority", "ping", "settings", "unknown"};
  for (const std::string& kind : kinds) {
    HttpRequest get;
    get.path = "/flood?f=" + kind;
    get.timeout = milliseconds(20'000);
    HttpResponse r = http(port(), get);
    EXPECT_EQ(r.body.find("done"), std::string::npos) << kind << ": the flood ran to its end";
    EXPECT_EQ(http_get(port(), "/echo").status, 200) << kind;
  }
  EXPECT_EQ(metric("tlsfront_upstream_floods_total"), static_cast<double>(kinds.size()));
  auto lines = proxy_.wait_log_lines(2 * kinds.size());
  ASSERT_EQ(lines.size(), 2 * kinds.size());
  for (size_t i = 0; i < lines.size(); i += 2) {
    EXPECT_EQ(json_string(lines[i], "upstream_error"), std::string("invalid_response")) << lines[i];
  }
  wait_until([&] { return lines_of(read_file(port_file_ + ".goaways")).size() >= kinds.size(); });
  for (const auto& code : lines_of(read_file(port_file_ + ".goaways"))) EXPECT_EQ(code, "11");  // ENHANCE_YOUR_CALM
  EXPECT_NE(proxy_.process().err().find("flooded HTTP/2 control frames"), std::string::npos);
}

TEST_F(H2cUpstream, ExtendedConnectIsRefusedBeforeItIsSent) {
  // RFC 8441 asks for a tunnel; HTTP/2 to the upstream has no Upgrade
  // (RFC 9113 §8.6), so the request is refused (501) rather than run there
  // as the GET it maps to, and the log says why.
  ProxyOptions o;
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nupgrade = [\"websocket\"]\n";
  ASSERT_TRUE(start({}, o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  auto head = open_h2_tunnel(c, 1, "/echo");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(status_of(*head), 501);
  EXPECT_TRUE(requests().empty()) << "the upstream got " << requests().front();
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("upgrade_needs_http1")) << lines[0];
  EXPECT_NE(proxy_.process().err().find("tunnels need protocol = \"http/1.1\""), std::string::npos);
}

TEST_F(H2cUpstream, ARequestCancelledBeforeItWentOutIsNeverSent) {
  // The upstream connection is still connecting (the server's accept queue
  // is full: its SYN waits for a retransmission) when the client resets
  // its stream. Its HEADERS, queued meanwhile, must be cancelled: the
  // server would otherwise run a request nobody waits for (a POST too), and
  // its fields, which nghttp2 points at uncopied, went with the exchange.
  const std::string go = dir_.file("accept.go");
  ProxyOptions o;
  o.workers = 1;
  o.upstream_extra = "connect_timeout = \"20s\"\n";
  ASSERT_TRUE(start({"--accept-after", go}, o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/echo?cancelled"), true));
  ASSERT_TRUE(c.send_frame(h2::kRstStream, 0, 1, std::string("\0\0\0\x08", 4)));  // CANCEL
  auto lines = proxy_.wait_log_lines(1);                                          // the stream is over for the proxy
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "path"), std::string("/echo?cancelled")) << lines[0];
  // The server accepts again; the next request goes on the same connection
  // (HTTP/2 keeps its frames in order: the cancelled one would be first).
  std::ofstream(go) << "go\n";
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/echo?next"), true));
  EXPECT_EQ(c.wait_status(3, milliseconds(15'000)), 200);
  const auto got = requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("/echo?next"), std::string::npos) << got[0];
  EXPECT_EQ(connections(), 1u);
}

TEST_F(H2cUpstream, UnansweredPingClosesTheIdleConnection) {
  // The peer answers /stall, then never reads that connection again: the
  // idle connection's PING goes unanswered and tlsfront closes it, so the
  // next request opens a new connection instead of waiting on a dead one
  // for read_timeout.
  ProxyOptions o;
  o.workers = 1;
  o.upstream_extra = "h2_ping_interval = \"200ms\"\nh2_ping_timeout = \"500ms\"\nread_timeout = \"30s\"\n";
  ASSERT_TRUE(start({}, o));
  HttpResponse stalled = http_get(port(), "/stall");
  EXPECT_EQ(stalled.status, 200) << stalled.error;
  EXPECT_EQ(stalled.body, "stalled");
  ASSERT_TRUE(wait_until([&] { return metric("tlsfront_upstream_h2_ping_timeouts_total") >= 1; }))
      << proxy_.process().err();
  EXPECT_EQ(metric("tlsfront_upstream_idle_connections"), 0);
  EXPECT_NE(proxy_.process().err().find("HTTP/2 connection closed: no PING ACK within h2_ping_timeout 500ms"),
            std::string::npos)
      << proxy_.process().err();
  HttpResponse next = http_get(port(), "/echo");
  EXPECT_EQ(next.status, 200) << next.error;
  EXPECT_EQ(next.body, "ok GET /echo 0");
  EXPECT_EQ(connections(), 2u);
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_raw(lines[1], "upstream_connection_reused"), std::string("false")) << lines[1];
}

TEST_F(H2cUpstream, AnsweredPingsKeepTheIdleConnection) {
  ProxyOptions o;
  o.workers = 1;
  o.upstream_extra = "h2_ping_interval = \"200ms\"\nh2_ping_timeout = \"5s\"\n";
  ASSERT_TRUE(start({}, o));
  EXPECT_EQ(http_get(port(), "/echo").status, 200);
  // The idle h2c connection is on the idle gauge, as an idle HTTP/1.1
  // keepalive connection would be.
  EXPECT_TRUE(wait_until([&] { return metric("tlsfront_upstream_idle_connections") == 1; }));
  // Several intervals pass, each with a PING answered.
  ASSERT_TRUE(wait_until([&] { return pings() >= 4; })) << proxy_.process().err();
  HttpResponse again = http_get(port(), "/echo");
  EXPECT_EQ(again.status, 200) << again.error;
  EXPECT_EQ(connections(), 1u);
  EXPECT_EQ(metric("tlsfront_upstream_h2_ping_timeouts_total"), 0);
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_raw(lines[1], "upstream_connection_reused"), std::string("true")) << lines[1];
}

TEST_F(H2cUpstream, SendTimeoutResetsOnlyTheStalledStream) {
  // The peer never reopens /noread's stream window: 1 MB of request body
  // cannot go up. send_timeout (not the longer read_timeout) ends that
  // stream with a 504; the connection and a request beside it go on.
  ProxyOptions o;
  o.workers = 1;
  o.upstream_extra = "send_timeout = \"1s\"\nread_timeout = \"20s\"\n";
  ASSERT_TRUE(start({}, o));
  HttpResponse upload;
  std::thread uploader([&] {
    HttpRequest post;
    post.method = "POST";
    post.path = "/noread";
    post.body = std::string(1'000'000, 'u');
    upload = http(port(), post);
  });
  const bool stalled = wait_until([&] { return !read_file(port_file_ + ".stalled").empty(); });
  HttpResponse beside = http_get(port(), "/echo");
  uploader.join();
  ASSERT_TRUE(stalled);
  EXPECT_EQ(beside.status, 200) << beside.error;
  EXPECT_EQ(upload.status, 504) << upload.error;
  EXPECT_EQ(http_get(port(), "/echo").status, 200);
  EXPECT_EQ(connections(), 1u);
  auto lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  bool found = false;
  for (const auto& line : lines) {
    if (json_string(line, "path") != std::string("/noread")) continue;
    found = true;
    EXPECT_EQ(json_string(line, "upstream_error"), std::string("timeout_send")) << line;
  }
  EXPECT_TRUE(found);
}

TEST_F(H2cUpstream, ReadTimeoutCountsFromTheLastWrite) {
  // A request body that keeps coming, slower than nothing but never idle
  // for read_timeout, is not cut off by it (each write re-arms the timer,
  // as for an HTTP/1.1 upstream); the answer comes once the body has ended.
  ProxyOptions o;
  o.workers = 1;
  o.upstream_extra = "read_timeout = \"1500ms\"\n";
  ASSERT_TRUE(start({}, o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  h2::Fields post = {{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/echo"}};
  ASSERT_TRUE(c.send_headers(1, post, false));
  for (int i = 0; i < 12; ++i) {  // ~3.6 s in all, 300 ms apart
    ASSERT_TRUE(c.send_frame(h2::kData, 0, 1, "abc"));
    std::this_thread::sleep_for(milliseconds(300));
  }
  ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 1, "abc"));
  std::vector<h2::Frame> frames;
  auto end = c.wait_for([&](const h2::Frame& f) {
    if (f.stream == 1) frames.push_back(f);
    return f.stream == 1 && ((f.flags & h2::kEndStream) != 0 || f.type == h2::kRstStream);
  });
  ASSERT_TRUE(end.has_value());
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames[0].type, h2::kHeaders);
  EXPECT_EQ(frames[0].fields.at(0), (std::pair<std::string, std::string>{":status", "200"}));
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("200")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "upstream_error"), std::string("null")) << lines[0];
}

}  // namespace
}  // namespace tlsfront::itest
