// File routes with real clients, beyond one route's files
// (static_files_test.cc has those): try_files' fallback path routed again
// (nginx's internal redirect) to a file route or a proxy route; a site of
// file routes only, with no [[upstream]]; an HTTP/2 download cut short by
// a truncated file (RST_STREAM); the open-file cache's hit and miss in the
// access log and a replaced file seen at once; expires, types, metrics and
// the access log of a file route; `tlsfront --test` warning about a root
// that is not a directory.
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "h2_frames.h"
#include "harness.h"
#include "static_files_support.h"

namespace tlsfront::itest {
namespace {

namespace fs = std::filesystem;

class StaticRouting : public ProxyTest {
 protected:
  void SetUp() override {
    ProxyTest::SetUp();
    www_ = dir_.file("www");
    put(www_ + "/index.html", "shell\n");
    put(www_ + "/app.js", "app\n");
  }
  std::string www_;
};

// try_files' last path goes through the routes again: here "/index.html"
// matches the API's exact route and is proxied with that target (the query
// dropped, as nginx's internal redirect drops it); a path the same file
// route matches is served from it, once.
TEST_F(StaticRouting, TryFilesFallbackPathIsRoutedAgain) {
  ProxyOptions o;
  o.routes = "[[route]]\npath_exact = \"/index.html\"\nupstream = \"backend\"\n"
             "[[route]]\npath_prefix = \"/app/\"\nalias = \"" + www_ + "\"\ntry_files = [\"$uri\", \"/shell/\"]\n"
             "[[route]]\npath_prefix = \"/\"\nroot = \"" + www_ + "\"\ntry_files = [\"$uri\", \"/index.html\"]\n";
  ASSERT_TRUE(start_proxy(o));
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    EXPECT_EQ(get(port(), "/app.js", h2).body, "app\n");
    HttpResponse r = get(port(), "/orders/7?x=1", h2);  // "/" route: fallback "/index.html" -> the API route
    EXPECT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.header("etag"), std::nullopt) << r.headers;  // not the file
  }
  auto seen = backend_.wait_requests(2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0].find("GET /index.html HTTP/1.1"), std::string::npos) << seen[0];
  // "/app/x" (alias) falls back to "/shell/", which the "/" route takes:
  // its try_files "$uri" is "/shell/", a missing directory, and its own
  // fallback is not followed again: 404, one internal redirect only.
  EXPECT_EQ(get(port(), "/app/x", false).status, 404);
  EXPECT_EQ(get(port(), "/app/app.js", false).body, "app\n");
}

// A site of file routes only needs no [[upstream]].
TEST_F(StaticRouting, ASiteOfFileRoutesOnlyNeedsNoUpstream) {
  ProxyOptions o;
  o.config_text = "[[listen]]\naddress = \"127.0.0.1:0\"\n[tls]\ncertificate = \"" + pki("localhost.chain.pem") +
                  "\"\nkey = \"" + pki("localhost.key") + "\"\ntrusted_ca = \"" + pki("root.pem") + "\"\n[[route]]\npath_prefix = \"/\"\nroot = \"" + www_ +
                  "\"\n[admin]\nenabled = false\n";
  o.admin_port = -1;
  Proxy proxy(dir_);
  ASSERT_TRUE(proxy.start(o)) << *o.config_text;
  for (bool h2 : {false, true}) {
    HttpResponse r = get(proxy.port(), "/", h2);
    EXPECT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.body, "shell\n");
    EXPECT_EQ(get(proxy.port(), "/none", h2).status, 404);
  }
  EXPECT_EQ(proxy.stop().code, 0);
}

