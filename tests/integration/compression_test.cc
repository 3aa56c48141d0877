// Response compression end to end: libcurl (HTTP/1.1 and HTTP/2) and a raw
// TLS client -> tlsfront -> the recording backend's /json routes. The bodies
// are decoded here (zlib, libbrotlidec) and compared byte for byte with what
// the backend sent; the heads are checked against RFC 9110 §8.4, §12.5.3 and
// §8.8.3 (Vary, ETag, Content-Length, Accept-Ranges).
#include <curl/curl.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "harness.h"
#include "shared/content_decoding.h"
#include "shared/json_body.h"

namespace tlsfront::itest {
namespace {

using Compression = ProxyTest;
using Values = std::vector<std::string>;
using testdata::decode_body;
using testdata::json_body;

constexpr std::string_view kRoutes = R"([[route]]
path_exact = "/json/4000"
upstream = "backend"

[[route]]
path_prefix = "/"
upstream = "backend"
compress = ["br", "gzip"]
)";

ProxyOptions compressing() {
  ProxyOptions o;
  o.routes = std::string(kRoutes);
  return o;
}

// The header values of the final response `r` named `name`.
Values values(const HttpResponse& r, std::string_view name) {
  size_t start = 0;
  for (size_t p = 0; (p = r.headers.find("HTTP/", p)) != std::string::npos; p += 5) {
    if (p == 0 || r.headers[p - 1] == '\n') start = p;
  }
  return header_values(std::string_view(r.headers).substr(start), name);
}

HttpResponse get(int port, const std::string& path, bool h2, std::vector<std::string> headers = {},
                 std::string method = "GET") {
  HttpRequest req;
  req.path = path;
  req.http2 = h2;
  req.method = method;
  req.headers = std::move(headers);
  return http(port, req);
}

// gzip and br decode to exactly the backend's body, over both protocols;
// the head says so, without Content-Length, with Vary.
TEST_F(Compression, GzipAndBrDecodeToTheExactBody) {
  ASSERT_TRUE(start_proxy(compressing()));
  const std::string body = json_body(20000);
  for (bool h2 : {false, true}) {
    for (std::string coding : {"gzip", "br"}) {
      SCOPED_TRACE(std::string(h2 ? "HTTP/2 " : "HTTP/1.1 ") + coding);
      HttpResponse r = get(port(), "/json/20000", h2, {"Accept-Encoding: " + coding});
      ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
      EXPECT_EQ(r.status, 200);
      EXPECT_EQ(values(r, "Content-Encoding"), Values{coding}) << r.headers;
      EXPECT_EQ(values(r, "Content-Length"), Values{}) << r.headers;
      EXPECT_EQ(values(r, "Vary"), Values{"Accept-Encoding"}) << r.headers;
      EXPECT_EQ(values(r, "Content-Type"), Values{"application/json"}) << r.headers;
      if (!h2) EXPECT_EQ(values(r, "Transfer-Encoding"), Values{"chunked"}) << r.headers;
      EXPECT_LT(r.body.size(), body.size() / 3);
      bool complete = false;
      EXPECT_EQ(decode_body(coding, r.body, &complete), body);
      EXPECT_TRUE(complete);
    }
  }
  // libcurl's own negotiation (curl --compressed): it offers deflate, gzip,
  // br and zstd; tlsfront prefers br, and libcurl decodes it.
  for (bool h2 : {false, true}) {
    HttpRequest req;
    req.path = "/json/20000";
    req.http2 = h2;
    req.accept_encoding = "";
    HttpResponse r = http(port(), req);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(values(r, "Content-Encoding"), Values{"br"}) << r.headers;
    EXPECT_EQ(r.body, body);
  }
  // The access log: compressed bytes sent, and the coding.
  auto lines = proxy_.wait_log_lines(6);
  ASSERT_EQ(lines.size(), 6u);
  int gzip = 0, br = 0;  // lines of two workers come in any order
  for (const auto& line : lines) {
    SCOPED_TRACE(line);
    auto coding = json_string(line, "content_encoding");
    gzip += coding == "gzip";
    br += coding == "br";
    EXPECT_LT(std::stoul(json_raw(line, "bytes_sent").value_or("0")), body.size() / 3);
  }
  EXPECT_EQ(gzip, 2);
  EXPECT_EQ(br, 4);
}

// A chunked upstream body of unknown length, and a large one over HTTP/2.
TEST_F(Compression, ChunkedUpstreamBodies) {
  ASSERT_TRUE(start_proxy(compressing()));
  for (bool h2 : {false, true}) {
    for (size_t n : {size_t{1500}, size_t{300'000}}) {
      SCOPED_TRACE(std::string(h2 ? "HTTP/2 " : "HTTP/1.1 ") + std::to_string(n));
      HttpResponse r = get(port(), "/json-chunked/" + std::to_string(n), h2, {"Accept-Encoding: gzip;q=1, br;q=0.5"});
      ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
      EXPECT_EQ(values(r, "Content-Encoding"), Values{"gzip"}) << r.headers;
      bool complete = false;
      EXPECT_EQ(decode_body("gzip", r.body, &complete), json_body(n));
      EXPECT_TRUE(complete);
    }
  }
}

struct Untouched {
  std::string what;
  std::string path;
  std::vector<std::string> headers;
  std::string method = "GET";
  bool vary = false;  // compressible, so Vary: Accept-Encoding is added
};

// What is never compressed reaches the client exactly as the backend sent it.
TEST_F(Compression, NotCompressedWhenTheRulesSayNo) {
  ASSERT_TRUE(start_proxy(compressing()));
  const std::vector<Untouched> cases = {
      {"below compress_min_bytes", "/json/1000", {"Accept-Encoding: gzip, br"}},
      {"already encoded", "/json/5000", {"Accept-Encoding: gzip, br", "X-Backend-Header: Content-Encoding: gzip"}},
      {"a type not listed", "/json/5000", {"Accept-Encoding: gzip, br", "X-Backend-Content-Type: image/png"}},
      {"no Content-Type", "/json/5000", {"Accept-Encoding: gzip, br", "X-Backend-Content-Type: none"}},
      {"q=0 for both", "/json/5000", {"Accept-Encoding: gzip;q=0, br;q=0"}, "GET", true},
      {"identity only", "/json/5000", {"Accept-Encoding: identity"}, "GET", true},
      {"no Accept-Encoding", "/json/5000", {}, "GET", true},
      {"Cache-Control: no-transform",
       "/json/5000",
       {"Accept-Encoding: gzip", "X-Backend-Header: Cache-Control: public, no-transform"}},
      {"a 206 range response",
       "/json/5000",
       {"Accept-Encoding: gzip", "Range: bytes=0-4999", "X-Backend-Status: 206",
        "X-Backend-Header: Content-Range: bytes 0-4999/9000"}},
      {"a route without compress", "/json/4000", {"Accept-Encoding: gzip, br"}},
      {"HEAD", "/json/5000", {"Accept-Encoding: gzip, br"}, "HEAD", true},
  };
  for (bool h2 : {false, true}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(h2 ? "HTTP/2: " : "HTTP/1.1: ") + c.what);
      std::string path = c.path;
      HttpResponse r = get(port(), path, h2, c.headers, c.method);
      ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
      const bool encoded = c.what == "already encoded";
      EXPECT_EQ(values(r, "Content-Encoding"), encoded ? Values{"gzip"} : Values{}) << r.headers;
      const std::string n = path.substr(path.rfind('/') + 1);
      EXPECT_EQ(values(r, "Content-Length"), Values{n}) << r.headers;
      EXPECT_EQ(r.body, c.method == "HEAD" ? "" : json_body(std::stoul(n)));
      EXPECT_EQ(values(r, "Vary"), c.vary ? Values{"Accept-Encoding"} : Values{}) << r.headers;
    }
    // No body at all: 204 and 304 pass as they came.
    for (std::string status : {"204", "304"}) {
      SCOPED_TRACE(std::string(h2 ? "HTTP/2: " : "HTTP/1.1: ") + status);
      HttpResponse r = get(port(), "/json/5000", h2, {"Accept-Encoding: gzip, br", "X-Backend-Status: " + status});
      ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
      EXPECT_EQ(r.status, std::stol(status));
      EXPECT_EQ(values(r, "Content-Encoding"), Values{}) << r.headers;
      EXPECT_EQ(values(r, "Vary"), Values{}) << r.headers;
      EXPECT_EQ(r.body, "");
    }
  }
}

// A strong ETag becomes weak, Vary is merged, Accept-Ranges goes; a client
// that gets the identity body gets the strong ETag and Accept-Ranges, and
// Vary all the same.
TEST_F(Compression, VaryEtagAndAcceptRanges) {
  ASSERT_TRUE(start_proxy(compressing()));
  const std::vector<std::string> fields = {"X-Backend-Header: ETag: \"v1\"", "X-Backend-Header: Vary: Origin",
                                           "X-Backend-Header: Accept-Ranges: bytes"};
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    std::vector<std::string> compressed = fields;
    compressed.push_back("Accept-Encoding: br");
    HttpResponse r = get(port(), "/json/5000", h2, compressed);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(values(r, "Content-Encoding"), Values{"br"}) << r.headers;
    EXPECT_EQ(values(r, "ETag"), Values{"W/\"v1\""}) << r.headers;
    EXPECT_EQ(values(r, "Vary"), Values{"Origin, Accept-Encoding"}) << r.headers;
    EXPECT_EQ(values(r, "Accept-Ranges"), Values{}) << r.headers;
    EXPECT_EQ(decode_body("br", r.body), json_body(5000));

    HttpResponse plain = get(port(), "/json/5000", h2, fields);
    ASSERT_EQ(plain.curl_code, CURLE_OK) << plain.error;
    EXPECT_EQ(values(plain, "Content-Encoding"), Values{}) << plain.headers;
    EXPECT_EQ(values(plain, "ETag"), Values{"\"v1\""}) << plain.headers;
    EXPECT_EQ(values(plain, "Vary"), Values{"Origin, Accept-Encoding"}) << plain.headers;
    EXPECT_EQ(values(plain, "Accept-Ranges"), Values{"bytes"}) << plain.headers;
    EXPECT_EQ(plain.body, json_body(5000));
  }
}

