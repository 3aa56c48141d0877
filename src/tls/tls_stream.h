// TlsStream: one server-side SSL* driven over memory BIOs, so the event loop
// owns all socket I/O. Ciphertext from the socket goes in with feed(); plaintext
// comes out of read(); plaintext given to write() becomes ciphertext collected
// by take_output() for the socket. Never blocks; never touches a socket.
// Thread affinity: the owning worker only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "util/openssl_ptr.h"
#include "util/result.h"

namespace tlsfront::tls {

class TlsStream {
 public:
  // Creates the SSL* from borrowed `ctx`, which must outlive this stream (the
  // connection holds its Generation). Errors: Errc::Tls.
  [[nodiscard]] static Result<TlsStream> create(SSL_CTX* ctx);

  TlsStream(TlsStream&&) noexcept = default;
  TlsStream& operator=(TlsStream&&) noexcept = default;
  // Freeing an SSL that never saw close_notify makes OpenSSL drop its session
  // from the cache; after a clean handshake and no TLS error the session
  // stays resumable (as nginx's ngx_ssl_shutdown does).
  ~TlsStream();

  // Queues ciphertext received from the peer (copied).
  void feed(std::string_view ciphertext);

  // Advances the handshake. Returns true once complete, false while it needs
  // more input or is paused (see handshake_paused()).
  // Errors: Errc::Tls (alert already queued in the output).
  [[nodiscard]] Result<bool> handshake();
  bool handshake_done() const { return handshake_done_; }
  // True when the last handshake() stopped because the client hello callback
  // asked to wait (SSL_ERROR_WANT_CLIENT_HELLO_CB: a session lookup is
  // pending, tls/session_lookup.h); call handshake() again once it ends.
  bool handshake_paused() const { return paused_; }

  // Reads up to `len` plaintext bytes into `buf`. Returns the count, or 0 when
  // more ciphertext is needed. Errors: Errc::Closed on close_notify,
  // Errc::Tls on a protocol error.
  [[nodiscard]] Result<size_t> read(char* buf, size_t len);

  // Encrypts `plaintext` into the output. Errors: Errc::Tls.
  [[nodiscard]] Status write(std::string_view plaintext);

  // Queues a close_notify alert (RFC 8446 §6.1); idempotent.
  void shutdown();

  // Moves pending ciphertext to the end of `out`; returns the bytes moved.
  size_t take_output(std::string& out);
  size_t pending_output() const;
  // Ciphertext fed but not yet decrypted (bytes).
  size_t pending_input() const;

  // An idle connection's memory: when both BIOs are empty, replaces them with
  // new ones, freeing the buffers they grew (a handshake flight, the largest
  // response so far). Returns whether it did. OpenSSL's own record buffers
  // are already released (SSL_MODE_RELEASE_BUFFERS).
  bool release_buffers();

  SSL* ssl() const { return ssl_.get(); }
  // Gives up the SSL* (the caller frees it) without the destructor's
  // shutdown mark; tests use it to show what a bare SSL_free does.
  SSL* release_ssl_for_test() { return ssl_.release(); }

 private:
  explicit TlsStream(SslPtr ssl, BIO* rbio, BIO* wbio) : ssl_(std::move(ssl)), rbio_(rbio), wbio_(wbio) {}

  SslPtr ssl_;
  BIO* rbio_;  // owned by ssl_
  BIO* wbio_;  // owned by ssl_
  bool handshake_done_ = false;
  bool shutdown_sent_ = false;
  bool failed_ = false;
  bool paused_ = false;  // a TLS error happened: let OpenSSL drop the session
};

}  // namespace tlsfront::tls