// A file truncated while an HTTP/2 download of it is under way: the stream
// ends with RST_STREAM (INTERNAL_ERROR), never END_STREAM (a short response
// that looks complete) nor silence.
TEST_F(StaticRouting, H2DownloadOfATruncatedFileEndsWithRstStream) {
  constexpr size_t kSize = 24 << 20;
  put(www_ + "/big.bin", std::string(kSize, 'b'));
  ProxyOptions o;
  o.routes = "[[route]]\npath_prefix = \"/\"\nroot = \"" + www_ + "\"\n";
  ASSERT_TRUE(start_proxy(o));
  h2::Client c;  // opens no window: the server stops after 65,535 octets
  ASSERT_TRUE(c.connect(port()));
  ASSERT_TRUE(c.send_headers(1, h2::get_request("/big.bin"), true));
  ASSERT_EQ(c.wait_status(1), 200);
  ASSERT_TRUE(c.wait_for([](const h2::Frame& f) { return f.stream == 1 && f.type == h2::kData; }));
  ASSERT_EQ(truncate((www_ + "/big.bin").c_str(), 0), 0);
  const uint32_t more = 0x7fffffffu - 65535u;
  const std::string inc{static_cast<char>(more >> 24), static_cast<char>(more >> 16), static_cast<char>(more >> 8),
                        static_cast<char>(more)};
  ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 0, inc));
  ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 1, inc));
  auto end = c.wait_for([](const h2::Frame& f) {
    return f.stream == 1 && (f.type == h2::kRstStream || (f.flags & h2::kEndStream));
  });
  ASSERT_TRUE(end) << "the stream neither ended nor was reset";
  EXPECT_EQ(end->type, h2::kRstStream);
  EXPECT_EQ(end->error_code(), 2u);  // INTERNAL_ERROR
  // The connection serves on.
  ASSERT_TRUE(c.send_headers(3, h2::get_request("/app.js"), true));
  EXPECT_EQ(c.wait_status(3), 200);
}

// The access log says whether the open-file cache held the file; a file
// replaced by rename is served new at once (its entry's fstat sees it).
TEST_F(StaticRouting, OpenFileCacheHitsAreLoggedAndAReplacedFileIsSeenAtOnce) {
  ProxyOptions o;
  o.workers = 1;  // one worker: one cache
  o.routes = "[[route]]\npath_prefix = \"/\"\nroot = \"" + www_ + "\"\n";
  o.extra = "[open_file_cache]\nvalid = \"1h\"\n";
  ASSERT_TRUE(start_proxy(o));
  EXPECT_EQ(get(port(), "/app.js", false).body, "app\n");
  EXPECT_EQ(get(port(), "/app.js", true).body, "app\n");
  put(www_ + "/app.js.new", "app, version 2\n");
  fs::rename(www_ + "/app.js.new", www_ + "/app.js");
  EXPECT_EQ(get(port(), "/app.js", false).body, "app, version 2\n");
  auto lines = proxy_.wait_log_lines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json_string(lines[0], "cache"), "miss") << lines[0];
  EXPECT_EQ(json_string(lines[1], "cache"), "hit") << lines[1];
  EXPECT_EQ(json_string(lines[2], "cache"), "miss") << lines[2];
}

time_t parse_date(const std::string& s) {
  struct tm tm {};
  if (strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr) return -1;
  return timegm(&tm);
}

