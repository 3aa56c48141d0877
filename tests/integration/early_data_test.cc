// TLS 1.3 early data (0-RTT, [tls] early_data) end to end, with a real
// OpenSSL client that sends its request with SSL_write_early_data: a safe
// request goes up before the client's Finished with Early-Data: 1; any other
// waits for the handshake; an upstream 425 is retried after it; the same
// first flight replayed is accepted once per node; early data is refused
// when early_data is off. The client drives its SSL over memory BIOs, so
// the test decides when the client's Finished leaves (never, for a replay).
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "h2_frames.h"
#include "harness.h"
#include "shared/redis_server.h"

namespace tlsfront::itest {
namespace {

struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;

// The newest session the client's NewSessionTicket callback saw.
SSL_SESSION*& latest_session() {
  static thread_local SSL_SESSION* s = nullptr;
  return s;
}

// A TLS 1.3 client context offering ALPN `alpn` only ("http/1.1" or "h2").
SSL_CTX* client_ctx(std::string_view alpn) {
  static SSL_CTX* h1 = nullptr;
  static SSL_CTX* h2 = nullptr;
  SSL_CTX*& ctx = alpn == "h2" ? h2 : h1;
  if (ctx) return ctx;
  ctx = [alpn] {
    SSL_CTX* c = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION);
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(c, [](SSL*, SSL_SESSION* s) {
      if (latest_session()) SSL_SESSION_free(latest_session());
      latest_session() = s;  // keeps the reference OpenSSL hands over
      return 1;
    });
    std::string wire = std::string(1, static_cast<char>(alpn.size())) + std::string(alpn);
    SSL_CTX_set_alpn_protos(c, reinterpret_cast<const unsigned char*>(wire.data()), static_cast<unsigned>(wire.size()));
    return c;
  }();
  return ctx;
}

// One client connection over a socket, its SSL on memory BIOs.
class EarlyClient {
 public:
  ~EarlyClient() {
    // Marked shut down, so SSL_free keeps the session resumable (OpenSSL
    // voids the session of an SSL freed without one).
    if (ssl_) SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }
  bool connect(int port, SSL_SESSION* session, std::string_view alpn = "http/1.1") {
    fd_ = tcp_connect(port);
    if (fd_ < 0) return false;
    ssl_ = SSL_new(client_ctx(alpn));
    SSL_set_bio(ssl_, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_tlsext_host_name(ssl_, "localhost");
    SSL_set_connect_state(ssl_);
    if (session) {
      EXPECT_EQ(SSL_SESSION_is_resumable(session), 1);
      EXPECT_EQ(SSL_set_session(ssl_, session), 1);
    }
    return true;
  }
  // ClientHello + `request` as early data: the first flight, sent now.
  bool send_early(const std::string& request) {
    size_t written = 0;
    if (int rc = SSL_write_early_data(ssl_, request.data(), request.size(), &written); rc != 1) {
      ADD_FAILURE() << "SSL_write_early_data: SSL_get_error " << SSL_get_error(ssl_, rc) << ", "
                    << ERR_error_string(ERR_get_error(), nullptr);
      return false;
    }
    first_flight_ = take_output();
    return send_raw(first_flight_);
  }
  // Without early data: the ClientHello only, then the handshake.
  bool handshake() {
    return pump([&] { return SSL_do_handshake(ssl_); });
  }
  // Completes the handshake (sending the client's Finished), writes `more`
  // (if any) and reads one response.
  std::optional<ParsedResponse> finish(const std::string& more = "") {
    if (!handshake()) return std::nullopt;
    if (!more.empty() && SSL_write(ssl_, more.data(), static_cast<int>(more.size())) <= 0) return std::nullopt;
    ParsedResponse r;
    std::string in = read_until([&](const std::string& got) { return parse_response(got, false, false, r) > 0; });
    if (r.status != 0 || parse_response(in, true, false, r) > 0) return r;
    return std::nullopt;
  }
  // Plaintext read after the handshake until `done(all read so far)` (or the
  // connection ends, or 5 s without a byte).
  std::string read_until(const std::function<bool(const std::string&)>& done) {
    std::string in;
    char buf[16384];
    for (int i = 0; i < 200; ++i) {
      int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n > 0) {
        in.append(buf, static_cast<size_t>(n));
        if (done(in)) break;
        continue;
      }
      if (SSL_get_error(ssl_, n) != SSL_ERROR_WANT_READ || !flush() || !receive()) break;
    }
    return in;
  }
  int early_status() const { return SSL_get_early_data_status(ssl_); }
  const std::string& first_flight() const { return first_flight_; }
  int fd() const { return fd_; }

