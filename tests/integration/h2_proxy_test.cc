// HTTP/2 client -> tlsfront -> HTTP/1.1 backend: ALPN per listener, streams
// proxied through the shared upstream pools, bodies both ways, header
// mapping, request trailers in the chunked trailer section, access log per
// stream, and h2load as a correctness check.
#include <curl/curl.h>

#include <algorithm>
#include <set>
#include <string>

#include "h2_frames.h"
#include "harness.h"

namespace tlsfront::itest {
namespace {

using H2H1 = ProxyTest;

TEST_F(H2H1, AlpnPicksH2WhenOffered) {
  ASSERT_TRUE(start_proxy());
  TlsClient both;
  TlsOptions o;
  o.alpn = {"http/1.1", "h2"};  // the server's preference (h2 first) decides
  ASSERT_TRUE(both.connect(port(), o)) << both.error();
  EXPECT_EQ(both.alpn_selected(), "h2");

  TlsClient h1;
  o.alpn = {"http/1.1"};
  ASSERT_TRUE(h1.connect(port(), o)) << h1.error();
  EXPECT_EQ(h1.alpn_selected(), "http/1.1");

  // No ALPN at all: HTTP/1.1.
  TlsClient none;
  o.alpn = {};
  ASSERT_TRUE(none.connect(port(), o)) << none.error();
  EXPECT_EQ(none.alpn_selected(), "");
  ASSERT_TRUE(none.write("GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  auto r = none.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

TEST_F(H2H1, ListenerWithoutH2ServesHttp11) {
  ProxyOptions o;
  o.listen_extra = "alpn = [\"http/1.1\"]\n";
  ASSERT_TRUE(start_proxy(o));
  TlsClient c;
  TlsOptions t;
  t.alpn = {"h2", "http/1.1"};
  ASSERT_TRUE(c.connect(port(), t)) << c.error();
  EXPECT_EQ(c.alpn_selected(), "http/1.1");
  HttpRequest req;
  req.http2 = true;
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_1_1);
}

TEST_F(H2H1, GetProxied) {
  ASSERT_TRUE(start_proxy());
  HttpRequest req;
  req.http2 = true;
  req.path = "/headers?q=1";
  req.headers = {"X-Custom: kept", "TE: trailers"};
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_2_0);
  EXPECT_EQ(r.status, 200);
  const std::string& head = r.body;  // /headers echoes what the backend received
  EXPECT_EQ(head.rfind("GET /headers?q=1 HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_EQ(header_values(head, "Host"), std::vector<std::string>{"localhost:" + std::to_string(port())}) << head;
  EXPECT_EQ(header_values(head, "X-Custom"), std::vector<std::string>{"kept"}) << head;
  EXPECT_EQ(header_values(head, "X-Forwarded-Proto"), std::vector<std::string>{"https"}) << head;
  EXPECT_TRUE(header_values(head, "TE").empty()) << head;
  EXPECT_TRUE(header_values(head, "Transfer-Encoding").empty()) << head;

  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "protocol"), std::string("HTTP/2.0"));
  EXPECT_EQ(json_string(lines[0], "alpn"), std::string("h2"));
  EXPECT_EQ(json_raw(lines[0], "stream_id"), std::string("1"));
  EXPECT_EQ(json_raw(lines[0], "status"), std::string("200"));
  EXPECT_NE(json_raw(lines[0], "tls_handshake_ms"), std::string("null"));
  EXPECT_NE(json_raw(lines[0], "rtt_ms"), std::string("null"));  // the kernel's estimate (TCP_INFO)
  EXPECT_EQ(json_raw(lines[0], "migrated"), std::string("false"));
  EXPECT_EQ(json_string(lines[0], "path"), std::string("/headers?q=1"));
  EXPECT_EQ(json_string(lines[0], "upstream_addr"), backend_.address());
}

TEST_F(H2H1, Http11LogLineHasNullStreamId) {
  ASSERT_TRUE(start_proxy());
  HttpResponse r = http_get(port(), "/");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "stream_id"), std::string("null"));
  EXPECT_EQ(json_string(lines[0], "protocol"), std::string("HTTP/1.1"));
}

TEST_F(H2H1, LargePostStreamedWithoutLength) {
  ProxyOptions o;
  o.extra = "[limits]\nmax_body_bytes = \"16m\"\n";
  ASSERT_TRUE(start_proxy(o));
  std::string all = binary_body(3 * 1024 * 1024 + 77);  // many stream windows
  HttpRequest req;
  req.http2 = true;
  req.method = "POST";
  req.path = "/echo";
  for (size_t off = 0; off < all.size(); off += 100'000) req.chunks.push_back(all.substr(off, 100'000));
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_2_0);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == all) << "echoed body differs (size " << r.body.size() << ")";
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  auto [head, body] = split_head(reqs[0]);
  EXPECT_EQ(header_values(head, "Transfer-Encoding"), std::vector<std::string>{"chunked"}) << head;
  EXPECT_TRUE(recorded_body(reqs[0]) == all) << "recorded body differs";
}