// expires: Expires (Date + the duration) and Cache-Control: max-age on
// 200, 206 and 304, not on 404; types before the built-in table; the
// metrics count a file route's requests by its name and status class, the
// access log has them with no upstream and the bytes sent.
TEST_F(StaticRouting, ExpiresTypesMetricsAndLogOfAFileRoute) {
  put(www_ + "/site.webmanifest", "{}");
  put(www_ + "/style.CSS", "p{}");
  put(www_ + "/blob.unknownext", "?");
  ProxyOptions o;
  o.routes = "[[route]]\nname = \"assets\"\npath_prefix = \"/\"\nroot = \"" + www_ +
             "\"\nexpires = \"30d\"\ntypes = { js = \"application/x-test\", webmanifest = "
             "\"application/manifest+json\" }\n";
  ASSERT_TRUE(start_proxy(o));
  auto before = scrape_metrics(proxy_.admin_port());
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    HttpResponse r = get(port(), "/app.js", h2);
    ASSERT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.header("content-type"), "application/x-test");
    EXPECT_EQ(r.header("cache-control"), "max-age=2592000");
    EXPECT_EQ(parse_date(r.header("expires").value_or("")) - parse_date(r.header("date").value_or("")), 2592000);
    HttpRequest conditional{.path = "/app.js", .headers = {"If-None-Match: " + r.header("etag").value_or("")},
                            .http2 = h2};
    HttpResponse not_modified = http(port(), conditional);
    EXPECT_EQ(not_modified.status, 304);
    EXPECT_EQ(not_modified.header("cache-control"), "max-age=2592000");
    EXPECT_TRUE(not_modified.header("expires").has_value()) << not_modified.headers;
    HttpResponse missing = get(port(), "/none.js", h2);
    EXPECT_EQ(missing.status, 404);
    EXPECT_EQ(missing.header("expires"), std::nullopt) << missing.headers;
    EXPECT_EQ(missing.header("cache-control"), std::nullopt) << missing.headers;
    EXPECT_EQ(get(port(), "/site.webmanifest", h2).header("content-type"), "application/manifest+json");
    EXPECT_EQ(get(port(), "/style.CSS", h2).header("content-type"), "text/css; charset=utf-8");
    EXPECT_EQ(get(port(), "/blob.unknownext", h2).header("content-type"), "application/octet-stream");
  }
  auto lines = proxy_.wait_log_lines(12);
  ASSERT_EQ(lines.size(), 12u);
  for (const std::string& l : lines) {
    EXPECT_EQ(json_raw(l, "upstream_addr"), "null") << l;
    EXPECT_EQ(json_raw(l, "upstream_status"), "null") << l;
    EXPECT_EQ(json_string(l, "route"), std::string("assets")) << l;  // the route's name, as in the metrics
  }
  std::map<std::string, int> by_status;  // "/app.js 200": lines (the workers' lines interleave)
  for (const std::string& l : lines) {
    const std::string key = json_string(l, "path").value_or("") + " " + json_raw(l, "status").value_or("");
    ++by_status[key];
    if (key == "/app.js 200") EXPECT_GT(std::stol(json_raw(l, "bytes_sent").value_or("0")), 4) << l;
  }
  EXPECT_EQ(by_status["/app.js 200"], 2);
  EXPECT_EQ(by_status["/app.js 304"], 2);
  EXPECT_EQ(by_status["/none.js 404"], 2);
  auto after = scrape_metrics(proxy_.admin_port());
  auto delta = [&](const std::string& protocol, const std::string& code) {
    const std::string name = "tlsfront_requests_total{listener=\"127.0.0.1:0\",route=\"assets\",protocol=\"" +
                             protocol + "\",code=\"" + code + "\"}";
    return after[name] - before[name];
  };
  for (const std::string protocol : {"HTTP/1.1", "HTTP/2.0"}) {
    SCOPED_TRACE(protocol);
    EXPECT_EQ(delta(protocol, "2xx"), 4);
    EXPECT_EQ(delta(protocol, "3xx"), 1);
    EXPECT_EQ(delta(protocol, "4xx"), 1);
  }
}

// --test warns (exit 0) about a root that is missing or not a directory.
TEST_F(StaticRouting, TestWarnsAboutARootThatIsNotADirectory) {
  const std::string config = dir_.file("test.toml");
  put(config, "[[listen]]\naddress = \"127.0.0.1:0\"\n[tls]\ncertificate = \"" + pki("localhost.chain.pem") +
                  "\"\nkey = \"" + pki("localhost.key") + "\"\ntrusted_ca = \"" + pki("root.pem") + "\"\n"
                  "[[route]]\npath_prefix = \"/a/\"\nalias = \"" + dir_.file("missing") + "\"\n"
                  "[[route]]\npath_prefix = \"/b/\"\nroot = \"" + www_ + "/app.js\"\n"
                  "[[route]]\npath_prefix = \"/\"\nroot = \"" + www_ + "\"\n");
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", config});
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: route[0] (\"*/a/\"): alias \"" + dir_.file("missing") + "\": No such file or directory"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("warning: route[1] (\"*/b/\"): root \"" + www_ + "/app.js\": not a directory"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("route[2] (\"*/\"): root"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
