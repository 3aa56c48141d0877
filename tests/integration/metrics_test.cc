// The admin endpoint: /metrics in Prometheus text format with exact counter
// deltas after a known sequence (full and resumed handshakes by kind, a
// failed handshake, requests by listener, route and status class (across a
// reload), upstream connections, ticket and session-cache counters),
// /healthz, and errors for other requests.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <curl/curl.h>
#include <openssl/ssl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <ctime>
#include <sstream>
#include <thread>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "harness.h"

namespace tlsfront::itest {
namespace {

class Metrics : public ProxyTest {
 protected:
  bool start(ProxyOptions o = {}) {  // [admin] on port 0: the proxy logs the port it got
    if (!start_proxy(o)) return false;
    admin_port_ = proxy_.admin_port();
    return admin_port_ > 0;
  }
  std::map<std::string, double> scrape() {
    const std::string r = plain_request(admin_port_, "GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
    EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r;
    const size_t body = r.find("\r\n\r\n");
    return parse_metrics(body == std::string::npos ? "" : std::string_view(r).substr(body + 4));
  }
  // Connects, sends `n` requests for `path`, keeps the session.
  SSL_SESSION* requests(TlsOptions o, int n, const std::string& path = "/", bool* reused = nullptr) {
    TlsClient c;
    EXPECT_TRUE(c.connect(port(), o)) << c.error();
    for (int i = 0; i < n; ++i) {
      EXPECT_TRUE(c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n"));
      EXPECT_TRUE(c.read_response());
    }
    if (reused) *reused = c.session_reused();
    return c.take_session();
  }
  int admin_port_ = 0;
};

TEST_F(Metrics, ExactCountersAfterAKnownSequence) {
  ASSERT_TRUE(start());
  // The readiness probe's connection must be closed and counted first.
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
  auto before = scrape();

  TlsOptions t13;
  t13.min_version = t13.max_version = TLS1_3_VERSION;
  SSL_SESSION* s13 = requests(t13, 3);  // full handshake, 3 x 200
  ASSERT_NE(s13, nullptr);
  TlsOptions resume13 = t13;
  resume13.session = s13;
  bool reused = false;
  SSL_SESSION_free(requests(resume13, 1, "/status/404", &reused));  // ticket resumption, a 404
  EXPECT_TRUE(reused);
  SSL_SESSION_free(s13);

  TlsOptions t12;
  t12.min_version = t12.max_version = TLS1_2_VERSION;
  t12.no_ticket = true;
  SSL_SESSION* s12 = requests(t12, 1);  // full handshake, session ID
  ASSERT_NE(s12, nullptr);
  TlsOptions resume12 = t12;
  resume12.session = s12;
  SSL_SESSION_free(requests(resume12, 1, "/", &reused));  // session cache resumption
  EXPECT_TRUE(reused);
  SSL_SESSION_free(s12);

  {  // a handshake that fails: no cipher in common (RSA key exchange; tlsfront offers ECDHE + AEAD only)
    TlsClient junk;
    TlsOptions plain;
    plain.max_version = TLS1_2_VERSION;
    plain.cipher_list = "AES128-SHA";
    EXPECT_FALSE(junk.connect(port(), plain));
  }
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
  auto after = scrape();
  auto delta = [&](const std::string& name) { return after[name] - before[name]; };

  EXPECT_EQ(delta("tlsfront_connections_accepted_total"), 5);
  EXPECT_EQ(delta("tlsfront_connections_total{protocol=\"http/1.1\"}"), 4);
  EXPECT_EQ(delta("tlsfront_tls_handshakes_total{kind=\"full\"}"), 2);
  EXPECT_EQ(delta("tlsfront_tls_handshakes_total{kind=\"resumed_ticket\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_handshakes_total{kind=\"resumed_cache\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_handshake_failures_total{reason=\"error\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_handshake_duration_seconds_count{kind=\"full\"}"), 2);
  EXPECT_EQ(delta("tlsfront_tls_handshake_duration_seconds_count{kind=\"resumed_ticket\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_handshake_duration_seconds_count{kind=\"resumed_cache\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_handshake_duration_seconds_bucket{kind=\"full\",le=\"+Inf\"}"), 2);
  // The junk handshake had no cipher in common: refused, and counted by what it offered.
  EXPECT_EQ(delta("tlsfront_tls_handshakes_refused_total{reason=\"no_shared_cipher\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_client_hello_versions_total{max_version=\"TLSv1.3\"}"), 2);
  EXPECT_EQ(delta("tlsfront_tls_client_hello_versions_total{max_version=\"TLSv1.2\"}"), 3);
  double v13 = 0, v12 = 0;
  for (const auto& [series, value] : after) {
    if (series.rfind("tlsfront_tls_negotiated_total{version=\"TLSv1.3\",cipher=\"TLS_", 0) == 0) v13 += value - before[series];
    if (series.rfind("tlsfront_tls_negotiated_total{version=\"TLSv1.2\",cipher=\"ECDHE-ECDSA-", 0) == 0) v12 += value - before[series];
  }
  EXPECT_EQ(v13, 2);
  EXPECT_EQ(v12, 2);
  EXPECT_EQ(delta("tlsfront_requests_total{listener=\"127.0.0.1:0\",route=\"*/\",protocol=\"HTTP/1.1\",code=\"2xx\"}"), 5);
  EXPECT_EQ(delta("tlsfront_requests_total{listener=\"127.0.0.1:0\",route=\"*/\",protocol=\"HTTP/1.1\",code=\"4xx\"}"), 1);
  EXPECT_EQ(delta("tlsfront_request_duration_seconds_count"), 6);
  EXPECT_EQ(delta("tlsfront_request_duration_seconds_bucket{le=\"+Inf\"}"), 6);
  EXPECT_EQ(delta("tlsfront_tickets_issued_total"), 1);  // session_ticket_count after the TLS 1.3 full handshake
  EXPECT_EQ(delta("tlsfront_tickets_decrypted_total{key=\"current\"}"), 1);
  EXPECT_EQ(delta("tlsfront_session_cache_hits_total"), 1);
  const std::string server = "{upstream=\"backend\",server=\"" + backend_.address() + "\"}";
  EXPECT_EQ(delta("tlsfront_upstream_connections_created_total" + server) +
                delta("tlsfront_upstream_connections_reused_total" + server),
            6);
  EXPECT_GE(delta("tlsfront_upstream_connections_created_total" + server), 1);
  EXPECT_EQ(after["tlsfront_config_generation"], 1);
  EXPECT_EQ(after["tlsfront_ticket_keys"], 1);
  // The log writer thread writes batches asynchronously.
  EXPECT_TRUE(wait_until([&] {
    return scrape()["tlsfront_access_log_bytes_total"] > before["tlsfront_access_log_bytes_total"];
  }));
}

// The downgrade alarm's inputs: handshakes tlsfront refuses are counted by
// reason and by the highest version their ClientHello offered.
TEST_F(Metrics, RefusedHandshakesByReasonAndOfferedVersion) {
  ProxyOptions o;
  o.listen_extra = "alpn = [\"h2\", \"http/1.1\"]\n";
  o.tls_extra = "strict_sni = true\n";
  ASSERT_TRUE(start(o));
  // The readiness probe's connection must be closed and counted first.
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
  auto before = scrape();
  TlsOptions tls11;  // a TLS 1.1 client (OpenSSL needs security level 0 to offer it)
  tls11.min_version = tls11.max_version = TLS1_1_VERSION;
  tls11.cipher_list = "DEFAULT:@SECLEVEL=0";
  tls11.alpn = {"h2"};
  TlsOptions unknown_name;
  unknown_name.sni = "unknown.example";
  unknown_name.alpn = {"h2"};
  TlsOptions other_alpn;  // a protocol the listener does not speak
  other_alpn.alpn = {"spdy/3.1"};
  for (const TlsOptions& t : {tls11, unknown_name, other_alpn}) {
    TlsClient c;
    EXPECT_FALSE(c.connect(port(), t)) << t.sni;
  }
  {
    TlsOptions h2;
    h2.alpn = {"h2"};
    TlsClient ok;
    EXPECT_TRUE(ok.connect(port(), h2)) << ok.error();
  }
  // Every connection closed: each handshake has been counted, either way.
  ASSERT_TRUE(wait_until([&] {
    auto m = scrape();
    return m["tlsfront_connections_active"] == 0 &&
           m["tlsfront_connections_accepted_total"] - before["tlsfront_connections_accepted_total"] == 4;
  }));
  auto after = scrape();
  auto delta = [&](const std::string& name) { return after[name] - before[name]; };
  EXPECT_EQ(delta("tlsfront_tls_handshakes_refused_total{reason=\"protocol_version\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_handshakes_refused_total{reason=\"sni_refused\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_handshakes_refused_total{reason=\"no_alpn_overlap\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_handshakes_refused_total{reason=\"no_shared_cipher\"}"), 0);
  EXPECT_EQ(delta("tlsfront_tls_client_hello_versions_total{max_version=\"TLSv1.1\"}"), 1);
  EXPECT_EQ(delta("tlsfront_tls_client_hello_versions_total{max_version=\"TLSv1.3\"}"), 3);
}

// [limits] max_connections: at the limit the worker stops accepting (the
// next client waits in the backlog, its handshake pending) until a
// connection closes; then that client is served.
TEST_F(Metrics, MaxConnectionsPausesAcceptingUntilOneCloses) {
  ProxyOptions o;
  o.workers = 1;
  o.extra = "[limits]\nmax_connections = 2\n";
  ASSERT_TRUE(start(o));
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
  auto first = std::make_unique<TlsClient>();
  TlsClient second;
  ASSERT_TRUE(first->connect(port())) << first->error();
  ASSERT_TRUE(second.connect(port())) << second.error();
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_accept_paused_workers"] == 1; }));
  EXPECT_EQ(scrape()["tlsfront_connection_limit_reached_total"], 1);

  std::atomic<bool> third_done{false};
  bool third_ok = false;
  std::thread third([&] {
    TlsClient c;
    third_ok = c.connect(port(), {}, milliseconds(20'000));
    if (third_ok) {
      c.write("GET /third HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
      auto r = c.read_response();
      third_ok = r && r->status == 200;
    }
    third_done = true;
  });
  // It waits in the backlog: not accepted while the two are open.
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_accepted_total"] >= 2; }));
  EXPECT_FALSE(third_done.load());
  EXPECT_EQ(scrape()["tlsfront_connections_active"], 2);
  first.reset();  // one closes: accepting resumes
  third.join();
  EXPECT_TRUE(third_ok);
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_accept_paused_workers"] == 0; }));
}

// A key file's key is active "always"; its age is that of the file (its
// modification time), not of the beginning of time.
TEST_F(Metrics, TicketKeyAgeOfAKeyFileCountsFromItsModificationTime) {
  const std::string key = dir_.file("ticket.key");
  write_file(key, read_file(pki("ticket-key-80.key")));
  ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
  const timespec hour_ago[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, key.c_str(), hour_ago, 0), 0);
  ProxyOptions o;
  o.tls_extra = "[tls.ticket_keys]\nsource = \"files\"\nfiles = [\"" + key + "\"]\n";
  ASSERT_TRUE(start(o));
  auto m = scrape();
  ASSERT_EQ(m.count("tlsfront_ticket_key_age_seconds"), 1u);
  EXPECT_GE(m["tlsfront_ticket_key_age_seconds"], 3600);
  EXPECT_LT(m["tlsfront_ticket_key_age_seconds"], 3600 + 600);  // not the epoch, nor time_point::min()
}

// An ECDSA and an RSA certificate with the same subject each get their own
// OCSP series (parse_metrics fails on a duplicate).
TEST_F(Metrics, EcdsaAndRsaCertificatesOfOneSubjectHaveDistinctOcspSeries) {
  ProxyOptions o;
  const std::string ocsp =
      "[certificate.ocsp]\nresponder = \"http://127.0.0.1:" + std::to_string(free_port()) + "/\"\n";
  o.certificates = "[[certificate]]\ncert = \"" + pki("localhost.chain.pem") + "\"\nkey = \"" + pki("localhost.key") +
                   "\"\n" + ocsp + "[[certificate]]\ncert = \"" + pki("rsa.chain.pem") + "\"\nkey = \"" +
                   pki("rsa.key") + "\"\n" + ocsp;
  ASSERT_TRUE(start(o));
  auto m = scrape();
  std::vector<std::string> present;
  for (const auto& [series, value] : m) {
    if (series.rfind("tlsfront_ocsp_staple_present{", 0) == 0) present.push_back(series);
  }
  ASSERT_EQ(present.size(), 2u);
  EXPECT_NE(present[0].find("certificate=\"CN=localhost\",key_type=\"ecdsa\",sha256=\""), std::string::npos)
      << present[0];
  EXPECT_NE(present[1].find("certificate=\"CN=localhost\",key_type=\"rsa\",sha256=\""), std::string::npos)
      << present[1];
}

TEST_F(Metrics, Http2ConnectionsAndStreamsAreCounted) {
  ASSERT_TRUE(start());
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
  auto before = scrape();
  {
    CurlClient curl(port());  // one connection, three streams
    for (int i = 0; i < 3; ++i) {
      HttpRequest req;
      req.http2 = true;
      req.path = i == 2 ? "/status/503" : "/";
      HttpResponse r = curl.perform(req);
      EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_2_0) << r.error;
    }
  }
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
  auto after = scrape();
  auto delta = [&](const std::string& name) { return after[name] - before[name]; };
  EXPECT_EQ(delta("tlsfront_connections_total{protocol=\"h2\"}"), 1);
  EXPECT_EQ(delta("tlsfront_connections_total{protocol=\"http/1.1\"}"), 0);
  EXPECT_EQ(delta("tlsfront_requests_total{listener=\"127.0.0.1:0\",route=\"*/\",protocol=\"HTTP/2.0\",code=\"2xx\"}"), 2);
  EXPECT_EQ(delta("tlsfront_requests_total{listener=\"127.0.0.1:0\",route=\"*/\",protocol=\"HTTP/2.0\",code=\"5xx\"}"), 1);
}

// tlsfront_requests_total by listener (its name, else its address as
// written) and route (its name, else its match), and across a reload that
// changes the routes: a route that stays keeps its series (no reset), one
// whose index moved is not counted under another's label, a new one starts
// at 0 and one that is gone disappears.
TEST_F(Metrics, RequestsByListenerAndRouteAcrossAReloadThatChangesTheRoutes) {
  ProxyOptions o;
  o.listen_extra = "name = \"public\"";
  o.cleartext = "redirect_https = false";
  o.routes = "[[route]]\nname = \"api\"\npath_prefix = \"/api/\"\nupstream = \"backend\"\n\n"
             "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\n\n";
  ASSERT_TRUE(start(o));
  auto cleartext_get = [&](const std::string& path) {
    return plain_request(proxy_.cleartext_port(),
                         "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                         milliseconds(5'000), kCleartextIp);
  };
  auto tls_get = [&](const std::string& path) {
    TlsClient c;
    EXPECT_TRUE(c.connect(port())) << c.error();
    EXPECT_TRUE(c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    auto r = c.read_response();
    return r ? r->status : 0;
  };
  auto series = [](const std::string& listener, const std::string& route, const std::string& code) {
    return "tlsfront_requests_total{listener=\"" + listener + "\",route=\"" + route +
           "\",protocol=\"HTTP/1.1\",code=\"" + code + "\"}";
  };
  EXPECT_EQ(tls_get("/api/a"), 200);
  EXPECT_EQ(tls_get("/api/b"), 200);
  EXPECT_EQ(tls_get("/other"), 200);
  EXPECT_NE(cleartext_get("/status/404").find(" 404 "), std::string::npos);
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
  auto m = scrape();
  EXPECT_EQ(m[series("public", "api", "2xx")], 2);
  EXPECT_EQ(m[series("public", "*/", "2xx")], 1);
  EXPECT_EQ(m[series("127.0.0.2:0", "*/", "4xx")], 1);

  // "static" first (the others' indices move), "*/" renamed "rest".
  o.upstream_servers = {backend_.address()};
  o.routes = "[[route]]\nname = \"static\"\npath_prefix = \"/static/\"\nupstream = \"backend\"\n\n"
             "[[route]]\nname = \"api\"\npath_prefix = \"/api/\"\nupstream = \"backend\"\n\n"
             "[[route]]\nname = \"rest\"\npath_prefix = \"/\"\nupstream = \"backend\"\n\n";
  write_file(proxy_.config_path(), make_config(o, kAnyPort, proxy_.access_log()));
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] {
    return proxy_.process().err().find("reload: generation 2 is live") != std::string::npos;
  })) << proxy_.process().err();
  EXPECT_EQ(tls_get("/api/c"), 200);
  EXPECT_EQ(tls_get("/static/x"), 200);
  ASSERT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
  m = scrape();
  EXPECT_EQ(m[series("public", "api", "2xx")], 3);
  EXPECT_EQ(m[series("public", "static", "2xx")], 1);
  EXPECT_EQ(m[series("127.0.0.2:0", "rest", "4xx")], 0);
  for (const auto& [name, value] : m) {
    EXPECT_EQ(name.find("route=\"*/\""), std::string::npos) << name << " outlived its route";
  }
}

TEST_F(Metrics, HealthAndErrors) {
  ASSERT_TRUE(start());
  std::string r = plain_request(admin_port_, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("\r\n\r\nok\n"), std::string::npos) << r;
  r = plain_request(admin_port_, "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 404 ", 0), 0u) << r;
  r = plain_request(admin_port_, "POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 405 ", 0), 0u) << r;
  r = plain_request(admin_port_, "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 431 ", 0), 0u) << r;
  r = plain_request(admin_port_, "garbage\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 400 ", 0), 0u) << r;
  r = plain_request(admin_port_, "HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_EQ(r.find("tlsfront_"), std::string::npos) << "HEAD has no body";
  // The proxy still serves.
  EXPECT_EQ(http_get(port(), "/").status, 200);
}

TEST_F(Metrics, CertificateExpiryComesFromTheServedLeaf) {
  ASSERT_TRUE(start());
  // The test leaf's notAfter, read from the file as an operator would.
  X509* leaf = nullptr;
  if (FILE* f = std::fopen(pki("localhost.chain.pem").c_str(), "r")) {
    leaf = PEM_read_X509(f, nullptr, nullptr, nullptr);
    std::fclose(f);
  }
  ASSERT_NE(leaf, nullptr);
  int days = 0, secs = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(leaf)), 1);
  X509_free(leaf);
  const double expected = static_cast<double>(days) * 86400 + secs;
  double seen = 0;
  size_t series = 0;
  for (const auto& [name, value] : scrape_metrics(admin_port_)) {
    if (!name.starts_with("tlsfront_certificate_expiry_seconds{certificate=\"CN=localhost\"")) continue;
    ++series;
    seen = value;
  }
  ASSERT_EQ(series, 1u);
  EXPECT_NEAR(seen, expected, 120.0);  // the scrape came a moment later
  EXPECT_GT(seen, 86400.0 * 365);      // the test PKI's leaf has years left
}

