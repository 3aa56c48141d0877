// Loader tests for HTTP/2: [[listen]] alpn and the [http2] table.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "loader_test_support.h"

namespace tlsfront::config {
namespace {

TEST(LoaderHttp2, Defaults) {
  Config c = load_ok(kMinimal);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  EXPECT_EQ(c.http2.max_concurrent_streams, 128u);
  EXPECT_EQ(c.http2.initial_window_size, 65535u);
  EXPECT_EQ(c.http2.max_frame_size, 16384u);
  EXPECT_EQ(c.http2.max_header_list_size, 16384u);
}

TEST(LoaderHttp2, AlpnPerListener) {
  Config c = load_ok(R"([[listen]]
address = "127.0.0.1:8443"
alpn = ["http/1.1"]

[[listen]]
address = "127.0.0.1:8444"
alpn = ["http/1.1", "h2"]

[tls]
certificate = "/pki/cert.pem"
key = "/pki/key.pem"

[[upstream]]
name = "demo"
servers = ["127.0.0.1:9080"]

[[route]]
upstream = "demo"
)");
  ASSERT_EQ(c.listeners.size(), 2u);
  EXPECT_EQ(c.listeners[0].alpn, std::vector<std::string>{"http/1.1"});
  EXPECT_EQ(c.listeners[1].alpn, (std::vector<std::string>{"http/1.1", "h2"}));
}

std::string listen_with(std::string_view alpn_line) {
  std::string s(kMinimal);
  s.insert(s.find("\n\n[tls]"), "\n" + std::string(alpn_line));
  return s;
}

TEST(LoaderHttp2, BadAlpn) {
  EXPECT_EQ(load_error(listen_with("alpn = []")), "t.toml:3:1: listen[0].alpn: must not be empty");
  EXPECT_EQ(load_error(listen_with(R"(alpn = ["h3"])")),
            R"(t.toml:3:9: listen[0].alpn[0]: unknown protocol "h3" (expected "h2" or "http/1.1"))");
  EXPECT_EQ(load_error(listen_with(R"(alpn = ["h2", "h2"])")),
            R"(t.toml:3:15: listen[0].alpn[1]: duplicate protocol "h2")");
  EXPECT_EQ(load_error(listen_with(R"(alpn = [2])")), "t.toml:3:9: listen[0].alpn[0]: expected a string, got integer");
  EXPECT_EQ(load_error(listen_with(R"(alpn = "h2")")), "t.toml:3:1: listen[0].alpn: expected an array, got string");
}

TEST(LoaderHttp2, Settings) {
  Config c = load_ok(with(R"(
[http2]
max_concurrent_streams = 10
initial_window_size = "1m"
max_frame_size = "32k"
max_header_list_size = "64k"
)"));
  EXPECT_EQ(c.http2.max_concurrent_streams, 10u);
  EXPECT_EQ(c.http2.initial_window_size, 1024u * 1024);
  EXPECT_EQ(c.http2.max_frame_size, 32u * 1024);
  EXPECT_EQ(c.http2.max_header_list_size, 64u * 1024);
}

TEST(LoaderHttp2, BadSettings) {
  auto err = [](std::string_view lines) { return load_error(with(std::string("\n[http2]\n") + std::string(lines))); };
  EXPECT_EQ(err("max_concurrent_streams = 0\n").rfind("t.toml:16:1: http2.max_concurrent_streams: ", 0), 0u)
      << err("max_concurrent_streams = 0\n");
  EXPECT_EQ(err("max_frame_size = \"8k\"\n").rfind("t.toml:16:1: http2.max_frame_size: ", 0), 0u)
      << err("max_frame_size = \"8k\"\n");
  EXPECT_EQ(err("initial_window_size = \"2g\"\n").rfind("t.toml:16:1: http2.initial_window_size: ", 0), 0u)
      << err("initial_window_size = \"2g\"\n");
  EXPECT_EQ(err("max_header_list_size = 10\n").rfind("t.toml:16:1: http2.max_header_list_size: ", 0), 0u)
      << err("max_header_list_size = 10\n");
  EXPECT_EQ(err("enable_push = true\n"), "t.toml:16:1: http2.enable_push: unknown key \"enable_push\"");
}

}  // namespace
}  // namespace tlsfront::config
