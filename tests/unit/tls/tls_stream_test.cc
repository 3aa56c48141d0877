// TlsStream against an OpenSSL client over memory BIOs: no sockets needed.
#include "tls/tls_stream.h"

#include <gtest/gtest.h>
#include <openssl/err.h>

#include "support/memory_tls_client.h"
#include "support/test_pki.h"
#include "tls/tls_context.h"

namespace tlsfront::tls {
namespace {

using testing::kPki;
using testing::MemoryTlsClient;
using testing::pump_handshake;
using testing::server_tls;

class TlsStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ctx = TlsContext::create(server_tls());
    ASSERT_TRUE(ctx.ok()) << ctx.error().message();
    server_ = std::move(ctx).value();
    client_ctx_ = testing::verifying_client_ctx();
    ASSERT_TRUE(client_ctx_);
  }

  // One connection: handshake, one request byte string each way; returns the
  // client's session for resumption and whether the server resumed.
  SslSessionPtr connect(SSL_SESSION* resume, bool* reused) {
    auto stream = TlsStream::create(server_->get());
    EXPECT_TRUE(stream.ok());
    MemoryTlsClient c(client_ctx_.get(), resume);
    pump_handshake(c, *stream);
    EXPECT_TRUE(stream->handshake_done());
    EXPECT_TRUE(SSL_is_init_finished(c.ssl.get()));
    *reused = SSL_session_reused(stream->ssl()) == 1;

    // Client -> server application data.
    c.send(*stream, "ping");
    char buf[64];
    auto got = stream->read(buf, sizeof(buf));
    EXPECT_TRUE(got.ok());
    EXPECT_EQ(std::string(buf, *got), "ping");

    // Server -> client, which also delivers TLS 1.3 NewSessionTickets.
    EXPECT_TRUE(stream->write("pong").ok());
    EXPECT_EQ(c.receive(*stream), "pong");

    // close_notify from the client reads as Errc::Closed.
    SSL_shutdown(c.ssl.get());
    stream->feed(c.take_output());
    auto closed = stream->read(buf, sizeof(buf));
    EXPECT_FALSE(closed.ok());
    if (!closed.ok()) EXPECT_EQ(closed.error().code, Errc::Closed);
    return SslSessionPtr(SSL_get1_session(c.ssl.get()));
  }

  std::unique_ptr<TlsContext> server_;
  SslCtxPtr client_ctx_;
};

// release_buffers() frees the buffers only when both are empty, and the
// connection goes on over them.
TEST_F(TlsStreamTest, ReleaseBuffersKeepsTheConnectionWorking) {
  auto stream = TlsStream::create(server_->get());
  ASSERT_TRUE(stream.ok());
  MemoryTlsClient c(client_ctx_.get(), nullptr);
  pump_handshake(c, *stream);
  ASSERT_TRUE(stream->handshake_done());
  c.send(*stream, "one");
  EXPECT_FALSE(stream->release_buffers());  // input not yet read
  char buf[64];
  auto got = stream->read(buf, sizeof(buf));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(buf, *got), "one");
  EXPECT_TRUE(stream->write("reply").ok());
  EXPECT_FALSE(stream->release_buffers());  // output not yet taken
  std::string out;
  stream->take_output(out);
  EXPECT_TRUE(stream->release_buffers());
  c.give(out);
  int m = SSL_read(c.ssl.get(), buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, m > 0 ? m : 0), "reply");
  // Both directions still work after the release.
  c.send(*stream, "two");
  got = stream->read(buf, sizeof(buf));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(buf, *got), "two");
  EXPECT_TRUE(stream->write("again").ok());
  EXPECT_EQ(c.receive(*stream), "again");
}

TEST_F(TlsStreamTest, Tls13HandshakeDataAndTicketResumption) {
  SSL_CTX_set_min_proto_version(client_ctx_.get(), TLS1_3_VERSION);
  bool reused = true;
  SslSessionPtr session = connect(nullptr, &reused);
  EXPECT_FALSE(reused);
  ASSERT_TRUE(session);
  EXPECT_TRUE(SSL_SESSION_is_resumable(session.get()));
  connect(session.get(), &reused);
  EXPECT_TRUE(reused);
}