TEST_F(H2H1, PostWithContentLength) {
  ASSERT_TRUE(start_proxy());
  HttpRequest req;
  req.http2 = true;
  req.method = "POST";
  req.path = "/echo";
  req.body = binary_body(200'000);
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == *req.body);
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  auto [head, body] = split_head(reqs[0]);
  EXPECT_EQ(header_values(head, "Content-Length"), std::vector<std::string>{"200000"}) << head;
  EXPECT_TRUE(body == *req.body);
}

TEST_F(H2H1, LargeResponseStreamed) {
  ASSERT_TRUE(start_proxy());
  HttpRequest req;
  req.http2 = true;
  req.path = "/bytes/8000000";
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), 8000000u);
  EXPECT_TRUE(matches_pattern(r.body));
  EXPECT_EQ(r.header("content-length"), "8000000");
  req.path = "/bytes-chunked/300001";  // no length: DATA until END_STREAM
  r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.body.size(), 300001u);
  EXPECT_TRUE(matches_pattern(r.body));
}

TEST_F(H2H1, ManyConcurrentStreamsOnOneConnection) {
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start_proxy(o));
  std::vector<HttpRequest> reqs;
  for (int i = 0; i < 60; ++i) {
    HttpRequest r;
    r.http2 = true;
    if (i % 3 == 0) {
      r.path = "/bytes/" + std::to_string(100'000 + i);
    } else if (i % 3 == 1) {
      r.method = "POST";
      r.path = "/echo";
      r.body = binary_body(30'000 + static_cast<size_t>(i));
    } else {
      r.path = "/slow/50";
    }
    reqs.push_back(r);
  }
  auto resps = http2_parallel(port(), reqs);
  for (size_t i = 0; i < resps.size(); ++i) {
    ASSERT_EQ(resps[i].curl_code, CURLE_OK) << i << ": " << resps[i].error;
    EXPECT_EQ(resps[i].status, 200) << i;
    EXPECT_EQ(resps[i].http_version, CURL_HTTP_VERSION_2_0) << i;
    if (i % 3 == 0) {
      EXPECT_EQ(resps[i].body.size(), 100'000 + i) << i;
      EXPECT_TRUE(matches_pattern(resps[i].body)) << i;
    } else if (i % 3 == 1) {
      EXPECT_TRUE(resps[i].body == *reqs[i].body) << i;
    }
  }
  auto lines = proxy_.wait_log_lines(60);
  ASSERT_EQ(lines.size(), 60u);
  std::set<std::string> conns, streams;
  for (const auto& l : lines) {
    conns.insert(json_raw(l, "connection_id").value_or("?"));
    streams.insert(json_raw(l, "stream_id").value_or("?"));
    EXPECT_EQ(json_string(l, "protocol"), std::string("HTTP/2.0"));
  }
  EXPECT_EQ(conns.size(), 1u) << "streams were not multiplexed on one connection";
  size_t with_handshake = 0;
  size_t with_rtt = 0;
  for (const auto& l : lines) {
    with_handshake += json_raw(l, "tls_handshake_ms") != std::string("null");
    with_rtt += json_raw(l, "rtt_ms") != std::string("null");
  }
  EXPECT_EQ(with_handshake, 1u);
  EXPECT_EQ(with_rtt, 1u);
  EXPECT_EQ(streams.size(), 60u);
}

TEST_F(H2H1, HeadAnd204And304HaveNoBody) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  h2::Fields head = h2::get_request("/bytes/100");
  head[0].second = "HEAD";
  ASSERT_TRUE(c.send_headers(1, head, true));
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/status/204"), true));
  ASSERT_TRUE(c.send_headers(5, h2::get_request("/status/304"), true));
  std::set<uint32_t> ended;
  while (ended.size() < 3) {
    auto f = c.next();
    ASSERT_TRUE(f.has_value()) << "connection ended before the three responses";
    ASSERT_NE(f->type, h2::kRstStream);
    if (f->stream == 0) continue;
    EXPECT_FALSE(f->type == h2::kData && !f->payload.empty()) << "DATA on stream " << f->stream;
    if (f->type == h2::kHeaders) {
      std::string status;
      std::optional<std::string> length;
      for (const auto& [k, v] : f->fields) {
        if (k == ":status") status = v;
        if (k == "content-length") length = v;
      }
      if (f->stream == 1) {
        EXPECT_EQ(status, "200");
        EXPECT_EQ(length, std::optional<std::string>("100"));
      }
      if (f->stream == 3) EXPECT_EQ(status, "204");
      if (f->stream == 5) EXPECT_EQ(status, "304");
    }
    if (f->flags & h2::kEndStream) ended.insert(f->stream);
  }
}

TEST_F(H2H1, EarlyHintsPassedAsInterimHeaders) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/early-hints"), true));
  std::vector<h2::Fields> heads;
  while (heads.size() < 2) {
    auto f = c.wait_for([](const h2::Frame& x) { return x.stream == 1 && (x.type == h2::kHeaders || x.type == h2::kRstStream); });
    ASSERT_TRUE(f.has_value());
    ASSERT_EQ(f->type, h2::kHeaders);
    heads.push_back(f->fields);
    if (heads.size() == 1) EXPECT_FALSE(f->flags & h2::kEndStream) << "an interim response ended the stream";
  }
  ASSERT_FALSE(heads[0].empty());
  EXPECT_EQ(heads[0][0], (std::pair<std::string, std::string>{":status", "103"}));
  EXPECT_NE(std::find(heads[0].begin(), heads[0].end(), std::pair<std::string, std::string>{"link", "</x>; rel=preload"}),
            heads[0].end());
  ASSERT_FALSE(heads[1].empty());
  EXPECT_EQ(heads[1][0], (std::pair<std::string, std::string>{":status", "200"}));
}

