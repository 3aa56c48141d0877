// MemoryTlsClient: an OpenSSL client over two memory BIOs, for unit tests
// that drive a server-side TlsStream without sockets: the test carries the
// bytes between them (take_output / give, or pump_handshake for a whole
// handshake). Two endpoints of OpenSSL's own, with no TlsStream: tls_pair.h.
#pragma once

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <functional>
#include <string>
#include <string_view>

#include "tls/tls_stream.h"
#include "util/openssl_ptr.h"

namespace tlsfront::tls::testing {

struct MemoryTlsClient {
  // Sends SNI "localhost" and checks the certificate against that name (when
  // `ctx` verifies); offers `resume` (may be null).
  MemoryTlsClient(SSL_CTX* ctx, SSL_SESSION* resume) : ssl(SSL_new(ctx)) {
    rbio = BIO_new(BIO_s_mem());
    wbio = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(rbio, -1);  // no data yet is "retry", not EOF
    SSL_set_bio(ssl.get(), rbio, wbio);
    SSL_set_connect_state(ssl.get());
    SSL_set_tlsext_host_name(ssl.get(), "localhost");
    SSL_set1_host(ssl.get(), "localhost");
    if (resume) SSL_set_session(ssl.get(), resume);
  }

  // What the client wrote since the last call.
  std::string take_output() {
    char* data = nullptr;
    const long n = BIO_get_mem_data(wbio, &data);
    std::string out(data, n > 0 ? static_cast<size_t>(n) : 0);
    (void)BIO_reset(wbio);
    return out;
  }
  // Bytes from the server, for the client's next read or handshake step.
  void give(std::string_view in) {
    if (!in.empty()) BIO_write(rbio, in.data(), static_cast<int>(in.size()));
  }

  // Writes `text` as application data and feeds its record to `s`.
  void send(TlsStream& s, std::string_view text) {
    EXPECT_EQ(SSL_write(ssl.get(), text.data(), static_cast<int>(text.size())), static_cast<int>(text.size()));
    s.feed(take_output());
  }
  // Gives the client what `s` wrote; returns the application data of one
  // SSL_read ("" when there is none).
  std::string receive(TlsStream& s) {
    std::string out;
    s.take_output(out);
    give(out);
    char buf[16 * 1024];
    const int n = SSL_read(ssl.get(), buf, sizeof(buf));
    return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
  }

  SslPtr ssl;
  BIO* rbio = nullptr;  // owned by `ssl`
  BIO* wbio = nullptr;  // owned by `ssl`
};

// Moves bytes both ways, at most 20 rounds, until both handshakes are done
// and a round moved nothing. A server handshake error fails the test.
// `on_paused` runs in each round in which the server's handshake paused
// (SessionLookup asking a remote store); it is expected to let it go on.
inline void pump_handshake(MemoryTlsClient& c, TlsStream& s, const std::function<void()>& on_paused = {}) {
  for (int i = 0; i < 20; ++i) {
    SSL_do_handshake(c.ssl.get());
    const std::string to_server = c.take_output();
    s.feed(to_server);
    auto r = s.handshake();
    ASSERT_TRUE(r.ok()) << r.error().message();
    if (s.handshake_paused() && on_paused) on_paused();
    std::string to_client;
    s.take_output(to_client);
    c.give(to_client);
    if (s.handshake_done() && SSL_is_init_finished(c.ssl.get()) && to_server.empty() && to_client.empty()) return;
  }
}

}  // namespace tlsfront::tls::testing
