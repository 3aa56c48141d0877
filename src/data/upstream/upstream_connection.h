// UpstreamConnection: one connection to an upstream server speaking
// HTTP/1.1 over an UpstreamSocket (TCP, and TLS when its pool's TlsTarget
// has a context), with its own llhttp response parser. It carries one exchange at a
// time (attach/detach) and, between exchanges, sits idle in its UpstreamPool
// still reading so a close by the backend is seen at once. As the
// exchange's UpstreamChannel it frames a chunked request body itself.
// States: Connecting [-> Handshaking] -> Active <-> Idle -> Closed (see
// data/upstream/POOL.md).
// Thread affinity: owning worker only.
#pragma once

#include <llhttp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/upstream/upstream_channel.h"
#include "data/upstream/upstream_failure.h"
#include "data/upstream/upstream_handler.h"
#include "data/upstream/upstream_socket.h"
#include "data/upstream/upstream_tls.h"
#include "data/upstream/upstream_tunnel.h"
#include "message/request.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"
#include "util/result.h"
#include "util/state.h"
#include "util/stream_writer.h"
#include "util/uv_handle.h"

namespace tlsfront::upstream {

class UpstreamPool;

class UpstreamConnection : public UpstreamChannel, public Flushable, private UpstreamSocket::Owner {
 public:
  // Events for the exchange currently attached (upstream_handler.h).
  using Handler = UpstreamHandler;

  // The connection (data/upstream/POOL.md has the picture):
  //   Connecting  -> Active (connected) | Handshaking (connected, TLS
  //                  to do) | Closed
  //   Handshaking -> Active (handshake done: the request goes out) | Closed
  //   Active      -> Idle (parked in the pool) | Closed
  //   Idle       -> Active (reused) | Closed
  //   Closed     -> Closed (close() is idempotent)
  enum class State { Connecting, Handshaking, Active, Idle, Closed };
  // The response of the attached exchange, as parsed:
  //   Waiting  -> Reading              its first byte (llhttp on_message_begin)
  //   Reading  -> Waiting              a 1xx ended; the final response follows
  //   Reading  -> Reusable | Final     the final response ended; Reusable when
  //                                    keepalive allows it and the request was
  //                                    written whole
  //   Reusable -> Final                bytes after the response (a closed
  //                                    connection is never reusable either)
  //   Reusable -> Waiting              reused for the next exchange (attach)
  //   Reading  -> Tunnel               a 101 answered an Upgrade request
  //                                    (attach's `upgrade`): the socket goes
  //                                    to an UpstreamTunnel (RFC 9110
  //                                    §15.2.2; on_upstream_tunnel, before
  //                                    on_upstream_head), the connection is
  //                                    Closed, and what followed the 101 in
  //                                    its read is its last on_upstream_body.
  //                                    Final: never reused, it ends only with
  //                                    close()
  enum class ResponsePhase { Waiting, Reading, Reusable, Final, Tunnel };

  // `pool` is borrowed and outlives the connection (owns it or its owner's
  // pool); so is `tls` (the pool's; null or without a context: cleartext).
  UpstreamConnection(uv_loop_t* loop, UpstreamPool* pool, const config::Upstream& cfg, TlsTarget* tls = nullptr);
  ~UpstreamConnection() override;
  void flush() override;

  // Starts a non-blocking connect to `addr`. Errc::Upstream on immediate failure.
  [[nodiscard]] Status connect(const sockaddr_storage& addr);

  // Binds the next exchange. `head_request`: the response to a HEAD has no
  // body. `upgrade`: the request asks for an Upgrade, so a 101 opens a
  // tunnel (otherwise a 101 is an invalid response; such a connection is
  // never given back to the pool). `chunked`: send_body() frames the body
  // in chunks and end() writes the last one (RFC 9112 §7.1).
  void attach(Handler* handler, bool head_request, bool upgrade = false, bool chunked = false);
  // Unbinds the handler (no further callbacks).
  void detach() override { handler_ = nullptr; }

  // Queues request bytes as they are (may be called while connecting); they
  // are written at the end of the loop iteration, and a write error then
  // fails the exchange.
  void send(std::string_view bytes);
  // UpstreamChannel: the body, framed as attach() said; end() writes a
  // chunked body's last chunk and `trailers`, and drops them for a sized one.
  void send_body(std::string_view bytes) override;
  void end(std::vector<http::Header> trailers) override;
  // Writes what send() queued now rather than at the end of the iteration
  // (no on_upstream_writable from here: the caller may be inside its parser).
  // A write error fails the exchange from within this call.
  void write_now() override;
  size_t buffered_bytes() const override { return (socket_ ? socket_->writer().buffered_bytes() : 0) + out_.size(); }
  // Bytes whose write has completed successfully for the current exchange.
  uint64_t bytes_written() const override {
    return socket_ ? socket_->writer().bytes_written() - written_at_attach_ : 0;
  }
  bool response_started() const override { return response_bytes_ > 0; }

  // Response backpressure: stop/restart reading from the backend. Over
  // TLS, reading also stops by itself while the server leaves unread more
  // than kWriteHighWatermark of what its post-handshake messages made us
  // answer (a HelloRequest flood: a no_renegotiation alert each), until our
  // write queue drains under kWriteLowWatermark (UpstreamSocket's
  // FloodAnswer::HoldReads); a connection that never drains ends by its
  // timer (keepalive_timeout idle, else send/read_timeout).
  void pause_reading() override;
  void resume_reading() override;

