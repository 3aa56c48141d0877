// [tls.store]: the cluster certificate store in a real redis-server, written
// with `tlsfront cert` and served by real tlsfront nodes. The CLI refuses
// what the loader refuses; a put reaches every node of its region and no
// other; a swap under a handshake loop fails none and keeps sessions
// resumable; an entry written around the CLI that does not check is ignored
// (last good kept); Redis lost and restarted empty leaves nodes serving until
// entries are put back; a node started with Redis down serves its sealed
// disk copy; the CLI and a node reach Redis over TLS (redis_tls) with AUTH
// and a client certificate. Skipped when redis-server / redis-cli are not
// installed.
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "redis_nodes.h"
#include "shared/redis_server.h"

namespace tlsfront::itest {
namespace {

// SHA-256 of the leaf `c` got, hex; "" when none.
std::string peer_fingerprint(const TlsClient& c) {
  X509* leaf = SSL_get0_peer_certificate(c.ssl());
  if (leaf == nullptr) return {};
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  X509_digest(leaf, EVP_sha256(), md, &n);
  std::string out;
  char buf[3];
  for (unsigned i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", md[i]);
    out += buf;
  }
  return out;
}

std::string file_fingerprint(const std::string& pem_path) {
  BIO* bio = BIO_new_file(pem_path.c_str(), "r");
  X509* x = bio ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (x == nullptr) return {};
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  X509_digest(x, EVP_sha256(), md, &n);
  X509_free(x);
  std::string out;
  char buf[3];
  for (unsigned i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", md[i]);
    out += buf;
  }
  return out;
}

class CertStoreTest : public RedisNodesTest {
 protected:
  CertStoreTest() : proxy_c_(dir_c_) {}

  void SetUp() override {
    RedisNodesTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(redis_.start());
    seal_key_ = dir_.file("seal.key");
    write_file(seal_key_, std::string(32, 's'));
    ::chmod(seal_key_.c_str(), 0600);
  }

  void TearDown() override {
    if (proxy_c_.process().pid() > 0) {
      ExitStatus st = proxy_c_.stop();
      EXPECT_TRUE(st.exited && st.code == 0) << "node C did not exit 0 on SIGTERM";
      if (HasFailure()) std::cerr << "---- node C stderr:\n" << proxy_c_.process().err();
    }
    RedisNodesTest::TearDown();
  }

  ProxyOptions node(const std::string& region, const std::string& extra = "") const {
    ProxyOptions o;
    o.tls_extra = "[tls.store]\nregion = \"" + region + "\"\nseal_key_files = [\"" + seal_key_ +
                  "\"]\nredis = \"127.0.0.1:" + std::to_string(redis_.port()) +
                  "\"\npoll_interval = \"100ms\"\nreconcile_interval = \"2s\"\n" + extra;
    o.upstream_servers = {backend_.address()};
    return o;
  }