TEST_F(H2H1, AuthorityBecomesHostAndCookieCrumbsJoin) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  h2::Fields f = h2::get_request("/headers", "localhost:8443");
  f.push_back({"cookie", "a=1"});
  f.push_back({"x-other", "y"});
  f.push_back({"cookie", "b=2"});
  ASSERT_TRUE(c.send_headers(1, f, true));
  EXPECT_EQ(c.wait_status(1), 200);
  auto reqs = backend_.wait_requests(1);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(header_values(reqs[0], "Host"), std::vector<std::string>{"localhost:8443"}) << reqs[0];
  EXPECT_EQ(header_values(reqs[0], "Cookie"), std::vector<std::string>{"a=1; b=2"}) << reqs[0];
}

TEST_F(H2H1, ResponseTrailersForwarded) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  h2::Fields post = {{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"},
                     {":path", "/echo-chunked"}, {"te", "trailers"}};
  ASSERT_TRUE(c.send_headers(1, post, false));
  ASSERT_TRUE(c.send_frame(h2::kData, h2::kEndStream, 1, "hello trailers"));
  EXPECT_EQ(c.wait_status(1), 200);
  std::string body;
  std::optional<h2::Frame> trailer;
  while (!trailer) {
    auto f = c.next();
    ASSERT_TRUE(f.has_value());
    ASSERT_NE(f->type, h2::kRstStream);
    if (f->stream != 1) continue;
    if (f->type == h2::kData) {
      body += f->payload;
      ASSERT_FALSE(f->flags & h2::kEndStream) << "stream ended by DATA: the trailer was dropped";
    }
    if (f->type == h2::kHeaders) trailer = f;
  }
  EXPECT_EQ(body, "hello trailers");
  EXPECT_TRUE(trailer->flags & h2::kEndStream);
  EXPECT_EQ(trailer->fields, (h2::Fields{{"x-trailer", "done"}}));
}

