// The shipped example configuration (conf/tlsfront.toml): it loads as
// shipped, and its documented defaults are the real ones.
#include "config/loader.h"
#include "loader_test_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tlsfront::config {
namespace {

// The documented example config must load as shipped.
TEST(ExampleConfig, ShippedConfigLoads) {
  std::filesystem::path file =
      std::filesystem::path(TLSFRONT_SOURCE_DIR) / "conf/tlsfront.toml";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "no " << file;
  Result<Config> c = load_file(file.string());
  ASSERT_TRUE(c.ok()) << c.error().detail;
  ASSERT_EQ(c->listeners.size(), 1u);
  EXPECT_EQ(c->listeners[0].address.to_string(), "127.0.0.1:8443");
  EXPECT_EQ(c->workers, 0);
  ASSERT_EQ(c->upstreams.size(), 1u);
  EXPECT_EQ(c->upstreams[0].name, "demo");
  ASSERT_EQ(c->routes.size(), 1u);
  EXPECT_EQ(c->routes[0].upstream, "demo");
  std::filesystem::path root = std::filesystem::absolute(file.parent_path() / "..").lexically_normal();
  EXPECT_EQ(c->tls.certificates.at(0).cert, (root / "build/dev-pki/localhost.chain.pem").string());
  EXPECT_EQ(c->tls.certificates.at(0).key, (root / "build/dev-pki/localhost.key").string());
  EXPECT_EQ(c->log.access_log, (root / "build/logs/access.log").string());
}

// Uncommenting every documented "# key = default" line of the example (outside
// the commented-out example tables) must load and change nothing: the
// documented defaults are the real ones.
TEST(ExampleConfig, DocumentedDefaultsAreTheDefaults) {
  std::filesystem::path file =
      std::filesystem::path(TLSFRONT_SOURCE_DIR) / "conf/tlsfront.toml";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "no " << file;
  std::ifstream in(file);
  std::string line;
  std::string uncommented;
  bool in_example_table = false;
  int keys_uncommented = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# [[", 0) == 0) in_example_table = true;
    if (line.empty() || line[0] != '#') in_example_table = false;
    size_t eq = line.find(" = ");
    bool is_key_line = line.rfind("# ", 0) == 0 && eq != std::string::npos &&
                       line.find_first_not_of("abcdefghijklmnopqrstuvwxyz_", 2) == eq;
    if (is_key_line && !in_example_table) {
      line = line.substr(2);
      ++keys_uncommented;
    }
    uncommented += line + "\n";
  }
  EXPECT_GE(keys_uncommented, 20);
  Result<Config> shipped = load_file(file.string());
  Result<Config> expanded = load_string(uncommented, file.string());
  ASSERT_TRUE(shipped.ok()) << shipped.error().detail;
  ASSERT_TRUE(expanded.ok()) << expanded.error().detail;
  const Config& a = *shipped;
  const Config& b = *expanded;
  EXPECT_EQ(a.workers, b.workers);
  EXPECT_EQ(a.shutdown_timeout, b.shutdown_timeout);
  EXPECT_EQ(a.admin, b.admin);
  EXPECT_EQ(a.tls.strict_sni, b.tls.strict_sni);
  EXPECT_EQ(a.listeners[0].backlog, b.listeners[0].backlog);
  EXPECT_EQ(a.listeners[0].tcp_fastopen, b.listeners[0].tcp_fastopen);
  EXPECT_EQ(a.listeners[0].tls, b.listeners[0].tls);
  EXPECT_EQ(a.tls.protocols, b.tls.protocols);
  EXPECT_EQ(a.tls.ciphers, b.tls.ciphers);
  EXPECT_EQ(a.tls.ciphersuites, b.tls.ciphersuites);
  EXPECT_EQ(a.tls.groups, b.tls.groups);
  EXPECT_EQ(a.tls.prefer_server_ciphers, b.tls.prefer_server_ciphers);
  EXPECT_EQ(a.tls.certificates.at(0).ocsp.stapling, b.tls.certificates.at(0).ocsp.stapling);
  EXPECT_EQ(a.tls.certificates.at(0).ocsp.staple_policy, b.tls.certificates.at(0).ocsp.staple_policy);
  EXPECT_EQ(a.tls.certificates.at(0).ocsp.refresh_at_percent, b.tls.certificates.at(0).ocsp.refresh_at_percent);
  EXPECT_EQ(a.tls.certificates.at(0).ocsp.refresh_jitter_percent, b.tls.certificates.at(0).ocsp.refresh_jitter_percent);
  EXPECT_EQ(a.tls.certificates.at(0).ocsp.fetch_timeout, b.tls.certificates.at(0).ocsp.fetch_timeout);
  EXPECT_EQ(a.tls.certificates.at(0).ocsp.max_response_bytes, b.tls.certificates.at(0).ocsp.max_response_bytes);
  const Upstream& ua = a.upstreams[0];
  const Upstream& ub = b.upstreams[0];
  EXPECT_EQ(ua.keepalive, ub.keepalive);
  EXPECT_EQ(ua.keepalive_timeout, ub.keepalive_timeout);
  EXPECT_EQ(ua.keepalive_requests, ub.keepalive_requests);
  EXPECT_EQ(ua.connect_timeout, ub.connect_timeout);
  EXPECT_EQ(ua.read_timeout, ub.read_timeout);
  EXPECT_EQ(ua.send_timeout, ub.send_timeout);
  EXPECT_EQ(ua.fail_timeout, ub.fail_timeout);
  EXPECT_EQ(a.log.level, b.log.level);
  EXPECT_EQ(a.limits.max_header_bytes, b.limits.max_header_bytes);
  EXPECT_EQ(a.limits.max_body_bytes, b.limits.max_body_bytes);
  EXPECT_EQ(a.limits.keepalive_requests, b.limits.keepalive_requests);
  EXPECT_EQ(a.limits.max_connections, b.limits.max_connections);
  EXPECT_EQ(a.tls.session_id_context, b.tls.session_id_context);
  EXPECT_EQ(a.tls.session_ticket_count, b.tls.session_ticket_count);
  EXPECT_EQ(a.pid_file, b.pid_file);
  EXPECT_EQ(a.timeouts.handshake, b.timeouts.handshake);
  EXPECT_EQ(a.timeouts.header, b.timeouts.header);
  EXPECT_EQ(a.timeouts.keepalive, b.timeouts.keepalive);
  EXPECT_EQ(a.timeouts.body, b.timeouts.body);
  EXPECT_EQ(a.timeouts.send, b.timeouts.send);
  EXPECT_EQ(a.timeouts.tunnel, b.timeouts.tunnel);
  EXPECT_EQ(a.listeners[0].alpn, b.listeners[0].alpn);
  EXPECT_EQ(a.http2.max_concurrent_streams, b.http2.max_concurrent_streams);
  EXPECT_EQ(a.http2.initial_window_size, b.http2.initial_window_size);
  EXPECT_EQ(a.http2.max_frame_size, b.http2.max_frame_size);
  EXPECT_EQ(a.http2.max_header_list_size, b.http2.max_header_list_size);
  EXPECT_EQ(a.tls.hsts, b.tls.hsts);
  EXPECT_EQ(a.request_id_header, b.request_id_header);
  EXPECT_EQ(a.compression, b.compression);
  EXPECT_EQ(a.routes.at(0).compression, b.routes.at(0).compression);
  EXPECT_EQ(a.routes.at(0).upgrade, b.routes.at(0).upgrade);
  EXPECT_EQ(a.listeners[0].trust_request_id, b.listeners[0].trust_request_id);
  EXPECT_EQ(a.response_headers, b.response_headers);
  EXPECT_EQ(a.request_headers, b.request_headers);
}

}  // namespace
}  // namespace tlsfront::config
