// HTTP/1.1 over TLS to an upstream server (UpstreamConnection with an
// UpstreamTls, through an UpstreamPool) against a blocking OpenSSL server
// on a thread (support/thread_tls_server.h) that misbehaves at the TLS
// layer: a slow handshake while a large request body waits, a
// close-delimited body ended with or without close_notify, a flood of TLS
// 1.3 KeyUpdates or TLS 1.2 HelloRequests (on an idle connection, between
// a response's bytes, and in a tunnel), and the close_notify of our own
// close.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "data/upstream/upstream_pool.h"
#include "support/loop_test.h"
#include "support/thread_tls_server.h"
#include "tls/upstream_tls_context.h"
#include "util/loop_context.h"

namespace tlsfront::upstream {
namespace {

using tls::testing::ThreadTlsServer;

// Records what the connection reports for one exchange; with a body to
// send, sends it as ProxyExchange does: while the connection holds at most
// kWriteHighWatermark, then on each on_upstream_writable.
struct Exchange : UpstreamConnection::Handler {
  UpstreamConnection* conn = nullptr;
  size_t body_left = 0;
  int writable = 0;
  bool complete = false;
  std::string body;
  int status = 0;
  std::optional<Error> error;
  std::optional<UpstreamFailure> failure;

  void pump() {
    const std::string chunk(16 * 1024, 'b');
    while (body_left > 0 && conn->buffered_bytes() <= kWriteHighWatermark) {
      const size_t n = std::min(body_left, chunk.size());
      conn->send(std::string_view(chunk.data(), n));
      body_left -= n;
    }
  }
  void on_upstream_connected() override {}
  void on_upstream_head(http::ResponseHead&& head, bool) override { status = head.status; }
  void on_upstream_body(std::string_view d) override { body.append(d); }
  void on_upstream_complete() override { complete = true; }
  void on_upstream_error(UpstreamFailure f, Error e) override {
    failure = f;
    error = std::move(e);
  }
  void on_upstream_writable() override {
    ++writable;
    pump();
  }
  void on_upstream_tunnel(std::unique_ptr<UpstreamTunnel> t) override { tunnel = std::move(t); }
  bool done() const { return complete || error.has_value(); }
  std::unique_ptr<UpstreamTunnel> tunnel;  // after a 101
};

class UpstreamTlsConnectionTest : public harness::LoopTest {
 protected:
  static void SetUpTestSuite() { ::signal(SIGPIPE, SIG_IGN); }  // as Server::run: a write to a dead peer fails
  // A pool with TLS towards `server_` (which must be set), verifying its
  // certificate (the test root; the IP address 127.0.0.1).
  // `trusted_ca_set`: cfg_.tls.trusted_ca is the test's, not the root.
  void make_pool(bool trusted_ca_set = false) {
    cfg_.name = "t";
    cfg_.servers = {config::Endpoint{"127.0.0.1", server_->port()}};
    cfg_.tls.enabled = true;
    if (!trusted_ca_set) cfg_.tls.trusted_ca = tls::testing::kPki + "/root.pem";
    auto ctx = tls::UpstreamTlsContext::create(cfg_);
    ASSERT_TRUE(ctx.ok()) << ctx.error().message();
    pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, cfg_.servers[0], &counters_, std::move(ctx).value());
  }
  // Starts an exchange on a connection from the pool: `head`, then a body of
  // `body_bytes` sent as the connection takes it.
  // `upgrade`: the request asks for one (a 101 opens a tunnel).
  std::unique_ptr<UpstreamConnection> start(Exchange& x, const std::string& head, size_t body_bytes = 0,
                                            bool upgrade = false) {
    auto lease = pool_->acquire(true);
    EXPECT_TRUE(lease.ok());
    if (!lease.ok()) return nullptr;
    x.conn = lease->conn.get();
    x.body_left = body_bytes;
    x.conn->attach(&x, false, upgrade);
    x.conn->send(head);
    x.pump();
    return std::move(lease->conn);
  }
  // run_until, again and again for up to 10 s: a flood's reads use up one
  // run_until's iterations in well under a second, before a loaded host's
  // socket buffers are full.
  bool run_long(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!run_until(done)) {
      if (std::chrono::steady_clock::now() > until) return false;
    }
    return true;
  }
  void release_objects() override {
    if (tunnel_) UpstreamTunnel::retire(tunnel_);
    if (conn_) ctx_->defer_delete(std::move(conn_));
    pool_.reset();
    server_.reset();
  }

