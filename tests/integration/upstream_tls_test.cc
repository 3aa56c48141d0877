// TLS to upstream servers ([upstream.tls], protocol = "h2") with Debian's
// nginx as the HTTPS backend: the server's certificate verified by IP
// address or server_name (SNI sent), the session resumed on new
// connections, a handshake failure (wrong name, untrusted issuer, no ALPN
// "h2") a 502 naming why and moving on to the next server, verify = false,
// a client certificate for a server that asks for one, HTTP/2 over TLS for
// HTTP/1.1 and HTTP/2 clients on one connection, a server that accepts
// TCP but never answers the ClientHello (connect_timeout covers the
// handshake), the handshake and resumption metrics, and a reload that reads
// a changed trust file again for an unchanged [[upstream]] and retires the
// connections made under the old one.
#include <signal.h>
#include <sys/socket.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <string>

#include "harness.h"
#include "nginx_peer.h"

namespace tlsfront::itest {
namespace {

// What the backend saw: its protocol, the SNI, whether the session was
// resumed ("r" or "."), and the client certificate's subject.
const std::string kInfo =
    "    location /info { return 200 \"$server_protocol sni=$ssl_server_name reused=$ssl_session_reused "
    "client=$ssl_client_s_dn\\n\"; }\n";

class UpstreamTls : public ProxyTest {
 protected:
  // nginx with `cert` (the localhost chain unless said) answering /info;
  // tlsfront in front of it (one worker: one session slot per server).
  bool start(const std::string& tls_lines, const std::string& upstream_extra = "",
             const std::string& nginx_extra = "", const std::string& listen_extra = "",
             const std::string& cert = pki("localhost.chain.pem"), const std::string& key = pki("localhost.key")) {
    if (!nginx_.start(cert, key, kInfo + nginx_extra, listen_extra)) return false;
    ProxyOptions o;
    o.workers = 1;
    o.upstream_servers = {"127.0.0.1:" + std::to_string(nginx_.port())};
    o.upstream_extra = upstream_extra + "connect_timeout = \"3s\"\n";
    if (!tls_lines.empty()) o.upstream_extra += "tls = { " + tls_lines + " }\n";
    return start_proxy(o);
  }
  HttpResponse get(const std::string& path, bool http2 = false) {
    HttpRequest r;
    r.path = path;
    r.http2 = http2;
    return http(port(), r);
  }
  std::string warnings() const { return read_file(dir_.file("tlsfront.err")) + read_file(dir_.file("tlsfront.out")); }

  Nginx nginx_{dir_};
  const std::string ca_ = "trusted_ca = \"" + pki("root.pem") + "\"";
};

TEST_F(UpstreamTls, Http1VerifiedByIpAddressAndKeptAlive) {
  ASSERT_TRUE(start(ca_));
  for (int i = 0; i < 2; ++i) {
    HttpResponse r = get("/info");
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    ASSERT_EQ(r.status, 200) << r.body;
    // A server named by IP address: no SNI (RFC 6066 §3), the certificate's IP SAN checked.
    EXPECT_EQ(r.body, "HTTP/1.1 sni= reused=. client=\n");
  }
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_string(lines[0], "upstream_protocol"), std::string("http/1.1")) << lines[0];
  EXPECT_EQ(json_raw(lines[0], "upstream_connection_reused"), std::string("false")) << lines[0];
  EXPECT_EQ(json_raw(lines[1], "upstream_connection_reused"), std::string("true")) << lines[1];
}

TEST_F(UpstreamTls, ServerNameIsSentAndVerified) {
  ASSERT_TRUE(start(ca_ + ", server_name = \"localhost\""));
  HttpResponse r = get("/info");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "HTTP/1.1 sni=localhost reused=. client=\n");
}

