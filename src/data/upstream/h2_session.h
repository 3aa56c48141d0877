// H2Session: one connection (an UpstreamSocket) to an HTTP/2 upstream
// server and the nghttp2 client session on it: cleartext for h2c (RFC 9113 §3.3, prior knowledge:
// the client preface and SETTINGS go first, no Upgrade), or over TLS with
// ALPN "h2" for protocol = "h2" (§3.2; UpstreamTls), carrying many H2Streams at
// once, up to the server's SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 holds
// any above that until a stream closes).
//
// GOAWAY (RFC 9113 §6.8): the session drains — no new stream, the open ones
// run to their end — and streams above the GOAWAY's last-stream-id, which
// the server did not process, fail with UpstreamFailure::Unprocessed so
// their exchanges retry them on another connection.
//
// Liveness (h2_ping_interval > 0): an idle session PINGs the server every
// h2_ping_interval and is closed when an ACK does not come back within
// h2_ping_timeout, so that a server gone silent (powered off, a firewall
// dropping the connection) is found before a request is given to it. Open
// streams are bounded by their own read/send timeouts instead.
//
// Floods: frames that move nothing forward (empty DATA, WINDOW_UPDATE on
// an open window, PRIORITY, SETTINGS, PING, GOAWAY, unknown types) are
// charged to an H2ControlBudget as a client's are; past it the session
// sends GOAWAY ENHANCE_YOUR_CALM, its streams fail with invalid_response,
// and the server's `floods` counter and a warning record it. TLS
// post-handshake floods: UpstreamTls.
//
// Output is batched per loop iteration (Flushable) and pulled from nghttp2
// only while the socket's queue and the pulled bytes stay below 256 KiB
// (kPullHighWatermark) per flush; a flush that stops there queues its write,
// whose completion pulls the rest.
// Thread affinity: owning worker only.
#pragma once

#include <netinet/in.h>
#include <uv.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "data/upstream/h2_stream.h"
#include "data/upstream/upstream_socket.h"
#include "data/upstream/upstream_tls.h"
#include "message/header_rewrite.h"
#include "message/request.h"
#include "util/h2_control_budget.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"
#include "util/nghttp2_memory.h"
#include "util/nghttp2_ptr.h"
#include "util/result.h"
#include "util/state.h"

namespace tlsfront::upstream {

class H2Pool;

class H2Session : public Deletable, public Flushable, private UpstreamSocket::Owner {
 public:
  // The connection's lifecycle:
  //   Connecting -> Open       connected; preface and SETTINGS queued
  //   Connecting -> Handshaking  connected; TLS to do (protocol = "h2")
  //   Connecting -> Closed     connect failed or connect_timeout passed
  //   Handshaking -> Open      TLS done and the server selected "h2"
  //   Handshaking -> Closed    the handshake failed, the server did not
  //                            select "h2", or connect_timeout passed
  //   Open       -> Pinging    idle (no stream) for h2_ping_interval: PING
  //                            sent (RFC 9113 §6.7); no new stream meanwhile
  //   Open       -> Draining   GOAWAY received, or keepalive_requests
  //                            streams opened: no new stream
  //   Open       -> Closed     EOF, read/write error, protocol error (the
  //                            server's frames, or nghttp2's GOAWAY over a
  //                            connection error gone out), or idle for
  //                            keepalive_timeout
  //   Pinging    -> Open       the PING ACK arrived: usable again, next PING
  //                            after another h2_ping_interval
  //   Pinging    -> Draining   GOAWAY received
  //   Pinging    -> Closed     no PING ACK within h2_ping_timeout (counted
  //                            and logged), keepalive_timeout, EOF, error
  //   Draining   -> Closed     its last stream ended (GOAWAY NO_ERROR sent),
  //                            or an error
  //   Closed     -> Closed     close() is idempotent
  enum class State { Connecting, Handshaking, Open, Pinging, Draining, Closed };

