// HTTP/2 cleartext upstreams ([[upstream]] protocol = "h2c", RFC 9113 §3.3)
// with a real HTTP/2 server (python3-h2, tests/integration/peers/h2c_peer.py):
// HTTP/1.1 and HTTP/2 clients through it, the request as HTTP/2 fields,
// request trailers forwarded, response trailers to HTTP/2 clients, a large
// body streamed, requests multiplexed on one connection; request
// bodies queued together beyond one flush's pull to a server with large
// windows; a connection error (a malformed frame from the server) failing
// its streams at once. A response whose HEADERS carry a content-length
// and do not end the stream keeps its trailers, for both client kinds.
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


TEST_F(H2cUpstream, Http1AndHttp2ClientsThroughOneConnection) {
  ASSERT_TRUE(start());
  HttpRequest post;
  post.method = "POST";
  post.path = "/echo";
  post.body = "hello";
  post.headers = {"Connection: keep-alive, X-Hop", "X-Hop: 1", "X-End: 2"};
  HttpResponse r1 = http(port(), post);
  EXPECT_EQ(r1.status, 200) << r1.error;
  EXPECT_EQ(r1.body, "ok POST /echo 5");
  post.http2 = true;
  post.headers = {"X-End: 2"};
  HttpResponse r2 = http(port(), post);
  EXPECT_EQ(r2.status, 200) << r2.error;
  EXPECT_EQ(r2.http_version, 3L /* CURL_HTTP_VERSION_2_0 */);
  EXPECT_EQ(r2.body, "ok POST /echo 5");
  HttpResponse r3 = http_get(port(), "/missing");
  EXPECT_EQ(r3.status, 404);

  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 3u);
  // The HTTP/1.1 request went up as HTTP/2 fields: :authority from Host, no
  // connection-specific field (RFC 9113 §8.2.2), nothing Connection named.
  EXPECT_NE(reqs[0].find(R"([":authority", "localhost:)"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find(R"([":scheme", "http"])"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find(R"(["x-end", "2"])"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find(R"(["content-length", "5"])"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find(R"(["x-forwarded-for", "127.0.0.1"])"), std::string::npos) << reqs[0];
  EXPECT_EQ(reqs[0].find("x-hop"), std::string::npos) << reqs[0];
  EXPECT_EQ(reqs[0].find("connection"), std::string::npos) << reqs[0];
  EXPECT_EQ(reqs[0].find(R"(["host")"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find(R"("body": 5)"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[1].find(R"("body": 5)"), std::string::npos) << reqs[1];
  // workers = 2: each worker has its own pool; at most one connection each.
  EXPECT_LE(connections(), 2u);

  auto lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) {
    EXPECT_EQ(json_string(line, "upstream_protocol"), std::string("h2c")) << line;
    EXPECT_EQ(json_raw(line, "grpc_status"), std::string("null")) << line;
    EXPECT_EQ(json_raw(line, "upstream_error"), std::string("null")) << line;
  }
}

// A head with more fields than H2Session::submit keeps on its stack (32)
// goes up whole, in order, from either client kind.
TEST_F(H2cUpstream, ARequestWithManyFieldsGoesUpWhole) {
  ASSERT_TRUE(start());
  for (bool h2 : {false, true}) {
    HttpRequest get;
    get.path = "/many";
    get.http2 = h2;
    for (int i = 0; i < 60; ++i) get.headers.push_back("X-Field-" + std::to_string(i) + ": value-" + std::to_string(i));
    HttpResponse r = http(port(), get);
    EXPECT_EQ(r.status, 404) << r.error;
  }
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 2u);
  for (const auto& req : reqs) {
    size_t at = 0;
    for (int i = 0; i < 60; ++i) {
      const std::string field = "[\"x-field-" + std::to_string(i) + "\", \"value-" + std::to_string(i) + "\"]";
      const size_t found = req.find(field, at);
      ASSERT_NE(found, std::string::npos) << field << " in " << req;
      at = found;
    }
    EXPECT_NE(req.find(R"([":path", "/many"])"), std::string::npos) << req;
  }
}