  // Pool side: park as idle (reading for EOF, closed after `idle_timeout`:
  // keepalive_timeout, or the pool's shorter one for a surplus connection),
  // or check an idle connection is still open before reuse (MSG_PEEK, as
  // nginx does).
  void park_idle(std::chrono::milliseconds idle_timeout);
  bool still_open() const;

  // True after a complete response that allows keepalive
  // (llhttp_should_keep_alive) and the request was written in full.
  bool reusable() const { return response_ == ResponsePhase::Reusable && state_ != State::Closed; }
  // Cleartext, or TLS made with the pool's current context (not one a
  // reload replaced since).
  bool tls_current() const { return !socket_ || socket_->tls_current(); }
  uint64_t requests() const { return requests_; }
  State state() const { return state_; }
  // Closes the socket; idempotent. The owner still frees the object.
  void close() override;

 protected:
  // Back to the pool (UpstreamPool::release) when the whole request went
  // and the response left the connection reusable, not after an Upgrade.
  bool give_back(bool request_whole) override;

 private:
  friend struct ParserCallbacks;
  // UpstreamSocket::Owner
  void on_socket_handshaking() override;
  void on_socket_open() override { on_established(); }
  void on_socket_data(const char* data, size_t len) override;
  void on_socket_end(int status, bool close_notify) override;
  void on_socket_error(UpstreamFailure failure, Error error) override { fail(failure, std::move(error)); }
  void on_socket_written() override;
  // Response bytes (plaintext) to parse.
  void on_bytes(const char* data, size_t len);
  // The server's end: EOF (UV_EOF; over TLS `close_notify` says whether the
  // server sent one before its FIN) or a read error.
  void on_end(int status, bool close_notify = false);
  // The connection is ready for the request (TCP connected, TLS done).
  void on_established();
  // The socket, its write queue and unsent bytes, as a tunnel (a 101).
  std::unique_ptr<UpstreamTunnel> hand_over();
  void on_timer();
  void arm_timer(std::chrono::milliseconds ms);
  // The read or send timeout, whichever the write queue says applies.
  std::chrono::milliseconds io_timeout() const;
  void fail(UpstreamFailure failure, Error error);

  // llhttp hooks.
  bool preceded_by_crlf(const char* at) const;
  int on_message_begin();
  int on_status(const char* at, size_t len);
  int on_header_field(const char* at, size_t len);
  int on_header_value(const char* at, size_t len);
  int on_header_value_complete();
  int on_headers_complete();
  int on_body(const char* at, size_t len);
  int on_message_complete();

  UpstreamPool* pool_;
  const config::Upstream& cfg_;
  std::unique_ptr<UpstreamSocket> socket_;  // null once handed to a tunnel
  LazyTimer timer_;
  // Request bytes, written at the end of the loop iteration (LoopContext
  // flush, in order with the responses to clients): the requests an
  // iteration started reach the backends together rather than one per parsed
  // request, which bought +7.5% HTTP/1.1 requests/s (bench.sh, interleaved
  // A/B; HTTP/2 unchanged; writing them before the responses bought nothing).
  std::string out_;
  bool notify_writable_ = false;  // out_ grew past the low watermark since the last notice
  State state_ = State::Connecting;
  Handler* handler_ = nullptr;
  llhttp_t parser_{};
  bool head_request_ = false;
  bool upgrade_ = false;
  bool chunked_ = false;  // the attached request's body goes chunked
  ResponsePhase response_ = ResponsePhase::Waiting;
  uint64_t requests_ = 0;
  uint64_t written_at_attach_ = 0;
  uint64_t response_bytes_ = 0;
  http::ResponseHead head_;
  std::string field_;
  bool in_value_ = false;
  size_t head_bytes_ = 0;  // of the head (or trailer section) being parsed
  const char* input_begin_ = nullptr;  // the buffer being parsed (address compares only)
  char tail_[2] = {0, 0};              // last two bytes of the previous read
};

// The transition tables (util/state.h).
constexpr bool legal(UpstreamConnection::State from, UpstreamConnection::State to) {
  using S = UpstreamConnection::State;
  switch (from) {
    case S::Connecting: return to == S::Active || to == S::Handshaking || to == S::Closed;
    case S::Handshaking: return to == S::Active || to == S::Closed;
    case S::Active: return to == S::Idle || to == S::Closed;
    case S::Idle: return to == S::Active || to == S::Closed;
    case S::Closed: return to == S::Closed;
  }
  return false;
}
constexpr const char* name(UpstreamConnection::State s) {
  constexpr const char* names[] = {"Connecting", "Handshaking", "Active", "Idle", "Closed"};
  return names[static_cast<int>(s)];
}
constexpr bool legal(UpstreamConnection::ResponsePhase from, UpstreamConnection::ResponsePhase to) {
  using P = UpstreamConnection::ResponsePhase;
  switch (from) {
    case P::Waiting: return to == P::Reading;
    case P::Reading: return to == P::Waiting || to == P::Reusable || to == P::Final || to == P::Tunnel;
    case P::Reusable: return to == P::Final || to == P::Waiting;
    case P::Final: return false;
    case P::Tunnel: return false;
  }
  return false;
}
constexpr const char* name(UpstreamConnection::ResponsePhase p) {
  constexpr const char* names[] = {"Waiting", "Reading", "Reusable", "Final", "Tunnel"};
  return names[static_cast<int>(p)];
}

}  // namespace tlsfront::upstream