TEST_F(TlsStreamTest, Tls12SessionResumption) {
  SSL_CTX_set_max_proto_version(client_ctx_.get(), TLS1_2_VERSION);
  bool reused = true;
  SslSessionPtr session = connect(nullptr, &reused);
  EXPECT_FALSE(reused);
  connect(session.get(), &reused);
  EXPECT_TRUE(reused);
}

// A TLS 1.3 client that asks for KeyUpdates: `updates` of them in one
// flight, each a record OpenSSL answers with a key derivation (and, with
// update_requested, a KeyUpdate of ours).
void send_key_updates(MemoryTlsClient& c, TlsStream& s, int updates) {
  std::string flight;
  for (int i = 0; i < updates; ++i) {
    ASSERT_EQ(SSL_key_update(c.ssl.get(), SSL_KEY_UPDATE_REQUESTED), 1);
    ASSERT_EQ(SSL_do_handshake(c.ssl.get()), 1);
    flight += c.take_output();
  }
  s.feed(flight);
}

// Reads until `s` fails or has nothing more; the error, or Errc::Ok.
Errc read_all(TlsStream& s) {
  char buf[256];
  for (int i = 0; i < 1000; ++i) {
    auto n = s.read(buf, sizeof(buf));
    if (!n) return n.error().code;
    if (*n == 0) return Errc::Ok;
  }
  return Errc::Ok;
}

// The OpenSSL reason of the alert the client received, reading what `s` wrote.
int alert_received(MemoryTlsClient& c, TlsStream& s) {
  std::string out;
  s.take_output(out);
  c.give(out);
  ERR_clear_error();
  char buf[64];
  for (int i = 0; i < 200; ++i) {
    if (SSL_read(c.ssl.get(), buf, sizeof(buf)) <= 0 && SSL_get_error(c.ssl.get(), -1) != SSL_ERROR_WANT_READ) {
      break;
    }
  }
  return ERR_GET_REASON(ERR_peek_last_error());
}

// RFC 8446 §4.6.3 KeyUpdates without application data in between: past
// kMaxPostHandshakeRun the stream stops taking input and the client gets a
// fatal unexpected_message alert.
TEST_F(TlsStreamTest, KeyUpdateFloodEndsWithUnexpectedMessage) {
  SSL_CTX_set_min_proto_version(client_ctx_.get(), TLS1_3_VERSION);
  auto stream = TlsStream::create(server_->get());
  ASSERT_TRUE(stream.ok());
  MemoryTlsClient c(client_ctx_.get(), nullptr);
  pump_handshake(c, *stream);
  ASSERT_TRUE(stream->handshake_done());
  send_key_updates(c, *stream, 1000);
  EXPECT_EQ(read_all(*stream), Errc::Protocol);
  EXPECT_TRUE(stream->post_handshake_flood());
  EXPECT_EQ(stream->phase(), TlsStream::Phase::Failed);
  // OpenSSL processed no more than the bound (one KeyUpdate of ours each).
  std::string out = stream->output();
  EXPECT_LT(out.size(), 100u * (TlsStream::kMaxPostHandshakeRun + 2));
  EXPECT_EQ(alert_received(c, *stream), SSL_R_SSLV3_ALERT_UNEXPECTED_MESSAGE);
}

// A few KeyUpdates between application data are what a long-lived client
// sends; the same, far faster than kPostHandshakePerSecond, is a flood.
TEST_F(TlsStreamTest, KeyUpdatesBetweenDataPassUntilTheRateBound) {
  SSL_CTX_set_min_proto_version(client_ctx_.get(), TLS1_3_VERSION);
  auto stream = TlsStream::create(server_->get());
  ASSERT_TRUE(stream.ok());
  MemoryTlsClient c(client_ctx_.get(), nullptr);
  pump_handshake(c, *stream);
  ASSERT_TRUE(stream->handshake_done());
  char buf[64];
  int rounds = 0;
  for (; rounds < 200; ++rounds) {
    send_key_updates(c, *stream, TlsStream::kMaxPostHandshakeRun / 4);
    c.send(*stream, "x");
    auto n = stream->read(buf, sizeof(buf));
    if (!n) {
      EXPECT_EQ(n.error().code, Errc::Protocol);
      break;
    }
    ASSERT_EQ(*n, 1u) << "round " << rounds;
  }
  // The burst passes (a few rounds), the loop's rate does not.
  EXPECT_GE(rounds, 2);
  EXPECT_LT(rounds, 200);
  EXPECT_TRUE(stream->post_handshake_flood());
}

