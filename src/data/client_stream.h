// ClientStream: the byte layer of one client connection, between the socket
// and the HTTP session: TLS (a tls::TlsStream) on a TLS listener, cleartext
// on a `tls = false` one, where the bytes pass through unchanged. The same
// calls either way — bytes from the socket go in with feed(), the session's
// input comes out of read(), its output goes in with write() and leaves for
// the socket from output() — so data::Connection has one path for both.
// Each call is one inline test of which kind it is: no virtual call, no
// allocation beyond the buffers (TLS: as before; cleartext: an input buffer,
// and the output buffer swapped with the caller's, not copied).
// Thread affinity: the owning worker only.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "tls/tls_stream.h"
#include "util/result.h"

namespace tlsfront::data {

class ClientStream {
 public:
  // Over TLS from borrowed `ctx` (tls::TlsStream::create). Errors: Errc::Tls.
  [[nodiscard]] static Result<ClientStream> tls(SSL_CTX* ctx);
  static ClientStream cleartext() { return ClientStream(std::make_unique<Cleartext>()); }

  bool is_tls() const { return std::holds_alternative<tls::TlsStream>(impl_); }
  // The TLS stream (handshake, SSL facts); is_tls() only.
  tls::TlsStream& tls_stream() { return std::get<tls::TlsStream>(impl_); }
  const tls::TlsStream& tls_stream() const { return std::get<tls::TlsStream>(impl_); }

  // Bytes received from the socket (copied).
  void feed(std::string_view bytes) {
    if (auto* t = std::get_if<tls::TlsStream>(&impl_)) return t->feed(bytes);
    cleartext_state().feed(bytes);
  }
  // Up to `len` bytes of the session's input into `buf`; 0 when more must
  // be fed. Errors (TLS only): Errc::Closed on close_notify, Errc::Tls.
  [[nodiscard]] Result<size_t> read(char* buf, size_t len) {
    if (auto* t = std::get_if<tls::TlsStream>(&impl_)) return t->read(buf, len);
    return cleartext_state().read(buf, len);
  }
  // Takes the session's output in `data` (left empty) into output():
  // encrypted, or moved as it is. Errors (TLS only): Errc::Tls.
  [[nodiscard]] Status write(std::string& data);
  // What waits for the socket: write from it, then erase what the socket took.
  std::string& output() {
    if (auto* t = std::get_if<tls::TlsStream>(&impl_)) return t->output();
    return cleartext_state().out;
  }
  size_t pending_output() const {
    if (const auto* t = std::get_if<tls::TlsStream>(&impl_)) return t->pending_output();
    return cleartext_state().out.size();
  }
  // Bytes fed and not yet read (bytes).
  size_t pending_input() const {
    if (const auto* t = std::get_if<tls::TlsStream>(&impl_)) return t->pending_input();
    const Cleartext& c = cleartext_state();
    return c.in.size() - c.in_off;
  }
  // TLS: queues close_notify (tls::TlsStream::shutdown). Cleartext: nothing.
  void shutdown() {
    if (auto* t = std::get_if<tls::TlsStream>(&impl_)) t->shutdown();
  }
  // Frees the grown buffers when both are empty; true if it did.
  bool release_buffers();

 private:
  struct Cleartext {
    std::string in;  // fed, consumed from in_off
    size_t in_off = 0;
    std::string out;
    void feed(std::string_view bytes);
    size_t read(char* buf, size_t len);
  };
  explicit ClientStream(tls::TlsStream t) : impl_(std::move(t)) {}
  explicit ClientStream(std::unique_ptr<Cleartext> c) : impl_(std::move(c)) {}
  Cleartext& cleartext_state() { return *std::get<std::unique_ptr<Cleartext>>(impl_); }
  const Cleartext& cleartext_state() const { return *std::get<std::unique_ptr<Cleartext>>(impl_); }

  // A cleartext connection's buffers are on the heap, so the variant is the
  // TLS stream's size: every TLS connection holds one.
  std::variant<tls::TlsStream, std::unique_ptr<Cleartext>> impl_;
};

}  // namespace tlsfront::data