TEST_F(H2cUpstream, MalformedResponseFieldNeverReachesTheClient) {
  // An h2 head's fields are checked by nghttp2 as it decodes them (RFC 9113
  // §8.2.1, §8.1.1): a response with a value holding a control octet, a
  // name that is not a token or an uppercase name is malformed, and its
  // stream is reset (502), never passed on in part. So is one whose status
  // is outside 100-599 (RFC 9110 §15), H2Stream's own check.
  ASSERT_TRUE(start());
  for (const char* f : {"none", "ctl", "space", "upper", "status"}) {
    const bool good = std::string_view(f) == "none";
    for (bool http2 : {false, true}) {
      HttpRequest get;
      get.path = std::string("/badfield?f=") + f;
      get.http2 = http2;
      HttpResponse r = http(port(), get);
      EXPECT_EQ(r.status, good ? 200 : 502) << f << " " << r.error;
      EXPECT_EQ(r.header("x-ok"), good ? std::optional<std::string>("fine") : std::nullopt) << f << r.headers;
      EXPECT_EQ(r.header("x-none"), good ? std::optional<std::string>("ok") : std::nullopt) << f << r.headers;
      for (const char* name : {"x-ctl", "x bad", "x-up"}) {
        EXPECT_EQ(r.header(name), std::nullopt) << f << r.headers;
      }
    }
  }
  for (const auto& line : proxy_.wait_log_lines(10)) {
    const bool good = json_string(line, "path") == std::string("/badfield?f=none");
    EXPECT_EQ(json_raw(line, "upstream_error"), good ? std::string("null") : std::string(R"("stream_reset")")) << line;
  }
}

TEST_F(H2cUpstream, LargeUploadGoesOnAfterTheStreamBufferFilled) {
  // 1 MB of request body from either kind of client outruns the peer (its
  // stream window is 64 KiB, reopened as python3-h2 reads): the stream's
  // buffer passes its high watermark, the client's body is paused, and the
  // session's flush, once nghttp2 has drained the buffer, resumes it
  // (H2Session::wait_writable). Without that the upload would stall.
  ASSERT_TRUE(start());
  for (bool http2 : {false, true}) {
    HttpRequest post;
    post.method = "POST";
    post.path = "/echo";
    post.http2 = http2;
    post.body = std::string(1'000'000, 'b');  // within the default max_body_bytes (1m)
    HttpResponse r = http(port(), post);
    EXPECT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.body, "ok POST /echo 1000000");
  }
}

TEST_F(H2cUpstream, Http2RequestBodiesQueuedTogetherAllGoOut) {
  // Four 1 MB bodies from one HTTP/2 client (its stream windows let each
  // come whole) to a server whose windows (16 MiB) take them all without a
  // WINDOW_UPDATE: far more than one flush pulls from nghttp2
  // (kPullHighWatermark) waits at once. A flush whose bytes the socket took
  // at once must go on by itself; when it did not, the rest waited for an
  // event that never came (no client data left, no frame from the server)
  // and the requests ran into send_timeout.
  ProxyOptions o;
  o.workers = 1;
  o.extra = "[http2]\ninitial_window_size = 1048576\n";
  o.upstream_extra = "send_timeout = \"5s\"\nread_timeout = \"30s\"\n";
  ASSERT_TRUE(start({"--window", "16777216"}, o));
  for (int round = 0; round < 3; ++round) {
    std::vector<HttpRequest> reqs(4);
    for (size_t i = 0; i < reqs.size(); ++i) {
      reqs[i].http2 = true;
      reqs[i].method = "POST";
      reqs[i].path = "/echo?r=" + std::to_string(round) + "&i=" + std::to_string(i);
      reqs[i].body = std::string(1'000'000, static_cast<char>('a' + i));
    }
    auto responses = http2_parallel(port(), reqs);
    ASSERT_EQ(responses.size(), 4u);
    for (size_t i = 0; i < responses.size(); ++i) {
      EXPECT_EQ(responses[i].status, 200) << round << " " << i << " " << responses[i].error;
      EXPECT_EQ(responses[i].body, "ok POST " + reqs[i].path + " 1000000") << round << " " << i;
    }
  }
  EXPECT_EQ(connections(), 1u);
  for (const auto& line : proxy_.wait_log_lines(12)) {
    EXPECT_EQ(json_raw(line, "upstream_error"), std::string("null")) << line;
  }
}