// A streamed answer: what the upstream sent so far reaches the client
// decodable before the upstream sends more (the codec is flushed when a read
// is used up), here the first half while the backend waits for the test.
TEST_F(Compression, StreamedBodyIsFlushedAsItArrives) {
  ASSERT_TRUE(start_proxy(compressing()));
  const std::string release = dir_.path() + "/release";
  const std::string half = json_body(3000);
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(
      c.write("GET /json-wait/3000 HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\n"
              "X-Backend-Wait-File: " +
              release + "\r\n\r\n"));
  std::string received;
  std::string decoded;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && decoded.size() < half.size()) {
    received += c.read_available(milliseconds(100));
    const size_t head_end = received.find("\r\n\r\n");
    if (head_end == std::string::npos) continue;
    auto chunks = dechunk(received.substr(head_end + 4) + "0\r\n\r\n");  // what arrived so far
    if (chunks) decoded = decode_body("gzip", *chunks);
  }
  ASSERT_EQ(decoded, half) << received.substr(0, 300);
  EXPECT_NE(received.find("\r\nContent-Encoding: gzip\r\n"), std::string::npos);
  std::ofstream(release) << "go";  // the backend sends the second half now
  std::optional<ParsedResponse> rest;
  while (Clock::now() < deadline) {
    received += c.read_available(milliseconds(100));
    ParsedResponse parsed;
    if (parse_response(received, false, false, parsed) > 0) {
      rest = parsed;
      break;
    }
  }
  ASSERT_TRUE(rest);
  bool complete = false;
  EXPECT_EQ(decode_body("gzip", rest->body, &complete), half + half);
  EXPECT_TRUE(complete);
}