TEST_F(UpstreamTls, NewConnectionsResumeTheLastSession) {
  ASSERT_TRUE(start(ca_, "keepalive = 0\n"));  // a new connection per request
  std::string seen;
  for (int i = 0; i < 3; ++i) {
    HttpResponse r = get("/info");
    ASSERT_EQ(r.status, 200) << r.error << r.body;
    seen += r.body;
  }
  EXPECT_EQ(seen,
            "HTTP/1.1 sni= reused=. client=\nHTTP/1.1 sni= reused=r client=\nHTTP/1.1 sni= reused=r client=\n");
  const std::string labels = "{upstream=\"backend\",server=\"127.0.0.1:" + std::to_string(nginx_.port()) + "\"}";
  auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(m["tlsfront_upstream_tls_handshakes_total" + labels], 3);
  EXPECT_EQ(m["tlsfront_upstream_tls_resumed_total" + labels], 2);
}

TEST_F(UpstreamTls, SessionReuseOffMakesFullHandshakes) {
  ASSERT_TRUE(start(ca_ + ", session_reuse = false", "keepalive = 0\n"));
  for (int i = 0; i < 2; ++i) {
    HttpResponse r = get("/info");
    ASSERT_EQ(r.status, 200) << r.error << r.body;
    EXPECT_EQ(r.body, "HTTP/1.1 sni= reused=. client=\n");
  }
}

TEST_F(UpstreamTls, WrongNameIs502NamingWhy) {
  ASSERT_TRUE(start(ca_ + ", server_name = \"api.internal\""));
  HttpResponse r = get("/info");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("tls_handshake")) << lines[0];
  EXPECT_TRUE(wait_until([&] {
    return warnings().find("certificate verify failed: hostname mismatch (checked for \"api.internal\"") !=
           std::string::npos;
  })) << warnings();
}

TEST_F(UpstreamTls, VerifiedAgainstTheSystemStoreByDefault) {
  // The test root is not in the system's store: the private CA must be named.
  ASSERT_TRUE(start("server_name = \"localhost\""));
  HttpResponse r = get("/info");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  EXPECT_TRUE(wait_until([&] {
    return warnings().find("certificate verify failed: unable to get local issuer certificate") != std::string::npos;
  })) << warnings();
}

TEST_F(UpstreamTls, VerifyOffTakesAnyCertificate) {
  // other-name: issued for other.example, not for 127.0.0.1.
  ASSERT_TRUE(start("verify = false", "", "", "", pki("other-name.chain.pem"), pki("other-name.key")));
  HttpResponse r = get("/info");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
}

TEST_F(UpstreamTls, HandshakeFailureMovesToTheNextServer) {
  ASSERT_TRUE(nginx_.start(pki("localhost.chain.pem"), pki("localhost.key"), kInfo));
  // A second nginx with a certificate for another name, in its own prefix.
  TempDir dir2;
  Nginx bad(dir2);
  ASSERT_TRUE(bad.start(pki("other-name.chain.pem"), pki("other-name.key"), kInfo));
  ProxyOptions o;
  o.workers = 1;
  const std::string bad_addr = "127.0.0.1:" + std::to_string(bad.port());
  const std::string good_addr = "127.0.0.1:" + std::to_string(nginx_.port());
  o.upstream_servers = {bad_addr, good_addr};
  o.upstream_extra = "tls = { " + ca_ + " }\nbalance = \"round_robin\"\n";
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = get("/info");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200) << r.body;  // the first request starts at the first server
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_addr"), bad_addr + ", " + good_addr) << lines[0];
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("tls_handshake")) << lines[0];
}

TEST_F(UpstreamTls, ClientCertificateForAServerThatAsks) {
  const std::string ask = "    ssl_verify_client on;\n    ssl_client_certificate " + pki("root.pem") +
                          ";\n    ssl_verify_depth 2;\n";
  ASSERT_TRUE(start(ca_ + ", certificate = \"" + pki("client.chain.pem") + "\", key = \"" + pki("client.key") + "\"",
                    "", ask));
  HttpResponse r = get("/info");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "HTTP/1.1 sni= reused=. client=CN=tlsfront test client\n");
}

TEST_F(UpstreamTls, NoClientCertificateIsTheServersAnswer) {
  const std::string ask = "    ssl_verify_client on;\n    ssl_client_certificate " + pki("root.pem") + ";\n";
  ASSERT_TRUE(start(ca_, "", ask));
  HttpResponse r = get("/info");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 400);  // nginx: "No required SSL certificate was sent"
}