TEST_F(H2cUpstream, ConnectionErrorFailsItsStreamsAtOnce) {
  // A server that breaks HTTP/2 on the connection (RFC 9113 §5.4.1: a DATA
  // frame on stream 0, a field block HPACK cannot decode): nghttp2 ends the
  // connection with GOAWAY, and its streams fail with a 502 there and then
  // (invalid_response), not after read_timeout on a connection nothing
  // more will come from.
  ProxyOptions o;
  o.workers = 1;
  o.upstream_extra = "read_timeout = \"30s\"\n";
  ASSERT_TRUE(start({}, o));
  for (const char* f : {"data0", "hpack"}) {
    for (bool http2 : {false, true}) {
      HttpRequest get;
      get.path = std::string("/badframe?f=") + f;
      get.http2 = http2;
      get.timeout = milliseconds(10'000);
      const auto started = Clock::now();
      HttpResponse r = http(port(), get);
      EXPECT_EQ(r.status, 502) << f << " " << r.error;
      EXPECT_LT(Clock::now() - started, milliseconds(5'000)) << f;
    }
  }
  // A new connection serves the next request.
  EXPECT_EQ(http_get(port(), "/echo").status, 200);
  EXPECT_EQ(connections(), 5u);
  auto lines = proxy_.wait_log_lines(5);
  ASSERT_EQ(lines.size(), 5u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(json_string(lines[i], "upstream_error"), std::string("invalid_response")) << lines[i];
  }
  EXPECT_NE(proxy_.process().err().find("upstream broke HTTP/2"), std::string::npos) << proxy_.process().err();
}

TEST_F(H2cUpstream, ParallelRequestsShareOneConnection) {
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start({}, o));
  std::vector<HttpRequest> reqs(50);
  for (auto& r : reqs) {
    r.http2 = true;
    r.path = "/echo";
  }
  auto responses = http2_parallel(port(), reqs);
  ASSERT_EQ(responses.size(), 50u);
  for (const auto& r : responses) EXPECT_EQ(r.status, 200) << r.error;
  // And HTTP/1.1 clients on their own connections join the same one.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(http_get(port(), "/echo").status, 200);
  EXPECT_EQ(requests().size(), 55u);
  EXPECT_EQ(connections(), 1u);
  auto lines = proxy_.wait_log_lines(55);
  size_t reused = 0;
  for (const auto& line : lines) reused += json_raw(line, "upstream_connection_reused") == std::string("true");
  EXPECT_GE(reused, 5u);
}

TEST_F(H2cUpstream, LargeResponseStreamsToBothClientKinds) {
  ASSERT_TRUE(start());
  for (bool h2 : {false, true}) {
    HttpRequest r;
    r.http2 = h2;
    r.path = "/big?n=5000000";
    HttpResponse resp = http(port(), r);
    EXPECT_EQ(resp.status, 200) << resp.error;
    EXPECT_EQ(resp.body.size(), 5'000'000u) << (h2 ? "h2" : "h1");
    EXPECT_EQ(resp.body.find_first_not_of('x'), std::string::npos);
  }
}

TEST_F(H2cUpstream, OnlyAStreamLeftOpenIsReset) {
  // A stream whose request and response both ended is closed as it is
  // (RFC 9113 §5.1): no RST_STREAM goes up for it (one per request did).
  // One the client gives up mid-response is reset with CANCEL.
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start({}, o));
  for (bool http2 : {false, true}) {
    HttpRequest post;
    post.method = "POST";
    post.path = "/echo";
    post.body = "abc";
    post.http2 = http2;
    EXPECT_EQ(http(port(), post).status, 200);
    EXPECT_EQ(http_get(port(), "/echo").status, 200);
    HttpRequest big;
    big.path = "/big?n=100000";
    big.http2 = http2;
    EXPECT_EQ(http(port(), big).body.size(), 100'000u);
  }
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/big?n=5000000"), true));
  ASSERT_TRUE(c.wait_for([](const h2::Frame& f) { return f.stream == 1 && f.type == h2::kData; }).has_value());
  ASSERT_TRUE(c.send_frame(h2::kRstStream, 0, 1, std::string("\0\0\0\x08", 4)));  // CANCEL
  ASSERT_TRUE(wait_until([&] { return !resets().empty(); }));
  auto lines = resets();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].ends_with(" 8")) << lines[0];
  EXPECT_EQ(requests().size(), 7u);
}

