// Routes that serve files (root, alias: data/files/, data/http/file_exchange.h)
// end to end with real clients: libcurl over HTTP/1.1 and HTTP/2, the raw TLS
// client for byte-exact targets, h2load for many downloads at once. A temp
// directory is the root; what is checked: the write-up's three locations
// imported by `tlsfront import-nginx` and served, traversal attempts, the
// preconditions and ranges of RFC 9110, precompressed variants, a file
// deleted or truncated while it is sent, and memory with slow readers.
#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "import_nginx_support.h"
#include "static_files_support.h"

namespace tlsfront::itest {
namespace {

namespace fs = std::filesystem;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = text.find(from, p)) != std::string::npos; p += to.size()) text.replace(p, from.size(), to);
  return text;
}

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return -1;
}

// A proxy whose routes serve dir/www (the test's own files).
class StaticFiles : public ProxyTest {
 protected:
  void SetUp() override {
    ProxyTest::SetUp();
    www_ = dir_.file("www");
    put(www_ + "/index.html", "<!doctype html><p>shell</p>\n");
    put(www_ + "/app.js", pattern(3000));
    put(dir_.file("outside.txt"), "outside secret\n");
    put(www_ + "/.env", "dotfile secret\n");
    fs::create_symlink(dir_.file("outside.txt"), www_ + "/out.txt");
  }
  bool start(const std::string& route_extra = "") {
    ProxyOptions o;
    o.routes = "[[route]]\npath_prefix = \"/\"\nroot = \"" + www_ + "\"\n" + route_extra;
    return start_proxy(o);
  }
  std::string www_;
};

