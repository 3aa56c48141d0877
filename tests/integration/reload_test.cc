// Configuration reload (SIGHUP): a new certificate is presented to new
// handshakes while connections accepted before keep theirs; a bad config is
// rejected and the old one keeps serving; upstream changes apply; sessions
// and ticket keys survive (resumption after a reload); and under continuous
// load several reloads (one bad, one swapping the certificate) fail no request.
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "harness.h"

namespace tlsfront::itest {
namespace {

class Reload : public ProxyTest {
 protected:
  bool start(const ProxyOptions& o) {
    options_ = o;
    return start_proxy(o);
  }
  // Rewrites the config with `o` (same [[listen]] address, kAnyPort, whose
  // socket the reload keeps, and the same access log) and sends SIGHUP.
  void reload_with(const ProxyOptions& o) {
    ProxyOptions full = o;
    if (full.upstream_servers.empty()) full.upstream_servers = {backend_.address()};
    write_file(proxy_.config_path(), make_config(full, kAnyPort, proxy_.access_log()));
    proxy_.process().signal(SIGHUP);
  }
  void reload_raw(const std::string& text) {
    write_file(proxy_.config_path(), text);
    proxy_.process().signal(SIGHUP);
  }
  bool stderr_has(const std::string& s) {
    return wait_until([&] { return proxy_.process().err().find(s) != std::string::npos; });
  }
  std::string key_type(TlsClient& c) {
    X509* peer = SSL_get0_peer_certificate(c.ssl());
    const char* t = peer ? EVP_PKEY_get0_type_name(X509_get0_pubkey(peer)) : nullptr;
    return t ? t : "";
  }
  std::optional<ParsedResponse> get(TlsClient& c, const std::string& path) {
    if (!c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n")) return std::nullopt;
    return c.read_response();
  }
  ProxyOptions options_;
};

TEST_F(Reload, NewCertificateForNewConnectionsOldConnectionsKeepTheirs) {
  ASSERT_TRUE(start({}));
  TlsClient before;
  ASSERT_TRUE(before.connect(port())) << before.error();
  EXPECT_EQ(key_type(before), "EC");

  ProxyOptions rsa;
  rsa.certificate = pki("rsa.chain.pem");
  rsa.key = pki("rsa.key");
  reload_with(rsa);
  ASSERT_TRUE(stderr_has("reload: generation 2 is live")) << proxy_.process().err();

  TlsClient after;
  ASSERT_TRUE(after.connect(port())) << after.error();
  EXPECT_EQ(key_type(after), "RSA");
  auto r1 = get(after, "/new");
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->status, 200);
  // The connection from before the reload still serves requests.
  auto r2 = get(before, "/old");
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 200);
}

TEST_F(Reload, BadConfigIsRejectedAndTheOldOneKeepsServing) {
  ASSERT_TRUE(start({}));
  reload_raw("workers = 2\n[[listen]]\naddress = \"127.0.0.1:1\"\n[tls]\ncertificate = 5\n");
  ASSERT_TRUE(stderr_has("reload failed, still serving generation 1")) << proxy_.process().err();
  EXPECT_NE(proxy_.process().err().find("tls.certificate: expected a string"), std::string::npos)
      << proxy_.process().err();
  // A certificate that fails to load is rejected the same way.
  ProxyOptions bad;
  bad.key = pki("mismatch.key");
  reload_with(bad);
  ASSERT_TRUE(wait_until([&] {
    const std::string err = proxy_.process().err();
    return err.find("reload failed") != err.rfind("reload failed");  // a second one
  })) << proxy_.process().err();
  EXPECT_NE(proxy_.process().err().find("does not match"), std::string::npos) << proxy_.process().err();
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  EXPECT_EQ(key_type(c), "EC");
  auto r = get(c, "/still-serving");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(Reload, UpstreamChangesApplyAndRestartOnlySettingsAreNamed) {
  ASSERT_TRUE(start({}));
  TempDir dir2;
  Backend second(dir2);
  ASSERT_TRUE(second.start());
  ProxyOptions moved;
  moved.upstream_servers = {second.address()};
  moved.workers = 1;  // restart-only: kept, with a warning
  reload_with(moved);
  ASSERT_TRUE(stderr_has("reload: generation 2 is live")) << proxy_.process().err();
  EXPECT_NE(proxy_.process().err().find("reload: workers changed; it takes effect only after a restart"),
            std::string::npos)
      << proxy_.process().err();
  const size_t first_before = backend_.count("req");
  CurlClient curl(port());
  for (int i = 0; i < 4; ++i) {
    HttpRequest req;
    req.path = "/after-" + std::to_string(i);
    EXPECT_EQ(curl.perform(req).status, 200);
  }
  EXPECT_EQ(second.wait_requests(4).size(), 4u);
  EXPECT_EQ(backend_.count("req"), first_before);
  second.stop();
}

TEST_F(Reload, SessionsResumeAcrossAReload) {
  ASSERT_TRUE(start({}));
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version == TLS1_2_VERSION ? "TLS 1.2" : "TLS 1.3");
    TlsOptions o;
    o.min_version = o.max_version = version;
    TlsClient first;
    ASSERT_TRUE(first.connect(port(), o)) << first.error();
    ASSERT_TRUE(get(first, "/before"));  // TLS 1.3 tickets arrive with the response
    SSL_SESSION* session = first.take_session();
    ASSERT_NE(session, nullptr);

    const std::string live = "reload: generation " + std::to_string(version == TLS1_2_VERSION ? 2 : 3) + " is live";
    reload_with({});
    ASSERT_TRUE(stderr_has(live)) << proxy_.process().err();

    o.session = session;
    TlsClient again;
    ASSERT_TRUE(again.connect(port(), o)) << again.error();
    EXPECT_TRUE(again.session_reused());
    SSL_SESSION_free(session);
  }
}

