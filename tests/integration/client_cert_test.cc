// Client certificates (mTLS) end to end, with a client PKI made at test time
// by peers/client_pki.sh (a CA, a good client, an expired one, one revoked by
// a CRL, one from an untrusted CA): openssl s_client and the curl CLI with
// --cert/--key against verify_client = "required" (the alert each case
// gets, TLS 1.3 and 1.2) and "optional" (the verdict forwarded in the
// configured headers, forged ones stripped, require_client_cert routes
// answered 403, the access-log fields); resumption keeps the identity (cache
// and tickets, the forwarded DN on the resumed connection); a changed
// client_ca or CRL (SIGHUP, or a restart sharing ticket keys) refuses the
// old sessions.
#include <openssl/ssl.h>
#include <signal.h>

#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "shared/redis_server.h"

namespace tlsfront::itest {
namespace {

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;

class ClientCert : public ProxyTest {
 protected:
  void SetUp() override {
    ProxyTest::SetUp();
    pki_ = dir_.path() + "/client-pki";
    RunResult r = run_command(dir_, {std::string(TLSFRONT_SOURCE_DIR) + "/tests/integration/peers/client_pki.sh", pki_},
                              milliseconds(60'000));
    ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.out << r.err;
  }
  std::string file(const std::string& name) const { return pki_ + "/" + name; }

  // [tls] lines asking for a client certificate.
  std::string client_auth(const std::string& verify, const std::string& ca = "ca.pem",
                          const std::string& crl = "crl-revoked.pem") const {
    std::string t = "client_ca = \"" + file(ca) + "\"\nverify_client = \"" + verify + "\"\n";
    if (!crl.empty()) t += "crl = \"" + file(crl) + "\"\n";
    return t;
  }

  // The identity forwarded upstream: set, add and a route's own rule.
  static constexpr const char* kForward = R"([request_headers]
set = { "X-Client-Verify" = "$ssl_client_verify", "X-Client-DN" = "$ssl_client_s_dn", "X-Client-Issuer" = "$ssl_client_i_dn" }
add = { "X-Client-Serial" = "$ssl_client_serial", "X-Client-Fingerprint" = "$ssl_client_fingerprint" }
)";
  static constexpr const char* kRoutes = R"([[route]]
path_prefix = "/partner/"
upstream = "backend"
require_client_cert = true
request_headers = { set = { "X-Client-Cert" = "$ssl_client_cert" } }
[[route]]
path_prefix = "/"
upstream = "backend"
request_headers = { inherit = false }
)";

  ProxyOptions options(const std::string& tls_extra) const {
    ProxyOptions o;
    o.tls_extra = tls_extra;
    o.extra = kForward;
    o.routes = kRoutes;
    return o;
  }

