// UpstreamSocket: the transport under every upstream connection — an
// HTTP/1.1 UpstreamConnection, an HTTP/2 H2Session, the UpstreamTunnel a
// 101 leaves: a non-blocking TCP connect to a resolved address, TLS when
// the pool's TlsTarget has a context (UpstreamTls: verification, ALPN, the
// server's session slot), the read loop that turns ciphertext into
// plaintext for its owner, the bound on what the server's post-handshake
// messages make us answer, and the end: close_notify (or the fatal alert a
// failure queued, RFC 8446 §6.2) before the socket closes.
// The owner keeps the protocol, its timers (connect_timeout covers the TLS
// handshake too, as nginx's proxy_connect_timeout) and its own states.
//
// Phases:
//   Created     -> Connecting (connect) | Closed
//   Connecting  -> Handshaking (connected, TLS to do) | Open (connected,
//                  cleartext) | Closed (connect failed, or close())
//   Handshaking -> Open (handshake done) | Closed
//   Open        -> Closed (close(): by the owner, after any end or error)
//   Closed: final; close() is idempotent. The socket reports an end or an
//   error once; the owner closes it (often from inside that call).
//
// Handover: set_owner() gives the socket to another owner (a 101's
// UpstreamTunnel) from inside an owner call: the read loop stops there, and
// TLS input already read stays pending until the new owner calls
// read_pending(). The object never moves (owners hold it by unique_ptr).
// Thread affinity: owning worker only.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <uv.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "data/upstream/upstream_failure.h"
#include "data/upstream/upstream_tls.h"
#include "util/result.h"
#include "util/state.h"
#include "util/stream_writer.h"
#include "util/uv_handle.h"

namespace tlsfront::upstream {

class UpstreamSocket {
 public:
  enum class Phase { Created, Connecting, Handshaking, Open, Closed };

  // What the socket tells its owner, from its libuv callbacks. An owner may
  // close the socket (never free it) inside any of them.
  class Owner {
   public:
    virtual ~Owner() = default;
    // Connected; the TLS handshake started (its ClientHello is written).
    virtual void on_socket_handshaking() {}
    // Connected and, over TLS, the handshake done: the protocol may speak.
    virtual void on_socket_open() = 0;
    // Plaintext from the server; valid during the call only.
    virtual void on_socket_data(const char* data, size_t len) = 0;
    // The server's end: `status` UV_EOF (`close_notify`: over TLS, the
    // server's close_notify came first, RFC 8446 §6.1) or a read error.
    virtual void on_socket_end(int status, bool close_notify) = 0;
    // The connect failed (Refused, TimeoutConnect, ConnectFailed), the TLS
    // handshake failed (TlsHandshake), a TLS error (Reset), or the server
    // passed a TLS bound (InvalidResponse: its post-handshake messages, or
    // answers it leaves unread under FloodAnswer::Fail).
    virtual void on_socket_error(UpstreamFailure failure, Error error) = 0;
    // A write failed (Errc::Upstream, "write: ..." / "send() failed: ...").
    // Default: on_socket_error(Reset).
    virtual void on_socket_write_failed(Error error) { on_socket_error(UpstreamFailure::Reset, std::move(error)); }
    // A queued write completed (writer() may have drained).
    virtual void on_socket_written() {}
  };

  // What to do when the server leaves unread more than kWriteHighWatermark
  // of what its post-handshake TLS messages made us answer:
  //   HoldReads  stop reading it until the writer drains under
  //              kWriteLowWatermark (an owner whose timer ends a connection
  //              that never drains)
  //   Fail       on_socket_error(InvalidResponse, UpstreamTls::flood_error())
  enum class FloodAnswer { HoldReads, Fail };

  // `owner` borrowed; `tls` the pool's (borrowed; null or without a
  // context: cleartext).
  UpstreamSocket(uv_loop_t* loop, Owner* owner, TlsTarget* tls, FloodAnswer flood);
  ~UpstreamSocket();
  UpstreamSocket(const UpstreamSocket&) = delete;
  UpstreamSocket& operator=(const UpstreamSocket&) = delete;