TEST_F(UpstreamTls, Http2OverTlsCarriesHttp1AndHttp2Clients) {
  ASSERT_TRUE(start(ca_, "protocol = \"h2\"\n", "", "http2"));
  HttpResponse a = get("/info", /*http2=*/false);
  HttpResponse b = get("/info", /*http2=*/true);
  ASSERT_EQ(a.status, 200) << a.error << a.body;
  ASSERT_EQ(b.status, 200) << b.error << b.body;
  EXPECT_EQ(a.body, "HTTP/2.0 sni= reused=. client=\n");
  EXPECT_EQ(b.body, "HTTP/2.0 sni= reused=. client=\n");
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_string(lines[0], "upstream_protocol"), std::string("h2")) << lines[0];
  EXPECT_EQ(json_raw(lines[1], "upstream_connection_reused"), std::string("true")) << lines[1];
}

TEST_F(UpstreamTls, Http2NeedsTheServerToSelectH2) {
  ASSERT_TRUE(start(ca_, "protocol = \"h2\"\n"));  // nginx without http2: no ALPN h2
  HttpResponse r = get("/info");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 502);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("tls_handshake")) << lines[0];
  // nginx refuses a ClientHello whose ALPN it cannot serve (RFC 7301 §3.2).
  EXPECT_TRUE(wait_until([&] {
    return warnings().find("no application protocol") != std::string::npos &&
           warnings().find("the server does not speak HTTP/2 over TLS") != std::string::npos;
  })) << warnings();
}

TEST_F(UpstreamTls, SilentServerTimesOutInTheHandshake) {
  // Accepts TCP (the kernel's backlog) and never answers the ClientHello.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ProxyOptions o;
  o.workers = 1;
  o.upstream_servers = {"127.0.0.1:" + std::to_string(ntohs(addr.sin_port))};
  o.upstream_extra = "connect_timeout = \"1s\"\ntls = { " + ca_ + " }\n";
  ASSERT_TRUE(start_proxy(o));
  HttpResponse r = get("/info");
  ::close(fd);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 504);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_string(lines[0], "upstream_error"), std::string("timeout_connect")) << lines[0];
  EXPECT_TRUE(wait_until([&] {
    return warnings().find("upstream timed out during the TLS handshake") != std::string::npos;
  })) << warnings();
}

TEST_F(UpstreamTls, ReloadReadsTheTrustFileAgain) {
  // The same [[upstream]] text before and after: its pools are kept, and
  // the reloaded generation's context (the file's new contents) is theirs.
  const std::string ca = dir_.file("upstream-ca.pem");
  write_file(ca, read_file(pki("other-root.pem")));
  ASSERT_TRUE(start("trusted_ca = \"" + ca + "\""));
  EXPECT_EQ(get("/info").status, 502);  // not the issuer
  write_file(ca, read_file(pki("root.pem")));
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return warnings().find("reload: generation 2 is live") != std::string::npos; }))
      << warnings();
  HttpResponse r = get("/info");
  EXPECT_EQ(r.status, 200) << r.error << r.body;
}

TEST_F(UpstreamTls, ReloadRetiresConnectionsMadeUnderTheOldTrust) {
  // A CA removed from the trust file at a reload: the connection it
  // verified, kept alive in the pool, must not carry the next request.
  const std::string ca = dir_.file("upstream-ca.pem");
  write_file(ca, read_file(pki("root.pem")));
  ASSERT_TRUE(start("trusted_ca = \"" + ca + "\""));
  ASSERT_EQ(get("/info").status, 200);
  write_file(ca, read_file(pki("other-root.pem")));
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return warnings().find("reload: generation 2 is live") != std::string::npos; }))
      << warnings();
  HttpResponse r = get("/info");
  EXPECT_EQ(r.status, 502) << r.body;
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_string(lines[1], "upstream_error"), std::string("tls_handshake")) << lines[1];
}

}  // namespace
}  // namespace tlsfront::itest