TEST_F(StaticFiles, TraversalAttemptsNeverLeaveTheRoot) {
  ASSERT_TRUE(start());
  struct Case {
    const char* target;
    int status;
  } cases[] = {
      {"/../outside.txt", 400},          {"/%2e%2e/outside.txt", 400},   {"/x/..%2foutside.txt", 400},
      {"/x/..%2Foutside.txt", 400},      {"/%2E%2E%2Foutside.txt", 400}, {"/x/%2e%2e/%2e%2e/outside.txt", 400},
      {"/out.txt", 403},                 {"/%00", 400},                  {"/index.html%00.js", 400},
      {"/.env", 404},                    {"/x/../.env", 404},            {"/%2eenv", 404},
      {"/..%5coutside.txt", 400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    TlsClient client;
    ASSERT_TRUE(client.connect(port())) << client.error();
    ASSERT_TRUE(client.write(std::string("GET ") + c.target + " HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, c.status);
    EXPECT_EQ(r->body.find("secret"), std::string::npos) << r->body;
  }
  // A NUL in the raw target is not HTTP at all.
  TlsClient client;
  ASSERT_TRUE(client.connect(port())) << client.error();
  ASSERT_TRUE(client.write(std::string("GET /index.html\0.js HTTP/1.1\r\nHost: localhost\r\n\r\n", 48)));
  auto r = client.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

// HTTP/1.1 keepalive and pipelining: file answers keep the connection open
// (the answer waits for the request's end, as tlsfront's own answers do).
TEST_F(StaticFiles, KeepaliveConnectionServesPipelinedRequests) {
  ASSERT_TRUE(start());
  TlsClient client;
  ASSERT_TRUE(client.connect(port())) << client.error();
  ASSERT_TRUE(client.write("GET /app.js HTTP/1.1\r\nHost: localhost\r\n\r\n"
                           "HEAD /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n"
                           "GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  auto a = client.read_response();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->body, pattern(3000));
  EXPECT_EQ(a->header("connection"), std::nullopt) << a->head;
  auto b = client.read_response(true);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->header("content-length"), "28");
  auto c = client.read_response();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->body, "<!doctype html><p>shell</p>\n");
  EXPECT_FALSE(client.closed());
}

TEST_F(StaticFiles, ConditionalAndRangeRequestsFollowRfc9110) {
  put(www_ + "/empty.txt", "");
  ASSERT_TRUE(start());
  const std::string body = pattern(3000);
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    HttpResponse r = get(port(), "/app.js", h2);
    ASSERT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.body, body);
    EXPECT_EQ(r.header("content-type"), "text/javascript; charset=utf-8");
    EXPECT_EQ(r.header("accept-ranges"), "bytes");
    EXPECT_EQ(r.header("content-length"), "3000");
    const std::string etag = r.header("etag").value_or("");
    const std::string modified = r.header("last-modified").value_or("");
    ASSERT_TRUE(etag.starts_with("\"")) << r.headers;
    ASSERT_TRUE(modified.ends_with(" GMT")) << r.headers;

    r = get(port(), "/app.js", h2, {"If-None-Match: " + etag});
    EXPECT_EQ(r.status, 304);
    EXPECT_EQ(r.body, "");
    EXPECT_EQ(r.header("etag"), etag);
    EXPECT_EQ(get(port(), "/app.js", h2, {"If-None-Match: W/" + etag}).status, 304);  // weak comparison
    EXPECT_EQ(get(port(), "/app.js", h2, {"If-None-Match: \"other\""}).status, 200);
    EXPECT_EQ(get(port(), "/app.js", h2, {"If-Modified-Since: " + modified}).status, 304);
    EXPECT_EQ(get(port(), "/app.js", h2, {"If-Modified-Since: Thu, 01 Jan 1970 00:00:01 GMT"}).status, 200);
    // If-None-Match wins over If-Modified-Since (§13.2.2).
    EXPECT_EQ(get(port(), "/app.js", h2, {"If-None-Match: \"other\"", "If-Modified-Since: " + modified}).status, 200);
    EXPECT_EQ(get(port(), "/app.js", h2, {"If-Match: \"other\""}).status, 412);
    EXPECT_EQ(get(port(), "/app.js", h2, {"If-Match: " + etag}).status, 200);
    EXPECT_EQ(get(port(), "/app.js", h2, {"If-Unmodified-Since: Thu, 01 Jan 1970 00:00:01 GMT"}).status, 412);

    r = get(port(), "/app.js", h2, {"Range: bytes=10-19"});
    EXPECT_EQ(r.status, 206);
    EXPECT_EQ(r.body, body.substr(10, 10));
    EXPECT_EQ(r.header("content-range"), "bytes 10-19/3000");
    r = get(port(), "/app.js", h2, {"Range: bytes=-5"});
    EXPECT_EQ(r.body, body.substr(2995));
    r = get(port(), "/app.js", h2, {"Range: bytes=2990-"});
    EXPECT_EQ(r.body, body.substr(2990));
    r = get(port(), "/app.js", h2, {"Range: bytes=3000-"});
    EXPECT_EQ(r.status, 416);
    EXPECT_EQ(r.header("content-range"), "bytes */3000");
    r = get(port(), "/app.js", h2, {"Range: bytes=0-1,5-6"});  // several ranges: the whole file
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, body);
    std::string many = "Range: bytes=0-0";
    for (int i = 1; i < 1500; ++i) many += "," + std::to_string(i * 2) + "-" + std::to_string(i * 2);
    r = get(port(), "/app.js", h2, {many});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, body);
    // Positions too large for 64 bits: past the end of any file.
    r = get(port(), "/app.js", h2, {"Range: bytes=0-99999999999999999999"});
    EXPECT_EQ(r.status, 206);
    EXPECT_EQ(r.header("content-range"), "bytes 0-2999/3000");
    EXPECT_EQ(r.body, body);
    r = get(port(), "/app.js", h2, {"Range: bytes=99999999999999999999-"});
    EXPECT_EQ(r.status, 416);
    EXPECT_EQ(r.header("content-range"), "bytes */3000");
    EXPECT_EQ(get(port(), "/app.js", h2, {"Range: bytes=-99999999999999999999"}).body, body);
    EXPECT_EQ(get(port(), "/app.js", h2, {"Range: bytes=5-4"}).status, 200);  // invalid: ignored
    EXPECT_EQ(get(port(), "/empty.txt", h2, {"Range: bytes=0-0"}).status, 416);
    r = get(port(), "/empty.txt", h2, {"Range: bytes=-5"});  // satisfiable, but no 206 can say it
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("content-length"), "0");
    // Dates that are not HTTP-dates are ignored.
    for (const char* bad : {"garbage", "0", "Mon, 99 Dec 2026 22:38:48 GMT", "Sun, 06 Nov 1994 08:49:37 UTC"}) {
      EXPECT_EQ(get(port(), "/app.js", h2, {std::string("If-Modified-Since: ") + bad}).status, 200) << bad;
      EXPECT_EQ(get(port(), "/app.js", h2, {std::string("If-Unmodified-Since: ") + bad}).status, 200) << bad;
      EXPECT_EQ(get(port(), "/app.js", h2, {"Range: bytes=0-0", std::string("If-Range: ") + bad}).status, 200) << bad;
    }
    EXPECT_EQ(get(port(), "/app.js", h2, {"Range: bytes=0-0", "If-Range: " + etag}).status, 206);
    EXPECT_EQ(get(port(), "/app.js", h2, {"Range: bytes=0-0", "If-Range: \"old\""}).status, 200);
    EXPECT_EQ(get(port(), "/app.js", h2, {"Range: bytes=0-0", "If-Range: " + modified}).status, 206);

    r = get(port(), "/app.js", h2, {}, "HEAD");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("content-length"), "3000");
    EXPECT_EQ(r.body, "");
    r = get(port(), "/app.js", h2, {}, "DELETE");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.header("allow"), "GET, HEAD");
    EXPECT_EQ(get(port(), "/nothing.js", h2).status, 404);
  }
}

