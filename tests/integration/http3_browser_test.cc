// HTTP/3 to a real browser: Debian's Chromium, headless, loads a page
// tlsfront serves from a static route and runs its script, whose fetch()es
// go to the recording backend — all over QUIC; and, as a returning
// visitor, resumes its session and offers early data on its next
// connection. Chromium is the client most of tlsfront's mobile users'
// traffic comes from (with Safari and the Android stack); gtlsclient
// (http3_test.cc) is ngtcp2's own, so this is the interop check against an
// independent QUIC, TLS and HTTP/3 implementation.
//
// Chromium uses QUIC for an origin only when told so or after an Alt-Svc
// answer from a certificate that chains to a public root: with the test's
// private root, --origin-to-force-quic-on makes it speak HTTP/3 from the
// first request, and --ignore-certificate-errors-spki-list trusts the
// test certificate's key (the pin, not the chain: QUIC certificate
// verification otherwise runs as for TCP).
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "shared/json_body.h"

namespace tlsfront::itest {
namespace {

constexpr const char* kChromium = "/usr/bin/chromium";

// base64(SHA-256(SubjectPublicKeyInfo)) of the first certificate in
// `pem_file`: what --ignore-certificate-errors-spki-list takes.
std::string spki_pin(const std::string& pem_file) {
  std::string out;
  FILE* f = std::fopen(pem_file.c_str(), "r");
  if (f == nullptr) return out;
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (cert == nullptr) return out;
  unsigned char* der = nullptr;
  const int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  if (len > 0 && EVP_Digest(der, static_cast<size_t>(len), digest, &digest_len, EVP_sha256(), nullptr) == 1) {
    unsigned char b64[64];
    const int n = EVP_EncodeBlock(b64, digest, static_cast<int>(digest_len));
    out.assign(reinterpret_cast<const char*>(b64), static_cast<size_t>(n));
  }
  OPENSSL_free(der);
  X509_free(cert);
  return out;
}

// The page's checksum of a text (JavaScript's (h * 31 + code unit) >>> 0
// over UTF-16 code units; the bodies here are ASCII).
uint32_t text_hash(const std::string& s) {
  uint32_t h = 0;
  for (unsigned char c : s) h = h * 31 + c;
  return h;
}

// The page: a GET of 70,000 octets of JSON, a POST of 300,000 octets the
// backend echoes, a file that is not there; each result as a line in
// #out, then "done" (or "error ..." if a fetch threw).
constexpr const char* kPage = R"(<!doctype html>
<html><body><pre id="out">pending</pre><script>
const hash = t => { let h = 0; for (let i = 0; i < t.length; i++) h = (h * 31 + t.charCodeAt(i)) >>> 0; return h; };
(async () => {
  const out = [];
  const r1 = await fetch('/json/70000');
  const t1 = await r1.text();
  out.push('json ' + r1.status + ' ' + t1.length + ' ' + hash(t1));
  let body = '';
  for (let i = 0; body.length < 300000; i++) body += String.fromCharCode(97 + i % 23);
  const r2 = await fetch('/echo', {method: 'POST', body});
  const t2 = await r2.text();
  out.push('echo ' + r2.status + ' ' + (t2 === body));
  const r3 = await fetch('/not-here.txt');
  out.push('missing ' + r3.status);
  out.push('done');
  document.getElementById('out').textContent = out.join('\n');
})().catch(e => { document.getElementById('out').textContent = 'error ' + e; });
</script></body></html>
)";

// A returning visitor: three GETs one after the other, on a proxy that
// serves two requests per connection ([limits] keepalive_requests = 2, then
// GOAWAY): the later ones need new connections, on which Chromium resumes
// its session with the ticket and offers early data (0-RTT).
constexpr const char* kReturningPage = R"(<!doctype html>
<html><body><pre id="out">pending</pre><script>
(async () => {
  const out = [];
  for (const path of ['/json/10', '/json/20', '/json/30']) {
    const r = await fetch(path);
    out.push(path + ' ' + r.status + ' ' + (await r.text()).length);
  }
  out.push('done');
  document.getElementById('out').textContent = out.join('\n');
})().catch(e => { document.getElementById('out').textContent = 'error ' + e; });
</script></body></html>
)";

