// One client/server TLS connection over an in-memory BIO pair, for unit
// tests: handshake, one byte each way (so TLS 1.3 NewSessionTickets reach the
// client), clean close from both sides. Bounded: at most 50 rounds.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <string>

#include "util/openssl_ptr.h"

namespace tlsfront::tls::testing {

struct PairOutcome {
  bool handshake_ok = false;
  bool reused = false;          // as the server saw it (the client must agree)
  std::string server_cert_cn;   // CN of the certificate the client received
  std::string server_key_type;  // "EC" / "RSA" (EVP_PKEY_get0_type_name of its key)
  SslSessionPtr session;        // the client's session after the exchange
  SslPtr server;                // kept for inspection (shut down)
  std::string errors;           // a failed handshake: both sides' OpenSSL error queue
};

// `sni` "" sends no server_name; otherwise it is also the name the client
// checks the certificate against if `client_ctx` verifies. `resume` may be null.
inline PairOutcome connect_pair(SSL_CTX* client_ctx, SSL_CTX* server_ctx, const std::string& sni,
                                SSL_SESSION* resume = nullptr) {
  PairOutcome out;
  SslPtr client(SSL_new(client_ctx));
  out.server.reset(SSL_new(server_ctx));
  SSL* srv = out.server.get();
  BIO* cb = nullptr;
  BIO* sb = nullptr;
  if (!client || !srv || BIO_new_bio_pair(&cb, 0, &sb, 0) != 1) return out;
  SSL_set_bio(client.get(), cb, cb);
  SSL_set_bio(srv, sb, sb);
  SSL_set_connect_state(client.get());
  SSL_set_accept_state(srv);
  if (!sni.empty()) {
    SSL_set_tlsext_host_name(client.get(), sni.c_str());
    SSL_set1_host(client.get(), sni.c_str());  // checked when `client_ctx` verifies the peer
  }
  if (resume) SSL_set_session(client.get(), resume);

  auto blocked = [](SSL* s, int rc) {
    const int e = SSL_get_error(s, rc);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
  };
  // Each side runs until done or failed, so the other still reads its alert.
  bool client_done = false, server_done = false, client_failed = false, server_failed = false;
  for (int i = 0; i < 50 && !((client_done || client_failed) && (server_done || server_failed)); ++i) {
    if (!client_done && !client_failed) {
      const int rc = SSL_do_handshake(client.get());
      client_done = rc == 1;
      client_failed = rc != 1 && !blocked(client.get(), rc);
    }
    if (!server_done && !server_failed) {
      const int rc = SSL_do_handshake(srv);
      server_done = rc == 1;
      server_failed = rc != 1 && !blocked(srv, rc);
    }
  }
  if (!(client_done && server_done)) {
    char line[256];
    while (unsigned long e = ERR_get_error()) out.errors += std::string(ERR_error_string(e, line)) + "\n";
    return out;
  }
  ERR_clear_error();
  out.handshake_ok = true;
  char buf[8];
  if (SSL_write(srv, "s", 1) != 1 || SSL_read(client.get(), buf, sizeof(buf)) != 1 ||
      SSL_write(client.get(), "c", 1) != 1 || SSL_read(srv, buf, sizeof(buf)) != 1) {
    out.handshake_ok = false;
    return out;
  }
  out.reused = SSL_session_reused(srv) == 1;
  if ((SSL_session_reused(client.get()) == 1) != out.reused) out.handshake_ok = false;
  if (X509* peer = SSL_get0_peer_certificate(client.get())) {
    char cn[256] = {0};
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn));
    out.server_cert_cn = cn;
    if (const char* type = EVP_PKEY_get0_type_name(X509_get0_pubkey(peer))) out.server_key_type = type;
  }
  out.session.reset(SSL_get1_session(client.get()));
  // A connection freed without close_notify marks its session not resumable.
  SSL_shutdown(client.get());
  SSL_shutdown(srv);
  ERR_clear_error();
  return out;
}

}  // namespace tlsfront::tls::testing
