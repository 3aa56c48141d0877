// File routes against what must never be served or must never hang, with
// real clients (static_files_test.cc has the HTTP/1.1 traversal cases and
// the rules of RFC 9110): the traversal cases over HTTP/2 as raw :path
// values; FIFOs, devices and symbolic links, in the root or reached
// through a followed link; dotfiles with and without `dotfiles = true`;
// a file replaced by rename while it is sent, over HTTP/1.1 and HTTP/2.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "h2_frames.h"
#include "harness.h"
#include "static_files_support.h"

namespace tlsfront::itest {
namespace {

namespace fs = std::filesystem;

HttpResponse get_within_5s(int port, const std::string& path, bool h2) {
  HttpRequest req;
  req.path = path;
  req.http2 = h2;
  req.timeout = milliseconds(5'000);  // a FIFO or device that blocked would show as a timeout
  return http(port, req);
}

class StaticSafety : public ProxyTest {
 protected:
  void SetUp() override {
    ProxyTest::SetUp();
    www_ = dir_.file("www");
    put(www_ + "/index.html", "shell\n");
    put(www_ + "/.env", "dotfile secret\n");
    put(www_ + "/.git/config", "dotdir secret\n");
    put(dir_.file("outside.txt"), "outside secret\n");
    ASSERT_EQ(mkfifo((www_ + "/fifo").c_str(), 0644), 0);
    fs::create_symlink("/dev/zero", www_ + "/zero");
    fs::create_symlink(dir_.file("outside.txt"), www_ + "/out.txt");
    fs::create_symlink(dir_.file("outside"), www_ + "/outdir");
    put(dir_.file("outside/secret.txt"), "outside dir secret\n");
    // A device node in the root itself, where this user may make one.
    device_ = mknod((www_ + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
  }
  bool start() {
    ProxyOptions o;
    o.routes = "[[route]]\npath_prefix = \"/follow/\"\nalias = \"" + www_ +
               "\"\nfollow_symlinks = true\n"
               "[[route]]\npath_prefix = \"/dot/\"\nalias = \"" +
               www_ +
               "\"\ndotfiles = true\n"
               "[[route]]\npath_prefix = \"/\"\nroot = \"" +
               www_ + "\"\n";
    return start_proxy(o);
  }
  std::string www_;
  bool device_ = false;
};

TEST_F(StaticSafety, SpecialFilesSymlinksAndDotfilesOverBothProtocols) {
  ASSERT_TRUE(start());
  struct Case {
    const char* path;
    int status;
    const char* body;  // null: must not hold "secret"
  } cases[] = {
      {"/fifo", 403, nullptr},
      {"/follow/fifo", 403, nullptr},  // a FIFO never blocks the open
      {"/zero", 403, nullptr},         // a symbolic link: refused
      {"/follow/zero", 403, nullptr},  // followed: a device, refused
      {"/out.txt", 403, nullptr},
      {"/outdir/secret.txt", 403, nullptr},
      {"/follow/out.txt", 200, "outside secret\n"},  // follow_symlinks = true
      {"/follow/outdir/secret.txt", 200, "outside dir secret\n"},
      {"/.env", 404, nullptr},
      {"/.git/config", 404, nullptr},
      {"/%2egit/config", 404, nullptr},
      {"/follow/.env", 404, nullptr},
      {"/dot/.env", 200, "dotfile secret\n"},
      {"/dot/.git/config", 200, "dotdir secret\n"},
  };
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    for (const Case& c : cases) {
      SCOPED_TRACE(c.path);
      HttpResponse r = get_within_5s(port(), c.path, h2);
      EXPECT_EQ(r.status, c.status) << r.error;
      if (c.body != nullptr) {
        EXPECT_EQ(r.body, c.body);
      } else {
        EXPECT_EQ(r.body.find("secret"), std::string::npos) << r.body;
      }
    }
    if (device_) EXPECT_EQ(get_within_5s(port(), "/null", h2).status, 403);
    EXPECT_EQ(get_within_5s(port(), "/index.html", h2).body, "shell\n");  // the proxy serves on
  }
  // Each refusal has a log line naming its cause.
  const std::string err = proxy_.process().err();
  EXPECT_NE(err.find("GET /fifo: 403 (not a regular file)"), std::string::npos) << err;
  EXPECT_NE(err.find("GET /follow/zero: 403 (not a regular file)"), std::string::npos) << err;
  EXPECT_NE(err.find("GET /out.txt: 403 (symbolic link refused"), std::string::npos) << err;
}

// The traversal attempts of static_files_test.cc's HTTP/1.1 case, as raw
// HTTP/2 :path values (curl would normalize them first).
TEST_F(StaticSafety, TraversalAttemptsOverHttp2) {
  ASSERT_TRUE(start());
  struct Case {
    const char* path;
    int status;
  } cases[] = {
      {"/../outside.txt", 400},
      {"/%2e%2e/outside.txt", 400},
      {"/x/..%2foutside.txt", 400},
      {"/%2E%2E%2Foutside.txt", 400},
      {"/x/%2e%2e/%2e%2e/outside.txt", 400},
      {"/%252e%252e/outside.txt", 404},
      {"/..%252foutside.txt", 404},
      {"/%00", 400},
      {"/index.html%00.js", 400},
      {"/..%5coutside.txt", 400},
      {"/..\\outside.txt", 400},
      {"/%c0%ae%c0%ae/outside.txt", 400},
      {"/%c0%afoutside.txt", 400},
      {"/follow/../outside.txt", 404},  // "/outside.txt": the "/" route     {"/follow/%2e%2e/outside.txt", 404},
  };
  h2::Client c;
  c.set_auto_window_update(true);
  ASSERT_TRUE(c.connect(port()));
  uint32_t stream = 1;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.path);
    ASSERT_TRUE(c.send_headers(stream, h2::get_request(k.path), true));
    EXPECT_EQ(c.wait_status(stream), k.status);
    stream += 2;
  }
  for (const h2::Frame& f : c.seen()) {
    if (f.type == h2::kData) EXPECT_EQ(f.payload.find("secret"), std::string::npos) << f.payload;
  }
}

// A directory is never listed (403 without an index file); one asked for
// without its "/" is redirected on this site, whatever slashes the path
// began with (never to "//host/", another site for a browser).
TEST_F(StaticSafety, DirectoriesAreNeverListedAndTheirRedirectStaysOnThisSite) {
  fs::create_directories(www_ + "/evil.com");
  put(www_ + "/evil.com/index.html", "page\n");
  fs::create_directories(www_ + "/empty");
  put(www_ + "/empty/.hidden.html", "x");
  ASSERT_TRUE(start());
  for (bool h2 : {false, true}) {
    SCOPED_TRACE(h2 ? "HTTP/2" : "HTTP/1.1");
    EXPECT_EQ(get_within_5s(port(), "/empty/", h2).status, 403);
    HttpResponse r = get_within_5s(port(), "/empty", h2);
    EXPECT_EQ(r.status, 301);
    EXPECT_EQ(r.header("location"), "/empty/");
    for (const char* path : {"//evil.com", "///evil.com", "/./evil.com"}) {
      SCOPED_TRACE(path);
      r = get_within_5s(port(), path, h2);
      EXPECT_EQ(r.status, 301);
      EXPECT_EQ(r.header("location"), "/evil.com/");
    }
    EXPECT_EQ(get_within_5s(port(), "//evil.com/", h2).body, "page\n");
  }
}

std::string pattern(size_t n, char base) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(base + (i * 7 + i / 4096) % 13);
  return s;
}

// A file replaced by rename while it is sent: the response is the file as
// it was opened, whole (its descriptor is open); the next request gets the
// new one.
TEST_F(StaticSafety, FileReplacedWhileServedIsSentAsOpened) {
  constexpr size_t kSize = 24 << 20;
  const std::string old_file = pattern(kSize, 'a'), new_file = pattern(kSize / 2, 'n');
  put(www_ + "/big.bin", old_file);
  ASSERT_TRUE(start());
  {
    TlsClient client;  // HTTP/1.1: a reader that stops after the first octets
    ASSERT_TRUE(client.connect(port())) << client.error();
    ASSERT_TRUE(client.write("GET /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    std::string got = client.read_available(milliseconds(2000));
    ASSERT_FALSE(got.empty());
    put(www_ + "/big.bin.new", new_file);
    fs::rename(www_ + "/big.bin.new", www_ + "/big.bin");
    got += client.read_all(milliseconds(20'000));
    auto [head, body] = split_head(got);
    EXPECT_NE(head.find(" 200 "), std::string::npos) << head;
    EXPECT_EQ(body.size(), kSize);
    EXPECT_TRUE(body == old_file);
  }
  EXPECT_TRUE(get_within_5s(port(), "/big.bin", false).body == new_file);
  put(www_ + "/big.bin", old_file);
  {
    h2::Client c;  // HTTP/2: no window beyond the first 65,535 octets until the file is replaced
    ASSERT_TRUE(c.connect(port()));
    ASSERT_TRUE(c.send_headers(1, h2::get_request("/big.bin"), true));
    ASSERT_EQ(c.wait_status(1), 200);
    ASSERT_TRUE(c.wait_for([](const h2::Frame& f) { return f.stream == 1 && f.type == h2::kData; }));
    put(www_ + "/big.bin.new", new_file);
    fs::rename(www_ + "/big.bin.new", www_ + "/big.bin");
    std::string body;
    for (const h2::Frame& f : c.seen()) {
      if (f.stream == 1 && f.type == h2::kData) body += f.payload;
    }
    const uint32_t more = 0x7fffffffu - 65535u;
    const std::string inc{static_cast<char>(more >> 24), static_cast<char>(more >> 16), static_cast<char>(more >> 8),
                          static_cast<char>(more)};
    ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 0, inc));
    ASSERT_TRUE(c.send_frame(h2::kWindowUpdate, 0, 1, inc));
    bool ended = false;
    while (!ended) {
      auto f = c.next(milliseconds(20'000));
      ASSERT_TRUE(f) << "the stream neither ended nor was reset";
      if (f->stream != 1) continue;
      ASSERT_NE(f->type, h2::kRstStream);
      if (f->type == h2::kData) body += f->payload;
      ended = (f->flags & h2::kEndStream) != 0;
    }
    EXPECT_EQ(body.size(), kSize);
    EXPECT_TRUE(body == old_file);
  }
  EXPECT_TRUE(get_within_5s(port(), "/big.bin", true).body == new_file);
}

}  // namespace
}  // namespace tlsfront::itest