// The client side (towards an upstream) against a TLS 1.2 server that asks
// for renegotiation again and again (RFC 5246 §7.4.1.1 HelloRequest): each
// costs a no_renegotiation alert; past the bound the stream stops reading
// and answering (TLS 1.2 decrypts before it checks a record's type, so no
// unexpected_message can be had from OpenSSL; the connection's close ends
// it).
TEST_F(TlsStreamTest, HelloRequestFloodIsCutOff) {
  SslPtr server(SSL_new(server_->get()));
  ASSERT_TRUE(server);
  SSL_set_max_proto_version(server.get(), TLS1_2_VERSION);
  SSL_clear_options(server.get(), SSL_OP_NO_RENEGOTIATION);  // tlsfront's contexts refuse to ask
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(in, -1);
  SSL_set_bio(server.get(), in, out);
  SSL_set_accept_state(server.get());
  SslPtr ssl(SSL_new(client_ctx_.get()));
  SSL_set_tlsext_host_name(ssl.get(), "localhost");
  SSL_set1_host(ssl.get(), "localhost");
  auto stream = TlsStream::create_client(std::move(ssl));
  ASSERT_TRUE(stream.ok());
  auto carry = [&] {  // both ways, once
    std::string to_server;
    stream->take_output(to_server);
    if (!to_server.empty()) BIO_write(in, to_server.data(), static_cast<int>(to_server.size()));
    char* data = nullptr;
    const long n = BIO_get_mem_data(out, &data);
    stream->feed(std::string_view(data, n > 0 ? static_cast<size_t>(n) : 0));
    (void)BIO_reset(out);
  };
  for (int i = 0; i < 20 && !stream->handshake_done(); ++i) {
    ASSERT_TRUE(stream->handshake().ok());
    carry();
    SSL_do_handshake(server.get());
    carry();
  }
  ASSERT_TRUE(stream->handshake_done());
  ASSERT_TRUE(SSL_is_init_finished(server.get()));
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(SSL_renegotiate(server.get()), 1);
    SSL_do_handshake(server.get());  // writes the HelloRequest
  }
  carry();
  EXPECT_EQ(read_all(*stream), Errc::Protocol);
  EXPECT_TRUE(stream->post_handshake_flood());
  // Answered no more than the bound's worth (a 31-octet alert each).
  EXPECT_LT(stream->pending_output(), size_t{40} * (TlsStream::kMaxPostHandshakeRun + 1));
}

TEST_F(TlsStreamTest, GarbageIsAHandshakeError) {
  auto stream = TlsStream::create(server_->get());
  ASSERT_TRUE(stream.ok());
  stream->feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  auto r = stream->handshake();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Tls);
}

TEST_F(TlsStreamTest, Tls11ClientIsRefused) {
  SSL_CTX_set_security_level(client_ctx_.get(), 0);
  SSL_CTX_set_min_proto_version(client_ctx_.get(), TLS1_1_VERSION);
  SSL_CTX_set_max_proto_version(client_ctx_.get(), TLS1_1_VERSION);
  auto stream = TlsStream::create(server_->get());
  MemoryTlsClient c(client_ctx_.get(), nullptr);
  SSL_do_handshake(c.ssl.get());
  stream->feed(c.take_output());
  EXPECT_FALSE(stream->handshake().ok());
}

TEST(TlsContext, KeyMismatchIsAClearError) {
  config::Tls t = server_tls();
  t.certificates[0].key = kPki + "/mismatch.key";
  auto ctx = TlsContext::create(t);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("does not match"), std::string::npos) << ctx.error().message();
}

TEST(TlsContext, MissingCertificateNamesTheFile) {
  config::Tls t = server_tls();
  t.certificates[0].cert = kPki + "/nope.pem";
  t.certificates[0].cert_origin = "x.toml:3:1";
  auto ctx = TlsContext::create(t);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("x.toml:3:1"), std::string::npos);
  EXPECT_NE(ctx.error().message().find("nope.pem"), std::string::npos);
}

TEST(TlsContext, BadCipherListIsAConfigError) {
  config::Tls t = server_tls();
  t.ciphers = "NOT-A-CIPHER";
  auto ctx = TlsContext::create(t);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("tls.ciphers"), std::string::npos);
}

}  // namespace
}  // namespace tlsfront::tls
