#include "tls/tls_stream.h"

#include <openssl/err.h>

#include "tls/openssl_error.h"

namespace tlsfront::tls {

namespace {

// A memory BIO pair; false (nothing allocated) on failure.
bool new_bios(BIO*& rbio, BIO*& wbio) {
  rbio = BIO_new(BIO_s_mem());
  wbio = BIO_new(BIO_s_mem());
  if (!rbio || !wbio) {
    BIO_free(rbio);
    BIO_free(wbio);
    return false;
  }
  // An empty input BIO means "retry later", not end of file.
  BIO_set_mem_eof_return(rbio, -1);
  return true;
}

}  // namespace

Result<TlsStream> TlsStream::create(SSL_CTX* ctx) {
  ERR_clear_error();
  SslPtr ssl(SSL_new(ctx));
  if (!ssl) return openssl_error(Errc::Tls, "SSL_new");
  BIO* rbio = nullptr;
  BIO* wbio = nullptr;
  if (!new_bios(rbio, wbio)) return openssl_error(Errc::Tls, "BIO_new");
  SSL_set_bio(ssl.get(), rbio, wbio);
  SSL_set_accept_state(ssl.get());
  return TlsStream(std::move(ssl), rbio, wbio);
}

TlsStream::~TlsStream() {
  if (ssl_ && handshake_done_ && !failed_) SSL_set_shutdown(ssl_.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
}

void TlsStream::feed(std::string_view ciphertext) {
  if (!ciphertext.empty()) BIO_write(rbio_, ciphertext.data(), static_cast<int>(ciphertext.size()));
}

Result<bool> TlsStream::handshake() {
  if (handshake_done_) return true;
  ERR_clear_error();
  paused_ = false;
  int rc = SSL_do_handshake(ssl_.get());
  if (rc == 1) {
    handshake_done_ = true;
    return true;
  }
  int err = SSL_get_error(ssl_.get(), rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return false;
  if (err == SSL_ERROR_WANT_CLIENT_HELLO_CB) {
    paused_ = true;
    return false;
  }
  failed_ = true;
  return openssl_error(Errc::Tls, "TLS handshake failed");
}

Result<size_t> TlsStream::read(char* buf, size_t len) {
  ERR_clear_error();
  size_t n = 0;
  int rc = SSL_read_ex(ssl_.get(), buf, len, &n);
  if (rc == 1) return n;
  int err = SSL_get_error(ssl_.get(), rc);
  switch (err) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return size_t{0};
    case SSL_ERROR_ZERO_RETURN:
      return make_error(Errc::Closed, "close_notify received");
    default:
      failed_ = true;
      return openssl_error(Errc::Tls, "TLS read failed");
  }
}

Status TlsStream::write(std::string_view plaintext) {
  while (!plaintext.empty()) {
    ERR_clear_error();
    size_t n = 0;
    if (SSL_write_ex(ssl_.get(), plaintext.data(), plaintext.size(), &n) != 1) {
      failed_ = true;
      return openssl_error(Errc::Tls, "TLS write failed");
    }
    plaintext.remove_prefix(n);
  }
  return {};
}

void TlsStream::shutdown() {
  if (shutdown_sent_ || !handshake_done_) return;
  shutdown_sent_ = true;
  ERR_clear_error();
  SSL_shutdown(ssl_.get());
  ERR_clear_error();
}

size_t TlsStream::take_output(std::string& out) {
  char* data = nullptr;
  long n = BIO_get_mem_data(wbio_, &data);
  if (n <= 0) return 0;
  out.append(data, static_cast<size_t>(n));
  (void)BIO_reset(wbio_);
  return static_cast<size_t>(n);
}

size_t TlsStream::pending_output() const { return BIO_ctrl_pending(wbio_); }

bool TlsStream::release_buffers() {
  if (BIO_ctrl_pending(rbio_) != 0 || BIO_ctrl_pending(wbio_) != 0) return false;
  BIO* rbio = nullptr;
  BIO* wbio = nullptr;
  if (!new_bios(rbio, wbio)) {
    ERR_clear_error();
    return false;
  }
  // SSL_set_bio frees the BIOs it replaces.
  SSL_set_bio(ssl_.get(), rbio, wbio);
  rbio_ = rbio;
  wbio_ = wbio;
  return true;
}

size_t TlsStream::pending_input() const { return BIO_ctrl_pending(rbio_); }

}  // namespace tlsfront::tls
