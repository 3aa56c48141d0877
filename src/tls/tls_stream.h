// TlsStream: one SSL* (server side, or client side towards an upstream) driven over a BIO of our own (BIO_meth_new)
// whose read and write go straight to two buffers held here, so the event loop
// owns all socket I/O. Ciphertext from the socket goes in with feed(); plaintext
// comes out of read(); plaintext given to write() becomes ciphertext in
// output(), written to the socket from there. Never blocks; never touches a
// socket. Unlike memory BIOs (BIO_s_mem), the buffers keep their capacity
// across records and can be freed when idle without a new BIO.
// Thread affinity: the owning worker only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "tls/handshake_facts.h"
#include "util/openssl_ptr.h"
#include "util/result.h"
#include "util/state.h"
#include "util/token_bucket.h"

namespace tlsfront::tls {

class TlsStream {
 public:
  // Where the TLS connection is:
  //   Handshaking -> Paused        the client hello callback is waiting for a
  //                                session lookup or an early-data replay
  //                                check (SSL_ERROR_WANT_CLIENT_HELLO_CB)
  //   Paused      -> Handshaking   handshake() called again
  //   Handshaking -> Early         the client's early data (TLS 1.3 0-RTT,
  //                                RFC 8446 §2.3) was accepted: the server's
  //                                flight is out, read() returns the early
  //                                data, write() sends 0.5-RTT data (to a
  //                                client whose Finished has not arrived)
  //   Handshaking | Early -> Open | Failed
  //   Open        -> Closed        close_notify queued (shutdown())
  //   Open | Closed -> Failed      a TLS error on read or write
  // Failed: a fatal alert or error; no close_notify, and the session is not
  // kept resumable (OpenSSL drops a session whose SSL never shut down cleanly).
  // Early data is read only when the SSL_CTX allows it (max_early_data > 0);
  // OpenSSL bounds it by recv_max_early_data, so the early-data buffer held
  // here is at most that.
  enum class Phase { Handshaking, Paused, Early, Open, Closed, Failed };

  // Creates the SSL* from borrowed `ctx`, which must outlive this stream (the
  // connection holds its Generation). Errors: Errc::Tls.
  [[nodiscard]] static Result<TlsStream> create(SSL_CTX* ctx);
  // The client side of a connection to an upstream: `ssl` made by
  // UpstreamTlsContext::new_ssl (SNI, verification, session set), put in
  // connect state; the first handshake() writes the ClientHello. A client
  // never reads early data or pauses. Errors: Errc::Tls.
  [[nodiscard]] static Result<TlsStream> create_client(SslPtr ssl);

  TlsStream(TlsStream&&) noexcept = default;
  TlsStream& operator=(TlsStream&&) noexcept = default;
  // Freeing an SSL that never saw close_notify makes OpenSSL drop its session
  // from the cache; after a clean handshake and no TLS error the session
  // stays resumable (as nginx's ngx_ssl_shutdown does).
  ~TlsStream();

  // Queues ciphertext received from the peer (copied).
  void feed(std::string_view ciphertext);

  // Advances the handshake. Returns true once complete, false while it needs
  // more input, is paused (see handshake_paused()) or is in early data
  // (in_early_data(): the client's early data can be read meanwhile).
  // Errors: Errc::Tls (alert already queued in the output).
  [[nodiscard]] Result<bool> handshake();
  bool handshake_done() const { return phase_ == Phase::Open || phase_ == Phase::Closed; }
  // True when the last handshake() stopped because the client hello callback
  // asked to wait (a session lookup is pending, tls/session_lookup.h); call
  // handshake() again once it ends.
  bool handshake_paused() const { return phase_ == Phase::Paused; }
  // True between the acceptance of the client's early data and the end of
  // the handshake (Phase::Early).
  bool in_early_data() const { return phase_ == Phase::Early; }
  // True once the handshake failed because the client sent more early data
  // than recv_max_early_data (RFC 8446 §4.2.10: the connection is aborted).
  bool early_data_overflow() const { return early_overflow_; }
  Phase phase() const { return phase_; }
  // Why the handshake was refused, once handshake() failed (handshake_facts.h).
  HandshakeRefusal refusal() const { return refusal_; }

  // Reads up to `len` plaintext bytes into `buf` (in Early: early data
  // only). Returns the count, or 0 when more ciphertext is needed. Errors: Errc::Closed on close_notify,
  // Errc::Tls on a protocol error, Errc::Protocol when the peer passed the
  // post-handshake message bound (post_handshake_flood(), below).
  [[nodiscard]] Result<size_t> read(char* buf, size_t len);

  // The bound on post-handshake messages: handshake messages received after
  // the handshake (TLS 1.3 KeyUpdate, NewSessionTicket, RFC 8446 §4.6; TLS
  // 1.2 HelloRequest) and the warning alerts OpenSSL answers renegotiation
  // attempts with (RFC 5746 no_renegotiation). Each costs key derivations
  // or an answer and moves no application data, so a peer that loops on
  // them (SSL_key_update with update_requested) would hold a core.
  // read() fails once more than kMaxPostHandshakeRun of them arrive without
  // application data in between (BoringSSL closes after 32 KeyUpdates), or
  // once they come faster than the kPostHandshakeBurst /
  // kPostHandshakePerSecond token bucket allows: OpenSSL is given no more
  // of the peer's input, and in TLS 1.3 a fatal unexpected_message alert
  // (RFC 8446 §6.2) waits in output() (in TLS 1.2 a close_notify where
  // OpenSSL allows one). Legitimate peers send a few (session tickets after
  // a handshake; a KeyUpdate every few GiB).
  static constexpr uint32_t kMaxPostHandshakeRun = 32;
  static constexpr double kPostHandshakeBurst = 64;
  static constexpr double kPostHandshakePerSecond = 4;
  // True once read() failed for that reason.
  bool post_handshake_flood() const { return io_->flooded; }