TEST_F(StaticFiles, PrecompressedVariantsAreChosenByAcceptEncoding) {
  put(www_ + "/app.js.br", "brotli bytes");
  put(www_ + "/app.js.gz", "gzip bytes");
  put(www_ + "/old.css", "body{}");
  put(www_ + "/old.css.gz", "stale gzip");
  struct timespec past[2] = {{0, UTIME_OMIT}, {1000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (www_ + "/old.css.gz").c_str(), past, 0), 0);
  ASSERT_TRUE(start("precompressed = [\"br\", \"gzip\"]\n"));
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    HttpResponse r = get(port(), "/app.js", h2, {"Accept-Encoding: gzip, br"});
    EXPECT_EQ(r.body, "brotli bytes");
    EXPECT_EQ(r.header("content-encoding"), "br");
    EXPECT_EQ(r.header("vary"), "Accept-Encoding");
    EXPECT_EQ(r.header("content-type"), "text/javascript; charset=utf-8");
    const std::string br_tag = r.header("etag").value_or("");
    r = get(port(), "/app.js", h2, {"Accept-Encoding: gzip"});
    EXPECT_EQ(r.body, "gzip bytes");
    EXPECT_EQ(r.header("content-encoding"), "gzip");
    EXPECT_NE(r.header("etag"), br_tag);
    r = get(port(), "/app.js", h2, {"Accept-Encoding: br;q=0, identity"});
    EXPECT_EQ(r.body, pattern(3000));
    EXPECT_EQ(r.header("content-encoding"), std::nullopt);
    EXPECT_EQ(r.header("vary"), "Accept-Encoding");
    r = get(port(), "/old.css", h2, {"Accept-Encoding: gzip"});  // the variant is older: the file
    EXPECT_EQ(r.body, "body{}");
    EXPECT_EQ(r.header("content-encoding"), std::nullopt);
  }
}