  // Starts a non-blocking connect to `addr` (TCP_NODELAY); reading starts
  // once connected (unless paused). Errc::Upstream on immediate failure
  // (the socket is then Closed).
  [[nodiscard]] Status connect(const sockaddr_storage& addr);

  // Writes `bytes` (left empty, capacity kept): encrypted over TLS, which
  // requires the handshake done. Returns 0 or a UV_E* code.
  int send(std::string& bytes) { return send_bytes(writer_, tls_.get(), bytes); }
  StreamWriter& writer() { return writer_; }
  const StreamWriter& writer() const { return writer_; }
  // Null for cleartext, or before the handshake started.
  UpstreamTls* tls() const { return tls_.get(); }
  bool wants_tls() const { return target_ != nullptr; }
  // No TLS (yet), or TLS made with the target's current context (not one
  // a reload replaced since).
  bool tls_current() const { return !tls_ || tls_->made_by(target_->ctx.get()); }
  Phase phase() const { return phase_; }

  // Backpressure: stop / restart reading. resume_reading() returns true
  // when reading started now (it was not, and nothing holds it).
  void pause_reading();
  bool resume_reading();
  bool reading() const { return reading_; }
  // Reads now what the kernel already holds (bounded: 64 reads of 16 KiB),
  // as a read callback would; for an owner whose write just failed, so
  // that what the server said before it reset (a GOAWAY) is heard.
  void read_now();
  // An Open connection the server has not closed (recv MSG_PEEK: no byte,
  // no EOF waiting), as nginx checks a keepalive connection before reuse.
  bool still_open() const;

  // Handover (see above): events go to `owner` from now on.
  void set_owner(Owner* owner) { owner_ = owner; }
  // TLS input read from the socket but not yet decrypted (left by a handover).
  bool pending_input() const { return tls_ && tls_->pending_input() > 0; }
  // Decrypts and passes on that input, as a read would.
  void read_pending();

  // shutdown(SHUT_WR) once the writes queued so far are done (a TCP FIN;
  // over TLS the owner writes its close_notify first). A failure shows in
  // the reads (the server's FIN or an error).
  void shutdown_write();
  // Nothing more is written (the writer lets go of its queue); for an
  // owner whose write failed, before read_now().
  void stop_writing() {
    writer_.detach();
    writable_ = false;
  }

  // Closes; idempotent. `notify`: over TLS, a close_notify (or the fatal
  // alert a failure queued) written first if nothing waits before it and
  // the socket takes it (UpstreamTls::close_notify_now).
  void close(bool notify = true);

 private:
  void on_connect(int status);
  void on_read(ssize_t nread, const uv_buf_t* buf);
  void on_ciphertext(std::string_view ciphertext);
  // The plaintext of what was fed, then the answers it made TLS queue.
  void read_plaintext();
  void on_write_done(int status);
  void start_reading();
  void stop_reading();
  void write_failed(int rc);

  uv_loop_t* loop_;
  Owner* owner_;
  TlsTarget* target_;  // null: cleartext
  FloodAnswer flood_;
  UvHandle<uv_tcp_t> tcp_;
  uv_connect_t* connect_req_ = nullptr;
  StreamWriter writer_;
  std::unique_ptr<UpstreamTls> tls_;  // from the TCP connect on, when TLS
  Phase phase_ = Phase::Created;
  bool reading_ = false;
  bool writable_ = true;       // until stop_writing()
  bool paused_ = false;        // pause_reading()
  bool answers_held_ = false;  // FloodAnswer::HoldReads: reads held until the server reads our answers
};

constexpr bool legal(UpstreamSocket::Phase from, UpstreamSocket::Phase to) {
  using P = UpstreamSocket::Phase;
  switch (from) {
    case P::Created: return to == P::Connecting || to == P::Closed;
    case P::Connecting: return to == P::Handshaking || to == P::Open || to == P::Closed;
    case P::Handshaking: return to == P::Open || to == P::Closed;
    case P::Open: return to == P::Closed;
    case P::Closed: return to == P::Closed;
  }
  return false;
}
constexpr const char* name(UpstreamSocket::Phase p) {
  constexpr const char* names[] = {"Created", "Connecting", "Handshaking", "Open", "Closed"};
  return names[static_cast<int>(p)];
}

}  // namespace tlsfront::upstream