  // Encrypts `plaintext` into the output (in Early: as 0.5-RTT data,
  // SSL_write_early_data). Errors: Errc::Tls.
  [[nodiscard]] Status write(std::string_view plaintext);

  // Queues a close_notify alert (RFC 8446 §6.1) once the stream is Open;
  // idempotent, and nothing after a failure.
  void shutdown();

  // The ciphertext waiting for the socket: write from it, then erase what the
  // socket took (the buffer keeps its capacity for the next records).
  std::string& output() { return io_->out; }
  // Moves pending ciphertext to the end of `out`; returns the bytes moved.
  size_t take_output(std::string& out);
  size_t pending_output() const { return io_->out.size(); }
  // Input not yet read (bytes): ciphertext fed but not decrypted, and early
  // data decrypted but not read.
  size_t pending_input() const {
    return io_->in.size() - io_->in_off + (early_ ? early_->data.size() - early_->off : 0);
  }

  // An idle connection's memory: when both buffers are empty, frees what they
  // grew to (a handshake flight, the largest response so far). Returns whether
  // it did. OpenSSL's own record buffers are already released
  // (SSL_MODE_RELEASE_BUFFERS).
  bool release_buffers();

  SSL* ssl() const { return ssl_.get(); }
  // Gives up the SSL* (the caller frees it) without the destructor's
  // shutdown mark; tests use it to show what a bare SSL_free does.
  SSL* release_ssl_for_test() { return ssl_.release(); }

 private:
  // What the BIO reads from and writes to; on the heap so that its address,
  // held by the BIO, survives moves of the stream.
  struct Io {
    std::string in;  // ciphertext fed, consumed from in_off
    size_t in_off = 0;
    std::string out;  // ciphertext produced, not yet taken
    // The post-handshake bound (on_message_cb): counting from the end of
    // the handshake; messages since the last application data read; the
    // rate; set once passed (bio_read then gives OpenSSL nothing more).
    bool post_handshake = false;
    bool flooded = false;
    bool refuse = false;
    uint32_t run = 0;
    TokenBucket rate{kPostHandshakeBurst, kPostHandshakePerSecond, TokenBucket::Clock::time_point{}};
  };
  static int bio_read(BIO* bio, char* data, size_t len, size_t* read);
  static int bio_write(BIO* bio, const char* data, size_t len, size_t* written);
  static long bio_ctrl(BIO* bio, int cmd, long num, void* ptr);
  static const BIO_METHOD* bio_method();
  // SSL_set_msg_callback: charges post-handshake messages to the bound.
  static void on_message_cb(int write_p, int version, int content_type, const void* buf, size_t len, SSL* ssl,
                            void* arg);
  // The handshake is over: post-handshake messages count from here.
  void start_counting();
  // Makes OpenSSL fail the connection with a fatal unexpected_message
  // alert (queued in output()) after a flood. Errors: always Errc::Protocol.
  Error flood_error();

  TlsStream(std::unique_ptr<Io> io, SslPtr ssl) : io_(std::move(io)), ssl_(std::move(ssl)) {}
  // Puts `ssl` on a BIO of ours.
  static Result<TlsStream> wrap(SslPtr ssl);
  // SSL_read_early_data until it needs input or says FINISH (early_done_);
  // moves Handshaking to Early once OpenSSL accepted the early data.
  Status read_early_data();
  // A handshake error: Failed, the refusal classified. Errors: always Errc::Tls.
  Error handshake_failed();

  std::unique_ptr<Io> io_;  // declared before ssl_: outlives the SSL and its BIO
  SslPtr ssl_;
  Phase phase_ = Phase::Handshaking;
  HandshakeRefusal refusal_ = HandshakeRefusal::None;
  bool early_done_ = false;
  bool early_overflow_ = false;  // SSL_read_early_data said FINISH (or is never called)
  // Early data decrypted, read from `off`; on the heap only while some
  // waits (0-RTT is rare; every connection holds the pointer).
  struct EarlyInput {
    std::string data;
    size_t off = 0;
  };
  std::unique_ptr<EarlyInput> early_;
};

// The transition table (util/state.h).
constexpr bool legal(TlsStream::Phase from, TlsStream::Phase to) {
  using P = TlsStream::Phase;
  switch (from) {
    case P::Handshaking:
      return to == P::Paused || to == P::Early || to == P::Open || to == P::Failed;
    case P::Paused:
      return to == P::Handshaking;
    case P::Early:
      return to == P::Open || to == P::Failed;
    case P::Open:
      return to == P::Closed || to == P::Failed;
    case P::Closed:
      return to == P::Failed;
    case P::Failed:
      return false;
  }
  return false;
}
constexpr const char* name(TlsStream::Phase p) {
  constexpr const char* names[] = {"Handshaking", "Paused", "Early", "Open", "Closed", "Failed"};
  return names[static_cast<int>(p)];
}

}  // namespace tlsfront::tls
