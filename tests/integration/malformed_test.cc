// Malformed, ambiguous and oversized HTTP/1.1 requests on a raw TLS
// connection: the client gets the stated error and a closed connection, the
// backend receives nothing, and the proxy keeps serving.
#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

class H1Malformed : public ProxyTest {
 protected:
  // Sends `bytes` on a fresh TLS connection and checks the answer starts with
  // "HTTP/1.1 <status>", the connection closes, and the backend recorded no
  // request. With `allow_partial`, a .partial record is tolerated (the proxy
  // may have started streaming a body it only later found malformed).
  void expect_rejected(const std::string& bytes, const std::string& status, bool allow_partial = false) {
    ASSERT_TRUE(start_proxy(options_));
    TlsClient c;
    ASSERT_TRUE(c.connect(port())) << c.error();
    ASSERT_TRUE(c.write(bytes)) << c.error();
    std::string got = c.read_all(milliseconds(5'000));
    EXPECT_EQ(got.rfind("HTTP/1.1 " + status, 0), 0u) << "response:\n" << got.substr(0, 500);
    EXPECT_TRUE(c.closed()) << "connection still open 5 s after the error response";
    // Only one response: nothing from the backend slipped through after it.
    EXPECT_EQ(got.find("HTTP/1.1", 1), std::string::npos) << got.substr(0, 1000);
    EXPECT_EQ(got.find("X-Backend-Conn"), std::string::npos) << got.substr(0, 1000);

    // A normal request on a new connection still works, and it is the only
    // request the backend ever completed.
    HttpResponse r = http_get(port(), "/after");
    ASSERT_EQ(r.curl_code, 0) << r.error;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok GET /after\n");
    auto reqs = backend_.wait_requests(1);
    ASSERT_EQ(reqs.size(), 1u) << "backend saw a rejected request:\n" << (reqs.empty() ? "" : reqs.front());
    EXPECT_EQ(reqs[0].rfind("GET /after HTTP/1.1\r\n", 0), 0u) << reqs[0];
    if (!allow_partial) {
      auto partial = backend_.records("partial");
      EXPECT_TRUE(partial.empty()) << "backend saw part of a rejected request:\n"
                                   << (partial.empty() ? "" : backend_.read_record(partial[0]));
    }
    auto lines = proxy_.wait_log_lines(2, milliseconds(2'000));
    for (const auto& l : lines) {
      if (json_string(l, "path") == "/after") continue;
      EXPECT_EQ(json_raw(l, "status"), status) << l;
    }
  }

  ProxyOptions options_;
};

TEST_F(H1Malformed, ContentLengthAndTransferEncoding) {
  expect_rejected(
      "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n",
      "400");
}

TEST_F(H1Malformed, TwoDifferingContentLengths) {
  expect_rejected("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
                  "400");
}

TEST_F(H1Malformed, ContentLengthList) {
  expect_rejected("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5, 6\r\n\r\nhello!", "400");
}

TEST_F(H1Malformed, NegativeContentLength) {
  expect_rejected("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: -5\r\n\r\nhello", "400");
}

TEST_F(H1Malformed, TransferEncodingGzipChunked) {
  expect_rejected(
      "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
      "400");
}

TEST_F(H1Malformed, TransferEncodingChunkedNotLast) {
  expect_rejected(
      "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked, identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
      "400");
}

TEST_F(H1Malformed, TransferEncodingChunkedTwice) {
  expect_rejected(
      "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n",
      "400");
}

TEST_F(H1Malformed, BadChunkSize) {
  // The proxy may already have forwarded the head upstream: only a complete
  // request reaching the backend is a failure here.
  expect_rejected("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
                  "400", /*allow_partial=*/true);
}

TEST_F(H1Malformed, ObsFoldHeader) {
  expect_rejected("GET / HTTP/1.1\r\nHost: localhost\r\nX-Folded: a\r\n  b\r\n\r\n", "400");
}

TEST_F(H1Malformed, SpaceBeforeColon) {
  expect_rejected("GET / HTTP/1.1\r\nHost: localhost\r\nX-Space : x\r\n\r\n", "400");
}

TEST_F(H1Malformed, InvalidHeaderNameChars) {
  expect_rejected("GET / HTTP/1.1\r\nHost: localhost\r\nX(Bad)Name: x\r\n\r\n", "400");
}

TEST_F(H1Malformed, MissingHost) {
  expect_rejected("GET / HTTP/1.1\r\nUser-Agent: x\r\n\r\n", "400");
}

TEST_F(H1Malformed, InvalidHostValue) {
  expect_rejected("GET / HTTP/1.1\r\nHost: local host\r\n\r\n", "400");
}

TEST_F(H1Malformed, TargetNotOriginForm) {
  expect_rejected("GET foo HTTP/1.1\r\nHost: localhost\r\n\r\n", "400");
}

TEST_F(H1Malformed, TwoHostHeaders) {
  expect_rejected("GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n", "400");
}

TEST_F(H1Malformed, GarbageRequestLine) {
  expect_rejected("\x01\x02 garbage here\r\n\r\n", "400");
}

TEST_F(H1Malformed, NulInHeaderValue) {
  static constexpr char kReq[] = "GET / HTTP/1.1\r\nHost: localhost\r\nX-Nul: a\0b\r\n\r\n";
  expect_rejected(std::string(kReq, sizeof kReq - 1), "400");
}

TEST_F(H1Malformed, BareLfInHeaders) {
  expect_rejected("GET / HTTP/1.1\nHost: localhost\nX-A: b\n\n", "400");
}

TEST_F(H1Malformed, OversizedHeaderIs431) {
  options_.extra = "[limits]\nmax_header_bytes = \"4k\"\n";
  expect_rejected("GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + std::string(8 * 1024, 'x') + "\r\n\r\n", "431");
}

TEST_F(H1Malformed, OversizedUrlIs414) {
  options_.extra = "[limits]\nmax_header_bytes = \"4k\"\n";
  expect_rejected("GET /" + std::string(8 * 1024, 'u') + " HTTP/1.1\r\nHost: localhost\r\n\r\n", "414");
}

TEST_F(H1Malformed, BodyOverLimitIs413) {
  options_.extra = "[limits]\nmax_body_bytes = \"1k\"\n";
  expect_rejected("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'b'),
                  "413");
}

TEST_F(H1Malformed, ChunkedBodyOverLimitIs413) {
  options_.extra = "[limits]\nmax_body_bytes = \"1k\"\n";
  std::string chunk = "400\r\n" + std::string(1024, 'c') + "\r\n";
  // The first 1 KiB chunk is within the limit and may be streamed upstream.
  expect_rejected("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk +
                      "0\r\n\r\n",
                  "413", /*allow_partial=*/true);
}

TEST_F(H1Malformed, ExpectContinueOverLimitIs413Without100) {
  options_.extra = "[limits]\nmax_body_bytes = \"1k\"\n";
  // The body is never sent: the final status must come instead of a 100.
  expect_rejected("POST /echo HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n",
                  "413");
}

TEST_F(H1Malformed, ExpectUnknownIs417) {
  // With Connection: close the proxy must close after the 417 either way.
  expect_rejected(
      "POST /echo HTTP/1.1\r\nHost: localhost\r\nExpect: foo\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
      "417");
}

TEST_F(H1Malformed, HeaderTimeoutIs408) {
  options_.extra = "[timeouts]\nheader = \"1s\"\n";
  expect_rejected("GET / HTTP/1.1\r\nHost: local", "408");
}

TEST_F(H1Malformed, Http2RequestLine) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET / HTTP/2.0\r\nHost: localhost\r\n\r\n"));
  std::string got = c.read_all(milliseconds(5'000));
  EXPECT_TRUE(got.rfind("HTTP/1.1 505", 0) == 0 || got.rfind("HTTP/1.1 400", 0) == 0) << got;
  EXPECT_TRUE(c.closed());
  EXPECT_EQ(backend_.count("req") + backend_.count("partial"), 0u);
}

TEST_F(H1Malformed, ObsFoldAfterEmptyFirstLine) {
  expect_rejected("GET / HTTP/1.1\r\nHost: localhost\r\nX-Folded:\r\n folded\r\n\r\n", "400");
}

TEST_F(H1Malformed, HostWithNonNumericPort) {
  expect_rejected("GET / HTTP/1.1\r\nHost: localhost:abc\r\n\r\n", "400");
}

TEST_F(H1Malformed, StalledRequestBodyIs408) {
  options_.extra = "[timeouts]\nbody = \"1s\"\n";
  expect_rejected("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\nabc", "408",
                  /*allow_partial=*/true);
}

}  // namespace
}  // namespace tlsfront::itest