TEST_F(H2H1, RequestTrailersGoUpInTheChunkedTrailerSection) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  // No content-length: chunked upstream, the trailers after the last chunk
  // (RFC 9112 §7.1.2); a field a sender must not put there (Host) goes.
  h2::Fields post = {{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/echo"}};
  ASSERT_TRUE(c.send_headers(1, post, false));
  ASSERT_TRUE(c.send_frame(h2::kData, 0, 1, "abc"));
  ASSERT_TRUE(c.send_headers(1, {{"x-checksum", "42"}, {"x-signed", "a b"}, {"host", "evil"}}, true));
  EXPECT_EQ(c.wait_status(1), 200);
  // With a content-length there is no trailer section: they are dropped.
  h2::Fields sized = post;
  sized.push_back({"content-length", "3"});
  ASSERT_TRUE(c.send_headers(3, sized, false));
  ASSERT_TRUE(c.send_frame(h2::kData, 0, 3, "def"));
  ASSERT_TRUE(c.send_headers(3, {{"x-checksum", "43"}}, true));
  EXPECT_EQ(c.wait_status(3), 200);
  auto reqs = backend_.wait_requests(2);
  ASSERT_EQ(reqs.size(), 2u);
  auto [head, body] = split_head(reqs[0]);
  EXPECT_EQ(header_values(head, "Transfer-Encoding"), std::vector<std::string>{"chunked"}) << head;
  EXPECT_EQ(body, "3\r\nabc\r\n0\r\nx-checksum: 42\r\nx-signed: a b\r\n\r\n");
  auto [head2, body2] = split_head(reqs[1]);
  EXPECT_EQ(header_values(head2, "Content-Length"), std::vector<std::string>{"3"}) << head2;
  EXPECT_EQ(body2, "def");
}

TEST_F(H2H1, MisdirectedAuthorityGets421) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/", "other.example"), true));
  EXPECT_EQ(c.wait_status(1), 421);
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/", "127.0.0.1"), true));  // IP SAN
  EXPECT_EQ(c.wait_status(3), 200);
  // The connection remembers the host it last found covered; others are still checked.
  ASSERT_TRUE(c.send_headers(5, h2::get_request("/", "other.example"), true));
  EXPECT_EQ(c.wait_status(5), 421);
  ASSERT_TRUE(c.send_headers(7, h2::get_request("/", "127.0.0.1"), true));
  EXPECT_EQ(c.wait_status(7), 200);
  auto reqs = backend_.wait_requests(2);
  EXPECT_EQ(reqs.size(), 2u);
  auto lines = proxy_.wait_log_lines(4);
  ASSERT_EQ(lines.size(), 4u);
  std::multiset<std::string> statuses;
  for (const auto& l : lines) statuses.insert(json_raw(l, "status").value_or("?"));
  EXPECT_EQ(statuses.count("421"), 2u) << lines[0] << "\n" << lines[1];
}