  RunResult cert(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {TLSFRONT_BINARY, "cert", "--config", proxy_.config_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(dir_, argv);
  }

  RunResult put(const std::string& name, const std::string& chain, const std::string& key,
                std::vector<std::string> more = {}) const {
    std::vector<std::string> args = {"put", "--name", name, "--chain", chain, "--key", key};
    args.insert(args.end(), more.begin(), more.end());
    return cert(args);
  }

  // A new leaf for `name` issued by the test intermediate (ECDSA P-256):
  // its chain file; its key is <stem>.key.
  std::string issue(const std::string& stem, const std::string& name) const {
    const std::string key = dir_.file(stem + ".key"), csr = dir_.file(stem + ".csr"), leaf = dir_.file(stem + ".pem"),
                      ext = dir_.file(stem + ".ext"), chain = dir_.file(stem + ".chain.pem");
    write_file(ext, "subjectAltName=DNS:" + name + "\n");
    RunResult r1 = run_command(dir_, {find_tool("openssl"), "req", "-new", "-newkey", "ec", "-pkeyopt",
                                      "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-subj", "/CN=" + name,
                                      "-out", csr});
    RunResult r2 = run_command(dir_, {find_tool("openssl"), "x509", "-req", "-in", csr, "-CA", pki("intermediate.pem"),
                                      "-CAkey", pki("intermediate.key"), "-set_serial",
                                      std::to_string(1000 + stem.size() * 7 + stem.back()), "-days", "30",
                                      "-extfile", ext, "-out", leaf});
    EXPECT_TRUE(r1.status.exited && r1.status.code == 0) << r1.err;
    EXPECT_TRUE(r2.status.exited && r2.status.code == 0) << r2.err;
    write_file(chain, read_file(leaf) + read_file(pki("intermediate.pem")));
    return chain;
  }

  // The fingerprint of the leaf `port` serves for `sni` ("" when the handshake fails).
  static std::string served(int port, const std::string& sni) {
    TlsClient c;
    TlsOptions o;
    o.sni = sni;
    o.verify = false;
    if (!c.connect(port, o, milliseconds(3'000))) return {};
    return peer_fingerprint(c);
  }

  static bool serves(int port, const std::string& sni, const std::string& fingerprint) {
    return wait_until([&] { return served(port, sni) == fingerprint; }, milliseconds(10'000));
  }

  std::string seal_key_;
  TempDir dir_c_;
  Proxy proxy_c_;
};

const std::string kOther = "other.example";

TEST_F(CertStoreTest, CliRefusesWhatTheLoaderRefusesAndManagesEntries) {
  ASSERT_TRUE(start_proxy(node("r1")));
  struct Bad {
    std::string chain, key, name, why;
  } bad[] = {{pki("localhost.chain.pem"), pki("mismatch.key"), "localhost", "does not match"},
             {pki("leaf-only.pem"), pki("localhost.key"), "localhost", "incomplete"},
             {pki("expired.chain.pem"), pki("expired.key"), "localhost", "expired"},
             {pki("localhost.chain.pem"), pki("localhost.key"), "api.example.com", "not covered"},
             {pki("localhost.chain.pem"), pki("localhost.key"), "Bad_Name", "not a certificate name"}};
  for (const auto& b : bad) {
    RunResult r = put(b.name, b.chain, b.key);
    EXPECT_TRUE(r.status.exited && r.status.code == 1) << b.why << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(b.why), std::string::npos) << r.err;
  }
  EXPECT_TRUE(redis_.keys("tlsfront:cert*").empty()) << "a refused entry reached Redis";

  RunResult ok = put(kOther, pki("other-name.chain.pem"), pki("other-name.key"), {"--updated-at", "2000"});
  ASSERT_TRUE(ok.status.exited && ok.status.code == 0) << ok.err;
  EXPECT_NE(ok.out.find("stored r1/other.example"), std::string::npos) << ok.out;
  RunResult older = put(kOther, pki("other-name.chain.pem"), pki("other-name.key"), {"--updated-at", "1999"});
  EXPECT_EQ(older.status.code, 1);
  EXPECT_NE(older.err.find("not stored"), std::string::npos) << older.err;
  // Nothing of the private key is in Redis in clear.
  RunResult raw = redis_.cli({"HGET", "tlsfront:cert:r1:other.example", "key1"});
  EXPECT_EQ(raw.out.find("PRIVATE"), std::string::npos);
  RunResult listed = cert({"list", "--all"});
  EXPECT_EQ(listed.status.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("other.example"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("ECDSA"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("CN=tlsfront test intermediate"), std::string::npos) << listed.out;
  RunResult got = cert({"get", "--name", kOther});
  EXPECT_EQ(got.status.code, 0) << got.err;
  EXPECT_NE(got.out.find("status: ok"), std::string::npos) << got.out;
  EXPECT_NE(got.out.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ(got.out.find("PRIVATE KEY"), std::string::npos);
  // Sealing-key rotation: a new key first, reseal, then the old key can go.
  const std::string new_key = dir_.file("seal-new.key");
  RunResult made = run_command(dir_, {TLSFRONT_BINARY, "cert", "seal-key", "--out", new_key});
  ASSERT_EQ(made.status.code, 0) << made.err;
  EXPECT_EQ(run_command(dir_, {TLSFRONT_BINARY, "cert", "seal-key", "--out", new_key}).status.code, 1)
      << "an existing key file was overwritten";
  const std::string config = read_file(proxy_.config_path());
  const std::string both = dir_.file("both.toml"), only_new = dir_.file("new.toml");
  auto with_keys = [&](const std::string& keys) {
    std::string c = config;
    const std::string from = "seal_key_files = [\"" + seal_key_ + "\"]";
    c.replace(c.find(from), from.size(), "seal_key_files = [" + keys + "]");
    return c;
  };
  write_file(both, with_keys("\"" + new_key + "\", \"" + seal_key_ + "\""));
  write_file(only_new, with_keys("\"" + new_key + "\""));
  auto cli = [&](const std::string& cfg, std::vector<std::string> args) {
    std::vector<std::string> argv = {TLSFRONT_BINARY, "cert", "--config", cfg};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(dir_, argv);
  };
  EXPECT_NE(cli(only_new, {"get", "--name", kOther}).out.find("refused by nodes"), std::string::npos);
  RunResult resealed = cli(both, {"reseal", "--all"});
  EXPECT_EQ(resealed.status.code, 0) << resealed.err;
  EXPECT_NE(resealed.out.find("resealed r1/other.example"), std::string::npos) << resealed.out;
  EXPECT_NE(cli(only_new, {"get", "--name", kOther}).out.find("status: ok"), std::string::npos);

  RunResult removed = cert({"rm", "--name", kOther});
  EXPECT_EQ(removed.status.code, 0) << removed.err;
  listed = cert({"list"});
  EXPECT_EQ(listed.out.find("other.example"), std::string::npos) << listed.out;
  RunResult no_config = run_command(dir_, {TLSFRONT_BINARY, "cert", "list"});
  EXPECT_EQ(no_config.status.code, 2);
}

TEST_F(CertStoreTest, PutReachesTheNodesOfItsRegionAndNoOther) {
  ASSERT_TRUE(start_proxy(node("r1")));
  ProxyOptions b = node("r1");
  ASSERT_TRUE(proxy_b_.start(b));
  ASSERT_TRUE(proxy_c_.start(node("r2")));
  const std::string localhost = file_fingerprint(pki("localhost.pem"));
  const std::string other = file_fingerprint(pki("other-name.pem"));
  ASSERT_EQ(served(port(), kOther), localhost);  // the default, before

  RunResult r = put(kOther, pki("other-name.chain.pem"), pki("other-name.key"));
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_TRUE(serves(port(), kOther, other));
  EXPECT_TRUE(serves(proxy_b_.port(), kOther, other));
  // C polls as often: once A and B have it, a few more rounds of C's.
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_EQ(served(proxy_c_.port(), kOther), localhost) << "region r2 took an entry of r1";
  }
  // A global entry reaches every region.
  const std::string wild = file_fingerprint(pki("wildcard.pem"));
  r = put("*.wild.example", pki("wildcard.chain.pem"), pki("wildcard.key"), {"--global"});
  ASSERT_EQ(r.status.code, 0) << r.err;
  for (int p : {port(), proxy_b_.port(), proxy_c_.port()}) EXPECT_TRUE(serves(p, "a.wild.example", wild));
  // Removal: back to the default on both nodes of r1.
  r = cert({"rm", "--name", kOther});
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_TRUE(serves(port(), kOther, localhost));
  EXPECT_TRUE(serves(proxy_b_.port(), kOther, localhost));
  auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(m["tlsfront_cert_store_up"], 1);
  EXPECT_EQ(m["tlsfront_cert_store_entries"], 1);  // the global one
  EXPECT_GE(m["tlsfront_cert_store_swaps_total{result=\"ok\"}"], 3);
}

// TLS to Redis (redis_tls): Redis' TLS port requires a client certificate
// (tls-auth-clients yes) and a password. `tlsfront cert put` and `list`
// reach it over TLS with AUTH, a node (same settings) serves the entry, and
// a CLI that trusts another root says why it cannot connect.
TEST_F(CertStoreTest, OverTlsWithAuthPutAndListReachRedisAndANodeServesTheEntry) {
  redis_.stop();
  ASSERT_TRUE(redis_.start_tls({pki("localhost.chain.pem"), pki("localhost.key"), pki("root.pem"), true},
                               {"--requirepass", "pw"}, "pw"));
  const std::string password_file = dir_.file("redis.pw");
  write_file(password_file, "pw\n");
  ::chmod(password_file.c_str(), 0600);
  auto store = [&](const std::string& trusted_ca) {
    return "[tls.store]\nregion = \"r1\"\nseal_key_files = [\"" + seal_key_ + "\"]\nredis = \"127.0.0.1:" +
           std::to_string(redis_.tls_port()) + "\"\nredis_password_file = \"" + password_file +
           "\"\npoll_interval = \"100ms\"\nreconcile_interval = \"2s\"\n[tls.store.redis_tls]\ntrusted_ca = \"" +
           trusted_ca + "\"\ncertificate = \"" + pki("client.chain.pem") + "\"\nkey = \"" + pki("client.key") + "\"\n";
  };
  ProxyOptions o;
  o.tls_extra = store(pki("root.pem"));
  o.upstream_servers = {backend_.address()};
  ASSERT_TRUE(start_proxy(o));
  RunResult r = put(kOther, pki("other-name.chain.pem"), pki("other-name.key"));
  ASSERT_EQ(r.status.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("stored r1/other.example"), std::string::npos) << r.out;
  EXPECT_FALSE(redis_.keys("tlsfront:cert:r1:*").empty());
  RunResult listed = cert({"list"});
  EXPECT_EQ(listed.status.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("other.example"), std::string::npos) << listed.out;
  EXPECT_TRUE(serves(port(), kOther, file_fingerprint(pki("other-name.pem")))) << proxy_.process().err();

  const std::string untrusted = dir_.file("untrusted.toml");
  std::string config = read_file(proxy_.config_path());
  const std::string from = "trusted_ca = \"" + pki("root.pem") + "\"\ncertificate = \"" + pki("client.chain.pem");
  ASSERT_NE(config.find(from), std::string::npos) << config;
  config.replace(config.find(from), from.size(),
                 "trusted_ca = \"" + pki("other-root.pem") + "\"\ncertificate = \"" + pki("client.chain.pem"));
  write_file(untrusted, config);
  RunResult refused = run_command(dir_, {TLSFRONT_BINARY, "cert", "--config", untrusted, "list"});
  EXPECT_NE(refused.status.code, 0);
  EXPECT_NE(refused.err.find("certificate verify failed"), std::string::npos) << refused.err;
}

// The QUIC listener serves the store's certificates too: an HTTP/3 client
// that checks the name and chain gets the entry's certificate once it is
// put, and the default's (a name mismatch) once it is removed.
TEST_F(CertStoreTest, APutIsServedOverHttp3Too) {
  ProxyOptions o = node("r1");
  o.listen_extra = "quic = true";
  ASSERT_TRUE(start_proxy(o));
  auto h3 = [&] {
    return run_command(dir_,
                       {TLSFRONT_H3CLIENT_BINARY, "--ca", pki("root.pem"), "--sni", kOther, "--timeout-ms", "5000",
                        "127.0.0.1", std::to_string(port()), "/json/10"},
                       milliseconds(20'000));
  };
  RunResult before = h3();
  EXPECT_EQ(before.status.code, 1) << "the default certificate does not name " << kOther << ": " << before.err;
  ASSERT_EQ(put(kOther, pki("other-name.chain.pem"), pki("other-name.key")).status.code, 0);
  ASSERT_TRUE(serves(port(), kOther, file_fingerprint(pki("other-name.pem"))));
  RunResult r;
  EXPECT_TRUE(wait_until([&] { return (r = h3()).status.code == 0; }, milliseconds(10'000))) << r.err;
  EXPECT_NE(r.err.find(":status: 200"), std::string::npos) << r.err;
  ASSERT_EQ(cert({"rm", "--name", kOther}).status.code, 0);
  EXPECT_TRUE(wait_until([&] { return (r = h3()).status.code == 1; }, milliseconds(10'000))) << r.err;
}

TEST_F(CertStoreTest, SwapUnderAHandshakeLoopFailsNoneAndSessionsResume) {
  ASSERT_TRUE(start_proxy(node("r1")));
  const std::string first = issue("first", kOther), second = issue("second", kOther);
  ASSERT_EQ(put(kOther, first, dir_.file("first.key")).status.code, 0);
  const std::string fp1 = file_fingerprint(dir_.file("first.pem")), fp2 = file_fingerprint(dir_.file("second.pem"));
  ASSERT_TRUE(serves(port(), kOther, fp1));

  // A TLS 1.3 session made under the first certificate.
  SSL_SESSION* session = nullptr;
  {
    TlsClient c;
    TlsOptions o;
    o.sni = kOther;
    o.verify = false;
    o.min_version = o.max_version = TLS1_3_VERSION;
    ASSERT_TRUE(c.connect(port(), o)) << c.error();
    ASSERT_TRUE(c.write("GET / HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n"));
    ASSERT_TRUE(c.read_response().has_value());
    c.read_all(milliseconds(2'000));
    session = c.take_session();
  }
  ASSERT_NE(session, nullptr);

  std::atomic<bool> stop{false};
  std::atomic<int> attempted{0}, failed{0}, on_second{0};
  std::vector<std::thread> loops;
  for (int t = 0; t < 2; ++t) {
    loops.emplace_back([&, t] {
      while (!stop) {
        TlsClient c;
        TlsOptions o;
        o.sni = kOther;
        o.verify = false;
        o.alpn = {t == 0 ? "http/1.1" : "h2"};
        ++attempted;
        if (!c.connect(port(), o, milliseconds(5'000))) {
          ++failed;
          continue;
        }
        const std::string fp = peer_fingerprint(c);
        if (fp == fp2) ++on_second;
        if (fp != fp1 && fp != fp2) ++failed;
        if (t == 0) {
          c.write("GET / HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n");
          auto r = c.read_response();
          if (!r || r->status != 200) ++failed;
        }
      }
    });
  }
  wait_until([&] { return attempted > 50; });
  ASSERT_EQ(put(kOther, second, dir_.file("second.key")).status.code, 0);
  EXPECT_TRUE(wait_until([&] { return on_second > 100; }, milliseconds(30'000)));
  stop = true;
  for (auto& l : loops) l.join();
  std::cout << "swap under load: " << attempted << " handshakes attempted, " << failed << " failed, " << on_second
            << " under the new certificate\n";
  EXPECT_EQ(failed, 0);

  // The session made before the swap resumes after it.
  TlsClient c;
  TlsOptions o;
  o.sni = kOther;
  o.verify = false;
  o.min_version = o.max_version = TLS1_3_VERSION;
  o.session = session;
  ASSERT_TRUE(c.connect(port(), o)) << c.error();
  EXPECT_TRUE(c.session_reused()) << "no resumption across the swap";
  SSL_SESSION_free(session);
}

TEST_F(CertStoreTest, AnEntryWrittenAroundTheCliThatDoesNotCheckIsIgnored) {
  ASSERT_TRUE(start_proxy(node("r1")));
  const std::string other = file_fingerprint(pki("other-name.pem"));
  ASSERT_EQ(put(kOther, pki("other-name.chain.pem"), pki("other-name.key")).status.code, 0);
  ASSERT_TRUE(serves(port(), kOther, other));
  // A newer entry whose chain is another certificate's (the sealed key no
  // longer opens), written straight into Redis with a newer updated_at.
  const std::string entry = "tlsfront:cert:r1:other.example", index = "tlsfront:certs:r1";
  const std::string newer = "9" + std::string(18, '0');
  redis_.cli({"HSET", entry, "updated_at", newer, "chain1", read_file(pki("localhost.chain.pem"))});
  redis_.cli({"HSET", index, kOther, newer});
  redis_.cli({"INCR", index + ":version"});
  EXPECT_TRUE(wait_until([&] {
    return scrape_metrics(proxy_.admin_port())["tlsfront_cert_store_refused_entries"] == 1;
  }));
  EXPECT_EQ(served(port(), kOther), other) << "the last good certificate was replaced";
  EXPECT_NE(proxy_.process().err().find("refused: store r1/other.example: the sealed key does not open"),
            std::string::npos)
      << proxy_.process().err();
  // A malformed one (three pairs) is refused too, still serving the last good one.
  redis_.cli({"HSET", entry, "updated_at", "9" + std::string(17, '0') + "1", "pairs", "3"});
  redis_.cli({"HSET", index, kOther, "9" + std::string(17, '0') + "1"});
  redis_.cli({"INCR", index + ":version"});
  EXPECT_TRUE(wait_until([&] { return proxy_.process().err().find("pairs must be 1 or 2") != std::string::npos; }));
  EXPECT_EQ(served(port(), kOther), other);
}

TEST_F(CertStoreTest, RedisLostNodesKeepServingAndConvergeWhenEntriesComeBack) {
  ASSERT_TRUE(start_proxy(node("r1")));
  ASSERT_TRUE(proxy_b_.start(node("r1")));
  const std::string other = file_fingerprint(pki("other-name.pem"));
  ASSERT_EQ(put(kOther, pki("other-name.chain.pem"), pki("other-name.key")).status.code, 0);
  ASSERT_TRUE(serves(port(), kOther, other));
  ASSERT_TRUE(serves(proxy_b_.port(), kOther, other));
  redis_.stop();
  EXPECT_TRUE(wait_until([&] { return scrape_metrics(proxy_.admin_port())["tlsfront_cert_store_up"] == 0; }));
  EXPECT_EQ(served(port(), kOther), other);
  EXPECT_EQ(served(proxy_b_.port(), kOther), other);
  ASSERT_TRUE(redis_.start({}, "", /*same_port=*/true));  // empty
  EXPECT_TRUE(wait_until([&] { return scrape_metrics(proxy_.admin_port())["tlsfront_cert_store_up"] == 1; }));
  EXPECT_EQ(served(port(), kOther), other) << "an empty store removed a certificate";
  EXPECT_TRUE(wait_until([&] { return proxy_.process().err().find("is not in the store's index") != std::string::npos; }));
  // Put back (a new certificate): both converge.
  const std::string next = issue("next", kOther);
  ASSERT_EQ(put(kOther, next, dir_.file("next.key")).status.code, 0);
  const std::string fp = file_fingerprint(dir_.file("next.pem"));
  EXPECT_TRUE(serves(port(), kOther, fp));
  EXPECT_TRUE(serves(proxy_b_.port(), kOther, fp));
}

TEST_F(CertStoreTest, ANodeStartedWithRedisDownServesItsSealedDiskCopy) {
  const std::string cache = dir_.file("cert-cache");
  const ProxyOptions o = node("r1", "cache_dir = \"" + cache + "\"\n");
  ASSERT_TRUE(start_proxy(o));
  const std::string other = file_fingerprint(pki("other-name.pem"));
  ASSERT_EQ(put(kOther, pki("other-name.chain.pem"), pki("other-name.key")).status.code, 0);
  ASSERT_TRUE(serves(port(), kOther, other));
  const std::string copy = read_file(cache + "/r1,other.example");
  EXPECT_NE(copy.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ(copy.find("PRIVATE KEY"), std::string::npos) << "the disk copy holds a plain key";
  struct stat st {};
  ASSERT_EQ(::stat((cache + "/r1,other.example").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
  ExitStatus stopped = proxy_.stop();
  EXPECT_TRUE(stopped.exited && stopped.code == 0);
  redis_.stop();
  ASSERT_TRUE(start_proxy(o));
  EXPECT_EQ(served(port(), kOther), other);
  EXPECT_NE(proxy_.process().err().find("sealed disk cache"), std::string::npos) << proxy_.process().err();
  // --test says where each name comes from.
  RunResult t = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", proxy_.config_path()});
  EXPECT_EQ(t.status.code, 0) << t.err;
  EXPECT_NE(t.err.find("store r1/other.example: ECDSA certificate for other.example"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("source: certificate store, region \"r1\""), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("tls.certificate: ECDSA certificate for localhost"), std::string::npos) << t.err;
}

TEST_F(CertStoreTest, AnEcdsaRsaPairServesEachClientItsKindAndSurvivesAReload) {
  ASSERT_TRUE(start_proxy(node("r1")));
  // "localhost" is the file certificate's name too: the store's entry wins.
  RunResult r = put("localhost", pki("localhost.chain.pem"), pki("localhost.key"),
                    {"--chain", pki("rsa.chain.pem"), "--key", pki("rsa.key")});
  ASSERT_EQ(r.status.code, 0) << r.err;
  EXPECT_NE(r.out.find("RSA"), std::string::npos) << r.out;
  ASSERT_TRUE(wait_until([&] { return scrape_metrics(proxy_.admin_port())["tlsfront_cert_store_entries"] == 1; }));
  auto leaf_for = [&](const std::string& ciphers) {
    TlsClient c;
    TlsOptions o;
    o.max_version = TLS1_2_VERSION;
    o.cipher_list = ciphers;
    return c.connect(port(), o) ? peer_fingerprint(c) : std::string();
  };
  const std::string rsa = file_fingerprint(pki("rsa.pem")), ecdsa = file_fingerprint(pki("localhost.pem"));
  EXPECT_TRUE(wait_until([&] { return leaf_for("ECDHE-RSA-AES128-GCM-SHA256") == rsa; }));
  EXPECT_EQ(leaf_for("ECDHE-ECDSA-AES128-GCM-SHA256"), ecdsa);
  // SIGHUP rebuilds from the files and keeps the store's entries.
  ::kill(proxy_.process().pid(), SIGHUP);
  EXPECT_TRUE(wait_until([&] { return proxy_.process().err().find("reload: generation 3 is live") != std::string::npos; }));
  EXPECT_EQ(leaf_for("ECDHE-RSA-AES128-GCM-SHA256"), rsa);
  RunResult t = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", proxy_.config_path()});
  EXPECT_NE(t.err.find("tls.names: \"localhost\" is served by the certificate store"), std::string::npos) << t.err;
}

}  // namespace
}  // namespace tlsfront::itest
