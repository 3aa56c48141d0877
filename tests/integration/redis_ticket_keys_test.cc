// [tls.ticket_keys] source = "redis": two tlsfront nodes (A and B) sharing one
// ticket key ring in a real redis-server on a free port. Tickets cross nodes,
// survive fast rotation and a Redis outage, work behind AUTH (password and
// ACL user), and a wrapped ring in Redis does not reveal the keys.
// Skipped when redis-server / redis-cli are not installed.
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "redis_nodes.h"
#include "shared/redis_server.h"

namespace tlsfront::itest {
namespace {

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;


// One request on a fresh TLS 1.3 connection offering `session` (may be
// nullptr); returns the newest session and whether it was resumed.
SessionPtr request(int port, SSL_SESSION* session, bool* reused, const std::string& path = "/") {
  TlsClient c;
  TlsOptions o;
  o.min_version = o.max_version = TLS1_3_VERSION;
  o.session = session;
  if (!c.connect(port, o)) {
    ADD_FAILURE() << "connect: " << c.error();
    *reused = false;
    return nullptr;
  }
  *reused = c.session_reused();
  EXPECT_TRUE(c.write("GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  auto r = c.read_response();
  EXPECT_TRUE(r.has_value());
  c.read_all(milliseconds(5'000));  // NewSessionTicket messages
  return SessionPtr(c.take_session());
}

class RedisTicketKeys : public RedisNodesTest {
 protected:
  // [tls] lines for source = "redis" on `redis_`, session cache off so
  // every resumption is a ticket.
  std::string tls_extra(const std::string& rotate_every, const std::string& more = "") const {
    return "[tls.session_cache]\nenabled = false\ntimeout = \"30s\"\n"
           "[tls.ticket_keys]\nsource = \"redis\"\nredis = \"127.0.0.1:" +
           std::to_string(redis_.port()) + "\"\nrotate_every = \"" + rotate_every + "\"\n" + more;
  }

  bool start_nodes(const std::string& extra_a, const std::string& extra_b) {
    ProxyOptions a;
    a.tls_extra = extra_a;
    if (!start_proxy(a)) return false;
    ProxyOptions b;
    b.tls_extra = extra_b;
    b.upstream_servers = {backend_.address()};
    return proxy_b_.start(b);
  }

  // A full handshake on A, then the ticket offered to B: true if B resumed it
  // (and logged "ssl_resumption":"ticket").
  bool ticket_from_a_resumes_on_b() {
    bool reused = true;
    SessionPtr s = request(proxy_.port(), nullptr, &reused, "/a");
    EXPECT_FALSE(reused);
    if (!s || !SSL_SESSION_is_resumable(s.get())) {
      ADD_FAILURE() << "node A issued no resumable session";
      return false;
    }
    const size_t logged = proxy_b_.wait_log_lines(0, milliseconds(0)).size();
    request(proxy_b_.port(), s.get(), &reused, "/b");
    if (!reused) return false;
    auto lines = proxy_b_.wait_log_lines(logged + 1);
    return lines.size() > logged && json_string(lines.back(), "ssl_resumption") == "ticket";
  }
};

TEST_F(RedisTicketKeys, TicketFromNodeAResumesOnNodeB) {
  ASSERT_TRUE(redis_.start());
  ASSERT_TRUE(start_nodes(tls_extra("1h"), tls_extra("1h")));
  EXPECT_TRUE(ticket_from_a_resumes_on_b());
  // Exactly one value per slot: the current and the next slot, whoever raced
  // (three if a slot boundary passed meanwhile).
  const size_t n = redis_.keys("tlsfront:stek:*").size();
  EXPECT_TRUE(n == 2 || n == 3) << n;
}

// rotate_every = "2s": a client alternating between the nodes for ~8 s, always
// offering its newest ticket, resumes every time across four rotations.
TEST_F(RedisTicketKeys, FastRotationAlternatingNodesNeverFailsToResume) {
  ASSERT_TRUE(redis_.start());
  ASSERT_TRUE(start_nodes(tls_extra("2s"), tls_extra("2s")));
  bool reused = true;
  SessionPtr s = request(proxy_.port(), nullptr, &reused);
  ASSERT_TRUE(s);
  int connections = 0, failures = 0;
  const auto end = Clock::now() + milliseconds(8'000);
  while (Clock::now() < end) {
    const int port = connections % 2 ? proxy_.port() : proxy_b_.port();
    SessionPtr next = request(port, s.get(), &reused);
    ++connections;
    if (!reused) ++failures;
    if (next) s = std::move(next);
    usleep(50'000);
  }
  EXPECT_GE(connections, 20);
  EXPECT_EQ(failures, 0) << "of " << connections << " connections";
  // The ring really rotated: at least 4 slots were written to Redis.
  EXPECT_GE(redis_.keys("tlsfront:stek:*").size(), 5u);
}

TEST_F(RedisTicketKeys, RedisDownBothNodesKeepResumingWithHeldKeys) {
  ASSERT_TRUE(redis_.start());
  // rotate_every = "10s": polls every second, so the outage is noticed fast.
  const std::string extra = tls_extra("10s", "redis_timeout = \"200ms\"\n");
  ASSERT_TRUE(start_nodes(extra, extra));
  bool reused = true;
  SessionPtr s = request(proxy_.port(), nullptr, &reused);
  ASSERT_TRUE(s);
  redis_.stop();
  // Both nodes notice (a poll fails: logged once) and keep serving.
  auto noticed = [](Proxy& p) { return p.process().err().find("keeping the") != std::string::npos; };
  bool a_noticed = false, b_noticed = false;
  // Connections keep coming while Redis is down; each node retries in the background.
  for (int i = 0; i < 6; ++i) {
    SessionPtr on_b = request(proxy_b_.port(), s.get(), &reused);
    EXPECT_TRUE(reused) << "B, attempt " << i;
    SessionPtr on_a = request(proxy_.port(), s.get(), &reused);
    EXPECT_TRUE(reused) << "A, attempt " << i;
    usleep(200'000);
  }
  a_noticed = wait_until([&] { return noticed(proxy_); }, milliseconds(5'000));
  b_noticed = wait_until([&] { return noticed(proxy_b_); }, milliseconds(5'000));
  EXPECT_TRUE(a_noticed && b_noticed) << "A:\n" << proxy_.process().err() << "\nB:\n" << proxy_b_.process().err();
  // A fresh ticket from A after the outage still resumes on B.
  EXPECT_TRUE(ticket_from_a_resumes_on_b());
  // Redis comes back (empty): both nodes reconnect and say so; resumption
  // across nodes keeps working with the recreated slots.
  ASSERT_TRUE(redis_.start({}, "", /*same_port=*/true));
  auto back = [](Proxy& p) { return p.process().err().find("is in use again") != std::string::npos; };
  EXPECT_TRUE(wait_until([&] { return back(proxy_) && back(proxy_b_); }, milliseconds(10'000)))
      << "A:\n" << proxy_.process().err() << "\nB:\n" << proxy_b_.process().err();
  EXPECT_TRUE(ticket_from_a_resumes_on_b());
  EXPECT_GE(redis_.keys("tlsfront:stek:*").size(), 2u);  // the held slots were written back
}

TEST_F(RedisTicketKeys, PasswordAndAclUser) {
  ASSERT_TRUE(redis_.start({"--requirepass", "default-pw"}, "default-pw"));
  // An ACL user limited to the ticket keys.
  ASSERT_EQ(redis_.cli({"ACL", "SETUSER", "edge", "on", ">edge-pw", "~tlsfront:stek:*", "+@all"}).out, "OK\n");
  write_file(dir_.file("default.pw"), "default-pw\n");
  write_file(dir_.file("edge.pw"), "edge-pw");
  ::chmod(dir_.file("default.pw").c_str(), 0600);
  ::chmod(dir_.file("edge.pw").c_str(), 0600);
  ASSERT_TRUE(start_nodes(tls_extra("1h", "redis_password_file = \"" + dir_.file("default.pw") + "\"\n"),
                          tls_extra("1h", "redis_user = \"edge\"\nredis_password_file = \"" + dir_.file("edge.pw") +
                                              "\"\n")));
  EXPECT_TRUE(ticket_from_a_resumes_on_b());
  EXPECT_GE(redis_.keys("tlsfront:stek:*").size(), 2u);
  EXPECT_EQ(proxy_.process().err().find("AUTH refused"), std::string::npos) << proxy_.process().err();
  EXPECT_EQ(proxy_b_.process().err().find("AUTH refused"), std::string::npos) << proxy_b_.process().err();
}

// AES-256-GCM open of a "v1g:" value with `wrap` (the test's own copy of the
// node's wrap key); the 80 plain bytes, or "" when it does not authenticate.
std::string unwrap(const std::string& value, const std::string& redis_key, const std::string& wrap) {
  if (value.rfind("v1g:", 0) != 0) return "";
  std::string b64 = value.substr(4);
  std::string raw(b64.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  if (n < 12 + 80 + 16) return "";
  raw.resize(12 + 80 + 16);
  std::string plain(80, '\0');
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int len = 0;
  bool ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, reinterpret_cast<const unsigned char*>(wrap.data()),
                               reinterpret_cast<const unsigned char*>(raw.data())) == 1 &&
            EVP_DecryptUpdate(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(redis_key.data()),
                              static_cast<int>(redis_key.size())) == 1 &&
            EVP_DecryptUpdate(ctx, reinterpret_cast<unsigned char*>(plain.data()), &len,
                              reinterpret_cast<const unsigned char*>(raw.data() + 12), 80) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, raw.data() + 92) == 1 &&
            EVP_DecryptFinal_ex(ctx, reinterpret_cast<unsigned char*>(plain.data()) + len, &len) == 1;
  EVP_CIPHER_CTX_free(ctx);
  return ok ? plain : "";
}

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

TEST_F(RedisTicketKeys, WrappedRingHidesKeysAndNeedsTheWrapKey) {
  ASSERT_TRUE(redis_.start());
  std::string wrap(32, '\0'), other(32, '\0');
  for (int i = 0; i < 32; ++i) {
    wrap[i] = static_cast<char>(17 * i + 3);
    other[i] = static_cast<char>(31 * i + 7);
  }
  write_file(dir_.file("wrap.key"), wrap);
  write_file(dir_.file("other.key"), other);
  ::chmod(dir_.file("wrap.key").c_str(), 0600);
  ::chmod(dir_.file("other.key").c_str(), 0600);
  const std::string with_wrap = tls_extra("1h", "wrap_key_file = \"" + dir_.file("wrap.key") + "\"\n");
  // B has the wrong wrap key: it must refuse the cluster's values (loudly)
  // and not resume A's tickets, yet keep serving with a local key.
  ASSERT_TRUE(start_nodes(with_wrap, tls_extra("1h", "wrap_key_file = \"" + dir_.file("other.key") + "\"\n")));
  EXPECT_FALSE(ticket_from_a_resumes_on_b());
  EXPECT_NE(proxy_b_.process().err().find("does not authenticate"), std::string::npos) << proxy_b_.process().err();

  // What Redis holds is wrapped: no key bytes in the raw value.
  auto keys = redis_.keys("tlsfront:stek:*");
  ASSERT_GE(keys.size(), 2u);
  for (const auto& k : keys) {
    std::string value = redis_.cli({"--raw", "GET", k}).out;
    while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
    EXPECT_EQ(value.rfind("v1g:", 0), 0u) << value;
    std::string plain = unwrap(value, k, wrap);
    ASSERT_EQ(plain.size(), 80u) << "value of " << k << " does not open with the wrap key";
    EXPECT_EQ(value.find(plain.substr(0, 16)), std::string::npos);
    EXPECT_EQ(value.find(hex(plain.substr(16, 32))), std::string::npos);
    EXPECT_TRUE(unwrap(value, k, other).empty());
    // The key really is the one node A uses (A logs key ids: the name's first 4 bytes).
    EXPECT_NE(proxy_.process().err().find(hex(plain.substr(0, 4))), std::string::npos);
  }

  // Restart B with the right key: now A's tickets resume on B.
  ExitStatus st = proxy_b_.stop();
  EXPECT_TRUE(st.exited && st.code == 0);
  ProxyOptions b;
  b.tls_extra = with_wrap;
  b.upstream_servers = {backend_.address()};
  ASSERT_TRUE(proxy_b_.start(b));
  EXPECT_TRUE(ticket_from_a_resumes_on_b());
}

}  // namespace
}  // namespace tlsfront::itest
