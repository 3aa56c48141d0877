// [acme] end to end: two tlsfront nodes of one region sharing a real
// redis-server ([tls.store]), Debian's pebble as the CA. Pebble validates
// against node B's listeners only (its httpPort and tlsPort), so whichever
// node holds the region's lock and orders, node B answers the challenge
// from the board in Redis. Checked: exactly one order per issuance (the
// order counter in Redis), both nodes serve the issued certificate (a
// handshake verified against pebble's own root), and a renewal (pebble's
// certificates last kValidity seconds; renewal at 2/3 of that) replaces it
// on both nodes without a restart; TLS-ALPN-01 likewise; with the CA gone,
// failed renewals back off and the certificate keeps serving. Skipped
// without pebble or redis-server.
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <iostream>
#include <thread>
#include <string>

#include "harness.h"
#include "redis_nodes.h"
#include "shared/pebble.h"

namespace tlsfront::itest {
namespace {

constexpr int kValidity = 30;  // seconds: renewal due 20 s after issuance

class AcmeFleetTest : public RedisNodesTest {
 protected:
  void SetUp() override {
    if (!Pebble::installed()) GTEST_SKIP() << "pebble / pebble-challtestsrv not installed";
    RedisNodesTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(redis_.start());
    seal_key_ = dir_.file("seal.key");
    write_file(seal_key_, std::string(32, 's'));
    ::chmod(seal_key_.c_str(), 0600);
    pebble_.set_validity(validity_);
    ASSERT_TRUE(pebble_.start());
    // Pebble makes its root at start: the nodes check issued chains up to it.
    RunResult root = run_command(dir_, {find_tool("curl"), "-sS", "--cacert", pki("root.pem"),
                                        "https://127.0.0.1:" + std::to_string(pebble_.management_port()) + "/roots/0"});
    ASSERT_NE(root.out.find("BEGIN CERTIFICATE"), std::string::npos) << root.err;
    pebble_root_ = dir_.file("pebble-root.pem");
    write_file(pebble_root_, root.out);
    trust_ = dir_.file("trust.pem");
    write_file(trust_, root.out + read_file(pki("root.pem")));
  }

  void TearDown() override {
    if (HasFailure()) std::cerr << "---- pebble:\n" << pebble_.log().substr(0, 20000);
    RedisNodesTest::TearDown();
  }

  // A node's config: TLS on `tls_listen`, cleartext on `http_listen`.
  std::string config(const std::string& tls_listen, const std::string& http_listen, const std::string& challenges,
                     bool admin = false) const {
    return "[[listen]]\naddress = \"" + tls_listen + "\"\n[[listen]]\naddress = \"" + http_listen +
           "\"\ntls = false\n[tls]\ncertificate = \"" + pki("localhost.chain.pem") + "\"\nkey = \"" +
           pki("localhost.key") + "\"\ntrusted_ca = \"" + trust_ + "\"\n[tls.store]\nregion = \"eu\"\n" +
           "seal_key_files = [\"" + seal_key_ + "\"]\nredis = \"127.0.0.1:" + std::to_string(redis_.port()) +
           "\"\npoll_interval = \"100ms\"\nreconcile_interval = \"2s\"\n[acme]\ndirectory = \"" +
           (directory_.empty() ? pebble_.directory_url() : directory_) + "\"\nca_bundle = \"" + pki("root.pem") +
           "\"\ncontact = [\"mailto:ops@example.com\"]\nnames = [\"one.example\", \"two.example\"]\nchallenges = [" +
           challenges + "]\ncheck_interval = \"1s\"\n[[upstream]]\nname = \"demo\"\nservers = [\"" +
           backend_.address() + "\"]\n[[route]]\nupstream = \"demo\"\n[admin]\n" +
           (admin ? "address = \"127.0.0.1:0\"\n" : "enabled = false\n");
  }

  void start_nodes(const std::string& challenges) {
    ProxyOptions a, b;
    b.admin_port = -1;  // node A has [admin] on a free port
    a.config_text = config("127.0.0.1:0", "127.0.0.2:0", challenges, /*admin=*/true);
    b.config_text = config("127.0.0.1:" + std::to_string(pebble_.tls_port()),
                           "127.0.0.1:" + std::to_string(pebble_.http_port()), challenges);
    ASSERT_TRUE(proxy_.start(a));
    ASSERT_TRUE(proxy_b_.start(b));
  }