// Idle connections filling every admin slot do not lock out /healthz: the
// oldest that has not sent its head makes room.
TEST_F(Metrics, IdleConnectionsCannotLockOutHealthChecks) {
  ASSERT_TRUE(start());
  std::vector<int> idle;
  for (int i = 0; i < 80; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(admin_port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    idle.push_back(fd);
  }
  for (int i = 0; i < 5; ++i) {
    const std::string r = plain_request(admin_port_, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << "attempt " << i << ": " << r;
  }
  for (int fd : idle) ::close(fd);
}

TEST_F(Metrics, HealthzIs503WhileDraining) {
  ASSERT_TRUE(start());
  HttpResponse slow;
  std::thread client([&] { slow = http_get(port(), "/slow/1500"); });
  ASSERT_TRUE(wait_until([&] { return backend_.count("req") >= 1; }));
  proxy_.process().signal(SIGTERM);
  EXPECT_TRUE(wait_until([&] {
    return plain_request(admin_port_, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n").rfind("HTTP/1.1 503 ", 0) == 0;
  }));
  client.join();
  EXPECT_EQ(slow.status, 200);
  auto st = proxy_.process().wait_exit(milliseconds(5'000));  // before TearDown's own SIGTERM
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->code, 0);
}

// A lingering close (read and discard until the client closes, at most 2 s)
// is only for closes the client may not expect.
class Linger : public Metrics {
 protected:
  // Sends `request` on a new connection and reads until the proxy closes;
  // the answer must start with `status_line`. Our end stays open.
  std::unique_ptr<TlsClient> answered(const std::string& request, const std::string& status_line) {
    EXPECT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }));
    auto c = std::make_unique<TlsClient>();
    EXPECT_TRUE(c->connect(port())) << c->error();
    EXPECT_TRUE(c->write(request));
    const std::string all = c->read_all();
    EXPECT_EQ(all.rfind(status_line, 0), 0u) << all;
    EXPECT_TRUE(c->closed());
    return c;
  }
  // The proxy holds the connection while we keep our end open, and lets it
  // go once we close it (the lingering read sees end of file).
  void expect_lingers(std::unique_ptr<TlsClient> c) {
    std::this_thread::sleep_for(milliseconds(500));
    EXPECT_EQ(scrape()["tlsfront_connections_active"], 1);
    c.reset();
    EXPECT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }, milliseconds(1'500)));
  }
};

// A client that asked for the close with "Connection: close" sends nothing
// more: its connection is closed at once, while it still holds its own end.
TEST_F(Linger, ConnectionCloseRequestIsClosedWithoutLingering) {
  ASSERT_TRUE(start());
  auto c = answered("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "HTTP/1.1 200 OK\r\n");
  // Well inside the 2 s a lingering close would wait for our FIN.
  EXPECT_TRUE(wait_until([&] { return scrape()["tlsfront_connections_active"] == 0; }, milliseconds(1'500)));
}

// A close the client did not ask for (here a 400 on a keepalive connection)
// still lingers.
TEST_F(Linger, ServerInitiatedCloseLingersUntilTheClientCloses) {
  ASSERT_TRUE(start());
  expect_lingers(answered("GET / HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n", "HTTP/1.1 400 "));
}

// "Connection: close" means no further request, not that the request was read:
// a head refused for its Content-Length (413) leaves the body on its way, and
// closing without lingering would meet it with a reset (which can cost the
// client the 413).
TEST_F(Linger, ConnectionCloseRequestRefusedAtItsHeadStillLingers) {
  ASSERT_TRUE(start());
  expect_lingers(answered("POST /echo HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                          "Content-Length: 2000000\r\n\r\n",
                          "HTTP/1.1 413 "));
}

}  // namespace
}  // namespace tlsfront::itest