TEST_F(H2cUpstream, RequestAndResponseTrailersOverHttp2) {
  ASSERT_TRUE(start());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  h2::Fields post = {
      {":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/echo"}, {"te", "trailers"}};
  ASSERT_TRUE(c.send_headers(1, post, false));
  ASSERT_TRUE(c.send_frame(h2::kData, 0, 1, "abc"));
  ASSERT_TRUE(c.send_headers(1, {{"x-checksum", "42"}}, true));
  std::vector<h2::Frame> heads;
  auto end = c.wait_for([&](const h2::Frame& f) {
    if (f.stream == 1 && f.type == h2::kHeaders) heads.push_back(f);
    return f.stream == 1 && (f.flags & h2::kEndStream) != 0;
  });
  ASSERT_TRUE(end.has_value());
  ASSERT_EQ(heads.size(), 2u);  // the response head and its trailers
  EXPECT_EQ(heads[1].fields, (h2::Fields{{"x-trailer", "done"}}));
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_NE(reqs[0].find(R"("trailers": [["x-checksum", "42"]])"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find(R"(["te", "trailers"])"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find(R"("body": 3)"), std::string::npos) << reqs[0];
}

TEST_F(H2cUpstream, ResponseTrailersToHttp1ClientsOnlyWithTeTrailers) {
  ASSERT_TRUE(start());
  HttpRequest r;
  r.path = "/echo";
  r.headers = {"TE: trailers"};
  HttpResponse with = http(port(), r);
  EXPECT_EQ(with.status, 200) << with.error;
  EXPECT_EQ(with.body, "ok GET /echo 0");
  EXPECT_NE(with.headers.find("x-trailer: done\r\n"), std::string::npos) << with.headers;
  // Without TE: trailers the upstream is not asked for any (te goes up only
  // as "trailers"), and none reach the client.
  r.headers = {};
  HttpResponse without = http(port(), r);
  EXPECT_EQ(without.status, 200) << without.error;
  EXPECT_EQ(without.headers.find("x-trailer"), std::string::npos) << without.headers;
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_NE(reqs[0].find(R"(["te", "trailers"])"), std::string::npos) << reqs[0];
  EXPECT_EQ(reqs[1].find(R"("te")"), std::string::npos) << reqs[1];
}

// An HTTP/1.1 request over TLS with Connection: close; everything that
// came back until the proxy closed.
std::string raw_http1(int port, const std::string& path, const std::string& extra_headers) {
  TlsClient c;
  if (!c.connect(port)) return "connect failed: " + c.error();
  c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + extra_headers + "Connection: close\r\n\r\n");
  return c.read_all();
}

// The stream's HEADERS frames up to END_STREAM, and its DATA bytes.
struct H2Answer {
  std::vector<h2::Frame> heads;
  std::string data;
  bool ended = false;
};
H2Answer h2_answer(int port, const std::string& path) {
  H2Answer a;
  h2::Client c;
  if (!c.connect(port)) return a;
  h2::Fields req = {{":method", "POST"},
                    {":scheme", "https"},
                    {":authority", "localhost"},
                    {":path", path},
                    {"content-type", "application/grpc"},
                    {"te", "trailers"}};
  if (!c.send_headers(1, req, true)) return a;
  a.ended = c.wait_for([&](const h2::Frame& f) {
               if (f.stream != 1) return false;
               if (f.type == h2::kHeaders) a.heads.push_back(f);
               if (f.type == h2::kData) a.data += f.payload;  // no padding from nghttp2
               return (f.flags & h2::kEndStream) != 0 || f.type == h2::kRstStream;
             }).has_value();
  return a;
}

TEST_F(H2cUpstream, TrailersAfterAnEmptyBodyWithContentLength) {
  // The upstream's HEADERS says content-length: 0 but does not end the
  // stream: trailers follow (nginx's add_trailer on an http2 listener). The
  // client's HEADERS must not end the stream either, or the trailers
  // (grpc-status) are lost.
  ASSERT_TRUE(start());
  H2Answer a = h2_answer(port(), "/lentrailers?n=0");
  ASSERT_TRUE(a.ended);
  ASSERT_EQ(a.heads.size(), 2u);  // the response head and its trailers
  EXPECT_EQ(a.heads[0].flags & h2::kEndStream, 0);
  const h2::Fields& head = a.heads[0].fields;
  EXPECT_NE(std::find(head.begin(), head.end(), h2::Fields::value_type{":status", "200"}), head.end());
  EXPECT_NE(std::find(head.begin(), head.end(), h2::Fields::value_type{"content-length", "0"}), head.end());
  EXPECT_EQ(a.heads[1].fields, (h2::Fields{{"grpc-status", "0"}, {"grpc-message", "ok"}}));
  EXPECT_NE(a.heads[1].flags & h2::kEndStream, 0);
  EXPECT_EQ(a.data, "");

  // HTTP/1.1 with TE: trailers: chunked (no Content-Length), an empty body
  // and the trailers in the last chunk.
  std::string with = raw_http1(port(), "/lentrailers?n=0", "TE: trailers\r\n");
  auto [head1, body1] = split_head(with);
  EXPECT_TRUE(head1.starts_with("HTTP/1.1 200 ")) << with;
  EXPECT_EQ(header_values(head1, "transfer-encoding"), std::vector<std::string>{"chunked"}) << with;
  EXPECT_TRUE(header_values(head1, "content-length").empty()) << with;
  EXPECT_EQ(body1, "0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n") << with;
  // Without it: Content-Length: 0, nothing else.
  std::string without = raw_http1(port(), "/lentrailers?n=0", "");
  auto [head2, body2] = split_head(without);
  EXPECT_TRUE(head2.starts_with("HTTP/1.1 200 ")) << without;
  EXPECT_EQ(header_values(head2, "content-length"), std::vector<std::string>{"0"}) << without;
  EXPECT_TRUE(header_values(head2, "transfer-encoding").empty()) << without;
  EXPECT_EQ(body2, "") << without;

  auto lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json_raw(lines[0], "grpc_status"), std::string("0")) << lines[0];
}

