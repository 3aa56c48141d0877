// Session resumption end to end: tickets and the session cache in TLS 1.2
// and 1.3, resumption across workers and across instances sharing a ticket
// key file, key file reloads (SIGHUP), automatic key rotation, the session
// timeout, and key-file validation. The access log's ssl_session_reused and
// ssl_resumption ("none" | "cache" | "ticket") say how the server resumed;
// the client's SSL_session_reused says the same from the other side.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {
namespace {

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;

// scripts/gen-ticket-key.sh in this source tree.
std::string gen_ticket_key_script() {
  return (std::filesystem::path(TLSFRONT_SOURCE_DIR) / "scripts" / "gen-ticket-key.sh").string();
}

// The 16-byte key name a ticket starts with (OpenSSL's ticket layout: key
// name, IV, ciphertext, HMAC); "" when the session holds no ticket.
std::string ticket_name(const SSL_SESSION* s) {
  const unsigned char* tick = nullptr;
  size_t len = 0;
  if (s) SSL_SESSION_get0_ticket(s, &tick, &len);
  if (tick == nullptr || len < 16) return "";
  return std::string(reinterpret_cast<const char*>(tick), 16);
}

// The key name of an nginx-format key file: its first 16 bytes.
std::string key_name(const std::string& key_bytes) { return key_bytes.substr(0, 16); }

// 80 random bytes (an nginx AES-256 ticket key).
std::string random_key() {
  std::string k(80, '\0');
  EXPECT_EQ(RAND_bytes(reinterpret_cast<unsigned char*>(k.data()), 80), 1);
  return k;
}

// Writes `bytes` to `path` atomically (a temp file, mode 0600, renamed over it).
void write_key_atomically(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << tmp;
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  ASSERT_EQ(::rename(tmp.c_str(), path.c_str()), 0) << path;
}

// `[tls.ticket_keys] source = "files"` with `files`.
std::string files_config(const std::vector<std::string>& files) {
  std::string c = "[tls.ticket_keys]\nsource = \"files\"\nfiles = [";
  for (size_t i = 0; i < files.size(); ++i) c += (i ? ", \"" : "\"") + files[i] + "\"";
  return c + "]\n";
}

TlsOptions version(int v) {
  TlsOptions o;
  o.min_version = o.max_version = v;
  return o;
}

size_t count_of(const std::string& haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

class Resumption : public ProxyTest {
 protected:
  // One request (Connection: close) on a fresh TLS connection to `port`
  // offering `session` (may be null); checks the handshake, the client's view
  // of reuse and a 200, and returns the newest session the client holds
  // (read to the close, so TLS 1.3 NewSessionTickets are processed).
  SessionPtr request(int port, TlsOptions o, SSL_SESSION* session, const std::string& path,
                     bool expect_reused) {
    o.session = session;
    TlsClient c;
    EXPECT_TRUE(c.connect(port, o)) << path << ": " << c.error();
    if (!c.ssl()) return nullptr;
    EXPECT_EQ(c.session_reused(), expect_reused) << path;
    EXPECT_TRUE(c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")) << path;
    auto r = c.read_response();
    EXPECT_TRUE(r.has_value()) << path;
    if (r) EXPECT_EQ(r->status, 200) << path;
    c.read_all(milliseconds(5'000));
    return SessionPtr(c.take_session());
  }

  // The access-log line of the request for `path` in `proxy`'s log (polled);
  // "" (and a failure) when it does not show up.
  static std::string log_line(const Proxy& proxy, const std::string& path) {
    std::string found;
    wait_until([&] {
      for (const auto& line : proxy.wait_log_lines(0, milliseconds(0))) {
        if (json_string(line, "path") == path) {
          found = line;
          return true;
        }
      }
      return false;
    });
    EXPECT_FALSE(found.empty()) << "no access-log line for " << path << " in " << proxy.access_log();
    return found;
  }

  // Checks `path`'s log line says reused = `reused`, ssl_resumption = `how`.
  static void expect_logged(const Proxy& proxy, const std::string& path, bool reused, const char* how) {
    std::string line = log_line(proxy, path);
    EXPECT_EQ(json_raw(line, "ssl_session_reused"), std::string(reused ? "true" : "false")) << line;
    EXPECT_EQ(json_string(line, "ssl_resumption"), std::string(how)) << line;
  }

  // Polls fresh TLS 1.2 handshakes until the ticket the server issues is
  // encrypted under the key named `name` (the new ring is serving).
  static bool wait_for_encrypting_key(int port, const std::string& name) {
    std::string last;
    bool ok = wait_until(
        [&] {
          TlsClient c;
          if (!c.connect(port, version(TLS1_2_VERSION), milliseconds(2'000))) return false;
          SessionPtr s(c.take_session());
          last = ticket_name(s.get());
          return last == name;
        },
        milliseconds(6'000));
    EXPECT_TRUE(ok) << "the server never issued a ticket under the new key";
    return ok;
  }

  // Full handshake then one resumption at `v`; both logged as expected.
  void resume_once(int v, const char* how, const std::string& tag) {
    SessionPtr s = request(port(), version(v), nullptr, "/" + tag + "-first", false);
    ASSERT_TRUE(s && SSL_SESSION_is_resumable(s.get())) << "server issued no resumable session";
    SessionPtr s2 = request(port(), version(v), s.get(), "/" + tag + "-second", true);
    expect_logged(proxy_, "/" + tag + "-first", false, "none");
    expect_logged(proxy_, "/" + tag + "-second", true, how);
  }
};

// ---- tickets and the cache ---------------------------------------------------------

TEST_F(Resumption, Tls13TicketResumption) {
  ASSERT_TRUE(start_proxy());
  resume_once(TLS1_3_VERSION, "ticket", "t13");
}

TEST_F(Resumption, Tls12TicketResumption) {
  ASSERT_TRUE(start_proxy());
  resume_once(TLS1_2_VERSION, "ticket", "t12");
}

TEST_F(Resumption, Tls12SessionIdResumptionWithTicketsOff) {
  ProxyOptions o;
  o.tls_extra = "session_tickets = false\n";
  ASSERT_TRUE(start_proxy(o));
  SessionPtr s = request(port(), version(TLS1_2_VERSION), nullptr, "/first", false);
  ASSERT_TRUE(s);
  EXPECT_EQ(ticket_name(s.get()), "") << "a ticket was issued with session_tickets = false";
  unsigned id_len = 0;
  SSL_SESSION_get_id(s.get(), &id_len);
  ASSERT_GT(id_len, 0u) << "no session ID";
  SessionPtr s2 = request(port(), version(TLS1_2_VERSION), s.get(), "/second", true);
  expect_logged(proxy_, "/first", false, "none");
  expect_logged(proxy_, "/second", true, "cache");
}

// With tickets off, OpenSSL's TLS 1.3 server issues stateful tickets (a
// session ID as the PSK identity) that resume through the session cache.
TEST_F(Resumption, Tls13StatefulResumptionWithTicketsOff) {
  ProxyOptions o;
  o.tls_extra = "session_tickets = false\n";
  ASSERT_TRUE(start_proxy(o));
  resume_once(TLS1_3_VERSION, "cache", "stateful");
}

// A client that drops the TCP connection without close_notify (a reset, an
// idle timeout on its side) must not cost it its session: OpenSSL removes a
// session whose SSL is freed without a shutdown unless the proxy marks it.
TEST_F(Resumption, Tls12SessionSurvivesUncleanClientClose) {
  ProxyOptions o;
  o.workers = 1;  // the next handshake is then ordered after the close is processed
  o.tls_extra = "session_tickets = false\n";
  ASSERT_TRUE(start_proxy(o));
  SessionPtr kept;
  {
    TlsClient c;
    ASSERT_TRUE(c.connect(port(), version(TLS1_2_VERSION))) << c.error();
    ASSERT_TRUE(c.write("GET /unclean HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    SessionPtr taken(c.take_session());
    // A copy: the client's own SSL_free below marks the original unusable.
    kept = SessionPtr(SSL_SESSION_dup(taken.get()));
    ::shutdown(SSL_get_fd(c.ssl()), SHUT_RDWR);  // FIN without close_notify
  }
  // A full request on another connection: by the time it completes, the
  // single worker has processed the first connection's EOF and freed it.
  SessionPtr other = request(port(), version(TLS1_2_VERSION), nullptr, "/between", false);
  SessionPtr again = request(port(), version(TLS1_2_VERSION), kept.get(), "/after-unclean", true);
  expect_logged(proxy_, "/after-unclean", true, "cache");
}

TEST_F(Resumption, TicketsAndCacheOffMeansNoResumption) {
  ProxyOptions o;
  o.tls_extra = "session_tickets = false\n";
  o.extra = "[tls.session_cache]\nenabled = false\n";
  ASSERT_TRUE(start_proxy(o));
  for (int v : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    std::string tag = v == TLS1_2_VERSION ? "/t12" : "/t13";
    SessionPtr s = request(port(), version(v), nullptr, tag + "-first", false);
    ASSERT_TRUE(s);
    // The second connection offers whatever the first left and gets a full
    // handshake, not a failure (request() checks the 200).
    SessionPtr s2 = request(port(), version(v), s.get(), tag + "-second", false);
    expect_logged(proxy_, tag + "-first", false, "none");
    expect_logged(proxy_, tag + "-second", false, "none");
  }
}

// ---- across workers and instances --------------------------------------------------

// The harness runs 2 workers, each with its own SO_REUSEPORT listener; the
// kernel picks one by a hash of the connection's 4-tuple, so with a fresh
// ephemeral source port per connection each lands on either worker with
// probability 1/2, independently. All 12 resumptions land on one worker with
// probability 2 * 2^-12 = 2^-11; otherwise they cover both workers, so at
// least one ran on a worker other than the one that made the session, and
// every one resuming proves the tickets (keys) and the session cache are
// shared: this test detects per-worker state with probability 1 - 2^-11.
TEST_F(Resumption, ResumesAcrossWorkers) {
  ProxyOptions o;
  ASSERT_EQ(o.workers, 2);
  ASSERT_TRUE(start_proxy(o));
  constexpr int kResumptions = 12;
  // Tickets (TLS 1.3, the default client), then session IDs (TLS 1.2, the
  // client sends no ticket extension).
  TlsOptions tls12_ids = version(TLS1_2_VERSION);
  tls12_ids.no_ticket = true;
  struct Case {
    const char* tag;
    TlsOptions tls;
    const char* how;
  };
  for (const Case& c : {Case{"ticket", TlsOptions{}, "ticket"}, Case{"id", tls12_ids, "cache"}}) {
    SessionPtr s = request(port(), c.tls, nullptr, std::string("/") + c.tag + "-first", false);
    ASSERT_TRUE(s && SSL_SESSION_is_resumable(s.get())) << c.tag;
    for (int i = 0; i < kResumptions; ++i) {
      SessionPtr ignored = request(port(), c.tls, s.get(), "/" + std::string(c.tag) + "-" + std::to_string(i), true);
    }
    expect_logged(proxy_, std::string("/") + c.tag + "-first", false, "none");
    for (int i = 0; i < kResumptions; ++i) {
      expect_logged(proxy_, "/" + std::string(c.tag) + "-" + std::to_string(i), true, c.how);
    }
  }
}

TEST_F(Resumption, SharedKeyFileResumesOnAnotherInstance) {
  std::string key = dir_.file("ticket.key");
  RunResult gen = run_command(dir_, {"/bin/bash", gen_ticket_key_script(), key});
  ASSERT_EQ(gen.status.code, 0) << gen.err;
  std::string key_bytes = read_file(key);
  ASSERT_EQ(key_bytes.size(), 80u);
  struct stat st {};
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  ProxyOptions o;
  o.extra = files_config({key});
  ASSERT_TRUE(start_proxy(o));  // instance A
  TempDir dir_b;
  Proxy proxy_b(dir_b);
  o.upstream_servers = {backend_.address()};
  ASSERT_TRUE(proxy_b.start(o));  // instance B: another port, the same backend and key file
  ASSERT_NE(proxy_b.port(), port());

  for (int v : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    std::string tag = v == TLS1_2_VERSION ? "/t12" : "/t13";
    SessionPtr s = request(port(), version(v), nullptr, tag + "-on-a", false);
    ASSERT_TRUE(s);
    EXPECT_EQ(ticket_name(s.get()), key_name(key_bytes)) << "ticket not encrypted under the key file's key";
    SessionPtr s2 = request(proxy_b.port(), version(v), s.get(), tag + "-on-b", true);
    expect_logged(proxy_, tag + "-on-a", false, "none");
    expect_logged(proxy_b, tag + "-on-b", true, "ticket");
  }
  ExitStatus st_b = proxy_b.stop();
  EXPECT_TRUE(st_b.exited && st_b.code == 0) << "instance B: exited=" << st_b.exited << " code=" << st_b.code;
  if (HasFailure()) std::cerr << "---- instance B stderr ----\n" << proxy_b.process().err() << "\n";
}

// ---- key file reloads ----------------------------------------------------------------

TEST_F(Resumption, RemovedKeyMeansFullHandshakeNotFailure) {
  std::string key = dir_.file("ticket.key");
  std::string k1 = random_key(), k2 = random_key();
  write_key_atomically(key, k1);
  ProxyOptions o;
  o.extra = files_config({key});
  ASSERT_TRUE(start_proxy(o));
  SessionPtr t13 = request(port(), version(TLS1_3_VERSION), nullptr, "/t13-first", false);
  SessionPtr t12 = request(port(), version(TLS1_2_VERSION), nullptr, "/t12-first", false);
  ASSERT_TRUE(t13 && t12);
  ASSERT_EQ(ticket_name(t13.get()), key_name(k1));
  ASSERT_EQ(ticket_name(t12.get()), key_name(k1));

  write_key_atomically(key, k2);  // k1 is gone from the ring after the reload
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(wait_for_encrypting_key(port(), key_name(k2)));

  // Tickets under k1 cannot be decrypted: a full handshake, not an error.
  SessionPtr r13 = request(port(), version(TLS1_3_VERSION), t13.get(), "/t13-after", false);
  SessionPtr r12 = request(port(), version(TLS1_2_VERSION), t12.get(), "/t12-after", false);
  expect_logged(proxy_, "/t13-after", false, "none");
  expect_logged(proxy_, "/t12-after", false, "none");
  // ... and the sessions they got instead are under k2.
  EXPECT_EQ(ticket_name(r13.get()), key_name(k2));
  EXPECT_EQ(ticket_name(r12.get()), key_name(k2));
  EXPECT_NE(proxy_.process().err().find("ticket keys reloaded"), std::string::npos) << proxy_.process().err();
}

TEST_F(Resumption, RotatedKeyStillResumesAndRenews) {
  std::string a = dir_.file("a.key"), b = dir_.file("b.key");
  std::string k1 = random_key(), k2 = random_key();
  write_key_atomically(a, k1);
  write_key_atomically(b, k2);
  ProxyOptions o;
  o.extra = files_config({a, b});  // the first file encrypts, both decrypt
  ASSERT_TRUE(start_proxy(o));
  SessionPtr t13 = request(port(), version(TLS1_3_VERSION), nullptr, "/t13-first", false);
  SessionPtr t12 = request(port(), version(TLS1_2_VERSION), nullptr, "/t12-first", false);
  ASSERT_TRUE(t13 && t12);
  ASSERT_EQ(ticket_name(t13.get()), key_name(k1));
  ASSERT_EQ(ticket_name(t12.get()), key_name(k1));

  // Control: resuming under the current key issues no new ticket, so the
  // client's session keeps the k1 ticket (what "renewed" is measured against).
  SessionPtr c13 = request(port(), version(TLS1_3_VERSION), t13.get(), "/t13-current", true);
  SessionPtr c12 = request(port(), version(TLS1_2_VERSION), t12.get(), "/t12-current", true);
  EXPECT_EQ(ticket_name(c13.get()), key_name(k1));
  EXPECT_EQ(ticket_name(c12.get()), key_name(k1));

  // Rotate by hand: k2 now encrypts, k1 stays second for decryption.
  write_key_atomically(a, k2);
  write_key_atomically(b, k1);
  proxy_.process().signal(SIGHUP);
  ASSERT_TRUE(wait_for_encrypting_key(port(), key_name(k2)));
  // The reload that serves [k2, k1] was logged (key ids: 4 bytes of the name, hex).
  auto hex4 = [](const std::string& k) {
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 4; ++i) {
      out += kHex[static_cast<unsigned char>(k[i]) >> 4];
      out += kHex[static_cast<unsigned char>(k[i]) & 0xf];
    }
    return out;
  };
  std::string want = "encrypting with " + hex4(k2) + ", decrypting with " + hex4(k2) + " " + hex4(k1);
  EXPECT_TRUE(wait_until([&] { return proxy_.process().err().find(want) != std::string::npos; },
                         milliseconds(5'000)))
      << want << "\n"
      << proxy_.process().err();

  SessionPtr r13 = request(port(), version(TLS1_3_VERSION), t13.get(), "/t13-rotated", true);
  SessionPtr r12 = request(port(), version(TLS1_2_VERSION), t12.get(), "/t12-rotated", true);
  for (const char* p : {"/t13-first", "/t12-first"}) expect_logged(proxy_, p, false, "none");
  for (const char* p : {"/t13-current", "/t12-current", "/t13-rotated", "/t12-rotated"}) {
    expect_logged(proxy_, p, true, "ticket");
  }
  // Renewed: the server replaced the k1 ticket with one under k2.
  EXPECT_EQ(ticket_name(r13.get()), key_name(k2)) << "TLS 1.3 ticket under an older key not renewed";
  EXPECT_EQ(ticket_name(r12.get()), key_name(k2)) << "TLS 1.2 ticket under an older key not renewed";
}

TEST_F(Resumption, WrongSizeKeyFileIsAConfigError) {
  std::string bad = pki("ticket-key-bad.key");
  ASSERT_EQ(read_file(bad).size(), 47u);
  ProxyOptions o;
  o.upstream_servers = {backend_.address()};
  o.extra = files_config({bad});
  std::string config = dir_.file("bad.toml");
  write_file(config, make_config(o, kAnyPort, dir_.file("access.log")));

  RunResult t = run_command(dir_, {TLSFRONT_BINARY, "--test", "--config", config}, milliseconds(5'000));
  EXPECT_TRUE(t.status.exited);
  EXPECT_EQ(t.status.code, 1) << t.err;
  EXPECT_NE(t.err.find(bad), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("48 or 80 bytes"), std::string::npos) << t.err;

  RunResult run = run_command(dir_, {TLSFRONT_BINARY, "--config", config}, milliseconds(5'000));
  EXPECT_TRUE(run.status.exited);
  EXPECT_EQ(run.status.code, 1) << run.err;
  EXPECT_NE(run.err.find(bad), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("48 or 80 bytes"), std::string::npos) << run.err;
}

// ---- time ----------------------------------------------------------------------------------

TEST_F(Resumption, ShortTimeoutExpiresSessions) {
  ProxyOptions o;
  o.tls_extra = "session_tickets = false\n";
  o.extra = "[tls.session_cache]\ntimeout = \"1s\"\n";
  ASSERT_TRUE(start_proxy(o));
  TlsOptions t = version(TLS1_2_VERSION);
  SessionPtr s = request(port(), t, nullptr, "/first", false);
  ASSERT_TRUE(s);
  SessionPtr s2 = request(port(), t, s.get(), "/at-once", true);
  // Time passing is the behaviour under test: 2.5 s is past a 1 s timeout
  // even with OpenSSL's whole-second session timestamps.
  std::this_thread::sleep_for(milliseconds(2'500));
  SessionPtr s3 = request(port(), t, s.get(), "/expired", false);
  expect_logged(proxy_, "/first", false, "none");
  expect_logged(proxy_, "/at-once", true, "cache");
  expect_logged(proxy_, "/expired", false, "none");
}

TEST_F(Resumption, AutoRotationKeepsResuming) {
  ProxyOptions o;
  o.extra = "[tls.ticket_keys]\nrotate_every = \"1s\"\n";
  ASSERT_TRUE(start_proxy(o));
  SessionPtr s = request(port(), TlsOptions{}, nullptr, "/first", false);
  ASSERT_TRUE(s && SSL_SESSION_is_resumable(s.get()));
  const std::string first_name = ticket_name(s.get());
  ASSERT_FALSE(first_name.empty());
  // Resume every ~250 ms for ~3 s, always with the newest session the client holds.
  std::vector<std::string> paths;
  auto end = Clock::now() + milliseconds(3'000);
  for (int i = 0; Clock::now() < end; ++i) {
    std::string path = "/r" + std::to_string(i);
    SessionPtr next = request(port(), TlsOptions{}, s.get(), path, true);
    paths.push_back(path);
    if (!next) break;
    s = std::move(next);
    std::this_thread::sleep_for(milliseconds(250));  // time passing is the behaviour under test
  }
  ASSERT_GE(paths.size(), 8u);
  expect_logged(proxy_, "/first", false, "none");
  for (const auto& p : paths) expect_logged(proxy_, p, true, "ticket");
  // Keys rotated underneath, and the ticket was renewed onto a newer key.
  EXPECT_TRUE(wait_until([&] { return count_of(proxy_.process().err(), "ticket keys rotated") >= 2; },
                         milliseconds(3'000)))
      << proxy_.process().err();
  EXPECT_NE(ticket_name(s.get()), first_name) << "the ticket was never renewed under a rotated key";
}

}  // namespace
}  // namespace tlsfront::itest