  // `openssl s_client` (TLS `version`: "-tls1_3", "-tls1_2") with client
  // certificate `client` ("" = none) sending one request; stdout + stderr.
  std::string s_client(const std::string& version, const std::string& client) {
    std::string cmd = "printf 'GET /partner/x HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' | "
                      "openssl s_client -connect 127.0.0.1:" + std::to_string(port()) +
                      " -servername localhost -ign_eof " + version + " -CAfile " + pki("root.pem");
    if (!client.empty()) cmd += " -cert " + file(client + ".pem") + " -key " + file(client + ".key");
    RunResult r = run_command(dir_, {"/bin/sh", "-c", cmd}, milliseconds(20'000));
    return r.out + r.err;
  }

  // The curl CLI with client certificate `client` ("" = none): the status
  // line and headers it printed (-D -), or its error.
  std::string curl(const std::string& path, const std::string& client, std::vector<std::string> headers = {}) {
    const std::string p = std::to_string(port());
    std::vector<std::string> argv{"/usr/bin/curl", "-sS", "-o", "/dev/null", "-D", "-", "--http1.1", "--cacert", pki("root.pem"),
                                  "--resolve", "localhost:" + p + ":127.0.0.1"};
    if (!client.empty()) {
      argv.insert(argv.end(), {"--cert", file(client + ".pem"), "--key", file(client + ".key")});
    }
    for (auto& h : headers) argv.insert(argv.end(), {"-H", h});
    argv.push_back("https://localhost:" + p + path);
    RunResult r = run_command(dir_, argv, milliseconds(20'000));
    return r.out + r.err;
  }

  // A TLS connection with client certificate `client`, offering `session`.
  TlsOptions tls(const std::string& client, SSL_SESSION* session = nullptr, int version = TLS1_3_VERSION) const {
    TlsOptions o;
    o.min_version = o.max_version = version;
    o.session = session;
    if (!client.empty()) {
      o.cert = file(client + ".pem");
      o.key = file(client + ".key");
    }
    return o;
  }

  // One request on `c`; the response status (0 when none came).
  static int get(TlsClient& c, const std::string& path) {
    if (!c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n")) return 0;
    auto r = c.read_response();
    return r ? r->status : 0;
  }

  // The session of a connection that made one request: TLS 1.3 sends its
  // ticket after the handshake, so it is taken after a response.
  SessionPtr session_of(const std::string& client, int version) {
    TlsClient c;
    EXPECT_TRUE(c.connect(port(), tls(client, nullptr, version))) << c.error();
    EXPECT_EQ(get(c, "/partner/first"), 200) << c.error();
    return SessionPtr(c.take_session());
  }

  // The last recorded request's values of header `name`.
  std::vector<std::string> last_request_values(size_t n, const std::string& name) {
    auto reqs = backend_.wait_requests(n);
    if (reqs.size() < n) return {"<no request>"};
    return header_values(split_head(reqs[n - 1]).first, name);
  }

  std::string fingerprint(const std::string& client) {
    RunResult r = run_command(dir_, {"/usr/bin/openssl", "x509", "-in", file(client + ".pem"), "-noout", "-fingerprint", "-sha256"});
    std::string hex;
    for (char c : r.out.substr(r.out.find('=') + 1)) {
      if (std::isxdigit(static_cast<unsigned char>(c))) hex += static_cast<char>(std::tolower(c));
    }
    return hex;
  }

  std::string pki_;
};

// verify_client = "required": each bad case ends the handshake with its
// alert; TLS 1.3 without a certificate gets certificate_required (116).
TEST_F(ClientCert, RequiredRefusesEachBadCaseWithItsAlert) {
  ASSERT_TRUE(start_proxy(options(client_auth("required"))));
  const std::string refused = "tlsfront_tls_handshakes_refused_total{reason=\"client_certificate\"}";
  // The harness's own readiness probe, without a certificate, is refused
  // too; under a slow build (the sanitizers) it may be counted only after
  // start_proxy returned: wait for it before taking the baseline.
  ASSERT_TRUE(wait_until([&] { return scrape_metrics(proxy_.admin_port())[refused] >= 1; }));
  const double before = scrape_metrics(proxy_.admin_port())[refused];
  struct Case {
    const char* version;
    const char* client;
    const char* alert;
  };
  for (const Case& c : {Case{"-tls1_3", "", "SSL alert number 116"}, Case{"-tls1_2", "", "SSL alert number 40"},
                        Case{"-tls1_3", "expired", "SSL alert number 45"},
                        Case{"-tls1_3", "revoked", "SSL alert number 44"},
                        Case{"-tls1_2", "revoked", "SSL alert number 44"},
                        Case{"-tls1_3", "wrong-ca", "SSL alert number 48"}}) {
    SCOPED_TRACE(std::string(c.version) + " client " + c.client);
    const std::string out = s_client(c.version, c.client);
    EXPECT_NE(out.find(c.alert), std::string::npos) << out;
    EXPECT_EQ(out.find("HTTP/1.1 200"), std::string::npos) << out;
  }
  for (const char* version : {"-tls1_3", "-tls1_2"}) {
    const std::string out = s_client(version, "good");
    EXPECT_NE(out.find("HTTP/1.1 200"), std::string::npos) << version << "\n" << out;
  }
  EXPECT_NE(curl("/partner/x", "good").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_EQ(backend_.wait_requests(3).size(), 3u);  // the refused ones never reached it
  // Each refusal counted once, under its reason.
  EXPECT_TRUE(wait_until([&] { return scrape_metrics(proxy_.admin_port())[refused] - before == 6; }))
      << scrape_metrics(proxy_.admin_port())[refused] - before;
}

// verify_client = "optional": every client gets through with its verdict
// forwarded; a require_client_cert route answers 403 without a verified
// certificate, before the upstream; forged identity headers never pass.
TEST_F(ClientCert, OptionalForwardsTheVerdictAndStripsForgedHeaders) {
  ASSERT_TRUE(start_proxy(options(client_auth("optional"))));
  const std::vector<std::string> forged{"X-Client-DN: CN=forged", "X-Client-Fingerprint: forged",
                                        "X-Client-Verify: SUCCESS", "X-Client-Cert: forged"};

  EXPECT_NE(curl("/partner/a", "good", forged).find("HTTP/1.1 200"), std::string::npos);
  EXPECT_EQ(last_request_values(1, "X-Client-Verify"), std::vector<std::string>{"SUCCESS"});
  EXPECT_EQ(last_request_values(1, "X-Client-DN"), std::vector<std::string>{"O=Example,CN=partner-a"});
  EXPECT_EQ(last_request_values(1, "X-Client-Issuer"), std::vector<std::string>{"CN=tlsfront client CA"});
  EXPECT_EQ(last_request_values(1, "X-Client-Fingerprint"), std::vector<std::string>{fingerprint("good")});
  const auto cert = last_request_values(1, "X-Client-Cert");
  ASSERT_EQ(cert.size(), 1u);
  EXPECT_EQ(cert[0].rfind("-----BEGIN%20CERTIFICATE-----%0A", 0), 0u) << cert[0];

  // A route without the rules (inherit = false) still drops the forged fields.
  EXPECT_NE(curl("/open", "", forged).find("HTTP/1.1 200"), std::string::npos);
  for (const char* name : {"X-Client-DN", "X-Client-Fingerprint", "X-Client-Verify", "X-Client-Cert"}) {
    EXPECT_EQ(last_request_values(2, name), std::vector<std::string>{}) << name;
  }

  // Verdicts other than SUCCESS: forwarded on an open route, 403 on a partner one.
  EXPECT_NE(curl("/partner/expired", "expired").find("HTTP/1.1 403"), std::string::npos);
  EXPECT_NE(curl("/partner/none", "").find("HTTP/1.1 403"), std::string::npos);
  EXPECT_NE(curl("/partner/revoked", "revoked").find("HTTP/1.1 403"), std::string::npos);
  EXPECT_EQ(backend_.count("req"), 2u);  // none of the 403s went upstream

  // The access log: the verdict and identity of each request (the lines
  // of two workers come in any order).
  std::map<std::string, std::string> line_of;
  for (const auto& line : proxy_.wait_log_lines(5)) line_of[json_string(line, "path").value_or("")] = line;
  ASSERT_EQ(line_of.size(), 5u);
  const std::string& good = line_of["/partner/a"];
  EXPECT_EQ(json_string(good, "ssl_client_verify"), "SUCCESS") << good;
  EXPECT_EQ(json_string(good, "ssl_client_s_dn"), "O=Example,CN=partner-a") << good;
  EXPECT_EQ(json_string(good, "ssl_client_i_dn"), "CN=tlsfront client CA") << good;
  EXPECT_EQ(json_string(good, "ssl_client_fingerprint"), fingerprint("good")) << good;
  EXPECT_EQ(json_string(line_of["/open"], "ssl_client_verify"), "NONE") << line_of["/open"];
  EXPECT_EQ(json_raw(line_of["/open"], "ssl_client_s_dn"), "null") << line_of["/open"];
  EXPECT_EQ(json_string(line_of["/partner/expired"], "ssl_client_verify"), "FAILED:certificate has expired");
  EXPECT_EQ(json_string(line_of["/partner/none"], "ssl_client_verify"), "NONE");
  EXPECT_EQ(json_string(line_of["/partner/revoked"], "ssl_client_verify"), "FAILED:certificate revoked");
}

// Per certificate name: the default name requires a certificate, another
// asks for none; a client is asked as the name its SNI picks says (the
// verify mode follows the switch of context in the client hello callback),
// and a request cannot cross from one name's connection to the other's.
// limit_req keyed by $ssl_client_fingerprint: each partner's verified
// certificate is its own budget; a client without one is not counted.
TEST_F(ClientCert, ARateLimitPerPartnerCertificate) {
  ProxyOptions o = options(client_auth("optional"));
  o.extra += "[[limit_req]]\nname = \"partners\"\nkey = \"$ssl_client_fingerprint\"\nrate = \"1r/m\"\nburst = 1\n"
             "nodelay = true\n";
  o.routes = "[[route]]\npath_prefix = \"/\"\nupstream = \"backend\"\nlimit_req = [\"partners\"]\n";
  ASSERT_TRUE(start_proxy(o));
  // Burst 1 at one a minute: two pass at once, the third waits a minute.
  EXPECT_NE(curl("/a1", "good").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(curl("/a2", "good").find("HTTP/1.1 200"), std::string::npos);
  const std::string refused = curl("/a3", "good");
  EXPECT_NE(refused.find("HTTP/1.1 429"), std::string::npos) << refused;
  EXPECT_NE(refused.find("Retry-After:"), std::string::npos) << refused;
  // Another partner has its own budget; no certificate, no key: not limited.
  EXPECT_NE(curl("/b1", "good-b").find("HTTP/1.1 200"), std::string::npos);
  for (int i = 0; i < 3; ++i) EXPECT_NE(curl("/anon", "").find("HTTP/1.1 200"), std::string::npos) << i;
}

TEST_F(ClientCert, PerNameSettingsFollowTheSni) {
  ProxyOptions o = options("");
  o.certificates = "[[certificate]]\ncert = \"" + pki("other-name.chain.pem") + "\"\nkey = \"" + pki("other-name.key") +
                   "\"\ndefault = true\n" + client_auth("required") + "[[certificate]]\ncert = \"" +
                   pki("localhost.chain.pem") + "\"\nkey = \"" + pki("localhost.key") + "\"\n";
  ASSERT_TRUE(start_proxy(o));
  auto request = [&](const std::string& sni, const std::string& client) {
    std::string cmd = "printf 'GET /open HTTP/1.1\\r\\nHost: " + sni + "\\r\\nConnection: close\\r\\n\\r\\n' | "
                      "openssl s_client -tls1_3 -ign_eof -connect 127.0.0.1:" + std::to_string(port()) +
                      " -servername " + sni;
    if (!client.empty()) cmd += " -cert " + file(client + ".pem") + " -key " + file(client + ".key");
    RunResult r = run_command(dir_, {"/bin/sh", "-c", cmd}, milliseconds(20'000));
    return r.out + r.err;
  };
  std::string out = request("other.example", "");
  EXPECT_NE(out.find("SSL alert number 116"), std::string::npos) << out;
  EXPECT_NE(request("other.example", "good").find("HTTP/1.1 200"), std::string::npos);
  out = request("localhost", "");
  EXPECT_NE(out.find("HTTP/1.1 200"), std::string::npos) << out;
  EXPECT_EQ(out.find("Acceptable client certificate CA names"), std::string::npos) << out;  // none asked for

  // A request for the strict name on a connection made for the other one
  // (SNI localhost, Host other.example) is misdirected, never served.
  for (bool h2 : {false, true}) {
    HttpRequest req;
    req.path = "/open";
    req.http2 = h2;
    req.headers = {"Host: other.example"};
    EXPECT_EQ(http(port(), req).status, 421) << (h2 ? "HTTP/2" : "HTTP/1.1");
  }
  HttpRequest same;
  same.path = "/open";
  EXPECT_EQ(http(port(), same).status, 200);
  EXPECT_EQ(backend_.count("req"), 3u);
}

// Without verify_client the fields are absent from the log and
// $ssl_client_verify is NONE (nginx's).
TEST_F(ClientCert, OffLogsNoClientFields) {
  ProxyOptions o = options("");
  o.routes.clear();  // the catch-all route (a require_client_cert route is refused at load)
  ASSERT_TRUE(start_proxy(o));
  EXPECT_NE(curl("/open", "good").find("HTTP/1.1 200"), std::string::npos);
  auto lines = proxy_.wait_log_lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json_raw(lines[0], "ssl_client_verify"), std::nullopt) << lines[0];
  // $ssl_client_verify is NONE (nginx's), the others empty.
  EXPECT_EQ(last_request_values(1, "X-Client-Verify"), std::vector<std::string>{"NONE"});
  EXPECT_EQ(last_request_values(1, "X-Client-DN"), std::vector<std::string>{""});
}

// `tlsfront --test` reports the settings; a client_ca or crl file that is
// not what it should be fails the load naming the key and the file.
TEST_F(ClientCert, TestReportsAndBadFilesAreConfigErrors) {
  auto check = [&](const std::string& tls_extra) {
    const std::string path = dir_.path() + "/check.toml";
    ProxyOptions o = options(tls_extra);
    o.upstream_servers = {backend_.address()};
    write_file(path, make_config(o, kAnyPort, dir_.path() + "/check.log"));
    return run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", path});
  };
  RunResult ok = check(client_auth("required"));
  EXPECT_TRUE(ok.status.exited && ok.status.code == 0) << ok.err;
  EXPECT_NE((ok.out + ok.err).find("client certificates required: verified against client_ca \"" + file("ca.pem") +
                                   "\", crl \"" + file("crl-revoked.pem") + "\", verify_depth 1"),
            std::string::npos)
      << ok.out << ok.err;
  RunResult bad_ca = check(client_auth("required", "crl-empty.pem", ""));  // a CRL where CAs belong
  EXPECT_FALSE(bad_ca.status.exited && bad_ca.status.code == 0);
  EXPECT_NE(bad_ca.err.find("tls.client_ca: no PEM certificate in \"" + file("crl-empty.pem") + "\""), std::string::npos)
      << bad_ca.err;
  RunResult no_crl = check(client_auth("required", "ca.pem", "missing.crl"));
  EXPECT_FALSE(no_crl.status.exited && no_crl.status.code == 0);
  EXPECT_NE(no_crl.err.find("tls.crl: cannot read \"" + file("missing.crl") + "\""), std::string::npos) << no_crl.err;
}

// A resumed session keeps its verified identity: the resumed connection
// forwards the DN, from a ticket (TLS 1.3, 1.2) and from the cache (1.2).
TEST_F(ClientCert, ResumptionKeepsTheIdentity) {
  ASSERT_TRUE(start_proxy(options(client_auth("required"))));
  size_t requests = 0;
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    for (bool ticket : {true, false}) {
      if (version == TLS1_3_VERSION && !ticket) continue;
      SCOPED_TRACE(std::string(version == TLS1_3_VERSION ? "TLS 1.3" : "TLS 1.2") + (ticket ? " ticket" : " cache"));
      TlsOptions first = tls("good", nullptr, version);
      first.no_ticket = !ticket;
      TlsClient a;
      ASSERT_TRUE(a.connect(port(), first)) << a.error();
      ASSERT_EQ(get(a, "/partner/first"), 200);
      SessionPtr s(a.take_session());
      ++requests;
      TlsOptions again = tls("", s.get(), version);  // no certificate: the session has it
      again.no_ticket = !ticket;
      TlsClient b;
      ASSERT_TRUE(b.connect(port(), again)) << b.error();
      EXPECT_TRUE(b.session_reused());
      EXPECT_EQ(get(b, "/partner/again"), 200) << b.error();
      ++requests;
      EXPECT_EQ(last_request_values(requests, "X-Client-DN"), std::vector<std::string>{"O=Example,CN=partner-a"});
      EXPECT_EQ(last_request_values(requests, "X-Client-Verify"), std::vector<std::string>{"SUCCESS"});
    }
  }
}

// With "optional", a session whose certificate failed keeps failing when
// resumed: the verdict is the session's, not a fresh X509_V_OK.
TEST_F(ClientCert, ResumedFailedVerdictStaysFailed) {
  ASSERT_TRUE(start_proxy(options(client_auth("optional"))));
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    TlsClient a;
    ASSERT_TRUE(a.connect(port(), tls("expired", nullptr, version))) << a.error();
    EXPECT_EQ(get(a, "/partner/first"), 403);
    SessionPtr s(a.take_session());
    TlsClient b;
    ASSERT_TRUE(b.connect(port(), tls("", s.get(), version))) << b.error();
    EXPECT_TRUE(b.session_reused());
    EXPECT_EQ(get(b, "/partner/again"), 403);
  }
  auto lines = proxy_.wait_log_lines(4);
  ASSERT_EQ(lines.size(), 4u);
  int resumed = 0;
  for (const auto& line : lines) {
    EXPECT_EQ(json_string(line, "ssl_client_verify"), "FAILED:certificate has expired") << line;
    resumed += json_raw(line, "ssl_session_reused") == "true";
  }
  EXPECT_EQ(resumed, 2);
  EXPECT_EQ(backend_.count("req"), 0u);
}

// A changed client_ca (here: one more CA beside the first, so the client
// still verifies) or CRL refuses every session made before it: the next
// connection is a full handshake, and a client revoked meanwhile is refused.
TEST_F(ClientCert, ClientCaOrCrlChangeRefusesOldSessions) {
  ProxyOptions o = options(client_auth("required", "ca.pem", "crl-empty.pem"));
  ASSERT_TRUE(start_proxy(o));
  SessionPtr good13 = session_of("good", TLS1_3_VERSION);
  SessionPtr good12 = session_of("good", TLS1_2_VERSION);
  ASSERT_TRUE(good13 && good12);
  {
    // Control: with nothing changed, a reload keeps them resumable.
    ASSERT_NO_FATAL_FAILURE(reload_proxy(o, 2));
    TlsClient c;
    ASSERT_TRUE(c.connect(port(), tls("good", good13.get()))) << c.error();
    EXPECT_TRUE(c.session_reused());
    EXPECT_EQ(get(c, "/partner/control"), 200);
  }

  ASSERT_NO_FATAL_FAILURE(reload_proxy(options(client_auth("required", "ca-and-ca2.pem", "crl-empty.pem")), 3));
  for (auto [session, version] : {std::pair{good13.get(), TLS1_3_VERSION}, std::pair{good12.get(), TLS1_2_VERSION}}) {
    TlsClient c;
    ASSERT_TRUE(c.connect(port(), tls("good", session, version))) << c.error();
    EXPECT_FALSE(c.session_reused()) << "resumed across a client_ca change";
    EXPECT_EQ(get(c, "/partner/after-ca-change"), 200) << c.error();
  }

  SessionPtr revoked_now = session_of("revoked", TLS1_3_VERSION);
  ASSERT_TRUE(revoked_now);
  ASSERT_NO_FATAL_FAILURE(reload_proxy(options(client_auth("required", "ca-and-ca2.pem", "crl-revoked.pem")), 4));
  TlsClient c;
  // TLS 1.3: the client's side of the handshake completes before the server
  // has checked its certificate; the refusal arrives as an alert.
  if (c.connect(port(), tls("revoked", revoked_now.get()))) {
    EXPECT_FALSE(c.session_reused()) << "a revoked client rode its old session";
    EXPECT_EQ(get(c, "/partner/revoked"), 0);
  }
  EXPECT_NE(c.error().find("certificate revoked"), std::string::npos) << c.error();
}

// Across a restart with shared ticket key files (as nodes of a cluster): a
// ticket from before resumes under the same client_ca, and not under
// another one.
TEST_F(ClientCert, TicketFromAnotherClientCaIsRefused) {
  const std::string key = dir_.path() + "/ticket.key";
  RunResult k = run_command(dir_, {"/usr/bin/openssl", "rand", "-out", key, "80"});
  ASSERT_TRUE(k.status.exited && k.status.code == 0);
  const std::string keys = "[tls.ticket_keys]\nsource = \"files\"\nfiles = [\"" + key + "\"]\n";
  ProxyOptions o = options(client_auth("required", "ca.pem", "") + keys);
  ASSERT_TRUE(start_proxy(o));
  SessionPtr s = session_of("good", TLS1_3_VERSION);
  ASSERT_TRUE(s);
  proxy_.stop();
  ASSERT_TRUE(start_proxy(o));
  {
    TlsClient c;
    ASSERT_TRUE(c.connect(port(), tls("good", s.get()))) << c.error();
    EXPECT_TRUE(c.session_reused()) << "control: the shared ticket key resumes";
    EXPECT_EQ(get(c, "/partner/same"), 200);
  }
  proxy_.stop();
  ASSERT_TRUE(start_proxy(options(client_auth("required", "ca-and-ca2.pem", "") + keys)));
  TlsClient c;
  ASSERT_TRUE(c.connect(port(), tls("good", s.get()))) << c.error();
  EXPECT_FALSE(c.session_reused()) << "a ticket resumed under another client_ca";
  EXPECT_EQ(get(c, "/partner/other"), 200);
}

// [tls.session_cache] store = "redis": a session made on node A resumes on
// node B with its identity; once B's client_ca differs, not at all.
TEST_F(ClientCert, RedisSharedSessionKeepsIdentityAndNotAcrossClientCa) {
  if (find_tool("redis-server").empty()) GTEST_SKIP() << "redis-server not installed";
  RedisServer redis(dir_);
  ASSERT_TRUE(redis.start());
  const std::string store = "session_tickets = false\n[tls.session_cache]\nstore = \"redis\"\nredis = \"127.0.0.1:" +
                            std::to_string(redis.port()) + "\"\n";
  ASSERT_TRUE(start_proxy(options(client_auth("required", "ca.pem", "") + store)));
  TempDir dir_b;
  Proxy b(dir_b);
  ProxyOptions ob = options(client_auth("required", "ca.pem", "") + store);
  ob.upstream_servers = {backend_.address()};
  ASSERT_TRUE(b.start(ob));

  SessionPtr s = session_of("good", TLS1_2_VERSION);  // on A
  ASSERT_TRUE(s);
  {
    TlsClient c;
    ASSERT_TRUE(c.connect(b.port(), tls("", s.get(), TLS1_2_VERSION))) << c.error();
    EXPECT_TRUE(c.session_reused()) << "node B did not resume node A's session";
    EXPECT_EQ(get(c, "/partner/on-b"), 200);
    EXPECT_EQ(last_request_values(2, "X-Client-DN"), std::vector<std::string>{"O=Example,CN=partner-a"});
  }
  b.stop();
  ob.tls_extra = client_auth("required", "ca-and-ca2.pem", "") + store;
  ASSERT_TRUE(b.start(ob));
  TlsClient c;
  ASSERT_TRUE(c.connect(b.port(), tls("good", s.get(), TLS1_2_VERSION))) << c.error();
  EXPECT_FALSE(c.session_reused()) << "node B resumed a session made under another client_ca";
  EXPECT_EQ(get(c, "/partner/other-ca"), 200);
  b.stop();
  redis.stop();
}

}  // namespace
}  // namespace tlsfront::itest
