// The test PKI (scripts/gen-test-pki.sh, built into TLSFRONT_TEST_PKI_DIR) as
// the TLS unit tests use it: its files, a server configuration for one of
// its certificates and a client context that trusts its root.
#pragma once

#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <string>

#include "config/config.h"
#include "util/openssl_ptr.h"

namespace tlsfront::tls::testing {

inline const std::string kPki = TLSFRONT_TEST_PKI_DIR;

// A PEM certificate or private key of the test PKI by file name; null when unreadable.
inline X509Ptr load_cert(const std::string& name) {
  BioPtr bio(BIO_new_file((kPki + "/" + name).c_str(), "r"));
  return X509Ptr(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

inline EvpPkeyPtr load_key(const std::string& name) {
  BioPtr bio(BIO_new_file((kPki + "/" + name).c_str(), "r"));
  return EvpPkeyPtr(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

// [tls] for the test PKI's `name` ("localhost": ECDSA, "rsa": RSA, both
// valid for localhost): its chain and key, and the test root as trusted_ca
// (it is not in the system store).
inline config::Tls server_tls(const std::string& name = "localhost") {
  config::Tls t;
  t.certificates.push_back({.cert = kPki + "/" + name + ".chain.pem", .key = kPki + "/" + name + ".key"});
  t.trusted_ca = kPki + "/root.pem";
  return t;
}

// A client context that verifies the server against the test root and keeps
// its sessions for resumption. Null when OpenSSL fails.
inline SslCtxPtr verifying_client_ctx() {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx || SSL_CTX_load_verify_locations(ctx.get(), (kPki + "/root.pem").c_str(), nullptr) != 1) return nullptr;
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_CLIENT);
  return ctx;
}

}  // namespace tlsfront::tls::testing