class Http3Browser : public ProxyTest {
 protected:
  void SetUp() override {
    ProxyTest::SetUp();
    www_ = dir_.file("www");
    ASSERT_EQ(::mkdir(www_.c_str(), 0755), 0);
    write_file(www_ + "/app.html", kPage);
    write_file(www_ + "/returning.html", kReturningPage);
    options_.listen_extra = "quic = true";
    options_.routes =
        "[[route]]\npath_prefix = \"/json/\"\nupstream = \"backend\"\n"
        "[[route]]\npath_prefix = \"/slow/\"\nupstream = \"backend\"\n"
        "[[route]]\npath_exact = \"/echo\"\nupstream = \"backend\"\n"
        "[[route]]\npath_prefix = \"/\"\nroot = \"" +
        www_ + "\"\n";
  }
  // Chromium's command line for `path`: it prints the DOM after the page's
  // script ran (--dump-dom; --virtual-time-budget runs only while no
  // fetch() is in flight, so it waits for them).
  std::vector<std::string> chromium(const std::string& path) {
    const std::string origin = "localhost:" + std::to_string(port());
    return {kChromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--user-data-dir=" + dir_.file("chromium"),
            "--enable-quic",
            "--origin-to-force-quic-on=" + origin,
            "--ignore-certificate-errors-spki-list=" + spki_pin(pki("localhost.chain.pem")),
            "--host-resolver-rules=MAP localhost 127.0.0.1",
            "--virtual-time-budget=10000",
            "--dump-dom",
            "https://" + origin + path};
  }
  ProxyOptions options_;
  std::string www_;
};

TEST_F(Http3Browser, ChromiumLoadsAPageAndItsFetchesOverHttp3) {
  ASSERT_TRUE(file_exists(kChromium)) << kChromium << " not found (scripts/install-deps.sh installs it)";
  ASSERT_TRUE(start_proxy(options_));
  RunResult r = run_command(dir_, chromium("/app.html"), milliseconds(90'000));
  ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
  const std::string json = testdata::json_body(70000);
  const std::string expected = "json 200 " + std::to_string(json.size()) + " " + std::to_string(text_hash(json)) +
                               "\necho 200 true\nmissing 404\ndone";
  EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
  // Every request Chromium made went over QUIC: the page, the three
  // fetch()es and its own favicon.ico request.
  auto lines = proxy_.wait_log_lines(5);
  ASSERT_GE(lines.size(), 4u);
  std::vector<std::string> paths;
  for (const auto& l : lines) {
    EXPECT_EQ(json_string(l, "protocol"), "HTTP/3.0") << l;
    EXPECT_EQ(json_string(l, "alpn"), "h3") << l;
    paths.push_back(json_string(l, "path").value_or(""));
  }
  for (const char* p : {"/app.html", "/json/70000", "/echo", "/not-here.txt"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), p), paths.end()) << p << " not logged";
  }
  auto metrics = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(metrics["tlsfront_connections_total{protocol=\"h3\"}"], 1);
  EXPECT_TRUE(proxy_.process().running());
}

TEST_F(Http3Browser, ChromiumResumesOnItsNextConnectionsWithEarlyData) {
  ASSERT_TRUE(file_exists(kChromium)) << kChromium << " not found (scripts/install-deps.sh installs it)";
  options_.tls_extra = "early_data = true";
  options_.extra = "[limits]\nkeepalive_requests = 2\n";
  ASSERT_TRUE(start_proxy(options_));
  RunResult r = run_command(dir_, chromium("/returning.html"), milliseconds(90'000));
  ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
  EXPECT_NE(r.out.find("/json/10 200 10\n/json/20 200 20\n/json/30 200 30\ndone"), std::string::npos) << r.out;
  auto lines = proxy_.wait_log_lines(4);
  ASSERT_GE(lines.size(), 4u);
  // The page's connection was a full handshake; every later one resumed.
  const auto first_connection = json_raw(lines[0], "connection_id");
  EXPECT_EQ(json_raw(lines[0], "ssl_session_reused"), "false") << lines[0];
  std::set<std::string> connections;
  size_t early = 0;
  for (const auto& l : lines) {
    EXPECT_EQ(json_string(l, "protocol"), "HTTP/3.0") << l;
    EXPECT_EQ(json_raw(l, "status"), json_string(l, "path") == "/favicon.ico" ? "404" : "200") << l;
    EXPECT_LE(std::stoi(json_raw(l, "connection_requests").value_or("0")), 2) << l;
    connections.insert(json_raw(l, "connection_id").value_or(""));
    if (json_raw(l, "connection_id") == first_connection) continue;
    EXPECT_EQ(json_raw(l, "ssl_session_reused"), "true") << l;
    if (json_raw(l, "ssl_early_data") == "true") ++early;
  }
  EXPECT_GE(connections.size(), 2u);
  // Chromium offered early data on a resumed connection and tlsfront took
  // it. (Whether a request rode in it is Chromium's timing: it may open
  // the next connection before the page asks for anything; in most runs
  // one line says "ssl_early_data":true.)
  auto metrics = scrape_metrics(proxy_.admin_port());
  EXPECT_GE(metrics["tlsfront_early_data_accepted_total"], 1) << early << " requests in early data";
}

}  // namespace
}  // namespace tlsfront::itest
