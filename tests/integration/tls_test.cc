// TLS front end: protocol versions, session resumption (as the access log
// reports it), handshake timing fields, ALPN, SNI, the handshake timeout.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

using H1H1 = ProxyTest;

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;

// One request with Connection: close on a fresh TLS connection; returns the
// session for resumption.
SessionPtr one_request(int port, const TlsOptions& o, const std::string& path, bool expect_reused) {
  TlsClient c;
  EXPECT_TRUE(c.connect(port, o)) << c.error();
  EXPECT_EQ(c.session_reused(), expect_reused) << path;
  EXPECT_TRUE(c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  auto r = c.read_response();
  EXPECT_TRUE(r.has_value()) << path;
  if (r) EXPECT_EQ(r->status, 200);
  // Read to the close so TLS 1.3 NewSessionTicket messages are processed.
  c.read_all(milliseconds(5'000));
  return SessionPtr(c.take_session());
}

// A full handshake then a resumed one at `version`; returns the two log lines,
// first connection's first (the writer may order two workers' lines either way).
std::vector<std::string> resume_once(int port, const Proxy& proxy, int version) {
  TlsOptions o;
  o.min_version = version;
  o.max_version = version;
  SessionPtr s = one_request(port, o, "/first", false);
  EXPECT_TRUE(s && SSL_SESSION_is_resumable(s.get())) << "server issued no resumable session";
  if (!s) return {};
  o.session = s.get();
  SessionPtr s2 = one_request(port, o, "/second", true);
  auto lines = proxy.wait_log_lines(2);
  EXPECT_EQ(lines.size(), 2u);
  if (lines.size() != 2) return {};
  if (json_string(lines[0], "path") != "/first") std::swap(lines[0], lines[1]);
  return lines;
}

// Session resumption at `version`, as the client and the access log see it.
void check_resumption(int port, const Proxy& proxy, int version, const char* name) {
  auto lines = resume_once(port, proxy, version);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_string(lines[0], "path"), std::string("/first"));
  EXPECT_EQ(json_raw(lines[0], "ssl_session_reused"), std::string("false")) << lines[0];
  EXPECT_EQ(json_raw(lines[1], "ssl_session_reused"), std::string("true")) << lines[1];
  for (const auto& l : lines) {
    EXPECT_EQ(json_string(l, "ssl_protocol"), name) << l;
    EXPECT_TRUE(json_string(l, "ssl_cipher").has_value()) << l;
    auto hs = json_raw(l, "tls_handshake_ms");
    ASSERT_TRUE(hs.has_value()) << l;
    EXPECT_NE(*hs, "null") << l;
  }
}

TEST_F(H1H1, Tls13SessionResumed) {
  ASSERT_TRUE(start_proxy());
  check_resumption(port(), proxy_, TLS1_3_VERSION, "TLSv1.3");
}

TEST_F(H1H1, Tls12SessionResumed) {
  ASSERT_TRUE(start_proxy());
  check_resumption(port(), proxy_, TLS1_2_VERSION, "TLSv1.2");
}

// SNI is a property of the connection: a resumed connection that sent SNI
// logs it like a full handshake does.
TEST_F(H1H1, Tls13ResumedConnectionLogsSni) {
  ASSERT_TRUE(start_proxy());
  auto lines = resume_once(port(), proxy_, TLS1_3_VERSION);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_raw(lines[1], "ssl_session_reused"), std::string("true")) << lines[1];
  for (const auto& l : lines) EXPECT_EQ(json_string(l, "sni"), std::string("localhost")) << l;
}

TEST_F(H1H1, Tls12ResumedConnectionLogsSni) {
  ASSERT_TRUE(start_proxy());
  auto lines = resume_once(port(), proxy_, TLS1_2_VERSION);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_raw(lines[1], "ssl_session_reused"), std::string("true")) << lines[1];
  for (const auto& l : lines) EXPECT_EQ(json_string(l, "sni"), std::string("localhost")) << l;
}

// TLS 1.2 resumption by session ID only (the client sends no ticket
// extension): the server-side session cache.
TEST_F(H1H1, Tls12SessionIdResumed) {
  ASSERT_TRUE(start_proxy());
  TlsOptions o;
  o.min_version = o.max_version = TLS1_2_VERSION;
  o.no_ticket = true;
  SessionPtr s = one_request(port(), o, "/first", false);
  ASSERT_TRUE(s);
  unsigned int id_len = 0;
  SSL_SESSION_get_id(s.get(), &id_len);
  ASSERT_GT(id_len, 0u) << "no session ID";
  o.session = s.get();
  SessionPtr s2 = one_request(port(), o, "/second", true);
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  if (json_string(lines[0], "path") != "/first") std::swap(lines[0], lines[1]);
  EXPECT_EQ(json_raw(lines[0], "ssl_session_reused"), std::string("false")) << lines[0];
  EXPECT_EQ(json_raw(lines[1], "ssl_session_reused"), std::string("true")) << lines[1];
}