TEST_F(H2cUpstream, TrailersAfterABodyWithContentLength) {
  // content-length: 5, five bytes, then trailers. An HTTP/1.1 client that
  // said TE: trailers gets the body chunked with them (only a chunked body
  // carries trailers: RFC 9110 §6.5, RFC 9112 §7.1.2); one that did not
  // gets the Content-Length and the body; an HTTP/2 client all of it.
  ASSERT_TRUE(start());
  std::string with = raw_http1(port(), "/lentrailers?n=5", "TE: trailers\r\n");
  auto [head1, body1] = split_head(with);
  EXPECT_TRUE(head1.starts_with("HTTP/1.1 200 ")) << with;
  EXPECT_EQ(header_values(head1, "transfer-encoding"), std::vector<std::string>{"chunked"}) << with;
  EXPECT_TRUE(header_values(head1, "content-length").empty()) << with;
  EXPECT_EQ(body1, "5\r\nxxxxx\r\n0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n") << with;

  std::string without = raw_http1(port(), "/lentrailers?n=5", "");
  auto [head2, body2] = split_head(without);
  EXPECT_TRUE(head2.starts_with("HTTP/1.1 200 ")) << without;
  EXPECT_EQ(header_values(head2, "content-length"), std::vector<std::string>{"5"}) << without;
  EXPECT_TRUE(header_values(head2, "transfer-encoding").empty()) << without;
  EXPECT_EQ(body2, "xxxxx") << without;

  // HTTP/1.0 has no chunked coding: the length, the body, no trailers.
  TlsClient c10;
  ASSERT_TRUE(c10.connect(port()));
  c10.write("GET /lentrailers?n=5 HTTP/1.0\r\nHost: localhost\r\nTE: trailers\r\n\r\n");
  std::string old = c10.read_all();
  auto [head3, body3] = split_head(old);
  EXPECT_EQ(header_values(head3, "content-length"), std::vector<std::string>{"5"}) << old;
  EXPECT_EQ(body3, "xxxxx") << old;

  H2Answer a = h2_answer(port(), "/lentrailers?n=5");
  ASSERT_TRUE(a.ended);
  ASSERT_EQ(a.heads.size(), 2u);
  EXPECT_EQ(a.data, "xxxxx");
  EXPECT_EQ(a.heads[1].fields, (h2::Fields{{"grpc-status", "0"}, {"grpc-message", "ok"}}));
}

}  // namespace
}  // namespace tlsfront::itest
