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