  std::unique_ptr<ThreadTlsServer> server_;
  metrics::UpstreamServerCounters counters_;
  config::Upstream cfg_;
  std::unique_ptr<UpstreamPool> pool_;
  std::unique_ptr<UpstreamConnection> conn_;
  std::unique_ptr<UpstreamTunnel> tunnel_;
};

// Writes a 200 whose body is `text`, with Content-Length.
bool answer(SSL* ssl, const std::string& text) {
  return ThreadTlsServer::write_all(
      ssl, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text);
}

TEST_F(UpstreamTlsConnectionTest, BodyQueuedDuringTheHandshakeIsSentWhole) {
  // The server answers the ClientHello late: the request head and the
  // first kWriteHighWatermark of the body wait for the handshake, the sender
  // waits for room. Once the handshake is done they go out, and the sender
  // must hear there is room again, even when the socket takes them at once.
  constexpr size_t kBody = 4 * 1024 * 1024;
  server_ = std::make_unique<ThreadTlsServer>([](SSL* ssl, int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (SSL_accept(ssl) != 1) return;
    const long n = ThreadTlsServer::read_request(ssl);
    if (n >= 0) answer(ssl, std::to_string(n));
  });
  make_pool();
  Exchange x;
  conn_ = start(x, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n", kBody);
  ASSERT_TRUE(conn_);
  EXPECT_EQ(conn_->state(), UpstreamConnection::State::Connecting);
  EXPECT_GT(x.body_left, 0u);  // the sender is waiting for room
  run_until([&] { return x.done(); });
  EXPECT_TRUE(x.complete) << (x.error ? x.error->message() : "no answer: the body stalled");
  EXPECT_EQ(x.status, 200);
  EXPECT_EQ(x.body, std::to_string(kBody));
}

// A server that answers `response` (a close-delimited body: no
// Content-Length, not chunked) and closes: after a close_notify when
// `close_notify`, else with a bare TCP FIN.
std::unique_ptr<ThreadTlsServer> close_delimited(std::string response, bool close_notify) {
  return std::make_unique<ThreadTlsServer>([response, close_notify](SSL* ssl, int) {
    if (SSL_accept(ssl) != 1 || ThreadTlsServer::read_request(ssl) < 0) return;
    if (!ThreadTlsServer::write_all(ssl, response)) return;
    if (close_notify) SSL_shutdown(ssl);
    // Without: the SSL is freed and the socket closed, nothing more said.
  });
}

TEST_F(UpstreamTlsConnectionTest, CloseDelimitedBodyEndsWithCloseNotify) {
  for (const char* status_line : {"HTTP/1.1 200 OK\r\nConnection: close\r\n", "HTTP/1.0 200 OK\r\n"}) {
    SCOPED_TRACE(status_line);
    server_ = close_delimited(std::string(status_line) + "\r\nhello", /*close_notify=*/true);
    make_pool();
    Exchange x;
    conn_ = start(x, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    run_until([&] { return x.done(); });
    EXPECT_TRUE(x.complete) << (x.error ? x.error->message() : "");
    EXPECT_EQ(x.body, "hello");
    release_objects();
  }
}

TEST_F(UpstreamTlsConnectionTest, CloseDelimitedBodyCutByATcpFinIsTruncated) {
  // RFC 8446 §6.1, RFC 9112 §9.8: without close_notify the body may have
  // been cut by anyone on the path; it is an incomplete response.
  for (const char* status_line : {"HTTP/1.1 200 OK\r\nConnection: close\r\n", "HTTP/1.0 200 OK\r\n"}) {
    SCOPED_TRACE(status_line);
    server_ = close_delimited(std::string(status_line) + "\r\nhello", /*close_notify=*/false);
    make_pool();
    Exchange x;
    conn_ = start(x, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    run_until([&] { return x.done(); });
    EXPECT_FALSE(x.complete);
    ASSERT_TRUE(x.error.has_value());
    EXPECT_EQ(x.failure, UpstreamFailure::Closed);
    EXPECT_NE(x.error->message().find("close_notify"), std::string::npos) << x.error->message();
    EXPECT_EQ(x.body, "hello");  // what came before the cut was passed on
    release_objects();
  }
}

// A server that answers one request with 200 "ok" (keepalive), then sends
// post-handshake messages as fast as its socket takes them and never reads,
// until `reset` is set: then it resets the connection (SO_LINGER 0). With
// `version` TLS 1.3 they are KeyUpdates asking for ours (RFC 8446 §4.6.3),
// with TLS 1.2 HelloRequests (RFC 5246 §7.4.1.1). `sent` counts them.
// `response`: what it answers instead (a 101 opens a tunnel).
std::unique_ptr<ThreadTlsServer> post_handshake_flood(std::atomic<bool>& reset, std::atomic<long>& sent, int version,
                                                      std::string response = {}) {
  return std::make_unique<ThreadTlsServer>(
      [&reset, &sent, response](SSL* ssl, int fd) {
        if (SSL_accept(ssl) != 1 || ThreadTlsServer::read_request(ssl) < 0) return;
        if (!(response.empty() ? answer(ssl, "ok") : ThreadTlsServer::write_all(ssl, response))) return;
        timeval tv{0, 20 * 1000};  // a full socket: look at `reset` every 20 ms
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        while (!reset.load()) {
          if (SSL_version(ssl) == TLS1_3_VERSION) {
            if (SSL_get_key_update_type(ssl) == SSL_KEY_UPDATE_NONE) SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED);
          } else {
            SSL_renegotiate(ssl);  // a HelloRequest
          }
          const int rc = SSL_do_handshake(ssl);  // sends it
          if (rc == 1) {
            ++sent;
          } else if (SSL_get_error(ssl, rc) != SSL_ERROR_WANT_WRITE) {
            return;
          }
        }
        linger l{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      },
      version);
}

// The protocol version of the flood: TLS 1.3 KeyUpdates or TLS 1.2
// HelloRequests.
class UpstreamTlsFloodTest : public UpstreamTlsConnectionTest, public ::testing::WithParamInterface<int> {};

TEST_P(UpstreamTlsFloodTest, PostHandshakeFloodClosesAnIdleConnection) {
  // Each message costs a key derivation and an answer (a no_renegotiation
  // alert per HelloRequest, a KeyUpdate of ours per KeyUpdate): past
  // TlsStream's bound the connection leaves the pool, counted.
  std::atomic<bool> reset{false};
  std::atomic<long> sent{0};
  server_ = post_handshake_flood(reset, sent, GetParam());
  make_pool();
  Exchange x;
  conn_ = start(x, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  run_until([&] { return x.done(); });
  ASSERT_TRUE(x.complete);
  UpstreamConnection* idle = conn_.get();
  size_t most = idle->buffered_bytes();
  pool_->release(std::move(conn_));  // the flood may have closed it already (it came with the answer)
  run_long([&] {
    if (pool_->idle_count() == 1) most = std::max(most, idle->buffered_bytes());
    return pool_->idle_count() == 0;
  });
  EXPECT_EQ(pool_->idle_count(), 0u) << sent.load() << " sent";
  EXPECT_EQ(counters_.floods.get(), 1u);
  EXPECT_LT(most, size_t{16 * 1024});  // a few answers queued, never the flood's worth
  reset = true;
  server_.reset();
}

TEST_F(UpstreamTlsConnectionTest, KeyUpdatesBetweenResponseBytesFailTheExchange) {
  // A server that reads what we answer but sends each byte of its body
  // after a KeyUpdate asking for ours: application data between them does
  // not make the flood acceptable (TlsStream's rate bound).
  constexpr int kBody = 100000;
  std::atomic<long> sent{0};
  server_ = std::make_unique<ThreadTlsServer>(
      [&sent](SSL* ssl, int) {
        if (SSL_accept(ssl) != 1 || ThreadTlsServer::read_request(ssl) < 0) return;
        if (!ThreadTlsServer::write_all(ssl,
                                        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n"))
          return;
        for (int i = 0; i < kBody; ++i) {
          if (SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) != 1 || !ThreadTlsServer::write_all(ssl, "x")) return;
          ++sent;
        }
      },
      TLS1_3_VERSION);
  make_pool();
  Exchange x;
  conn_ = start(x, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  run_long([&] { return x.done(); });
  ASSERT_TRUE(x.error.has_value()) << x.body.size() << " body bytes, " << sent.load() << " key updates";
  EXPECT_EQ(x.failure, UpstreamFailure::InvalidResponse);
  EXPECT_NE(x.error->message().find("post-handshake"), std::string::npos) << x.error->message();
  EXPECT_LT(x.body.size(), 1000u);
  EXPECT_EQ(counters_.floods.get(), 1u);
}

TEST_F(UpstreamTlsConnectionTest, TunnelDropsAServerThatFloodsWithoutReading) {
  // After a 101 the tunnel reads on for the client; the HelloRequests end
  // it (TlsStream's bound) before their answers pile up in its write queue.
  std::atomic<bool> reset{false};
  std::atomic<long> sent{0};
  server_ =
      post_handshake_flood(reset, sent, TLS1_2_VERSION,
                           "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n");
  make_pool();
  Exchange x;
  conn_ = start(x, "GET / HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", 0,
                /*upgrade=*/true);
  run_until([&] { return x.tunnel != nullptr || x.done(); });
  ASSERT_TRUE(x.tunnel) << (x.error ? x.error->message() : "no tunnel");
  tunnel_ = std::move(x.tunnel);
  Exchange t;
  tunnel_->set_handler(&t);
  size_t most = 0;
  run_long([&] {
    most = std::max(most, tunnel_->buffered_bytes());
    return t.done() || x.error.has_value();
  });
  // Records that came with the 101 are read on the loop's next turn, which
  // may come before set_handler: then the handler the tunnel was handed
  // with (x) hears the flood (a loaded host buffers all 33 by then).
  Exchange& ended = t.done() ? t : x;
  ASSERT_TRUE(ended.error.has_value()) << sent.load() << " sent, " << tunnel_->buffered_bytes() << " queued";
  EXPECT_NE(ended.error->message().find("post-handshake"), std::string::npos) << ended.error->message();
  EXPECT_EQ(ended.failure, UpstreamFailure::InvalidResponse);
  EXPECT_LE(most, kWriteHighWatermark + 2 * LoopContext::kReadBufferBytes);
  reset = true;
  server_.reset();
}

TEST_F(UpstreamTlsConnectionTest, FailedVerificationSendsItsAlert) {
  // RFC 8446 §6.2: the server learns why (unknown_ca), not an unexpected EOF.
  std::atomic<int> reason{-1};  // ERR_GET_REASON of the server's failed accept
  server_ = std::make_unique<ThreadTlsServer>([&reason](SSL* ssl, int) {
    ERR_clear_error();
    reason = SSL_accept(ssl) == 1 ? 0 : ERR_GET_REASON(ERR_peek_last_error());
  });
  cfg_.tls.trusted_ca = tls::testing::kPki + "/other-root.pem";
  make_pool(/*trusted_ca_set=*/true);
  Exchange x;
  conn_ = start(x, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  run_until([&] { return x.done() && reason.load() != -1; });
  ASSERT_TRUE(x.error.has_value());
  EXPECT_EQ(x.failure, UpstreamFailure::TlsHandshake);
  EXPECT_NE(x.error->message().find("certificate verify failed"), std::string::npos) << x.error->message();
  EXPECT_EQ(reason.load(), SSL_R_TLSV1_ALERT_UNKNOWN_CA);
}

TEST_F(UpstreamTlsConnectionTest, ClosingAnIdleConnectionSendsCloseNotify) {
  // The server can tell our end from a truncation (RFC 8446 §6.1).
  std::atomic<int> how{-1};  // SSL_get_error of the server's read after the answer
  server_ = std::make_unique<ThreadTlsServer>([&how](SSL* ssl, int) {
    if (SSL_accept(ssl) != 1 || ThreadTlsServer::read_request(ssl) < 0 || !answer(ssl, "ok")) return;
    char buf[64];
    const int n = SSL_read(ssl, buf, sizeof buf);
    how = SSL_get_error(ssl, n);
  });
  make_pool();
  Exchange x;
  conn_ = start(x, "GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  run_until([&] { return x.done(); });
  ASSERT_TRUE(x.complete);
  pool_->release(std::move(conn_));
  ASSERT_EQ(pool_->idle_count(), 1u);
  pool_->close_idle();
  run_until([&] { return how.load() != -1; });
  EXPECT_EQ(how.load(), SSL_ERROR_ZERO_RETURN);  // not SSL_ERROR_SSL (an unexpected EOF)
}

INSTANTIATE_TEST_SUITE_P(Versions, UpstreamTlsFloodTest, ::testing::Values(TLS1_3_VERSION, TLS1_2_VERSION),
                         [](const auto& info) {
                           return std::string(info.param == TLS1_3_VERSION ? "KeyUpdate" : "HelloRequest");
                         });

}  // namespace
}  // namespace tlsfront::upstream