// A file route that compresses: files of compressible types go out
// compressed for a client that accepts the coding (Content-Length gone, a
// weak ETag, no Accept-Ranges), as an upstream response would; a range, a
// HEAD, a type not listed and a precompressed variant go out as they are.
TEST_F(StaticFiles, FilesOfCompressibleTypesAreCompressedOnTheFly) {
  put(www_ + "/large.css", pattern(1 << 20));  // read from the file, not the open-file cache's copy
  put(www_ + "/logo.png", pattern(3000));
  put(www_ + "/pre.js", pattern(3000));
  put(www_ + "/pre.js.br", "brotli bytes");
  ASSERT_TRUE(start("compress = [\"br\", \"gzip\"]\nprecompressed = [\"br\"]\n"));
  auto fetch = [&](const std::string& path, bool h2, const std::string& coding, std::vector<std::string> headers = {},
                   std::string method = "GET") {
    return get(port(), path, h2, std::move(headers), std::move(method), coding);
  };
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    const HttpResponse plain = fetch("/app.js", h2, "");
    EXPECT_EQ(plain.header("content-length"), "3000");
    EXPECT_EQ(plain.header("vary"), "Accept-Encoding");
    const std::string etag = plain.header("etag").value_or("");
    ASSERT_TRUE(etag.starts_with("\"")) << plain.headers;
    for (const std::string coding : {"gzip", "br"}) {
      SCOPED_TRACE(coding);
      HttpResponse r = fetch("/app.js", h2, coding);
      EXPECT_EQ(r.status, 200) << r.error;
      EXPECT_TRUE(r.body == pattern(3000));
      EXPECT_EQ(r.header("content-encoding"), coding);
      EXPECT_EQ(r.header("content-length"), std::nullopt) << r.headers;
      EXPECT_EQ(r.header("accept-ranges"), std::nullopt) << r.headers;
      EXPECT_EQ(r.header("etag"), "W/" + etag);
      EXPECT_EQ(r.header("vary"), "Accept-Encoding");
      r = fetch("/large.css", h2, coding);
      EXPECT_EQ(r.header("content-encoding"), coding);
      EXPECT_TRUE(r.body == pattern(1 << 20)) << r.body.size();
    }
    // The compressed representation's own tag revalidates it; the 304 has
    // the tag and Vary its 200 had.
    HttpResponse not_modified = fetch("/app.js", h2, "gzip", {"If-None-Match: W/" + etag});
    EXPECT_EQ(not_modified.status, 304);
    EXPECT_EQ(not_modified.header("etag"), "W/" + etag);
    EXPECT_EQ(not_modified.header("vary"), "Accept-Encoding");
    not_modified = fetch("/app.js", h2, "", {"If-None-Match: " + etag});  // identity: the strong tag
    EXPECT_EQ(not_modified.status, 304);
    EXPECT_EQ(not_modified.header("etag"), etag);
    HttpResponse range = fetch("/app.js", h2, "gzip", {"Range: bytes=0-9"});
    EXPECT_EQ(range.status, 206);
    EXPECT_EQ(range.header("content-encoding"), std::nullopt);
    EXPECT_EQ(range.body, pattern(3000).substr(0, 10));
    HttpResponse head = fetch("/app.js", h2, "gzip", {}, "HEAD");
    EXPECT_EQ(head.header("content-length"), "3000");
    EXPECT_EQ(head.header("content-encoding"), std::nullopt);
    HttpResponse png = fetch("/logo.png", h2, "gzip");
    EXPECT_EQ(png.header("content-encoding"), std::nullopt);
    EXPECT_EQ(png.header("content-length"), "3000");
    HttpResponse pre = fetch("/pre.js", h2, "", {"Accept-Encoding: br"});  // the body as sent
    EXPECT_EQ(pre.body, "brotli bytes");
    EXPECT_EQ(pre.header("content-encoding"), "br");
  }
  // The access log's content_encoding: the coding applied, or the variant's.
  std::map<std::string, int> codings;  // "path coding"
  for (const std::string& l : proxy_.wait_log_lines(22)) {
    ++codings[json_string(l, "path").value_or("") + " " + json_string(l, "content_encoding").value_or("-")];
  }
  EXPECT_EQ(codings["/app.js gzip"], 2);
  EXPECT_EQ(codings["/app.js br"], 2);
  EXPECT_EQ(codings["/large.css br"], 2);
  EXPECT_EQ(codings["/pre.js br"], 2);
  EXPECT_EQ(codings["/logo.png -"], 2);
  EXPECT_EQ(codings["/app.js -"], 10);  // plain, two 304s, 206, HEAD
}

// try_files' last entry "@name": what no file answers goes to that route's
// upstream, as that route would send it.
TEST_F(StaticFiles, TryFilesFallsBackToANamedRoute) {
  ProxyOptions o;
  o.routes = "[[route]]\nname = \"api\"\npath_prefix = \"/api/\"\nupstream = \"backend\"\n"
             "[[route]]\npath_prefix = \"/\"\nroot = \"" + www_ + "\"\ntry_files = [\"$uri\", \"@api\"]\n";
  ASSERT_TRUE(start_proxy(o));
  for (bool h2 : {false, true}) {
    EXPECT_EQ(get(port(), "/app.js", h2).body, pattern(3000));
    HttpResponse r = get(port(), "/orders/7?x=1", h2);
    EXPECT_EQ(r.status, 200);
  }
  auto seen = backend_.wait_requests(2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0].find("GET /orders/7?x=1 "), std::string::npos) << seen[0];
}

