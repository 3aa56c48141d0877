// UpstreamTlsContext's session slot against a real TLS server over an
// in-memory BIO pair: a session is resumed only by the context it came from.
// A reload that keeps an [[upstream]] gives its pools a new context (the
// trust file read again, maybe changed); a connection of the old one that
// finishes after that must not leave its session for the new one to resume
// (resumption skips the certificate check the new context would make).
// And a client key that does not match its certificate is named as such.
#include "tls/upstream_tls_context.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include "support/test_pki.h"

namespace tlsfront::tls {
namespace {

using testing::kPki;

config::Upstream upstream() {
  config::Upstream u;
  u.name = "backend";
  u.tls.enabled = true;
  u.tls.trusted_ca = kPki + "/root.pem";
  u.servers = {config::Endpoint{"localhost", 443}};
  return u;
}

SslCtxPtr server_ctx() {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx || SSL_CTX_use_certificate_chain_file(ctx.get(), (kPki + "/localhost.chain.pem").c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx.get(), (kPki + "/localhost.key").c_str(), SSL_FILETYPE_PEM) != 1) {
    return nullptr;
  }
  return ctx;
}

// The client side of one connection, its handshake run to the end against
// `server` (one byte each way after it, so that TLS 1.3 NewSessionTickets
// reach the client and its session callback), then closed cleanly.
struct Connection {
  SslPtr client;
  SslPtr server;

  bool start(SslPtr ssl, SSL_CTX* server_ctx) {
    client = std::move(ssl);
    server.reset(SSL_new(server_ctx));
    BIO* cb = nullptr;
    BIO* sb = nullptr;
    if (!client || !server || BIO_new_bio_pair(&cb, 0, &sb, 0) != 1) return false;
    SSL_set_bio(client.get(), cb, cb);
    SSL_set_bio(server.get(), sb, sb);
    SSL_set_connect_state(client.get());
    SSL_set_accept_state(server.get());
    return true;
  }
  // True when both sides completed (and exchanged the bytes).
  bool finish() {
    bool client_done = false, server_done = false;
    for (int i = 0; i < 50 && !(client_done && server_done); ++i) {
      if (!client_done) client_done = SSL_do_handshake(client.get()) == 1;
      if (!server_done) server_done = SSL_do_handshake(server.get()) == 1;
    }
    char buf[8];
    if (!client_done || !server_done || SSL_write(server.get(), "s", 1) != 1 ||
        SSL_read(client.get(), buf, sizeof buf) != 1 || SSL_write(client.get(), "c", 1) != 1 ||
        SSL_read(server.get(), buf, sizeof buf) != 1) {
      return false;
    }
    SSL_shutdown(client.get());
    SSL_shutdown(server.get());
    return true;
  }
  bool reused() const { return SSL_session_reused(client.get()) == 1; }
};

TEST(UpstreamTlsContextTest, SessionResumedOnlyByTheContextItCameFrom) {
  SslCtxPtr server = server_ctx();
  ASSERT_TRUE(server);
  const config::Upstream u = upstream();
  auto before = UpstreamTlsContext::create(u);
  ASSERT_TRUE(before.ok()) << before.error().message();
  const config::Endpoint& target = u.servers[0];
  SessionSlot slot;

  // The old context: a full handshake, then one resumed from the slot.
  for (bool resumed : {false, true}) {
    auto ssl = (*before)->new_ssl(target, &slot);
    ASSERT_TRUE(ssl.ok());
    Connection c;
    ASSERT_TRUE(c.start(std::move(ssl).value(), server.get()));
    ASSERT_TRUE(c.finish());
    EXPECT_EQ(c.reused(), resumed);
    EXPECT_TRUE(slot.session);
  }

  // Two connections of the old context are still in their handshakes when
  // a reload hands the pool a new one (UpstreamPool::set_tls empties the
  // slot); the first finishes now, the second after the new context's
  // first connection.
  Connection old_conns[2];
  for (Connection& c : old_conns) {
    auto ssl = (*before)->new_ssl(target, &slot);
    ASSERT_TRUE(ssl.ok());
    ASSERT_TRUE(c.start(std::move(ssl).value(), server.get()));
  }
  auto after = UpstreamTlsContext::create(u);
  ASSERT_TRUE(after.ok()) << after.error().message();
  slot.session.reset();
  ASSERT_TRUE(old_conns[0].finish());  // its session arrives

  // The new context's first connection makes a full handshake (with its
  // own verification); the old one's late session leaves the slot as it is;
  // the next connection resumes the new context's session.
  for (bool resumed : {false, true}) {
    auto ssl = (*after)->new_ssl(target, &slot);
    ASSERT_TRUE(ssl.ok());
    EXPECT_EQ(SSL_get_session(ssl->get()) != nullptr, resumed) << "a session offered";
    Connection c;
    ASSERT_TRUE(c.start(std::move(ssl).value(), server.get()));
    ASSERT_TRUE(c.finish());
    EXPECT_EQ(c.reused(), resumed);
    ASSERT_TRUE(slot.session);
    if (!resumed) {
      SSL_SESSION* kept = slot.session.get();
      ASSERT_TRUE(old_conns[1].finish());
      EXPECT_EQ(slot.session.get(), kept) << "the old context's session replaced the new one's";
    }
  }
}

TEST(UpstreamTlsContextTest, KeyThatDoesNotMatchTheCertificateIsNamed) {
  config::Upstream u = upstream();
  u.tls.certificate = kPki + "/client.pem";
  u.tls.key = kPki + "/localhost.key";  // a valid key, another certificate's
  auto ctx = UpstreamTlsContext::create(u);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("upstream[backend].tls.key"), std::string::npos) << ctx.error().message();
  EXPECT_NE(ctx.error().message().find("does not match the certificate " + u.tls.certificate), std::string::npos)
      << ctx.error().message();
  u.tls.key = kPki + "/client.key";
  EXPECT_TRUE(UpstreamTlsContext::create(u).ok());
}

}  // namespace
}  // namespace tlsfront::tls