// 10 MB of JSON through gzip to a client reading slowly: the proxy's
// resident memory stays far below the body (backpressure reaches the
// upstream; the codec's state is all it holds), and the body is exact.
TEST_F(Compression, LargeBodyStreamsWithBoundedMemory) {
  ProxyOptions o = compressing();
  o.workers = 1;
  {
    [[maybe_unused]] SmallAsanQuarantine small_quarantine;  // else ASan keeps every passing chunk
    ASSERT_TRUE(start_proxy(o));
  }
  const size_t n = 10 * 1024 * 1024;
  // Warm up: one compressed response, so allocator arenas and the codec exist once.
  ASSERT_EQ(get(port(), "/json/100000", false, {"Accept-Encoding: gzip"}).curl_code, CURLE_OK);
  const pid_t pid = proxy_.process().pid();
  const long before = rss_kib(pid);
  ASSERT_GT(before, 0);
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /json-chunked/" + std::to_string(n) +
                      " HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"));
  std::string received;
  long peak = before;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!c.closed() && Clock::now() < deadline) {
    std::string more = c.read_available(milliseconds(50));
    received += more;
    peak = std::max(peak, rss_kib(pid));
    if (more.empty()) continue;
    usleep(10'000);  // a slow reader: the proxy must hold back, not buffer
  }
  ParsedResponse r;
  ASSERT_GT(parse_response(received, true, false, r), 0u) << received.substr(0, 300);
  EXPECT_EQ(r.header("Content-Encoding"), "gzip");
  bool complete = false;
  const std::string decoded = decode_body("gzip", r.body, &complete);
  EXPECT_TRUE(complete);
  EXPECT_EQ(decoded.size(), n);
  EXPECT_TRUE(decoded == json_body(n));
  EXPECT_LT(r.body.size(), n / 3);
  // Growth well below the 10 MB body (and the ~2.3 MB it compresses to).
  EXPECT_LT(peak - before, 4 * 1024) << "RSS " << before << " KiB -> peak " << peak << " KiB";
}

