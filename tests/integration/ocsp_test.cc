// OCSP stapling end to end: a real `openssl ocsp` responder (started per test
// on a port it picks, stopped after), the real binary, and real clients
// (`openssl s_client -status`, libcurl CURLOPT_SSL_VERIFYSTATUS). Most tests
// point [tls.ocsp] responder at their responder; AiaUrl generates a leaf whose
// AIA names its responder's port. Nothing here asserts on timing: waits are
// bounded polls.
#include <curl/curl.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "harness.h"

namespace tlsfront::itest {
namespace {

const std::string kOpenssl = "/usr/bin/openssl";

// `openssl ocsp` as a responder for the intermediate (or for `ca`). OpenSSL
// 3.0's -port binds the wildcard address (it takes no host); clients use
// 127.0.0.1.
class OcspResponder {
 public:
  struct Options {
    std::string index = pki("ocsp-index.txt");
    std::string signer = pki("ocsp-signer.pem");
    std::string key = pki("ocsp-signer.key");
    std::string ca = pki("intermediate.pem");  // the issuer of the certificates in `index`
    int nmin = 60;  // validity (nextUpdate - thisUpdate) in minutes
    int port = 0;   // 0: the responder picks one
  };
  explicit OcspResponder(const TempDir& dir) : dir_(dir) {}
  ~OcspResponder() { stop(); }