TEST_F(H1H1, CurlSessionResumedThroughShare) {
  ASSERT_TRUE(start_proxy());
  CURLSH* share = curl_share_init();
  curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  std::string resolve_entry = "localhost:" + std::to_string(port()) + ":127.0.0.1";
  curl_slist* resolve = curl_slist_append(nullptr, resolve_entry.c_str());
  std::string ca = pki("root.pem");
  for (int i = 0; i < 2; ++i) {
    CURL* c = curl_easy_init();
    std::string url = "https://localhost:" + std::to_string(port()) + "/curl" + std::to_string(i);
    std::string body;
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
    curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
    curl_easy_setopt(c, CURLOPT_SHARE, share);
    curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10'000L);
    curl_easy_setopt(
        c, CURLOPT_WRITEFUNCTION, +[](char* d, size_t s, size_t n, void* u) -> size_t {
          static_cast<std::string*>(u)->append(d, s * n);
          return s * n;
        });
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    ASSERT_EQ(rc, CURLE_OK) << curl_easy_strerror(rc);
    EXPECT_EQ(status, 200);
  }
  curl_slist_free_all(resolve);
  curl_share_cleanup(share);
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  if (json_string(lines[0], "path") != "/curl0") std::swap(lines[0], lines[1]);
  EXPECT_EQ(json_raw(lines[0], "ssl_session_reused"), std::string("false")) << lines[0];
  EXPECT_EQ(json_raw(lines[1], "ssl_session_reused"), std::string("true")) << lines[1];
  EXPECT_EQ(json_string(lines[1], "alpn"), std::string("http/1.1")) << lines[1];
}