// [compression] max_memory bounds what one worker's codecs hold together:
// 20 responses held open at once with room for a few codecs, so the rest
// go out uncompressed (with Vary, counted), every body exact; once they
// end, the claims are gone and the next response is compressed again.
TEST_F(Compression, PastMaxMemoryResponsesGoOutUncompressed) {
  ProxyOptions o = compressing();
  o.workers = 1;
  o.extra = "[compression]\nmax_memory = \"1m\"\n";
  ASSERT_TRUE(start_proxy(o));
  const std::string release = dir_.path() + "/release";
  constexpr int kClients = 20;
  std::vector<std::unique_ptr<TlsClient>> clients;
  std::vector<std::string> received(kClients);
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<TlsClient>());
    ASSERT_TRUE(clients.back()->connect(port())) << clients.back()->error();
    ASSERT_TRUE(
        clients.back()->write("GET /json-wait/3000 HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\n"
                              "Connection: close\r\nX-Backend-Wait-File: " +
                              release + "\r\n\r\n"));
    // Its head (and first half) before the next client asks: the codecs
    // are claimed in this order.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline && received[i].find("\r\n\r\n") == std::string::npos) {
      received[i] += clients.back()->read_available(milliseconds(100));
    }
    ASSERT_NE(received[i].find("\r\n\r\n"), std::string::npos) << i;
  }
  std::ofstream(release) << "go";
  int compressed = 0;
  for (int i = 0; i < kClients; ++i) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!clients[i]->closed() && Clock::now() < deadline)
      received[i] += clients[i]->read_available(milliseconds(100));
    ParsedResponse r;
    ASSERT_GT(parse_response(received[i], true, false, r), 0u) << received[i].substr(0, 300);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("Vary"), "Accept-Encoding");
    const std::string coding = r.header("Content-Encoding").value_or("");
    if (coding == "gzip") ++compressed;
    EXPECT_EQ(coding.empty() ? r.body : decode_body("gzip", r.body), json_body(3000) + json_body(3000)) << i;
  }
  // 1 MiB holds 14 gzip codecs of this 6 KB body's size (72 KiB each).
  EXPECT_GE(compressed, 1);
  EXPECT_LE(compressed, 14);
  const auto metrics = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(metrics.at("tlsfront_compression_refused_total"), kClients - compressed);
  EXPECT_EQ(metrics.at("tlsfront_compression_memory_bytes"), 0);
  const HttpResponse after = get(port(), "/json/3000", false, {"Accept-Encoding: gzip"});
  ASSERT_EQ(after.curl_code, CURLE_OK) << after.error;
  EXPECT_EQ(values(after, "content-encoding"), Values{"gzip"});
}

}  // namespace
}  // namespace tlsfront::itest