  // `pool` borrowed, outlives the session (owns it); `cfg` is its group's;
  // `tls` the pool's server's (borrowed; null or no context: h2c).
  H2Session(uv_loop_t* loop, H2Pool* pool, const config::Upstream& cfg, TlsTarget* tls = nullptr);
  ~H2Session() override;
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  // Starts a non-blocking connect. Errc::Upstream on immediate failure.
  [[nodiscard]] Status connect(const sockaddr_storage& addr);

  // True while a new stream may start here now: Connecting, Handshaking or Open,
  // keepalive_requests not reached, and fewer open streams than the
  // server's SETTINGS allow (before they arrive: any number, held by
  // nghttp2 above its default of 100 until they do).
  bool has_room() const;
  // Connecting, Handshaking or Open (not pinging, not draining): may take a
  // new stream, and counts against the pool's limit.
  bool usable() const { return connecting() || state_ == State::Open; }
  // Not yet ready for frames: the TCP connect or the TLS handshake runs.
  bool connecting() const { return state_ == State::Connecting || state_ == State::Handshaking; }
  // Connected and carrying no stream (the pool's idle gauge).
  bool idle() const { return (state_ == State::Open || state_ == State::Pinging) && streams_.empty(); }
  size_t open_streams() const { return streams_.size(); }
  // Open or Pinging -> Draining: no new stream; closes after its last one.
  void start_draining();
  State state() const { return state_; }

  // Submits `stream`'s request (`fields`: pseudo-headers first, lowercase
  // names; `has_body`: DATA follows). Errc::Upstream when nghttp2 refuses.
  // nghttp2 copies no name or value: they must stay valid and unchanged
  // until the stream is released (release() cancels a request HEADERS not
  // yet sent, so nghttp2 never reads them after that). The fields that
  // change with every message (Header::no_index: the request ID) go with
  // indexing on the session's first request only: their names then have a
  // dynamic-table index (RFC 7541 §6.2.3's never-indexed literal may name
  // one), and later requests send only their values.
  [[nodiscard]] Status submit(H2Stream* stream, const std::vector<http::FieldView>& fields, bool has_body);

  // The open stream `id`, or nullptr.
  H2Stream* stream(int32_t id) const;
  // A DATA frame with octets went to the server: the WINDOW_UPDATE (or
  // PING) frames it answers with are not charged as a flood.
  void note_data_sent(size_t octets) { control_budget_.sent_data(octets); }

  // --- called by H2Stream ---
  nghttp2_session* ng() const { return ng_.get(); }
  void schedule_send();
  // The stream ended or its exchange let it go: forget it (RST_STREAM
  // CANCEL first when `reset`).
  void release(H2Stream* stream, bool reset);
  // Response bytes the stream's handler has taken: WINDOW_UPDATE.
  void consume(int32_t id, size_t n);
  // Stream `id`'s request buffer went above its low watermark: the flush
  // after nghttp2 drains it tells the stream (H2Stream::notify_writable).
  void wait_writable(int32_t id) { writable_waiting_.push_back(id); }

  void flush() override;
  // Closes the socket and fails every open stream with `failure`; idempotent.
  void close(UpstreamFailure failure, const Error& error);
  // Closes an idle session (no stream to fail), GOAWAY first when open.
  void close_idle();

  // --- nghttp2 callbacks (h2_session_frames.cc) ---
  // Charges frames that make no progress to control_budget_; past it the
  // read fails and end_flood() closes the session.
  int on_begin_frame(const nghttp2_frame_hd* hd);
  int on_begin_headers(const nghttp2_frame* frame);
  int on_header(const nghttp2_frame* frame, std::string_view name, std::string_view value);
  int on_frame_recv(const nghttp2_frame* frame);
  int on_data_chunk(int32_t id, std::string_view data);
  int on_stream_close(int32_t id, uint32_t error_code);
  int on_frame_not_send(const nghttp2_frame* frame);
  // A stream's timeout now runs to `deadline` (uv_now ms): the session's
  // stream timer fires no later than that.
  void watch_deadline(uint64_t deadline);