  bool start(const Options& o) {
    const std::string out = dir_.file("ocsp-responder" + std::to_string(++starts_) + ".out");
    if (!process_.start({kOpenssl, "ocsp", "-index", o.index, "-port", std::to_string(o.port), "-rsigner", o.signer,
                         "-rkey", o.key, "-CA", o.ca, "-nmin", std::to_string(o.nmin),
                         "-ignore_err"},
                        out, out + ".err")) {
      return false;
    }
    std::smatch m;
    const std::regex accept("ACCEPT .*:([0-9]+)");
    bool ok = wait_until([&] {
      std::string s = read_file(out);
      if (std::regex_search(s, m, accept)) {
        port_ = std::stoi(m[1]);
        return true;
      }
      return !process_.running();
    });
    if (!ok || port_ == 0) {
      ADD_FAILURE() << "openssl ocsp did not start: " << read_file(out) << read_file(out + ".err");
      return false;
    }
    return true;
  }
  void stop() { process_.stop(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  int port() const { return port_; }

 private:
  const TempDir& dir_;
  Process process_;
  int port_ = 0;
  int starts_ = 0;
};

struct StatusResult {
  bool handshake_ok = false;
  bool stapled = false;      // a response was sent
  bool good = false;         // ... saying "Cert Status: good"
  std::string this_update;   // as s_client prints it
  std::string out;
};

// One `openssl s_client` handshake; `ask`: -status (the status_request
// extension); `extra`: more s_client options.
StatusResult s_client(const TempDir& dir, int port, bool ask = true, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {kOpenssl, "s_client", "-connect", "127.0.0.1:" + std::to_string(port),
                                   "-servername", "localhost", "-CAfile", pki("root.pem"), "-verify_return_error"};
  if (ask) argv.push_back("-status");
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = run_command(dir, argv);
  StatusResult s;
  s.out = r.out + r.err;
  s.handshake_ok = r.status.exited && r.status.code == 0 && r.out.find("Verify return code: 0 (ok)") != std::string::npos;
  s.stapled = r.out.find("OCSP Response Status: successful") != std::string::npos;
  s.good = r.out.find("Cert Status: good") != std::string::npos;
  if (auto p = r.out.find("This Update: "); p != std::string::npos) {
    s.this_update = r.out.substr(p + 13, r.out.find('\n', p) - p - 13);
  }
  return s;
}

// libcurl with CURLOPT_SSL_VERIFYSTATUS: the request fails unless a valid staple is sent.
int curl_verify_status(int port) {
  CURL* c = curl_easy_init();
  std::string url = "https://localhost:" + std::to_string(port) + "/";
  curl_slist* resolve = curl_slist_append(nullptr, ("localhost:" + std::to_string(port) + ":127.0.0.1").c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
  curl_easy_setopt(c, CURLOPT_CAINFO, pki("root.pem").c_str());
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYSTATUS, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10'000L);
  curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  curl_slist_free_all(resolve);
  return rc;
}

// The first 8 hex digits (lowercase) of the SHA-256 fingerprint of the test
// PKI's certificate `pem`, as openssl prints it.
std::string fingerprint(const TempDir& dir, const std::string& pem) {
  RunResult r = run_command(dir, {kOpenssl, "x509", "-in", pki(pem), "-noout", "-fingerprint", "-sha256"});
  std::string hex;
  for (size_t i = r.out.find('=') + 1; i < r.out.size() && hex.size() < 8; ++i) {
    if (std::isxdigit(static_cast<unsigned char>(r.out[i]))) hex += static_cast<char>(std::tolower(r.out[i]));
  }
  return hex;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

class Ocsp : public ProxyTest {
 protected:
  void SetUp() override {
    if (!file_exists(kOpenssl)) GTEST_SKIP() << kOpenssl << " not found";
    ProxyTest::SetUp();
  }
  void TearDown() override {
    responder_.stop();
    ProxyTest::TearDown();
  }
  // [tls] lines: the cache dir and a [tls.ocsp] table with `ocsp_keys`.
  ProxyOptions options(const std::string& ocsp_keys, bool cache = true) const {
    ProxyOptions o;
    o.tls_extra = (cache ? "ocsp_cache_dir = \"" + dir_.file("ocsp-cache") + "\"\n" : "") + "[tls.ocsp]\n" + ocsp_keys;
    return o;
  }
  std::string responder_key() const { return "responder = \"" + responder_.url() + "\"\n"; }
  std::string log() { return proxy_.process().err(); }
  bool wait_log(const std::string& what, size_t n = 1, milliseconds timeout = milliseconds(20'000)) {
    return wait_until([&] { return count(log(), what) >= n; }, timeout);
  }
  // Polls s_client -status until a good staple arrives.
  StatusResult wait_stapled() {
    StatusResult s;
    wait_until([&] { return (s = s_client(dir_, port())).good; }, milliseconds(20'000));
    return s;
  }

  OcspResponder responder_{dir_};
};

TEST_F(Ocsp, H1_StapledAfterFetch) {
  ASSERT_TRUE(responder_.start({}));
  ASSERT_TRUE(start_proxy(options(responder_key())));
  StatusResult s = wait_stapled();
  ASSERT_TRUE(s.good) << s.out << "\n" << log();
  EXPECT_TRUE(s.handshake_ok);
  EXPECT_EQ(curl_verify_status(port()), CURLE_OK);
  EXPECT_NE(log().find("stapling response fetched (status good"), std::string::npos) << log();
  StatusResult tls12 = s_client(dir_, port(), true, {"-tls1_2"});  // CertificateStatus message
  EXPECT_TRUE(tls12.good) << tls12.out;
  StatusResult plain = s_client(dir_, port(), /*ask=*/false);
  EXPECT_TRUE(plain.handshake_ok);
  EXPECT_FALSE(plain.stapled);
}

TEST_F(Ocsp, H1_StapledOnFirstHandshakeAfterRestartFromCacheWithResponderDown) {
  ASSERT_TRUE(responder_.start({}));
  ProxyOptions o = options(responder_key());
  ASSERT_TRUE(start_proxy(o));
  ASSERT_TRUE(wait_stapled().good) << log();
  proxy_.stop();
  responder_.stop();
  size_t cached = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.file("ocsp-cache"))) cached += e.path().extension() == ".der";
  EXPECT_EQ(cached, 1u);

  ASSERT_TRUE(start_proxy(o));
  StatusResult first = s_client(dir_, port());  // no waiting: the first handshake that asks
  EXPECT_TRUE(first.good) << first.out << "\n" << log();
  EXPECT_NE(log().find("stapling response loaded from the cache"), std::string::npos) << log();
}

// A private PKI's leaf issued by the root itself: only the leaf is sent (the
// root is trusted_ca), and the responder answers for, and signs as, the root.
TEST_F(Ocsp, H1_LeafIssuedByTheRootIsStapled) {
  OcspResponder::Options ro;
  ro.index = pki("root-ocsp-index.txt");
  ro.signer = pki("root.pem");
  ro.key = pki("root.key");
  ro.ca = pki("root.pem");
  ASSERT_TRUE(responder_.start(ro));
  ProxyOptions o = options(responder_key(), false);
  o.certificate = pki("root-issued.chain.pem");
  o.key = pki("root-issued.key");
  ASSERT_TRUE(start_proxy(o));
  StatusResult s = wait_stapled();
  EXPECT_TRUE(s.good) << s.out << "\n" << log();
  EXPECT_TRUE(s.handshake_ok);
  EXPECT_EQ(log().find("not stapled"), std::string::npos) << log();
  // (Not curl_verify_status: libcurl looks for the leaf's issuer only among
  // the certificates the server sent, so it cannot check this staple.)
}

TEST_F(Ocsp, H1_ResponderDownKeepsTheLastGoodStaple) {
  OcspResponder::Options ro;
  ro.nmin = 5;
  ASSERT_TRUE(responder_.start(ro));
  // Refresh 1% into a 5 min window (3 s), so a fetch fails soon after the stop.
  ASSERT_TRUE(start_proxy(options(responder_key() + "refresh_at_percent = 1\nrefresh_jitter_percent = 0\n", false)));
  StatusResult before = wait_stapled();
  ASSERT_TRUE(before.good) << log();
  responder_.stop();
  ASSERT_TRUE(wait_log("failed: ")) << log();
  EXPECT_NE(log().find("keeping the current staple"), std::string::npos) << log();
  StatusResult after = s_client(dir_, port());
  EXPECT_TRUE(after.good) << after.out;
  EXPECT_EQ(after.this_update, before.this_update);
}

// An OCSP response for `leaf_file` signed by the delegated responder, valid
// from now+`from` to now+`to`, saying `status` (V_OCSP_CERTSTATUS_*).
std::vector<uint8_t> response_for(const std::string& leaf_file, std::chrono::seconds from, std::chrono::seconds to,
                                  int status = V_OCSP_CERTSTATUS_GOOD) {
  auto load = [](const std::string& f) {
    BIO* b = BIO_new_file(pki(f).c_str(), "r");
    X509* x = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    return x;
  };
  X509* leaf = load(leaf_file);
  X509* issuer = load("intermediate.pem");
  X509* signer = load("ocsp-signer.pem");
  BIO* kb = BIO_new_file(pki("ocsp-signer.key").c_str(), "r");
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  const time_t now = ::time(nullptr);
  OCSP_BASICRESP* bs = OCSP_BASICRESP_new();
  OCSP_CERTID* id = OCSP_cert_to_id(nullptr, leaf, issuer);
  ASN1_GENERALIZEDTIME* tu = ASN1_GENERALIZEDTIME_set(nullptr, now + from.count());
  ASN1_GENERALIZEDTIME* nu = ASN1_GENERALIZEDTIME_set(nullptr, now + to.count());
  const bool revoked = status == V_OCSP_CERTSTATUS_REVOKED;
  OCSP_basic_add1_status(bs, id, status, revoked ? OCSP_REVOKED_STATUS_KEYCOMPROMISE : 0, revoked ? tu : nullptr, tu,
                         nu);
  OCSP_basic_sign(bs, signer, key, EVP_sha256(), nullptr, 0);
  OCSP_RESPONSE* r = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, bs);
  std::vector<uint8_t> der(static_cast<size_t>(i2d_OCSP_RESPONSE(r, nullptr)));
  unsigned char* p = der.data();
  i2d_OCSP_RESPONSE(r, &p);
  OCSP_RESPONSE_free(r);
  OCSP_BASICRESP_free(bs);
  OCSP_CERTID_free(id);
  ASN1_GENERALIZEDTIME_free(tu);
  ASN1_GENERALIZEDTIME_free(nu);
  EVP_PKEY_free(key);
  X509_free(leaf);
  X509_free(issuer);
  X509_free(signer);
  return der;
}

TEST_F(Ocsp, H1_ExpiredResponseNotStapledThenSighupLoadsAGoodOne) {
  using namespace std::chrono_literals;
  const std::string file = dir_.file("response.der");
  auto expired = response_for("localhost.pem", -2h, -1h);
  write_file(file, std::string(expired.begin(), expired.end()));
  ASSERT_TRUE(start_proxy(options("response_file = \"" + file + "\"\n", false)));
  EXPECT_NE(log().find("not stapled: expired"), std::string::npos) << log();
  StatusResult s = s_client(dir_, port());
  EXPECT_TRUE(s.handshake_ok) << s.out;
  EXPECT_FALSE(s.stapled) << s.out;

  auto good = response_for("localhost.pem", -1h, 1h);
  write_file(file, std::string(good.begin(), good.end()));
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(wait_log("stapling response reloaded from response_file")) << log();
  EXPECT_TRUE(s_client(dir_, port()).good);
}

TEST_F(Ocsp, H1_ResponseSignedByAnUnrelatedKeyIsRejected) {
  OcspResponder::Options ro;
  ro.signer = pki("ocsp-unrelated.pem");
  ro.key = pki("ocsp-unrelated.key");
  ASSERT_TRUE(responder_.start(ro));
  ASSERT_TRUE(start_proxy(options(responder_key())));
  ASSERT_TRUE(wait_log("invalid response: OCSP response signature or signer rejected")) << log();
  StatusResult s = s_client(dir_, port());
  EXPECT_TRUE(s.handshake_ok);
  EXPECT_FALSE(s.stapled) << s.out;
  EXPECT_NE(curl_verify_status(port()), CURLE_OK);
}

TEST_F(Ocsp, H1_RevokedIsLoggedAndNotStapled) {
  ASSERT_TRUE(responder_.start({}));
  ProxyOptions o = options(responder_key());
  o.certificate = pki("revoked.chain.pem");
  o.key = pki("revoked.key");
  ASSERT_TRUE(start_proxy(o));
  ASSERT_TRUE(wait_log("THE CERTIFICATE IS REVOKED")) << log();
  EXPECT_NE(log().find("[error]"), std::string::npos);
  StatusResult s = s_client(dir_, port());
  EXPECT_TRUE(s.handshake_ok);
  EXPECT_FALSE(s.stapled) << s.out;
}

TEST_F(Ocsp, H1_RefreshedBeforeNextUpdate) {
  OcspResponder::Options ro;
  ro.nmin = 1;  // 60 s of validity
  ASSERT_TRUE(responder_.start(ro));
  // Refresh 5% into the window: about 3 s after thisUpdate.
  ASSERT_TRUE(start_proxy(options(responder_key() + "refresh_at_percent = 5\nrefresh_jitter_percent = 0\n", false)));
  StatusResult first = wait_stapled();
  ASSERT_TRUE(first.good) << log();
  // A second fetch within 30 s of the first, i.e. well before its nextUpdate.
  ASSERT_TRUE(wait_log("stapling response fetched", 2, milliseconds(30'000))) << log();
  StatusResult later;
  ASSERT_TRUE(wait_until([&] { return (later = s_client(dir_, port())).good && later.this_update != first.this_update; }))
      << first.this_update << " / " << later.this_update;
}

TEST_F(Ocsp, H1_StrictRefusesClientsThatAskWhileThereIsNoStaple) {
  ProxyOptions o = options("responder = \"http://127.0.0.1:" + std::to_string(free_port()) +
                           "/\"\nstaple_policy = \"strict\"\n", false);
  ASSERT_TRUE(start_proxy(o));  // the readiness probe does not ask for a staple
  ASSERT_TRUE(wait_log("NO STAPLE: refusing handshakes")) << log();
  StatusResult asking = s_client(dir_, port());
  EXPECT_FALSE(asking.handshake_ok) << asking.out;
  EXPECT_TRUE(s_client(dir_, port(), /*ask=*/false).handshake_ok);
}

TEST_F(Ocsp, H1_MustStapleLeafIsStrictAutomatically) {
  ProxyOptions o = options("responder = \"http://127.0.0.1:" + std::to_string(free_port()) + "/\"\n", false);
  o.certificate = pki("must-staple.chain.pem");
  o.key = pki("must-staple.key");
  ASSERT_TRUE(start_proxy(o));
  EXPECT_NE(log().find("staple_policy must_staple (the leaf is must-staple)"), std::string::npos) << log();
  EXPECT_FALSE(s_client(dir_, port()).handshake_ok);

  // With a responder it is stapled and served.
  ASSERT_TRUE(responder_.start({}));
  proxy_.stop();
  ProxyOptions up = options(responder_key(), false);
  up.certificate = o.certificate;
  up.key = o.key;
  ASSERT_TRUE(start_proxy(up));
  EXPECT_TRUE(wait_stapled().good) << log();
}

TEST_F(Ocsp, H1_NoOcspUrlIsSilentlyNotStapled) {
  ProxyOptions o;  // localhost.pem has no AIA, no responder configured
  ASSERT_TRUE(start_proxy(o));
  StatusResult s = s_client(dir_, port());
  EXPECT_TRUE(s.handshake_ok);
  EXPECT_FALSE(s.stapled);
  EXPECT_EQ(log().find("ocsp \""), std::string::npos) << log();
}

// `stapling = true` written out for a leaf with no OCSP responder URL, and
// no responder or response_file: nothing can ever be stapled, which nginx
// warns about ("ssl_stapling ignored, no OCSP responder URL in the
// certificate"); so do --test and the start, naming the key. Left at its
// default, stapling stays silent (above).
TEST_F(Ocsp, StaplingSetWithoutAResponderUrlWarnsInTestAndAtStart) {
  const std::string ignored = "tls.ocsp.stapling: stapling is ignored: the leaf of \"" + pki("localhost.chain.pem") +
                              "\" has no OCSP responder URL (no AIA OCSP entry) and neither responder nor "
                              "response_file is set";
  const std::string path = dir_.file("t.toml");
  auto test = [&](ProxyOptions o) {
    o.upstream_servers = {"127.0.0.1:9"};
    write_file(path, make_config(o, kAnyPort, dir_.file("access.log")));
    RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", path});
    EXPECT_EQ(r.status.code, 0) << r.err;
    return r.err;
  };
  std::string err = test(options("stapling = true\n", false));
  EXPECT_NE(err.find("tlsfront: warning: " + path + ":"), std::string::npos) << err;
  EXPECT_NE(err.find(ignored), std::string::npos) << err;
  EXPECT_EQ(test(options("", false)).find("stapling is ignored"), std::string::npos);  // the default: silent
  err = test(options("stapling = true\nresponder = \"http://127.0.0.1:9/\"\n", false));
  EXPECT_EQ(err.find("stapling is ignored"), std::string::npos) << err;
  // A [[certificate]] table's own [certificate.ocsp].
  ProxyOptions several;
  several.certificates = "[[certificate]]\ncert = \"" + pki("localhost.chain.pem") + "\"\nkey = \"" +
                         pki("localhost.key") + "\"\n[certificate.ocsp]\nstapling = true\n";
  err = test(several);
  EXPECT_NE(err.find(": certificate[0].ocsp.stapling: stapling is ignored"), std::string::npos) << err;

  ASSERT_TRUE(start_proxy(options("stapling = true\n", false)));
  EXPECT_TRUE(wait_log(ignored)) << log();
  StatusResult st = s_client(dir_, port());
  EXPECT_TRUE(st.handshake_ok);
  EXPECT_FALSE(st.stapled);
}

TEST_F(Ocsp, H1_AiaUrlOfTheLeafIsUsed) {
  // A leaf whose AIA names this test's responder port, and an index for it.
  const int rport = free_port();
  const std::string key = dir_.file("aia.key"), pem = dir_.file("aia.pem"), ext = dir_.file("aia.ext");
  write_file(ext, "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                  "extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n"
                  "authorityKeyIdentifier=keyid\nauthorityInfoAccess=OCSP;URI:http://127.0.0.1:" +
                      std::to_string(rport) + "/\n");
  ASSERT_EQ(run_command(dir_, {kOpenssl, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                               "-out", key}).status.code, 0);
  ASSERT_EQ(run_command(dir_, {kOpenssl, "req", "-new", "-key", key, "-subj", "/CN=localhost", "-out",
                               dir_.file("aia.csr")}).status.code, 0);
  ASSERT_EQ(run_command(dir_, {kOpenssl, "x509", "-req", "-in", dir_.file("aia.csr"), "-CA", pki("intermediate.pem"),
                               "-CAkey", pki("intermediate.key"), "-set_serial", "0x7a11ce", "-days", "2", "-extfile",
                               ext, "-out", pem}).status.code, 0);
  write_file(dir_.file("aia.chain.pem"), read_file(pem) + read_file(pki("intermediate.pem")));
  write_file(dir_.file("index.txt"), "V\t491231235959Z\t\t7A11CE\tunknown\t/CN=localhost\n");
  write_file(dir_.file("index.txt.attr"), "unique_subject = no\n");
  OcspResponder::Options ro;
  ro.index = dir_.file("index.txt");
  ro.port = rport;
  ASSERT_TRUE(responder_.start(ro));
  ProxyOptions o = options("", false);
  o.certificate = dir_.file("aia.chain.pem");
  o.key = key;
  ASSERT_TRUE(start_proxy(o));
  EXPECT_NE(log().find("stapling from responder http://127.0.0.1:" + std::to_string(rport) + "/"), std::string::npos)
      << log();
  EXPECT_TRUE(wait_stapled().good) << log();
  EXPECT_EQ(curl_verify_status(port()), CURLE_OK);
}

TEST_F(Ocsp, TestPrintsTheStaplingLine) {
  const std::string path = dir_.file("t.toml");
  ProxyOptions o = options("responder = \"http://127.0.0.1:9/\"\n");
  o.upstream_servers = {"127.0.0.1:9"};
  write_file(path, make_config(o, kAnyPort, dir_.file("access.log")));
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", path});
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find("ocsp \"CN=localhost\" (ecdsa " + fingerprint(dir_, "localhost.pem") +
                       "): stapling from responder http://127.0.0.1:9/, staple_policy lenient"),
            std::string::npos)
      << r.err;
}

// --test fails, naming the key and the reason, for a response_file that
// would not be stapled; the server itself only logs it. An expired one is a
// warning: a failing test would also stop `systemctl start` (ExecStartPre).
TEST_F(Ocsp, TestFailsForAResponseFileThatWouldNotBeStapled) {
  using namespace std::chrono_literals;
  const std::string file = dir_.file("response.der");
  const std::string path = dir_.file("t.toml");
  ProxyOptions o = options("response_file = \"" + file + "\"\n", false);
  o.upstream_servers = {"127.0.0.1:9"};
  const std::string text = make_config(o, kAnyPort, dir_.file("access.log"));
  write_file(path, text);
  const size_t at = text.find("response_file");
  const std::string position = path + ":" + std::to_string(std::count(text.begin(), text.begin() + at, '\n') + 1) +
                               ":1: tls.ocsp.response_file: \"" + file + "\" would not be stapled: ";
  const struct {
    std::vector<uint8_t> der;
    std::string reason;
  } cases[] = {
      {response_for("localhost.pem", -1h, 1h, V_OCSP_CERTSTATUS_REVOKED), "the certificate is REVOKED"},
      {response_for("rsa.pem", -1h, 1h), "no SingleResponse matches the certificate"},
      {{0x30, 0x03, 0x0a, 0x01, 0x06}, "responder answered \"unauthorized\""},  // OCSPResponse, status 6
  };
  for (const auto& c : cases) {
    write_file(file, std::string(c.der.begin(), c.der.end()));
    RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", path});
    EXPECT_EQ(r.status.code, 1) << c.reason << ": " << r.err;
    EXPECT_NE(r.err.find(position + c.reason), std::string::npos) << "expected \"" << position << c.reason << "\" in\n"
                                                                   << r.err;
  }
  auto expired = response_for("localhost.pem", -2h, -1h);
  write_file(file, std::string(expired.begin(), expired.end()));
  RunResult r = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", path});
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.err.find("tlsfront: warning: " + position + "expired: nextUpdate "), std::string::npos) << r.err;
  auto good = response_for("localhost.pem", -1h, 1h);
  write_file(file, std::string(good.begin(), good.end()));
  r = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", path});
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_EQ(r.err.find("would not be stapled"), std::string::npos) << r.err;
}

// Several certificates: an ECDSA and an RSA leaf for the same names share
// one SSL_CTX; each client gets the staple of the certificate it was sent.
// A reload that keeps the certificates keeps their staples (no refetch).
TEST_F(Ocsp, H1_EachCertificateGetsItsOwnStapleAndReloadKeepsThem) {
  ASSERT_TRUE(responder_.start({}));
  ProxyOptions o;
  const std::string ocsp_table = "[certificate.ocsp]\n" + responder_key();
  o.certificates = "[[certificate]]\ncert = \"" + pki("localhost.chain.pem") + "\"\nkey = \"" + pki("localhost.key") +
                   "\"\n" + ocsp_table + "[[certificate]]\ncert = \"" + pki("rsa.chain.pem") + "\"\nkey = \"" +
                   pki("rsa.key") + "\"\n" + ocsp_table;
  ASSERT_TRUE(start_proxy(o));
  ASSERT_TRUE(wait_log("stapling response fetched", 2)) << log();
  // The two leaves share their subject: the log prefix tells them apart.
  for (const auto& [type, pem] : {std::pair{"ecdsa", "localhost.pem"}, std::pair{"rsa", "rsa.pem"}}) {
    EXPECT_EQ(count(log(), std::string("ocsp \"CN=localhost\" (") + type + " " + fingerprint(dir_, pem) +
                               "): stapling response fetched"),
              1u)
        << log();
  }
  auto serial_of = [&](const std::string& pem) {
    RunResult r = run_command(dir_, {kOpenssl, "x509", "-in", pki(pem), "-noout", "-serial"});
    return r.out.substr(r.out.find('=') + 1, r.out.find('\n') - r.out.find('=') - 1);
  };
  StatusResult ec = wait_stapled();
  ASSERT_TRUE(ec.good) << ec.out;
  EXPECT_NE(ec.out.find("Serial Number: " + serial_of("localhost.pem")), std::string::npos) << ec.out;
  StatusResult rsa = s_client(dir_, port(), true, {"-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"});
  ASSERT_TRUE(rsa.good) << rsa.out;
  EXPECT_NE(rsa.out.find("Serial Number: " + serial_of("rsa.pem")), std::string::npos) << rsa.out;

  proxy_.process().signal(SIGHUP);  // same file: both certificates stay
  ASSERT_TRUE(wait_log("reload: generation 2 is live")) << log();
  StatusResult after = s_client(dir_, port());
  EXPECT_TRUE(after.good) << after.out;
  EXPECT_EQ(count(log(), "stapling response fetched"), 2u) << "a reload refetched: " << log();
}

// The sum of a counter's series over every stapler (label sets differ by
// certificate).
double stapler_total(const std::map<std::string, double>& metrics, const std::string& name) {
  double n = 0;
  for (const auto& [series, value] : metrics) {
    if (series.rfind(name + "{", 0) == 0) n += value;
  }
  return n;
}

// gtlsclient (GnuTLS: its ClientHello asks for a staple by default) over
// QUIC: a handshake that asks for a staple, exit status and output.
RunResult quic_handshake(const TempDir& dir, int port) {
  return run_command(dir, {"/usr/bin/gtlsclient", "--exit-on-all-streams-close", "--no-quic-dump", "--timeout=5s",
                           "--download=" + dir.path(), "127.0.0.1", std::to_string(port),
                           "https://localhost:" + std::to_string(port) + "/json/10"},
                     milliseconds(20'000));
}

// The QUIC listener staples the same response the TCP listeners do.
TEST_F(Ocsp, H3_StapledOverQuicFromTheSameStapler) {
  ASSERT_TRUE(responder_.start({}));
  ProxyOptions o = options(responder_key());
  o.listen_extra = "quic = true";
  ASSERT_TRUE(start_proxy(o));
  ASSERT_TRUE(wait_stapled().good) << log();
  // (s_client's handshakes before the first fetch landed were unstapled.)
  auto m = scrape_metrics(proxy_.admin_port());
  const double stapled = stapler_total(m, "tlsfront_ocsp_stapled_handshakes_total");
  const double unstapled = stapler_total(m, "tlsfront_ocsp_unstapled_handshakes_total");
  EXPECT_GE(stapled, 1);
  RunResult r = quic_handshake(dir_, port());
  ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
  m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(stapler_total(m, "tlsfront_ocsp_stapled_handshakes_total"), stapled + 1);
  EXPECT_EQ(stapler_total(m, "tlsfront_ocsp_unstapled_handshakes_total"), unstapled);
  EXPECT_EQ(count(log(), "stapling response fetched"), 1u) << log();
}

// strict: no staple, no QUIC handshake for a client that asks, as over TCP.
TEST_F(Ocsp, H3_StrictRefusesQuicClientsThatAskWhileThereIsNoStaple) {
  ProxyOptions o = options("responder = \"http://127.0.0.1:" + std::to_string(free_port()) +
                               "/\"\nstaple_policy = \"strict\"\n",
                           false);
  o.listen_extra = "quic = true";
  ASSERT_TRUE(start_proxy(o));
  ASSERT_TRUE(wait_log("NO STAPLE: refusing handshakes")) << log();
  RunResult r = quic_handshake(dir_, port());
  // internal_error (alert 80) in CONNECTION_CLOSE: QUIC's CRYPTO_ERROR
  // 0x100 + 80 (RFC 9001 §4.8). (gtlsclient exits 0 all the same.)
  EXPECT_NE(r.err.find("CONNECTION_CLOSE(0x1c) error_code=CRYPTO_ERROR(0x150)"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(dir_.file("10")), "");
  auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(stapler_total(m, "tlsfront_ocsp_unstapled_handshakes_total"), 1);
  EXPECT_EQ(backend_.count("req"), 0u);
}

}  // namespace
}  // namespace tlsfront::itest