TEST_F(Reload, UnderLoadNoRequestFails) {
  ASSERT_TRUE(start({}));
  // Keepalive requests, with a new connection every 5 (new handshakes land
  // on whichever generation is current), alternately HTTP/1.1 and h2.
  LoadLoop load([&](int round, const LoadLoop::Record& record) {
    CurlClient curl(port());
    for (int i = 0; i < 5; ++i) {
      HttpRequest req;
      req.http2 = round % 2 == 1;
      req.timeout = std::chrono::milliseconds(10'000);
      record(curl.perform(req));
    }
  });
  ASSERT_TRUE(load.wait_ok(20));
  ProxyOptions rsa;
  rsa.certificate = pki("rsa.chain.pem");
  rsa.key = pki("rsa.key");
  reload_with(rsa);
  EXPECT_TRUE(stderr_has("reload: generation 2 is live"));
  EXPECT_TRUE(load.wait_ok(20));
  reload_raw("this is not toml [");
  EXPECT_TRUE(stderr_has("reload failed"));
  EXPECT_TRUE(load.wait_ok(20));
  reload_with({});
  EXPECT_TRUE(stderr_has("reload: generation 3 is live"));
  EXPECT_TRUE(load.wait_ok(20));
  load.stop();
  EXPECT_EQ(load.failed(), 0) << "first failure: " << load.first_failure();
  EXPECT_GE(load.ok(), 80);
}

TEST_F(Reload, ListenersAreAddedAndRemoved) {
  ASSERT_TRUE(start({}));
  const int old_port = port();
  const int new_port = free_port();
  ProxyOptions o;
  o.upstream_servers = {backend_.address()};
  write_file(proxy_.config_path(), make_config(o, new_port, proxy_.access_log()));
  TlsClient kept;  // accepted on the old address before the reload
  ASSERT_TRUE(kept.connect(old_port)) << kept.error();
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(stderr_has("reload: listening on 127.0.0.1:" + std::to_string(new_port))) << proxy_.process().err();
  ASSERT_TRUE(stderr_has("no longer listening on 127.0.0.1:" + std::to_string(old_port)));
  EXPECT_EQ(http_get(new_port, "/on-the-new-address").status, 200);
  EXPECT_TRUE(wait_until([&] {
    TlsClient c;
    return !c.connect(old_port, TlsOptions{}, milliseconds(500));
  })) << "the old address still accepts";
  auto r = get(kept, "/on-a-connection-from-before");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(Reload, AddressInUseFailsTheWholeReload) {
  ASSERT_TRUE(start({}));
  // Something else listens on the address the new config adds.
  int busy = 0;
  const int other = listen_loopback(16, busy);
  ASSERT_GE(other, 0);
  ProxyOptions o;
  o.upstream_servers = {backend_.address()};
  o.certificate = pki("rsa.chain.pem");  // would be visible if anything were applied
  o.key = pki("rsa.key");
  std::string text = make_config(o, kAnyPort, proxy_.access_log());
  text.replace(text.find("[tls]"), 5, "[[listen]]\naddress = \"127.0.0.1:" + std::to_string(busy) + "\"\n\n[tls]");
  reload_raw(text);
  ASSERT_TRUE(stderr_has("reload failed, still serving generation 1")) << proxy_.process().err();
  EXPECT_NE(proxy_.process().err().find("Address already in use"), std::string::npos) << proxy_.process().err();
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  EXPECT_EQ(key_type(c), "EC");
  ::close(other);
}

// Started with a relative --config path (as scripts/run.sh does) and an
// explicit [tls.ticket_keys] table: reloading the unchanged file names no
// setting as changed (config-file positions are not settings).
TEST_F(Reload, UnchangedFileStartedRelativeWarnsOfNothing) {
  ProxyOptions o;
  o.upstream_servers = {backend_.address()};
  o.extra = "[tls.ticket_keys]\nrotate_every = \"1h\"\n";
  write_file(dir_.file("relative.toml"), make_config(o, kAnyPort, dir_.file("relative-access.log")));
  const std::string relative =
      std::filesystem::relative(dir_.file("relative.toml"), std::filesystem::current_path()).string();
  ASSERT_FALSE(relative.empty());
  ASSERT_NE(relative[0], '/');
  Process proxy;
  ASSERT_TRUE(proxy.start({TLSFRONT_BINARY, "--config", relative}, dir_.file("relative.out"), dir_.file("relative.err")));
  std::optional<int> proxy_port;
  ASSERT_TRUE(wait_until([&] { return (proxy_port = logged_port(proxy.err(), "listening on 127.0.0.1:", " (")).has_value(); }))
      << proxy.err();
  ASSERT_TRUE(wait_tls_ready(*proxy_port)) << proxy.err();
  proxy.signal(SIGHUP);
  EXPECT_TRUE(wait_until([&] { return proxy.err().find("reload: generation 2 is live") != std::string::npos; }))
      << proxy.err();
  EXPECT_EQ(proxy.err().find("takes effect only after a restart"), std::string::npos) << proxy.err();
  ExitStatus st = proxy.stop();
  EXPECT_EQ(st.code, 0);
}

}  // namespace
}  // namespace tlsfront::itest
