// `tlsfront probe` end to end, against servers it did not write: the real
// tlsfront binary (with an OCSP staple from a response file made by
// `openssl ocsp`, and without one) and Debian's nginx (started here on a
// loopback port with a temp prefix and config, stopped by PID): a staple
// present, resumptions detected (and confirmed by tlsfront's own access log),
// 0-RTT accepted by nginx, TCP Fast Open (nginx in a private network
// namespace), an expired certificate → exit 2, a leaf-only
// chain → exit 1, unreachable and silent servers → exit 2 within --timeout,
// usage errors → exit 3. JSON is read with a strict parser (simdjson).
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include <simdjson.h>

#include "harness.h"
#include "nginx_peer.h"

namespace tlsfront::itest {
namespace {

const std::string kOpenssl = "/usr/bin/openssl";

// A DER OCSP response for the test PKI's localhost.pem, status good, valid
// for an hour: `openssl ocsp` writes the request, then answers it as the
// intermediate's delegated responder (no network).
std::string make_staple(const TempDir& dir) {
  const std::string req = dir.file("ocsp-req.der"), resp = dir.file("ocsp-resp.der");
  RunResult r = run_command(dir, {kOpenssl, "ocsp", "-issuer", pki("intermediate.pem"), "-cert", pki("localhost.pem"),
                                  "-no_nonce", "-reqout", req});
  EXPECT_EQ(r.status.code, 0) << r.err;
  r = run_command(dir, {kOpenssl, "ocsp", "-index", pki("ocsp-index.txt"), "-rsigner", pki("ocsp-signer.pem"), "-rkey",
                        pki("ocsp-signer.key"), "-CA", pki("intermediate.pem"), "-reqin", req, "-respout", resp, "-nmin",
                        "60"});
  EXPECT_EQ(r.status.code, 0) << r.err;
  return resp;
}

class Probe : public ProxyTest {
 protected:
  // `tlsfront probe ARGS... https://localhost:PORT/` with localhost pinned to 127.0.0.1.
  RunResult probe(int port, std::vector<std::string> args, const std::string& path = "/") {
    const std::string p = std::to_string(port);
    std::vector<std::string> argv = {TLSFRONT_BINARY, "probe", "--resolve", "localhost:" + p + ":127.0.0.1"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("https://localhost:" + p + path);
    return run_command(dir_, argv, milliseconds(60'000));
  }
  // The first probe of a --json run, strictly parsed into `p`; false (with a
  // failure naming the output) when the output is not such JSON.
  bool parse_probe(const RunResult& r, simdjson::dom::element& p) {
    simdjson::dom::element doc;
    if (parser_.parse(r.out).get(doc) != simdjson::SUCCESS || doc["probes"].at(0).get(p) != simdjson::SUCCESS) {
      ADD_FAILURE() << "not a probe JSON object: " << r.out << r.err;
      return false;
    }
    return true;
  }
  std::string ca_with_intermediate() {
    const std::string f = dir_.file("root+intermediate.pem");
    write_file(f, read_file(pki("root.pem")) + read_file(pki("intermediate.pem")));
    return f;
  }

  simdjson::dom::parser parser_;
};

// docs/operations.md: against tlsfront with [tls] early_data = true the probe
// says "offered ... accepted", as against nginx with ssl_early_data on.
TEST_F(Probe, TlsfrontWithEarlyDataOffersAndAcceptsIt) {
  ProxyOptions o;
  o.workers = 1;
  o.tls_extra = "early_data = true\n";
  ASSERT_TRUE(start_proxy(o));
  RunResult r = probe(port(), {"--json", "--count", "2", "--no-staple-ok", "--ca", pki("root.pem")});
  simdjson::dom::element p;
  ASSERT_TRUE(parse_probe(r, p));
  EXPECT_TRUE(bool(p["early_data"]["offered"])) << r.out;
  EXPECT_EQ(int64_t(p["early_data"]["max_early_data"]), 16384) << r.out;
  EXPECT_EQ(int64_t(p["early_data"]["sent"]), 2) << r.out;
  EXPECT_EQ(int64_t(p["early_data"]["accepted"]), 2) << r.out;
}

TEST_F(Probe, TlsfrontStapledAndResumedEveryWay) {
  ProxyOptions o;
  o.workers = 1;
  o.tls_extra = "[tls.ocsp]\nresponse_file = \"" + make_staple(dir_) + "\"\n";
  ASSERT_TRUE(start_proxy(o));
  RunResult r = probe(port(), {"--json", "--count", "2", "--ca", pki("root.pem")}, "/probe");
  EXPECT_EQ(r.status.code, 0) << r.err << r.out;
  EXPECT_EQ(r.err, "");
  simdjson::dom::element p;
  ASSERT_TRUE(parse_probe(r, p));
  EXPECT_EQ(std::string_view(p["status"]), "ok");
  EXPECT_EQ(std::string_view(p["peer"]), "127.0.0.1:" + std::to_string(port()));
  EXPECT_EQ(int64_t(p["http"]["status"]), 200);
  EXPECT_EQ(std::string_view(p["tls"]["version"]), "TLSv1.3");
  EXPECT_EQ(std::string_view(p["tls"]["alpn"]), "http/1.1");
  EXPECT_EQ(int64_t(p["chain"]["count"]), 2);
  EXPECT_FALSE(bool(p["chain"]["root_sent"]));
  EXPECT_EQ(std::string_view(p["chain"]["certificates"].at(1)["subject"]), "CN=tlsfront test intermediate");
  EXPECT_TRUE(bool(p["certificate"]["verified"]));
  EXPECT_TRUE(bool(p["certificate"]["covers_host"]));
  EXPECT_TRUE(bool(p["ocsp_staple"]["present"]));
  EXPECT_TRUE(bool(p["ocsp_staple"]["verified"]));
  EXPECT_EQ(std::string_view(p["ocsp_staple"]["status"]), "good");
  EXPECT_EQ(int64_t(p["resumption"]["rounds_resumed"]), 2);
  EXPECT_TRUE(bool(p["resumption"]["tls12_ticket"]["resumed"]));
  EXPECT_TRUE(bool(p["resumption"]["tls12_session_id"]["resumed"]));
  EXPECT_FALSE(bool(p["early_data"]["offered"]));  // [tls] early_data is off by default
  EXPECT_EQ(int64_t(p["times_ms"]["full"]["total"]["count"]), 2);
  EXPECT_EQ(int64_t(p["times_ms"]["resumed"]["tls"]["count"]), 2);

  // The server saw it the same way: 2 rounds × (full + resumed by ticket),
  // then TLS 1.2 full + ticket, full + session ID (the cache).
  const auto lines = proxy_.wait_log_lines(8);
  ASSERT_EQ(lines.size(), 8u);
  std::map<std::string, int> kinds;
  for (const auto& l : lines) {
    EXPECT_EQ(json_string(l, "path"), "/probe");
    ++kinds[json_string(l, "ssl_resumption").value_or("?")];
  }
  EXPECT_EQ(kinds, (std::map<std::string, int>{{"cache", 1}, {"none", 4}, {"ticket", 3}}));

  r = probe(port(), {"--count", "1", "--ca", pki("root.pem")});  // the table
  EXPECT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.out.find("  OCSP staple     good, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  resumption      TLSv1.3: 1 of 1 rounds resumed; TLSv1.2 ticket: resumed; TLSv1.2 session ID: resumed"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  0-RTT           not offered"), std::string::npos) << r.out;

  r = probe(port(), {"--count", "1", "--prom", "--ca", pki("root.pem")});
  EXPECT_EQ(r.status.code, 0) << r.err;
  const std::string label = "{url=\"https://localhost:" + std::to_string(port()) + "/\"}";
  EXPECT_NE(r.out.find("tlsfront_probe_ocsp_staple_good" + label + " 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tlsfront_probe_resumed_rounds" + label + " 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tlsfront_probe_status" + label + " 0\n"), std::string::npos) << r.out;
}

TEST_F(Probe, TlsfrontWithoutStapleWarns) {
  ASSERT_TRUE(start_proxy());
  RunResult r = probe(port(), {"--count", "1", "--ca", pki("root.pem")});
  EXPECT_EQ(r.status.code, 1) << r.err << r.out;
  EXPECT_EQ(r.err, "tlsfront probe: https://localhost:" + std::to_string(port()) + "/: warning: no OCSP staple\n");
  r = probe(port(), {"--count", "1", "--no-staple-ok", "--ca", pki("root.pem")});
  EXPECT_EQ(r.status.code, 0) << r.err;
  // The certificate expires in about 825 days: a threshold past it warns.
  r = probe(port(), {"--count", "1", "--no-staple-ok", "--warn-days", "3000", "--ca", pki("root.pem")});
  EXPECT_EQ(r.status.code, 1) << r.err;
  EXPECT_NE(r.err.find("warning: the certificate expires in "), std::string::npos) << r.err;
  // An IP address: no SNI is sent (RFC 6066), the leaf's IP SAN covers it.
  r = run_command(dir_, {TLSFRONT_BINARY, "probe", "--count", "1", "--no-staple-ok", "--json", "--ca", pki("root.pem"),
                         "https://127.0.0.1:" + std::to_string(port()) + "/"});
  EXPECT_EQ(r.status.code, 0) << r.err;
  simdjson::dom::element p;
  ASSERT_TRUE(parse_probe(r, p));
  EXPECT_TRUE(bool(p["certificate"]["covers_host"]));
  EXPECT_TRUE(p["times_ms"]["full"]["dns"].is_null());  // nothing was looked up
  // Without --ca the test root is unknown: verification fails.
  r = probe(port(), {"--count", "1", "--no-staple-ok"});
  EXPECT_EQ(r.status.code, 2) << r.err;
  EXPECT_NE(r.err.find("critical: certificate verification failed: unable to get local issuer certificate"),
            std::string::npos)
      << r.err;
}

class ProbeNginx : public Probe {
 protected:
  void SetUp() override {
    if (!file_exists(kNginx)) GTEST_SKIP() << kNginx << " not found (scripts/install-deps.sh)";
    Probe::SetUp();
  }
  Nginx nginx_{dir_};
};

TEST_F(ProbeNginx, StapleResumptionAndEarlyData) {
  ASSERT_TRUE(nginx_.start(pki("localhost.chain.pem"), pki("localhost.key"),
                           "    ssl_stapling on;\n    ssl_stapling_file " + make_staple(dir_) +
                               ";\n    ssl_early_data on;\n    ssl_session_cache shared:probe:1m;\n"));
  RunResult r = probe(nginx_.port(), {"--json", "--count", "2", "--ca", pki("root.pem")});
  EXPECT_EQ(r.status.code, 0) << r.err << r.out;
  simdjson::dom::element p;
  ASSERT_TRUE(parse_probe(r, p));
  EXPECT_EQ(int64_t(p["http"]["status"]), 200);
  EXPECT_EQ(std::string_view(p["ocsp_staple"]["status"]), "good");
  EXPECT_EQ(int64_t(p["resumption"]["rounds_resumed"]), 2);
  EXPECT_TRUE(bool(p["resumption"]["tls12_ticket"]["resumed"]));
  EXPECT_TRUE(bool(p["resumption"]["tls12_session_id"]["resumed"]));
  EXPECT_TRUE(bool(p["early_data"]["offered"]));
  EXPECT_EQ(int64_t(p["early_data"]["sent"]), 2);
  EXPECT_EQ(int64_t(p["early_data"]["accepted"]), 2);

  r = probe(nginx_.port(), {"--json", "--count", "1", "--no-early-data", "--ca", pki("root.pem")});
  ASSERT_TRUE(parse_probe(r, p));
  EXPECT_EQ(int64_t(p["early_data"]["sent"]), 0) << r.out;
}

TEST_F(ProbeNginx, ExpiredCertificateIsCritical) {
  ASSERT_TRUE(nginx_.start(pki("expired.chain.pem"), pki("expired.key")));
  RunResult r = probe(nginx_.port(), {"--count", "1", "--ca", pki("root.pem")});
  EXPECT_EQ(r.status.code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find(": critical: the certificate expired on 2021-01-01T00:00:00Z"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("verified: NO (certificate has expired)"), std::string::npos) << r.out;
}

TEST_F(ProbeNginx, CertificateForAnotherNameIsCritical) {
  ASSERT_TRUE(nginx_.start(pki("other-name.chain.pem"), pki("other-name.key")));
  RunResult r = probe(nginx_.port(), {"--count", "1", "--no-staple-ok", "--ca", pki("root.pem")});
  EXPECT_EQ(r.status.code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find(": critical: the certificate does not cover \"localhost\" (SNI mismatch)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("covers \"localhost\": NO, verified: yes"), std::string::npos) << r.out;
}

TEST_F(ProbeNginx, LeafOnlyChainWarns) {
  ASSERT_TRUE(nginx_.start(pki("leaf-only.pem"), pki("localhost.key")));
  // A client that holds the intermediate verifies; others cannot: a warning.
  RunResult r = probe(nginx_.port(), {"--json", "--count", "1", "--no-staple-ok", "--ca", ca_with_intermediate()});
  EXPECT_EQ(r.status.code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find(": warning: the server sends the leaf only: its issuer \"CN=tlsfront test intermediate\""),
            std::string::npos)
      << r.err;
  simdjson::dom::element p;
  ASSERT_TRUE(parse_probe(r, p));
  EXPECT_EQ(int64_t(p["chain"]["count"]), 1);
  // A client that trusts only the root cannot build the path at all.
  r = probe(nginx_.port(), {"--count", "1", "--no-staple-ok", "--ca", pki("root.pem")});
  EXPECT_EQ(r.status.code, 2) << r.err;
  EXPECT_NE(r.err.find("(the server sends the leaf only, without its intermediate)"), std::string::npos) << r.err;
}

// TCP Fast Open needs the server side of net.ipv4.tcp_fastopen (bit 2),
// which this machine's network namespace does not set and a test must not
// change: so nginx (`listen ... fastopen=16`) and the probe run in a private
// network and PID namespace (root only), whose own sysctl is set to 3. The
// first connection fetches the cookie; later ones carry the ClientHello in
// the SYN. Everything in the PID namespace dies with its shell, and the
// shell stops nginx by PID.
TEST_F(ProbeNginx, TcpFastOpenInAPrivateNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (unshare --net --pid)";
  RunResult check = run_command(dir_, {"/usr/bin/unshare", "--net", "--pid", "--fork", "--kill-child", "/bin/true"});
  if (check.status.code != 0) GTEST_SKIP() << "unshare --net --pid failed: " << check.err;
  // The config only: started inside the namespace below.
  ASSERT_TRUE(nginx_.start(pki("localhost.chain.pem"), pki("localhost.key")));
  nginx_.stop();
  const std::string prefix = dir_.file("nginx");
  std::string conf = read_file(prefix + "/nginx.conf");
  const std::string listen = "listen 127.0.0.1:" + std::to_string(nginx_.port()) + " ssl";
  ASSERT_NE(conf.find(listen), std::string::npos);
  conf.replace(conf.find(listen), listen.size(), listen + " fastopen=16");
  write_file(prefix + "/tfo.conf", conf);
  const std::string p = std::to_string(nginx_.port());
  const std::string script =
      "set -e; ip link set lo up; sysctl -qw net.ipv4.tcp_fastopen=3; " + kNginx + " -p " + prefix + " -c " + prefix +
      "/tfo.conf 2>" + dir_.file("nginx-tfo.err") + " & pid=$!; trap 'kill $pid' EXIT; " +
      "i=0; until (exec 3<>/dev/tcp/127.0.0.1/" + p + ") 2>/dev/null; do i=$((i+1)); [ $i -lt 100 ]; sleep 0.05; done; " +
      TLSFRONT_BINARY + " probe --json --count 2 --no-staple-ok --timeout 5s --ca " + pki("root.pem") +
      " --resolve localhost:" + p + ":127.0.0.1 https://localhost:" + p + "/ || true";
  RunResult r = run_command(dir_, {"/usr/bin/unshare", "--net", "--pid", "--fork", "--kill-child", "/bin/bash", "-c", script},
                            milliseconds(30'000));
  EXPECT_EQ(r.status.code, 0) << r.err << read_file(dir_.file("nginx-tfo.err"));
  simdjson::dom::element j;
  ASSERT_TRUE(parse_probe(r, j));
  EXPECT_EQ(std::string_view(j["status"]), "ok") << r.out;
  EXPECT_EQ(int64_t(j["tcp_fastopen"]["connections"]), 8);
  EXPECT_EQ(int64_t(j["tcp_fastopen"]["requested"]), 8);
  EXPECT_GE(int64_t(j["tcp_fastopen"]["used"]), 1) << r.out;
}

TEST_F(Probe, UnreachableAndSilentServersAreCriticalWithinTheTimeout) {
  int silent_port = 0;
  const int silent = listen_loopback(8, silent_port);  // accepts in the kernel, never answers
  ASSERT_GE(silent, 0);
  RunResult r = probe(silent_port, {"--count", "1", "--timeout", "500ms"});
  ::close(silent);
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 2) << r.err;
  EXPECT_NE(r.err.find(": critical: TLS handshake failed: timed out"), std::string::npos) << r.err;

  r = probe(silent_port, {"--count", "1", "--json"});  // closed now: nothing listens
  EXPECT_EQ(r.status.code, 2) << r.err;
  EXPECT_NE(r.err.find(": critical: unreachable: 127.0.0.1:" + std::to_string(silent_port) + ": Connection refused"),
            std::string::npos)
      << r.err;
  simdjson::dom::element p;
  ASSERT_TRUE(parse_probe(r, p));
  EXPECT_EQ(std::string_view(p["failure"]["stage"]), "connect");
}

TEST_F(Probe, UsageErrorsExit3) {
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"probe"}, {"probe", "http://localhost/"}, {"probe", "--count", "0", "https://a/"},
        {"probe", "--timeout", "5x", "https://a/"}, {"probe", "--resolve", "a:1", "https://a/"},
        {"probe", "--json", "--prom", "https://a/"}, {"probe", "--bogus", "https://a/"},
        {"probe", "--ca", dir_.file("missing.pem"), "https://a/"}}) {
    std::vector<std::string> full = {TLSFRONT_BINARY};
    full.insert(full.end(), argv.begin(), argv.end());
    RunResult r = run_command(dir_, full);
    EXPECT_EQ(r.status.code, 3) << argv.back() << ": " << r.err;
    EXPECT_NE(r.err.find("tlsfront probe: "), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tlsfront::itest