// A file unlinked while it is sent is sent whole (the descriptor is open);
// one truncated in place ends the response early, never hangs it.
TEST_F(StaticFiles, FileDeletedOrTruncatedWhileServed) {
  constexpr size_t kSize = 24 << 20;
  put(www_ + "/big.bin", pattern(kSize));
  ASSERT_TRUE(start());
  {
    TlsClient client;
    ASSERT_TRUE(client.connect(port())) << client.error();
    ASSERT_TRUE(client.write("GET /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    std::string got = client.read_available(milliseconds(2000));
    ASSERT_FALSE(got.empty());
    fs::remove(www_ + "/big.bin");
    got += client.read_all(milliseconds(20'000));
    auto [head, body] = split_head(got);
    EXPECT_NE(head.find("200"), std::string::npos);
    EXPECT_EQ(body.size(), kSize);
    EXPECT_TRUE(body == pattern(kSize));
  }
  put(www_ + "/big.bin", pattern(kSize));
  {
    TlsClient client;
    ASSERT_TRUE(client.connect(port())) << client.error();
    ASSERT_TRUE(client.write("GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    std::string got = client.read_available(milliseconds(2000));
    ASSERT_FALSE(got.empty());
    ASSERT_EQ(truncate((www_ + "/big.bin").c_str(), 0), 0);
    got += client.read_all(milliseconds(20'000));
    EXPECT_TRUE(client.closed());  // cut short: the connection closes
    EXPECT_LT(split_head(got).second.size(), kSize);
  }
  // The connection that was cut short is the only one that suffered.
  EXPECT_EQ(http_get(port(), "/index.html").status, 200);
  auto lines = proxy_.wait_log_lines(3);
  EXPECT_EQ(lines.size(), 3u);
}

// Many downloads at once, with readers that stop reading: memory stays
// bounded (one chunk per response beyond each connection's output
// buffer), the other clients are served.
TEST_F(StaticFiles, ManyConcurrentDownloadsWithSlowReadersStayBounded) {
  constexpr size_t kLarge = 8 << 20;
  put(www_ + "/large.bin", pattern(kLarge));
  put(www_ + "/one.bin", pattern(256 << 10));
  SmallAsanQuarantine quarantine;  // ASan's freed blocks would count as held
  ASSERT_TRUE(start());
  const long before = rss_kib(proxy_.process().pid());
  std::vector<std::unique_ptr<TlsClient>> stalled;
  for (int i = 0; i < 40; ++i) {
    auto c = std::make_unique<TlsClient>();
    ASSERT_TRUE(c->connect(port())) << c->error();
    ASSERT_TRUE(c->write("GET /large.bin HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    stalled.push_back(std::move(c));
  }
  // 400 downloads of 256 KiB on 100 connections while those 40 do not read.
  RunResult r = run_command(dir_, {"/usr/bin/h2load", "-n", "400", "-c", "100", "-m", "4", "-t", "1",
                                   "https://127.0.0.1:" + std::to_string(port()) + "/one.bin"},
                            milliseconds(60'000));
  EXPECT_NE(r.out.find("400 succeeded"), std::string::npos) << r.out << r.err;
  const long during = rss_kib(proxy_.process().pid());
  std::printf("tlsfront RSS: %ld KiB before, %ld KiB with 40 stalled 8 MiB downloads and 400 of 256 KiB done\n", before,
              during);
  // 40 stalled 8 MiB responses hold their output buffers and one 64 KiB
  // chunk each, not their files.
  EXPECT_LT(during - before, 100 * 1024) << before << " KiB before, " << during << " KiB during";
  // A stalled reader that reads again gets the whole file.
  std::string got = stalled.front()->read_available(milliseconds(100));
  while (got.size() < kLarge) {
    std::string more = stalled.front()->read_available(milliseconds(5000));
    if (more.empty()) break;
    got += more;
  }
  auto [head, body] = split_head(got);
  EXPECT_EQ(body.size(), kLarge);
}

// The write-up's whole server block (tests/data/nginx/writeup_static.conf):
// imported with nothing left behind in its three locations, then served
// location by location over HTTP/1.1 and HTTP/2.
TEST(StaticImport, TheWriteupsWholeServerBlockMovesAndServes) {
  TempDir dir;
  stage(dir, "writeup_static.conf");
  put(dir.file("www/static/app.3f2a.js"), "console.log('app');\n");
  put(dir.file("www/static/app.3f2a.js.gz"), "gzipped app");
  put(dir.file("www/static/logo.PNG"), "png bytes");
  put(dir.file("www/app/index.html"), "<!doctype html><p>shell</p>\n");
  put(dir.file("www/app/about/index.html"), "about\n");
  Backend backend(dir);
  ASSERT_TRUE(backend.start());
  RunResult r = run_command(dir, {TLSFRONT_BINARY, "import-nginx", "-o", dir.file("out.toml"),
                                  dir.file("writeup_static.conf")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  // Every report line about the two file locations (lines 73..92) says how
  // it was carried over; none about the three locations (the API's two,
  // lines 52..70, among them) says that something was not or cannot be.
  const std::string conf = dir.file("writeup_static.conf") + ":";
  std::istringstream report(r.err);
  int location_lines = 0;
  for (std::string line; std::getline(report, line);) {
    if (!line.starts_with(conf)) continue;
    const int at = std::stoi(line.substr(conf.size()));
    if (at < 52 || at > 92) continue;
    ++location_lines;
    EXPECT_EQ(line.find("not carried over"), std::string::npos) << line;
    EXPECT_EQ(line.find("no equivalent"), std::string::npos) << line;
    if (at >= 73) EXPECT_NE(line.find(": carried over"), std::string::npos) << line;
  }
  EXPECT_GT(location_lines, 0) << r.err;  // the report was read
  std::string toml = runnable_here(read_file(dir.file("out.toml")), dir);
  EXPECT_NE(toml.find("root = \"" + dir.file("www/static") + "\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("try_files = [\"$uri\", \"$uri/\", \"/index.html\"]"), std::string::npos) << toml;
  EXPECT_NE(toml.find("expires = \"30d\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("precompressed = [\"gzip\"]"), std::string::npos) << toml;
  EXPECT_NE(toml.find("access_log = false"), std::string::npos) << toml;
  toml = replace_all(toml, "\"0.0.0.0:443\"", "\"127.0.0.1:0\"");
  toml = replace_all(toml, "\"0.0.0.0:80\"", std::string("\"") + kCleartextIp + ":0\"");
  toml = replace_all(toml, "\"127.0.0.1:9000\"", "\"" + backend.address() + "\"");
  toml = replace_all(toml, "stapling = true", "stapling = false");
  toml = replace_all(toml, "\"" + dir.file("logs/api_access.log") + "\"", "\"" + dir.file("access.log") + "\"");
  toml += "\n[admin]\nenabled = false\n";
  Proxy proxy(dir);
  ProxyOptions o;
  o.config_text = toml;
  o.cleartext = "";
  o.admin_port = -1;
  ASSERT_TRUE(proxy.start(o)) << toml;

  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    CurlClient client(proxy.port());
    HttpResponse asset = client.perform({.path = "/app.3f2a.js", .http2 = h2});
    EXPECT_EQ(asset.status, 200) << asset.error;
    EXPECT_EQ(asset.body, "console.log('app');\n");
    EXPECT_NE(asset.headers.find("immutable"), std::string::npos) << asset.headers;
    EXPECT_TRUE(asset.header("expires").has_value()) << asset.headers;
    EXPECT_EQ(asset.header("strict-transport-security"), "max-age=31536000");
    HttpResponse gz = client.perform({.path = "/app.3f2a.js", .headers = {"Accept-Encoding: gzip"}, .http2 = h2});
    EXPECT_EQ(gz.body, "gzipped app");
    EXPECT_EQ(gz.header("content-encoding"), "gzip");
    EXPECT_EQ(client.perform({.path = "/logo.PNG", .http2 = h2}).header("content-type"), "image/png");
    HttpResponse shell = client.perform({.path = "/orders/42", .http2 = h2});  // the app's own route
    EXPECT_EQ(shell.status, 200);
    EXPECT_EQ(shell.body, "<!doctype html><p>shell</p>\n");
    EXPECT_EQ(shell.header("cache-control"), "no-cache, must-revalidate");
    EXPECT_EQ(client.perform({.path = "/about/", .http2 = h2}).body, "about\n");
    EXPECT_EQ(client.perform({.path = "/about", .http2 = h2}).body, "about\n");  // try_files $uri/
    HttpResponse missing_asset = client.perform({.path = "/missing.css", .http2 = h2});
    EXPECT_EQ(missing_asset.status, 404);
    HttpResponse api = client.perform({.path = "/api/v1/users/42", .http2 = h2});
    EXPECT_EQ(api.status, 200);
    EXPECT_EQ(api.header("cache-control"), std::nullopt);
  }
  // access_log off: the assets' requests are not logged; the shell's and
  // the API's are, the shell's with no upstream.
  auto lines = proxy.wait_log_lines(8);
  size_t shell_lines = 0;
  for (const std::string& l : lines) {
    const std::string path = json_string(l, "path").value_or("");
    EXPECT_EQ(path.find(".js"), std::string::npos) << l;
    EXPECT_EQ(path.find(".PNG"), std::string::npos) << l;
    if (path == "/orders/42") {
      ++shell_lines;
      EXPECT_EQ(json_raw(l, "upstream_addr"), "null") << l;
      EXPECT_EQ(json_raw(l, "status"), "200") << l;
    }
  }
  EXPECT_EQ(shell_lines, 2u);
  EXPECT_EQ(backend.wait_requests(2).size(), 2u);
  EXPECT_EQ(proxy.stop().code, 0);
}

}  // namespace
}  // namespace tlsfront::itest
