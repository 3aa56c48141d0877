// TlsStream against an OpenSSL client over memory BIOs: no sockets needed.
#include "tls/tls_stream.h"

#include <gtest/gtest.h>
#include <openssl/err.h>

#include "tls/tls_context.h"

namespace tlsfront::tls {
namespace {

const std::string kPki = TLSFRONT_TEST_PKI_DIR;

config::Tls server_config() {
  config::Tls t;
  t.certificates.push_back({.cert = kPki + "/localhost.chain.pem", .key = kPki + "/localhost.key"});
  t.trusted_ca = kPki + "/root.pem";  // the test root is not in the system store
  return t;
}

struct Client {
  SslPtr ssl;
  BIO* rbio;
  BIO* wbio;

  Client(SSL_CTX* ctx, SSL_SESSION* resume) : ssl(SSL_new(ctx)) {
    rbio = BIO_new(BIO_s_mem());
    wbio = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(rbio, -1);
    SSL_set_bio(ssl.get(), rbio, wbio);
    SSL_set_connect_state(ssl.get());
    SSL_set_tlsext_host_name(ssl.get(), "localhost");
    SSL_set1_host(ssl.get(), "localhost");
    if (resume) SSL_set_session(ssl.get(), resume);
  }
};

// Moves bytes both ways until both sides are done or nothing moves.
void pump(Client& c, TlsStream& s) {
  for (int i = 0; i < 20; ++i) {
    SSL_do_handshake(c.ssl.get());
    char* data = nullptr;
    long n = BIO_get_mem_data(c.wbio, &data);
    std::string to_server(data, n > 0 ? static_cast<size_t>(n) : 0);
    (void)BIO_reset(c.wbio);
    s.feed(to_server);
    auto r = s.handshake();
    ASSERT_TRUE(r.ok()) << r.error().message();
    std::string to_client;
    s.take_output(to_client);
    if (!to_client.empty()) BIO_write(c.rbio, to_client.data(), static_cast<int>(to_client.size()));
    if (*r && SSL_is_init_finished(c.ssl.get()) && to_server.empty() && to_client.empty()) return;
  }
}

class TlsStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ctx = TlsContext::create(server_config());
    ASSERT_TRUE(ctx.ok()) << ctx.error().message();
    server_ = std::move(ctx).value();
    client_ctx_.reset(SSL_CTX_new(TLS_client_method()));
    ASSERT_EQ(SSL_CTX_load_verify_locations(client_ctx_.get(), (kPki + "/root.pem").c_str(), nullptr), 1);
    SSL_CTX_set_verify(client_ctx_.get(), SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_session_cache_mode(client_ctx_.get(), SSL_SESS_CACHE_CLIENT);
  }

  // One connection: handshake, one request byte string each way; returns the
  // client's session for resumption and whether the server resumed.
  SslSessionPtr connect(SSL_SESSION* resume, bool* reused) {
    auto stream = TlsStream::create(server_->get());
    EXPECT_TRUE(stream.ok());
    Client c(client_ctx_.get(), resume);
    pump(c, *stream);
    EXPECT_TRUE(stream->handshake_done());
    EXPECT_TRUE(SSL_is_init_finished(c.ssl.get()));
    *reused = SSL_session_reused(stream->ssl()) == 1;

    // Client -> server application data.
    EXPECT_EQ(SSL_write(c.ssl.get(), "ping", 4), 4);
    char* data = nullptr;
    long n = BIO_get_mem_data(c.wbio, &data);
    stream->feed(std::string_view(data, static_cast<size_t>(n)));
    (void)BIO_reset(c.wbio);
    char buf[64];
    auto got = stream->read(buf, sizeof(buf));
    EXPECT_TRUE(got.ok());
    EXPECT_EQ(std::string(buf, *got), "ping");

    // Server -> client, which also delivers TLS 1.3 NewSessionTickets.
    EXPECT_TRUE(stream->write("pong").ok());
    std::string out;
    stream->take_output(out);
    BIO_write(c.rbio, out.data(), static_cast<int>(out.size()));
    int m = SSL_read(c.ssl.get(), buf, sizeof(buf));
    EXPECT_EQ(std::string(buf, m > 0 ? m : 0), "pong");

    // close_notify from the client reads as Errc::Closed.
    SSL_shutdown(c.ssl.get());
    n = BIO_get_mem_data(c.wbio, &data);
    stream->feed(std::string_view(data, static_cast<size_t>(n)));
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
  Client c(client_ctx_.get(), nullptr);
  pump(c, *stream);
  ASSERT_TRUE(stream->handshake_done());
  auto client_to_server = [&](const std::string& text) {
    EXPECT_EQ(SSL_write(c.ssl.get(), text.data(), static_cast<int>(text.size())), static_cast<int>(text.size()));
    char* data = nullptr;
    long n = BIO_get_mem_data(c.wbio, &data);
    stream->feed(std::string_view(data, static_cast<size_t>(n)));
    (void)BIO_reset(c.wbio);
  };
  client_to_server("one");
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
  BIO_write(c.rbio, out.data(), static_cast<int>(out.size()));
  int m = SSL_read(c.ssl.get(), buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, m > 0 ? m : 0), "reply");
  // Both directions still work after the release.
  client_to_server("two");
  got = stream->read(buf, sizeof(buf));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(buf, *got), "two");
  EXPECT_TRUE(stream->write("again").ok());
  out.clear();
  stream->take_output(out);
  BIO_write(c.rbio, out.data(), static_cast<int>(out.size()));
  m = SSL_read(c.ssl.get(), buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, m > 0 ? m : 0), "again");
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
  Client c(client_ctx_.get(), nullptr);
  SSL_do_handshake(c.ssl.get());
  char* data = nullptr;
  long n = BIO_get_mem_data(c.wbio, &data);
  stream->feed(std::string_view(data, static_cast<size_t>(n)));
  EXPECT_FALSE(stream->handshake().ok());
}

TEST(TlsContext, KeyMismatchIsAClearError) {
  config::Tls t = server_config();
  t.certificates[0].key = kPki + "/mismatch.key";
  auto ctx = TlsContext::create(t);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("does not match"), std::string::npos) << ctx.error().message();
}

TEST(TlsContext, MissingCertificateNamesTheFile) {
  config::Tls t = server_config();
  t.certificates[0].cert = kPki + "/nope.pem";
  t.certificates[0].cert_origin = "x.toml:3:1";
  auto ctx = TlsContext::create(t);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("x.toml:3:1"), std::string::npos);
  EXPECT_NE(ctx.error().message().find("nope.pem"), std::string::npos);
}

TEST(TlsContext, BadCipherListIsAConfigError) {
  config::Tls t = server_config();
  t.ciphers = "NOT-A-CIPHER";
  auto ctx = TlsContext::create(t);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("tls.ciphers"), std::string::npos);
}

}  // namespace
}  // namespace tlsfront::tls