 private:
  std::string take_output() {
    BIO* w = SSL_get_wbio(ssl_);
    std::string out(static_cast<size_t>(BIO_pending(w)), '\0');
    if (!out.empty()) BIO_read(w, out.data(), static_cast<int>(out.size()));
    return out;
  }
  bool send_raw(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  bool flush() { return send_raw(take_output()); }
  // Waits (at most 5 s) for bytes from the server and feeds them to the SSL.
  bool receive() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5'000) != 1) return false;
    char buf[16384];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    BIO_write(SSL_get_rbio(ssl_), buf, static_cast<int>(n));
    return true;
  }
  template <typename Step>
  bool pump(Step step) {
    for (int i = 0; i < 100; ++i) {
      int rc = step();
      if (!flush()) return false;
      if (rc == 1) return true;
      if (SSL_get_error(ssl_, rc) != SSL_ERROR_WANT_READ || !receive()) return false;
    }
    return false;
  }

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string first_flight_;
};

std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n"; }

// Sends a recorded first flight on a new connection to `port` and waits for
// the server's flight (the ClientHello was processed); then closes, as an
// attacker without the PSK must.
void replay(int port, std::string_view bytes) {
  int fd = tcp_connect(port);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  pollfd p{fd, POLLIN, 0};
  char buf[4096];
  EXPECT_EQ(::poll(&p, 1, 5'000), 1);
  EXPECT_GT(::recv(fd, buf, sizeof(buf), 0), 0);
  ::close(fd);
}

class EarlyData : public ProxyTest {
 protected:
  bool start(const std::string& tls_extra = "early_data = true\n") {
    ProxyOptions o;
    o.tls_extra = tls_extra;
    return start_proxy(o);
  }
  // A full handshake and one request; the session its ticket resumes.
  SessionPtr fresh_session() { return fresh_session(port()); }
  SessionPtr fresh_session(int port) {
    EarlyClient c;
    EXPECT_TRUE(c.connect(port, nullptr));
    auto r = c.finish(get("/ticket"));
    EXPECT_TRUE(r && r->status == 200);
    if (latest_session() == nullptr) return nullptr;
    SessionPtr s(latest_session());
    latest_session() = nullptr;
    return s;
  }
  double metric(const std::string& series) { return metric(proxy_, series); }
  static double metric(const Proxy& proxy, const std::string& series) {
    auto m = scrape_metrics(proxy.admin_port());
    auto it = m.find(series);
    return it == m.end() ? -1 : it->second;
  }
  bool wait_metric(const std::string& series, double value) { return wait_metric(proxy_, series, value); }
  static bool wait_metric(const Proxy& proxy, const std::string& series, double value) {
    return wait_until([&] { return metric(proxy, series) == value; });
  }
  // The access-log line of `path` (lines of two workers are not in order).
  std::string log_line(const std::string& path) {
    std::string found;
    wait_until([&] {
      for (const auto& line : proxy_.wait_log_lines(0, milliseconds(0))) {
        if (json_string(line, "path") == path) found = line;
      }
      return !found.empty();
    });
    EXPECT_FALSE(found.empty()) << "no access-log line for " << path;
    return found;
  }
  // The backend's records that contain `needle`.
  size_t recorded_with(const std::string& needle) {
    size_t n = 0;
    for (const auto& name : backend_.records("req")) n += backend_.read_record(name).find(needle) != std::string::npos;
    return n;
  }
};

TEST_F(EarlyData, SafeRequestGoesUpBeforeTheClientFinished) {
  ASSERT_TRUE(start());
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  ASSERT_GT(SSL_SESSION_get_max_early_data(s.get()), 0u) << "tickets must allow early data";
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(c.send_early(get("/early")));
  // The client has not sent its Finished: the request is at the backend anyway.
  ASSERT_TRUE(wait_until([&] { return recorded_with("GET /early ") == 1; })) << "not forwarded in early data";
  EXPECT_EQ(recorded_with("Early-Data: 1\r\n"), 1u);
  auto r = c.finish();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(c.early_status(), SSL_EARLY_DATA_ACCEPTED);
  EXPECT_EQ(json_raw(log_line("/early"), "ssl_early_data"), "true");
  EXPECT_EQ(json_raw(log_line("/ticket"), "ssl_early_data"), "false");
  EXPECT_TRUE(wait_metric("tlsfront_early_data_accepted_total", 1));
  EXPECT_EQ(metric("tlsfront_early_data_requests_total{action=\"sent\"}"), 1);
}

TEST_F(EarlyData, ConnectionClosedInEarlyDataIsCounted) {
  // "Connection: close" on the request read in early data: the response
  // goes out as 0.5-RTT data and tlsfront closes before the client's
  // Finished. The accepted early data (a replay, had it been one) still
  // shows in the metrics, and the handshake as one that did not complete.
  ASSERT_TRUE(start());
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(c.send_early("GET /bye HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  ASSERT_TRUE(wait_until([&] { return recorded_with("GET /bye ") == 1; }));
  EXPECT_TRUE(wait_metric("tlsfront_early_data_offered_total", 1));
  EXPECT_TRUE(wait_metric("tlsfront_early_data_accepted_total", 1));
  EXPECT_TRUE(wait_metric("tlsfront_tls_handshake_failures_total{reason=\"closed\"}", 1));
  EXPECT_EQ(json_raw(log_line("/bye"), "ssl_early_data"), "true");
}

TEST_F(EarlyData, UnsafeRequestWaitsForTheHandshake) {
  ASSERT_TRUE(start());
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(c.send_early("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello"));
  // Held: the early request was taken (counted) but nothing went up.
  ASSERT_TRUE(wait_metric("tlsfront_early_data_requests_total{action=\"held\"}", 1));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(recorded_with("POST /echo"), 0u) << "a POST in early data reached the backend before the handshake";
  auto r = c.finish();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(c.early_status(), SSL_EARLY_DATA_ACCEPTED);
  EXPECT_EQ(recorded_with("POST /echo"), 1u);
  EXPECT_EQ(recorded_with("Early-Data"), 0u) << "a held request goes up as a normal one";
}

TEST_F(EarlyData, UpgradeRequestWaitsForTheHandshake) {
  // A tunnel would carry the early bytes after its request to the
  // application, where a replay repeats them: held, though it is a GET.
  ASSERT_TRUE(start());
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(
      c.send_early("GET /ws HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
  ASSERT_TRUE(wait_metric("tlsfront_early_data_requests_total{action=\"held\"}", 1));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(recorded_with("GET /ws "), 0u) << "an Upgrade in early data reached the backend before the handshake";
  ASSERT_TRUE(c.handshake());
  ASSERT_TRUE(wait_until([&] { return recorded_with("GET /ws ") == 1; }));
  EXPECT_EQ(recorded_with("Early-Data"), 0u);
}

TEST_F(EarlyData, UpstreamTooEarlyIsRetriedAfterTheHandshake) {
  ASSERT_TRUE(start());
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(c.send_early(get("/too-early")));
  ASSERT_TRUE(wait_until([&] { return recorded_with("GET /too-early ") == 1; }));
  auto r = c.finish();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "the client must get the answer to the retried request, not the 425";
  EXPECT_EQ(r->body, "late\n");
  EXPECT_EQ(recorded_with("GET /too-early "), 2u);
  EXPECT_TRUE(wait_metric("tlsfront_early_data_too_early_retries_total", 1));
}

TEST_F(EarlyData, ReplayedFirstFlightIsAcceptedOnce) {
  ASSERT_TRUE(start());  // two workers: the replays land on both
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(c.send_early(get("/once")));
  ASSERT_TRUE(wait_until([&] { return recorded_with("GET /once ") == 1; }));
  constexpr int kReplays = 6;
  for (int i = 0; i < kReplays; ++i) {
    replay(port(), c.first_flight());
  }
  ASSERT_TRUE(wait_metric("tlsfront_early_data_rejected_total{reason=\"replay\"}", kReplays));
  EXPECT_EQ(recorded_with("GET /once "), 1u) << "a replayed first flight reached the backend";
  auto r = c.finish();  // the original still completes
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(EarlyData, OffByDefaultTheRequestIsAnsweredAfterTheHandshake) {
  ASSERT_TRUE(start(""));
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  EXPECT_EQ(SSL_SESSION_get_max_early_data(s.get()), 0u) << "tickets must not offer early data";
  // A client that sends early data anyway (an old ticket) is refused and resends.
  SSL_SESSION_set_max_early_data(s.get(), 16384);
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(c.send_early(get("/refused")));
  ASSERT_TRUE(c.handshake());
  EXPECT_EQ(c.early_status(), SSL_EARLY_DATA_REJECTED);
  auto r = c.finish(get("/refused"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(recorded_with("GET /refused "), 1u);
  EXPECT_TRUE(wait_metric("tlsfront_early_data_rejected_total{reason=\"disabled\"}", 1));
}

// Two nodes sharing ticket keys (a file) and a Redis session store: a first
// flight accepted on A is refused on B; Redis down means early data is
// refused, the request still answered.
class EarlyDataCluster : public EarlyData {
 protected:
  EarlyDataCluster() : redis_(dir_), proxy_b_(dir_b_) {}
  void SetUp() override {
    if (find_tool("redis-server").empty()) GTEST_SKIP() << "redis-server not installed";
    EarlyData::SetUp();
    ASSERT_TRUE(redis_.start());
    write_file(dir_.file("ticket.key"), std::string(80, '\x42'));
    ::chmod(dir_.file("ticket.key").c_str(), 0600);
  }
  void TearDown() override {
    if (proxy_b_.process().pid() > 0) proxy_b_.stop();
    EarlyData::TearDown();
    redis_.stop();
  }
  std::string tls_extra() const {
    return "early_data = true\n[tls.session_cache]\nstore = \"redis\"\nredis = \"127.0.0.1:" +
           std::to_string(redis_.port()) + "\"\nredis_timeout = \"100ms\"\n[tls.ticket_keys]\nsource = \"files\"\n" +
           "files = [\"" + dir_.file("ticket.key") + "\"]\n";
  }
  bool start_nodes() {
    ProxyOptions o;
    o.tls_extra = tls_extra();
    if (!start_proxy(o)) return false;
    o.upstream_servers = {backend_.address()};
    return proxy_b_.start(o);
  }
  RedisServer redis_;
  TempDir dir_b_;
  Proxy proxy_b_;
};

TEST_F(EarlyDataCluster, FirstFlightAcceptedOnOneNodeIsRefusedOnTheOther) {
  ASSERT_TRUE(start_nodes());
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(c.send_early(get("/cluster")));
  ASSERT_TRUE(wait_until([&] { return recorded_with("GET /cluster ") == 1; }));
  EXPECT_EQ(redis_.keys("tlsfront:early:*").size(), 1u);
  replay(proxy_b_.port(), c.first_flight());
  ASSERT_TRUE(wait_metric(proxy_b_, "tlsfront_early_data_rejected_total{reason=\"replay\"}", 1));
  EXPECT_EQ(recorded_with("GET /cluster "), 1u) << "node B forwarded a replay of node A's early data";
  auto r = c.finish();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(c.early_status(), SSL_EARLY_DATA_ACCEPTED);
}

TEST_F(EarlyDataCluster, RedisDownMeansEarlyDataRefusedAndTheRequestAnswered) {
  ASSERT_TRUE(start_nodes());
  SessionPtr s = fresh_session();
  ASSERT_TRUE(s);
  redis_.stop();
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get()));
  ASSERT_TRUE(c.send_early(get("/no-redis")));
  ASSERT_TRUE(c.handshake());
  EXPECT_EQ(c.early_status(), SSL_EARLY_DATA_REJECTED);
  auto r = c.finish(get("/no-redis"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(recorded_with("GET /no-redis "), 1u);
  EXPECT_TRUE(wait_metric("tlsfront_early_data_rejected_total{reason=\"redis_unavailable\"}", 1));
}

// The stream IDs of the HEADERS frames in `bytes`, a server's HTTP/2 frames.
std::set<uint32_t> headers_streams(std::string_view bytes) {
  std::set<uint32_t> ids;
  while (bytes.size() >= 9) {
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
    const size_t len = size_t{b[0]} << 16 | size_t{b[1]} << 8 | b[2];
    if (bytes.size() < 9 + len) break;
    if (b[3] == 0x1)
      ids.insert((uint32_t{b[5]} << 24 | uint32_t{b[6]} << 16 | uint32_t{b[7]} << 8 | b[8]) & 0x7fffffff);
    bytes.remove_prefix(9 + len);
  }
  return ids;
}

TEST_F(EarlyData, Http2StreamsInEarlyDataSafeGoesUpAndPostWaits) {
  ASSERT_TRUE(start());
  SessionPtr s;
  {
    EarlyClient c;
    ASSERT_TRUE(c.connect(port(), nullptr, "h2"));
    ASSERT_TRUE(c.handshake());
    c.read_until([](const std::string&) { return latest_session() != nullptr; });  // the server's SETTINGS, tickets
    ASSERT_NE(latest_session(), nullptr);
    s.reset(latest_session());
    latest_session() = nullptr;
  }
  EarlyClient c;
  ASSERT_TRUE(c.connect(port(), s.get(), "h2"));
  h2::Fields post = h2::get_request("/echo");
  post[0].second = "POST";
  std::string flight = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2::frame(0x4, 0, 0, "") +
                       h2::frame(0x1, 0x5, 1, h2::hpack(h2::get_request("/h2-early"))) +  // END_STREAM | END_HEADERS
                       h2::frame(0x1, 0x4, 3, h2::hpack(post)) + h2::frame(0x0, 0x1, 3, "hello");
  ASSERT_TRUE(c.send_early(flight));
  ASSERT_TRUE(wait_until([&] { return recorded_with("GET /h2-early ") == 1; })) << "not forwarded in early data";
  EXPECT_EQ(recorded_with("Early-Data: 1\r\n"), 1u);
  ASSERT_TRUE(wait_metric("tlsfront_early_data_requests_total{action=\"held\"}", 1));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(recorded_with("POST /echo"), 0u) << "a POST stream in early data reached the backend before the handshake";
  ASSERT_TRUE(c.handshake());
  EXPECT_EQ(c.early_status(), SSL_EARLY_DATA_ACCEPTED);
  std::string frames = c.read_until([](const std::string& got) { return headers_streams(got).size() == 2; });
  EXPECT_EQ(headers_streams(frames), (std::set<uint32_t>{1, 3}));
  EXPECT_EQ(recorded_with("POST /echo"), 1u);
  EXPECT_EQ(recorded_with("Early-Data"), 1u) << "only the GET went up early";
}

}  // namespace
}  // namespace tlsfront::itest