 private:
  // UpstreamSocket::Owner
  void on_socket_handshaking() override;
  void on_socket_open() override { on_established(); }
  void on_socket_data(const char* data, size_t len) override { on_bytes(data, len); }
  void on_socket_end(int status, bool close_notify) override;
  void on_socket_error(UpstreamFailure failure, Error error) override { close(failure, error); }
  void on_socket_write_failed(Error error) override { fail_write(error); }
  void on_socket_written() override;
  // Connected (and TLS done): the preface goes out, the streams start.
  void on_established();
  // HTTP/2 frames' bytes (plaintext) for nghttp2.
  void on_bytes(const char* data, size_t len);
  // A last frame nghttp2 queued (a GOAWAY), written at once if nothing
  // waits before it and the socket takes it: the session closes next.
  void write_last_frames();
  // A write failed (the upstream reset or closed the connection): reads
  // what it sent before that and the socket still holds, then closes with
  // `error`. A GOAWAY among it tells the streams the server never processed
  // (above its last-stream-id, RFC 9113 §6.8), which go elsewhere, from
  // those it may have, which fail; without the read, a GOAWAY that came just
  // before the reset failed them all.
  void fail_write(const Error& error);
  void on_timer();
  void on_ping_timer();
  void on_stream_timer();
  // Erases a stream from streams_ (and from stream()'s memory).
  void forget(std::unordered_map<int32_t, H2Stream*>::iterator it);
  // Drains the pool's interest: idle timer when nothing is open, close when
  // draining and nothing is open.
  void check_idle();
  // The server passed control_budget_ (util/h2_control_budget.h): GOAWAY
  // ENHANCE_YOUR_CALM, counted and logged by the pool, then close.
  void end_flood();

  uv_loop_t* loop_;
  H2Pool* pool_;
  const config::Upstream& cfg_;
  UpstreamSocket socket_;  // TCP, and TLS for h2
  LazyTimer timer_;                   // connect_timeout (TCP and TLS), then keepalive_timeout while idle
  LazyTimer ping_timer_;              // while idle: h2_ping_interval, then h2_ping_timeout while Pinging
  LazyTimer stream_timer_;            // the earliest of the streams' deadlines (stream_due_)
  uint64_t stream_due_ = H2Stream::kNoDeadline;
  std::string out_;
  State state_ = State::Connecting;
  Nghttp2Memory memory_;  // before ng_: nghttp2 frees into it when the session is deleted
  Nghttp2SessionPtr ng_;
  std::unordered_map<int32_t, H2Stream*> streams_;
  // The stream stream() found last (0: none): a response's callbacks come
  // for one stream after another (begin, each field, end, DATA, close).
  mutable int32_t last_id_ = 0;
  mutable H2Stream* last_ = nullptr;
  std::vector<int32_t> read_touched_;      // streams given bytes by the current read
  std::vector<int32_t> released_in_recv_;  // let go during the current read, not reset (release())
  // Streams whose senders wait for room (wait_writable): a flush visits
  // these, not every open stream (with 200 streams in flight, building and
  // walking a list of all of them was 3 % of a full-speed h2c run's CPU).
  std::vector<int32_t> writable_waiting_;
  uint64_t streams_opened_ = 0;
  H2ControlBudget control_budget_;  // the server's frames that move nothing forward
  bool flooded_ = false;            // control_budget_ ran out during the current read
  bool in_recv_ = false;            // inside nghttp2_session_mem_recv
  bool settings_received_ = false;  // the server's first SETTINGS arrived (its stream limit is known)
};

constexpr bool legal(H2Session::State from, H2Session::State to) {
  using S = H2Session::State;
  switch (from) {
    case S::Connecting:
      return to == S::Open || to == S::Handshaking || to == S::Closed;
    case S::Handshaking:
      return to == S::Open || to == S::Closed;
    case S::Open:
      return to == S::Pinging || to == S::Draining || to == S::Closed;
    case S::Pinging:
      return to == S::Open || to == S::Draining || to == S::Closed;
    case S::Draining:
      return to == S::Closed;
    case S::Closed:
      return to == S::Closed;
  }
  return false;
}
constexpr const char* name(H2Session::State s) {
  constexpr const char* names[] = {"Connecting", "Handshaking", "Open", "Pinging", "Draining", "Closed"};
  return names[static_cast<int>(s)];
}

}  // namespace tlsfront::upstream
