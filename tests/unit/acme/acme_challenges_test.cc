// tls::AcmeChallenges (the table a node answers ACME challenges from) and
// offers_only_acme_tls (RFC 8737 §3: the validation ClientHello offers ALPN
// acme-tls/1 alone), with real OpenSSL handshakes in memory.
#include "tls/acme_challenges.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include "control/acme/acme_client.h"

namespace tlsfront::tls {
namespace {

AcmeChallenges::AlpnAnswer answer(const std::string& name, const std::string& key_authorization) {
  auto made = acme::tls_alpn01_certificate(name, key_authorization);
  EXPECT_TRUE(made);
  return {key_authorization, made->first, made->second};
}

TEST(AcmeChallenges, LooksUpWhatWasPublished) {
  AcmeChallenges board;
  EXPECT_FALSE(board.active_alpn());
  ASSERT_TRUE(board.replace({{"tok1", "tok1.thumb"}}, {{"a.example", answer("a.example", "t.a")}}));
  EXPECT_EQ(board.http01("tok1"), "tok1.thumb");
  EXPECT_FALSE(board.http01("tok2"));
  EXPECT_TRUE(board.active_alpn());
  auto ctx = board.alpn01("a.example");
  ASSERT_TRUE(ctx);
  EXPECT_FALSE(board.alpn01("b.example"));
  EXPECT_EQ(board.alpn_key_authorization("a.example"), "t.a");
  // The same key authorization again (no PEMs: the caller saw it is there): the context is kept.
  ASSERT_TRUE(board.replace({}, {{"a.example", {"t.a", "", ""}}}));
  EXPECT_EQ(board.alpn01("a.example"), ctx);
  EXPECT_FALSE(board.http01("tok1"));  // withdrawn
  ASSERT_TRUE(board.replace({}, {}));
  EXPECT_FALSE(board.active_alpn());
  // A certificate that does not load is refused; the rest is taken.
  EXPECT_FALSE(board.replace({{"tok3", "x"}}, {{"bad.example", {"t.b", "not a pem", "not a pem"}}}));
  EXPECT_EQ(board.http01("tok3"), "x");
  EXPECT_FALSE(board.active_alpn());
}

// Whether the server saw a ClientHello offering only acme-tls/1, for a
// client offering `protos` (wire format).
bool only_acme_seen(const std::string& protos) {
  static bool seen;
  seen = false;
  SSL_CTX* sctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_set_client_hello_cb(
      sctx,
      [](SSL* ssl, int*, void*) {
        seen = offers_only_acme_tls(ssl);
        return 0;  // stop here: the ClientHello is all this test needs
      },
      nullptr);
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  SSL* server = SSL_new(sctx);
  SSL* client = SSL_new(cctx);
  if (!protos.empty()) {
    SSL_set_alpn_protos(client, reinterpret_cast<const unsigned char*>(protos.data()),
                        static_cast<unsigned>(protos.size()));
  }
  BIO *c_end = nullptr, *s_end = nullptr;
  BIO_new_bio_pair(&c_end, 0, &s_end, 0);
  SSL_set_bio(client, c_end, c_end);
  SSL_set_bio(server, s_end, s_end);
  SSL_set_connect_state(client);
  SSL_set_accept_state(server);
  SSL_do_handshake(client);
  SSL_do_handshake(server);
  SSL_free(client);
  SSL_free(server);
  SSL_CTX_free(cctx);
  SSL_CTX_free(sctx);
  return seen;
}

TEST(AcmeChallenges, OnlyAcmeTlsAloneIsTheCa) {
  EXPECT_TRUE(only_acme_seen(std::string("\x0a" "acme-tls/1", 11)));
  EXPECT_FALSE(only_acme_seen(std::string("\x0a" "acme-tls/1" "\x02" "h2", 14)));
  EXPECT_FALSE(only_acme_seen(std::string("\x02" "h2" "\x08" "http/1.1", 12)));
  EXPECT_FALSE(only_acme_seen(""));
}

}  // namespace
}  // namespace tlsfront::tls