TEST_F(H1H1, HandshakeMsOnlyOnFirstRequest) {
  ASSERT_TRUE(start_proxy());
  TlsClient c;
  ASSERT_TRUE(c.connect(port())) << c.error();
  ASSERT_TRUE(c.write("GET /1 HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  ASSERT_TRUE(c.read_response().has_value());
  ASSERT_TRUE(c.write("GET /2 HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  ASSERT_TRUE(c.read_response().has_value());
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  if (json_string(lines[0], "path") != "/1") std::swap(lines[0], lines[1]);
  auto first = json_raw(lines[0], "tls_handshake_ms");
  ASSERT_TRUE(first.has_value()) << lines[0];
  EXPECT_NE(*first, "null") << lines[0];
  EXPECT_GE(std::stod(*first == "null" ? "-1" : *first), 0.0);
  EXPECT_EQ(json_raw(lines[1], "tls_handshake_ms"), std::string("null")) << lines[1];
  EXPECT_EQ(json_raw(lines[0], "connection_id"), json_raw(lines[1], "connection_id"));
}

TEST_F(H1H1, AlpnAndSniLogged) {
  ProxyOptions po;
  po.listen_extra = "alpn = [\"http/1.1\"]\n";
  ASSERT_TRUE(start_proxy(po));
  // Offers h2 first: the server (HTTP/1.1 only here) must still pick http/1.1.
  {
    TlsOptions o;
    o.alpn = {"h2", "http/1.1"};
    TlsClient c;
    ASSERT_TRUE(c.connect(port(), o)) << c.error();
    EXPECT_EQ(c.alpn_selected(), "http/1.1");
    ASSERT_TRUE(c.write("GET /alpn HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    c.read_all();
  }
  // No ALPN and no SNI at all.
  {
    TlsOptions o;
    o.alpn = {};
    o.sni = "";
    TlsClient c;
    ASSERT_TRUE(c.connect(port(), o)) << c.error();
    EXPECT_EQ(c.alpn_selected(), "");
    ASSERT_TRUE(c.write("GET /noalpn HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
  }
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  if (json_string(lines[0], "path") != "/alpn") std::swap(lines[0], lines[1]);
  EXPECT_EQ(json_string(lines[0], "alpn"), std::string("http/1.1")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "sni"), std::string("localhost")) << lines[0];
  EXPECT_EQ(json_string(lines[0], "protocol"), std::string("HTTP/1.1")) << lines[0];
  EXPECT_EQ(json_raw(lines[1], "alpn"), std::string("null")) << lines[1];
  EXPECT_EQ(json_raw(lines[1], "sni"), std::string("null")) << lines[1];
}

TEST_F(H1H1, CurlTls12Pinned) {
  ASSERT_TRUE(start_proxy());
  HttpRequest req;
  req.path = "/tls12";
  req.ssl_version = static_cast<long>(CURL_SSLVERSION_TLSv1_2) | static_cast<long>(CURL_SSLVERSION_MAX_TLSv1_2);
  HttpResponse r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  req.path = "/tls13";
  req.ssl_version = static_cast<long>(CURL_SSLVERSION_TLSv1_3) | static_cast<long>(CURL_SSLVERSION_MAX_TLSv1_3);
  r = http(port(), req);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  auto lines = proxy_.wait_log_lines(2);
  ASSERT_EQ(lines.size(), 2u);
  if (json_string(lines[0], "path") != "/tls12") std::swap(lines[0], lines[1]);
  EXPECT_EQ(json_string(lines[0], "ssl_protocol"), std::string("TLSv1.2")) << lines[0];
  EXPECT_EQ(json_string(lines[1], "ssl_protocol"), std::string("TLSv1.3")) << lines[1];
}

TEST_F(H1H1, Tls13OnlyRefusesTls12) {
  ProxyOptions o;
  o.tls_extra = "protocols = [\"TLSv1.3\"]\n";
  ASSERT_TRUE(start_proxy(o));
  TlsOptions t;
  t.min_version = t.max_version = TLS1_2_VERSION;
  TlsClient c;
  EXPECT_FALSE(c.connect(port(), t));
  EXPECT_NE(c.error().find("protocol version"), std::string::npos) << c.error();
}

TEST_F(H1H1, Tls11Refused) {
  ASSERT_TRUE(start_proxy());
  TlsOptions o;
  o.min_version = TLS1_1_VERSION;
  o.max_version = TLS1_1_VERSION;
  TlsClient c;
  EXPECT_FALSE(c.connect(port(), o));
  // The server answered with a protocol_version alert (not a client-side
  // refusal to offer TLS 1.1 at all).
  EXPECT_NE(c.error().find("protocol version"), std::string::npos) << c.error();
  // Nothing was logged for it as a request, and the proxy still serves.
  HttpResponse r = http_get(port(), "/after");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
}

TEST_F(H1H1, HandshakeTimeoutClosesConnection) {
  ProxyOptions o;
  o.extra = "[timeouts]\nhandshake = \"1s\"\n";
  ASSERT_TRUE(start_proxy(o));
  // A silent client, and one that stops in the middle of a ClientHello record.
  int silent = tcp_connect(port());
  int partial = tcp_connect(port());
  ASSERT_GE(silent, 0);
  ASSERT_GE(partial, 0);
  ASSERT_EQ(::send(partial, "\x16\x03\x01\x02\x00\x01", 6, MSG_NOSIGNAL), 6);
  auto start = Clock::now();
  EXPECT_TRUE(wait_for_close(silent, milliseconds(5'000)));
  EXPECT_TRUE(wait_for_close(partial, milliseconds(5'000)));
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  EXPECT_GE(took.count(), 700);
  EXPECT_LT(took.count(), 4'000);
  ::close(silent);
  ::close(partial);
  // A normal client is unaffected.
  HttpResponse r = http_get(port(), "/after");
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
}

TEST_F(H1H1, KeyUpdateFloodIsCutOffAndCounted) {
  // A TLS 1.3 client that loops on KeyUpdate asking for ours (RFC 8446
  // §4.6.3) and never reads: each one costs the worker two key derivations.
  // Past TlsStream's bound it gets unexpected_message and the connection
  // closes, counted; a well-behaved client on the same worker is served.
  ProxyOptions o;
  o.workers = 1;
  ASSERT_TRUE(start_proxy(o));
  TlsClient flood;
  TlsOptions t;
  t.min_version = TLS1_3_VERSION;
  ASSERT_TRUE(flood.connect(port(), t)) << flood.error();
  int sent = 0;
  for (; sent < 10'000; ++sent) {  // the server reads on and discards after it closed (lingering close)
    // Look for the server's alert now and then: its lingering close lasts
    // 2 s, and a client still writing after it (a slow one: 10,000 records
    // under ASan) gets RST, which discards the alert unread.
    if (sent % 32 == 31) {
      flood.read_available(milliseconds(0));
      if (flood.closed()) break;
    }
    if (SSL_key_update(flood.ssl(), SSL_KEY_UPDATE_REQUESTED) != 1) break;
    const int rc = SSL_do_handshake(flood.ssl());  // writes it
    if (rc != 1) {
      const int e = SSL_get_error(flood.ssl(), rc);
      if (e != SSL_ERROR_WANT_WRITE) break;    // the server closed
      flood.read_available(milliseconds(10));  // our socket buffer is full: has the server closed?
      if (flood.closed()) break;
    }
  }
  flood.read_all(milliseconds(10'000));
  EXPECT_TRUE(flood.closed()) << sent << " KeyUpdates sent";
  EXPECT_EQ(ERR_GET_REASON(ERR_peek_last_error()), SSL_R_SSLV3_ALERT_UNEXPECTED_MESSAGE) << flood.error();
  EXPECT_EQ(http_get(port(), "/after").status, 200);
  auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(m["tlsfront_client_floods_total{kind=\"tls_post_handshake\"}"], 1);
  EXPECT_NE(proxy_.process().err().find("TLS post-handshake message flood"), std::string::npos);
}

}  // namespace
}  // namespace tlsfront::itest
