// [limits] max_full_handshakes_per_client against the real binary: the
// budget refuses full handshakes past it in the ClientHello, resumptions are
// not charged, and (the figures) a well-behaved client's handshake latency
// from another address while one address floods full handshakes, with and
// without the budget. The figures are printed, never asserted (timing).
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {
namespace {

using std::chrono::steady_clock;

// One TLS 1.3 ClientHello (SNI localhost, an X25519 key share), made once.
std::string client_hello() {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO* wbio = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, rbio, wbio);
  SSL_set_tlsext_host_name(ssl, "localhost");
  SSL_connect(ssl);  // wants to read: the ClientHello is in wbio
  char* data = nullptr;
  const long n = BIO_get_mem_data(wbio, &data);
  std::string hello(data, static_cast<size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

// A full-handshake flood from `source`, as a real one is made: the same
// ClientHello sent again and again (the client spends no crypto; the
// server does a key exchange and signs for each), each connection reset
// once the server's first flight (or its refusal) came back.
class Flood {
 public:
  Flood(int port, const char* source, int threads) : hello_(client_hello()) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this, port, source] { run(port, source); });
  }
  ~Flood() { stop(); }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  int attempts() const { return attempts_; }
  int answered() const { return answered_; }  // a ServerHello came back (not an alert)

 private:
  void run(int port, const char* source) {
    char buf[16384];
    while (!stop_) {
      const int fd = tcp_connect(port, "127.0.0.1", source);
      if (fd < 0) continue;
      timeval tv{2, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ++attempts_;
      if (::send(fd, hello_.data(), hello_.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(hello_.size())) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0 && buf[0] == 0x16) ++answered_;  // a handshake record, not an alert (0x15)
      }
      linger l{1, 0};  // RST: no TIME_WAIT on this side, so the ports last
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      ::close(fd);
    }
  }

  const std::string hello_;
  std::atomic<bool> stop_{false};
  std::atomic<int> attempts_{0}, answered_{0};
  std::vector<std::thread> threads_;
};

class HandshakeFlood : public ProxyTest {
 protected:
  // Median full-handshake time (ms) of `n` sequential handshakes from `source`.
  double median_handshake_ms(const char* source, int n) {
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
      TlsClient c;
      TlsOptions o;
      o.source_ip = source;
      o.verify = false;
      const auto start = steady_clock::now();
      if (!c.connect(port(), o)) continue;
      ms.push_back(std::chrono::duration<double, std::milli>(steady_clock::now() - start).count());
    }
    if (ms.empty()) return -1;
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }

  void measure(bool budget, const char* flooder) {
    ProxyOptions o;
    o.workers = 2;
    if (budget) o.extra = "[limits]\nmax_full_handshakes_per_client = 20\n";
    ASSERT_TRUE(start_proxy(o));
    const double idle = median_handshake_ms("127.0.0.3", 100);
    Flood flood(port(), flooder, 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double loaded = median_handshake_ms("127.0.0.3", 100);
    flood.stop();
    auto m = scrape_metrics(proxy_.admin_port());
    std::printf(
        "handshake flood (%s): well-behaved client median full handshake %.2f ms idle, %.2f ms under the flood "
        "(x%.2f); flooder: %d ClientHellos, %d answered with a ServerHello, %.0f refused by the budget\n",
        budget ? "max_full_handshakes_per_client = 20" : "no budget", idle, loaded, loaded / idle, flood.attempts(),
        flood.answered(), m["tlsfront_connections_refused_total{reason=\"handshake_rate\"}"]);
    EXPECT_GT(idle, 0);
    EXPECT_GT(loaded, 0);  // the other client always got through
    if (budget) EXPECT_LT(flood.answered(), flood.attempts());
  }
};

TEST_F(HandshakeFlood, BudgetRefusesFullHandshakesButNotResumptions) {
  ProxyOptions o;
  o.workers = 2;
  o.extra = "[limits]\nmax_full_handshakes_per_client = 2\n";
  ASSERT_TRUE(start_proxy(o));
  // A full handshake whose session is then offered again.
  SSL_SESSION* session = nullptr;
  {
    TlsClient c;
    TlsOptions opts;
    opts.source_ip = "127.0.0.2";
    ASSERT_TRUE(c.connect(port(), opts));
    c.write("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    ASSERT_TRUE(c.read_response());
    c.read_all(std::chrono::milliseconds(2'000));
    session = c.take_session();
  }
  ASSERT_NE(session, nullptr);
  for (int i = 0; i < 5; ++i) {  // resumptions: not charged
    TlsClient c;
    TlsOptions opts;
    opts.source_ip = "127.0.0.2";
    opts.session = session;
    ASSERT_TRUE(c.connect(port(), opts)) << i << ": " << c.error();
    EXPECT_TRUE(c.session_reused()) << i;
  }
  SSL_SESSION_free(session);
  TlsOptions full;
  full.source_ip = "127.0.0.2";
  TlsClient second;
  EXPECT_TRUE(second.connect(port(), full));  // the budget's second
  TlsClient third;
  EXPECT_FALSE(third.connect(port(), full));  // refused in the ClientHello
  TlsOptions other;
  other.source_ip = "127.0.0.3";
  TlsClient elsewhere;
  EXPECT_TRUE(elsewhere.connect(port(), other));  // another address has its own
  const auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(m.at("tlsfront_connections_refused_total{reason=\"handshake_rate\"}"), 1);
  EXPECT_GE(m.at("tlsfront_handshake_budget_addresses"), 2);  // and the harness's own readiness check
}

TEST_F(HandshakeFlood, FiguresWithBudget) { measure(true, "127.0.0.2"); }
TEST_F(HandshakeFlood, FiguresWithoutBudget) { measure(false, "127.0.0.5"); }

}  // namespace
}  // namespace tlsfront::itest