TEST_F(H2H1, SlowUpstreamDoesNotStallOtherStreams) {
  ASSERT_TRUE(start_proxy());
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  c.set_auto_window_update(true);
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/slow/2000"), true));
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/bytes/200000"), true));
  // Stream 3 completes (and its 200 kB pass the stream windows) while stream 1 waits.
  auto first_end = c.wait_for([](const h2::Frame& f) { return f.stream != 0 && (f.flags & h2::kEndStream); });
  ASSERT_TRUE(first_end.has_value());
  EXPECT_EQ(first_end->stream, 3u);
  EXPECT_EQ(c.wait_status(1), 200);
}

TEST_F(H2H1, UpstreamFailuresBecome502OrReset) {
  // Before the head: 502. After it (truncated body): RST_STREAM, never a short END_STREAM.
  FakeUpstream truncated("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
  ProxyOptions o;
  o.upstream_servers = {truncated.address()};
  ASSERT_TRUE(start_proxy(o));
  h2::Client c;
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/t"), true));
  EXPECT_EQ(c.wait_status(1), 200);
  auto end = c.wait_for([](const h2::Frame& f) {
    return f.stream == 1 && (f.type == h2::kRstStream || (f.flags & h2::kEndStream));
  });
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->type, h2::kRstStream);
  EXPECT_EQ(end->error_code(), 2u);  // INTERNAL_ERROR
}

TEST_F(H2H1, NoUpstreamIs502) {
  ProxyOptions o;
  o.upstream_servers = {"127.0.0.1:" + std::to_string(free_port())};
  ASSERT_TRUE(start_proxy(o));
  HttpRequest req;
  req.http2 = true;
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_2_0);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_addr"), o.upstream_servers[0]) << lines[0];
}

TEST_F(H2H1, BodyOverLimitIs413) {
  ProxyOptions o;
  o.extra = "[limits]\nmax_body_bytes = \"100k\"\n";
  ASSERT_TRUE(start_proxy(o));
  HttpRequest req;
  req.http2 = true;
  req.method = "POST";
  req.path = "/echo";
  req.body = std::string(200'000, 'x');  // with content-length
  HttpResponse r = http(port(), req);
  EXPECT_EQ(r.status, 413) << r.error;
  req.body.reset();  // streamed, no content-length
  for (int i = 0; i < 4; ++i) req.chunks.push_back(std::string(50'000, 'y'));
  r = http(port(), req);
  EXPECT_EQ(r.status, 413) << r.error;
  EXPECT_EQ(backend_.count("req"), 0u);
}

TEST_F(H2H1, NghttpVerboseAsInReadme) {
  ASSERT_TRUE(start_proxy());
  // docs/configuration.md's check, with -m: eight concurrent streams of one URI.
  RunResult r = run_command(dir_,
                            {"/usr/bin/nghttp", "-nv", "-m", "8",
                             "https://127.0.0.1:" + std::to_string(port()) + "/nghttp"},
                            milliseconds(30'000));
  ASSERT_TRUE(r.status.exited) << r.err;
  EXPECT_EQ(r.status.code, 0) << r.out << r.err;
  size_t ok = 0;
  for (size_t p = 0; (p = r.out.find(":status: 200", p)) != std::string::npos; ++p) ++ok;
  EXPECT_EQ(ok, 8u) << r.out;
  EXPECT_NE(r.out.find("SETTINGS_MAX_CONCURRENT_STREAMS(0x03):128"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("RST_STREAM"), std::string::npos) << r.out;
  EXPECT_EQ(backend_.wait_requests(8).size(), 8u);
}

TEST_F(H2H1, H2loadCompletesWithoutErrors) {
  ASSERT_TRUE(start_proxy());
  RunResult r = run_command(dir_,
                            {"/usr/bin/h2load", "-c", "10", "-m", "10", "-n", "400", "https://127.0.0.1:" +
                                                                                       std::to_string(port()) + "/"},
                            milliseconds(60'000));
  ASSERT_TRUE(r.status.exited) << r.err;
  EXPECT_EQ(r.status.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("400 succeeded, 0 failed, 0 errored"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Application protocol: h2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("status codes: 400 2xx"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tlsfront::itest