  std::string redis_get(const std::string& key) const {
    std::string out = redis_.cli({"GET", key}).out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  // The SHA-256 fingerprint of the leaf `port` serves for `name`, when the
  // handshake verifies against pebble's root (name included); "" otherwise.
  std::string served(int port, const std::string& name) const {
    RunResult r = run_command(
        dir_, {find_tool("sh"), "-c",
               "openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " -servername " + name +
                   " -verify_hostname " + name + " -CAfile " + pebble_root_ +
                   " -verify_return_error </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256"},
        milliseconds(5'000));
    return r.out.find("Fingerprint=") == std::string::npos ? std::string() : r.out;
  }

  // Both nodes' logs, for a failure message.
  std::string node_logs() { return "A:\n" + proxy_.process().err() + "\nB:\n" + proxy_b_.process().err(); }
  // Waits (30 s) until node B serves a certificate for `name`: its
  // fingerprint, or "" (a failure naming it, with the nodes' logs).
  std::string first_served(const std::string& name) {
    std::string cert;
    if (!wait_until([&] { return !(cert = served(proxy_b_.port(), name)).empty(); }, milliseconds(30'000))) {
      ADD_FAILURE() << "node B never served an issued certificate for " << name << "\n" << node_logs();
    }
    return cert;
  }
  // Waits (45 s) until node B serves a certificate for `name` other than
  // `first`: the renewal's fingerprint, or "" (a failure, with the logs).
  std::string renewed_after(const std::string& name, const std::string& first) {
    std::string renewed;
    if (!wait_until(
            [&] {
              renewed = served(proxy_b_.port(), name);
              return !renewed.empty() && renewed != first;
            },
            milliseconds(45'000))) {
      ADD_FAILURE() << "no renewal of " << name << "\n" << node_logs();
      return {};
    }
    return renewed;
  }

  static size_t count_of(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  Pebble pebble_{dir_, pki("localhost.chain.pem"), pki("localhost.key")};
  std::string seal_key_, pebble_root_, trust_;
  int validity_ = kValidity;  // of pebble's certificates (0: pebble's default, years)
  std::string directory_;     // the nodes' [acme] directory ("": pebble's)
};

TEST_F(AcmeFleetTest, IssuedOnceServedByBothRenewedWithoutRestart) {
  start_nodes("\"http-01\"");
  if (HasFatalFailure()) return;
  const std::string first = first_served("one.example");
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(wait_until([&] { return served(proxy_.port(), "one.example") == first; }, milliseconds(10'000)));
  EXPECT_TRUE(wait_until([&] { return !served(proxy_.port(), "two.example").empty(); }, milliseconds(10'000)));
  // One node ordered each name once: the lock let one node through.
  EXPECT_EQ(redis_get("tlsfront:acme:orders:eu"), "2");
  const std::string a_log = proxy_.process().err(), b_log = proxy_b_.process().err();
  const bool a_ordered = a_log.find("acme: ordering one.example") != std::string::npos;
  const bool b_ordered = b_log.find("acme: ordering one.example") != std::string::npos;
  EXPECT_NE(a_ordered, b_ordered) << "A:\n" << a_log << "\nB:\n" << b_log;
  std::cerr << "first issuance ordered by node " << (a_ordered ? "A (answered by B from the board)" : "B") << "\n";

  // Renewal at 2/3 of kValidity: a new certificate on both nodes, same processes.
  const int a_pid = proxy_.process().pid(), b_pid = proxy_b_.process().pid();
  const std::string renewed = renewed_after("one.example", first);
  ASSERT_FALSE(renewed.empty());
  EXPECT_TRUE(wait_until([&] { return served(proxy_.port(), "one.example") == renewed; }, milliseconds(10'000)));
  EXPECT_EQ(proxy_.process().pid(), a_pid);
  EXPECT_EQ(proxy_b_.process().pid(), b_pid);
  // Both nodes raced for the renewal; one ordered it (the next renewal
  // point is 20 s away, so no third order yet).
  EXPECT_EQ(count_of(proxy_.process().err() + proxy_b_.process().err(), "acme: ordering one.example ("), 2u);
  EXPECT_GE(std::stoi(redis_get("tlsfront:acme:orders:eu")), 3);
  // Pebble has no renewalInfo: the configured rule alone, said once per
  // node, and no renewal information asked for.
  EXPECT_EQ(count_of(proxy_.process().err(), "offers no renewal information"), 1u) << proxy_.process().err();
  EXPECT_EQ(count_of(proxy_b_.process().err(), "offers no renewal information"), 1u);
  const auto m = scrape_metrics(proxy_.admin_port());
  for (const char* result : {"window", "failed"}) {
    const std::string series = std::string("tlsfront_acme_renewal_info_total{result=\"") + result + "\"}";
    EXPECT_EQ(m.count(series) ? m.at(series) : -1, 0) << series;
  }
}

TEST_F(AcmeFleetTest, TlsAlpn01) {
  start_nodes("\"tls-alpn-01\"");
  if (HasFatalFailure()) return;
  std::string cert;
  ASSERT_TRUE(wait_until([&] { return !(cert = served(proxy_.port(), "two.example")).empty(); }, milliseconds(30'000)))
      << "A:\n" << proxy_.process().err() << "\nB:\n" << proxy_b_.process().err();
  EXPECT_TRUE(wait_until([&] { return served(proxy_b_.port(), "two.example") == cert; }, milliseconds(10'000)));
  const std::string logs = proxy_.process().err() + proxy_b_.process().err();
  EXPECT_NE(logs.find("two.example: tls-alpn-01 challenge published"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("http-01 challenge"), std::string::npos);
  // A client that is not the CA (ALPN h2, http/1.1) still gets the node's
  // own certificates for names without a challenge.
  TlsClient c;
  EXPECT_TRUE(c.connect(proxy_.port(), TlsOptions{}, milliseconds(3'000)));
}

TEST_F(AcmeFleetTest, ARenewalFailureKeepsTheCertificateServing) {
  start_nodes("\"http-01\"");
  if (HasFatalFailure()) return;
  std::string cert;
  ASSERT_TRUE(wait_until([&] { return !(cert = served(proxy_.port(), "one.example")).empty(); }, milliseconds(30'000)))
      << "A:\n" << proxy_.process().err() << "\nB:\n" << proxy_b_.process().err();
  ASSERT_TRUE(wait_until([&] { return !served(proxy_.port(), "two.example").empty(); }, milliseconds(30'000)));
  // The CA goes away: every renewal fails from its renewal point on.
  pebble_.stop();
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string logs = proxy_.process().err() + proxy_b_.process().err();
        return logs.find("keeps serving; retrying in") != std::string::npos;
      },
      milliseconds(30'000)))
      << proxy_.process().err() << proxy_b_.process().err();
  // Still serving a certificate, the same on both nodes (a renewal may have
  // landed just before the CA went away on a slow host: the one served now
  // is the last good one), and it stays while the failures go on.
  cert = served(proxy_.port(), "one.example");
  EXPECT_FALSE(cert.empty());
  EXPECT_TRUE(wait_until([&] { return served(proxy_b_.port(), "one.example") == cert; }, milliseconds(10'000)));
  const size_t seen = count_of(proxy_.process().err() + proxy_b_.process().err(), "keeps serving; retrying in");
  wait_until(
      [&] { return count_of(proxy_.process().err() + proxy_b_.process().err(), "keeps serving; retrying in") > seen; },
      milliseconds(15'000));
  EXPECT_EQ(served(proxy_.port(), "one.example"), cert);
  EXPECT_EQ(served(proxy_b_.port(), "one.example"), cert);
  // Node A's metrics: the names stay due; its failed orders, if it was the one trying.
  const bool a_failed = proxy_.process().err().find("keeps serving; retrying in") != std::string::npos;
  const auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_GE(m.count("tlsfront_acme_due_names") ? m.at("tlsfront_acme_due_names") : -1, 1);
  const std::string order_failures = R"(tlsfront_acme_orders_total{result="failed"})";
  if (a_failed) EXPECT_GE(m.count(order_failures) ? m.at(order_failures) : 0, 1) << order_failures;
  // Backoff: failures are retried after a doubling delay, never in a loop.
  const size_t failures = count_of(proxy_.process().err() + proxy_b_.process().err(), "keeps serving; retrying in");
  EXPECT_LE(failures, 20u);
}

// The CA's renewal information drives the renewal: pebble's certificates
// last years (the configured rule is 2/3 of that away), but ari_ca.py
// answers a window in the past for each name's first certificate (as a CA
// about to revoke it would): both are renewed at once, the explanation is
// logged, and the renewed certificates (a window a year ahead) are left alone.
class AcmeAriTest : public AcmeFleetTest {
 protected:
  AcmeAriTest() { validity_ = 0; }
  void SetUp() override {
    AcmeFleetTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::string python = find_tool("python3");
    if (python.empty()) GTEST_SKIP() << "python3 not installed";
    const std::string port_file = dir_.file("ari.port");
    ari_log_ = dir_.file("ari.log");
    ASSERT_TRUE(ari_.start({python, std::string(TLSFRONT_SOURCE_DIR) + "/tests/integration/peers/ari_ca.py", port_file,
                            ari_log_, pki("localhost.chain.pem"), pki("localhost.key"), pki("root.pem"),
                            pebble_.directory_url(), "2", mode_},
                           dir_.file("ari.out"), dir_.file("ari.err")));
    ASSERT_TRUE(wait_until([&] { return read_file(port_file).ends_with("\n"); }, milliseconds(10'000))) << ari_.err();
    directory_ = "https://127.0.0.1:" + std::to_string(std::atoi(read_file(port_file).c_str())) + "/dir";
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "---- ari_ca.py:\n" << ari_.err().substr(0, 20000);
    ari_.stop();
    AcmeFleetTest::TearDown();
  }
  Process ari_;
  std::string ari_log_;
  std::string mode_ = "window";  // ari_ca.py's MODE
};

TEST_F(AcmeAriTest, AWindowInThePastRenewsAFreshCertificateAtOnce) {
  start_nodes("\"http-01\"");
  if (HasFatalFailure()) return;
  const std::string first = first_served("one.example");
  ASSERT_FALSE(first.empty());
  const std::string renewed = renewed_after("one.example", first);
  ASSERT_FALSE(renewed.empty());
  EXPECT_TRUE(wait_until([&] { return served(proxy_.port(), "one.example") == renewed; }, milliseconds(10'000)));
  // Both names' renewed certificates asked about (a window a year ahead).
  ASSERT_TRUE(wait_until([&] { return count_of(read_file(ari_log_), " future") >= 2; }, milliseconds(30'000)))
      << read_file(ari_log_);
  std::this_thread::sleep_for(milliseconds(3'000));  // three more checks of each node
  const std::string logs = proxy_.process().err() + proxy_b_.process().err();
  EXPECT_NE(logs.find("one.example: the CA's renewal window"), std::string::npos) << logs;
  EXPECT_NE(logs.find("the CA explains: https://ca.example/incident-42"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("offers no renewal information"), std::string::npos);
  // Each name: its first order and one renewal, no more.
  EXPECT_EQ(count_of(logs, "acme: ordering one.example ("), 2u) << logs;
  EXPECT_EQ(count_of(logs, "acme: ordering two.example ("), 2u) << logs;
  EXPECT_EQ(redis_get("tlsfront:acme:orders:eu"), "4");
  std::cerr << "the order's \"replaces\" " << (logs.find("refused the order's") == std::string::npos
                                                   ? "was accepted (pebble 2.4 ignores it)"
                                                   : "was refused; ordered again without it")
            << "\n";
  const auto m = scrape_metrics(proxy_.admin_port());
  const std::string windows = R"(tlsfront_acme_renewal_info_total{result="window"})";
  EXPECT_GE(m.count(windows) ? m.at(windows) : 0, 2) << windows;
}

// A CA whose renewal information is malformed (a window ending before it
// starts) changes nothing: the renewal comes at 2/3 of the lifetime, as
// without ARI, and the failure is logged and counted.
class AcmeAriMalformedTest : public AcmeAriTest {
 protected:
  AcmeAriMalformedTest() {
    validity_ = kValidity;
    mode_ = "malformed";
  }
};

TEST_F(AcmeAriMalformedTest, TheConfiguredRuleRenews) {
  start_nodes("\"http-01\"");
  if (HasFatalFailure()) return;
  const std::string first = first_served("one.example");
  ASSERT_FALSE(first.empty());
  // Renewed at 2/3 of kValidity (20 s), not before the CA's (invalid) window asked.
  const std::string renewed = renewed_after("one.example", first);
  ASSERT_FALSE(renewed.empty());
  const std::string logs = proxy_.process().err() + proxy_b_.process().err();
  EXPECT_NE(read_file(ari_log_).find(" malformed"), std::string::npos);
  EXPECT_NE(logs.find("renewal information (RFC 9773): "), std::string::npos) << logs;
  EXPECT_NE(logs.find("end is not after its start; the configured rule applies"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("the CA's renewal window"), std::string::npos) << logs;
  const auto m = scrape_metrics(proxy_.admin_port());
  const std::string failed = R"(tlsfront_acme_renewal_info_total{result="failed"})";
  const std::string windows = R"(tlsfront_acme_renewal_info_total{result="window"})";
  EXPECT_GE(m.count(failed) ? m.at(failed) : 0, 1) << failed;
  EXPECT_EQ(m.count(windows) ? m.at(windows) : -1, 0) << windows;
}

// A CA that offers renewal information but refuses the order's "replaces"
// (409 alreadyReplaced, RFC 9773 §5): the order is made again without it and
// the renewal the window asked for happens.
class AcmeAriRefusedTest : public AcmeAriTest {
 protected:
  AcmeAriRefusedTest() { mode_ = "refuse-replaces"; }
};

TEST_F(AcmeAriRefusedTest, TheOrderIsMadeAgainWithoutReplaces) {
  start_nodes("\"http-01\"");
  if (HasFatalFailure()) return;
  const std::string first = first_served("one.example");
  ASSERT_FALSE(first.empty());
  const std::string renewed = renewed_after("one.example", first);
  ASSERT_FALSE(renewed.empty());
  const std::string logs = proxy_.process().err() + proxy_b_.process().err();
  EXPECT_NE(read_file(ari_log_).find("refused replaces "), std::string::npos) << read_file(ari_log_);
  EXPECT_NE(logs.find("one.example: the CA refused the order's \"replaces\""), std::string::npos) << logs;
  EXPECT_NE(logs.find("alreadyReplaced"), std::string::npos) << logs;
}

}  // namespace
}  // namespace tlsfront::itest
