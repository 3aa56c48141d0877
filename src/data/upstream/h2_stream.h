// H2Stream: one request on a multiplexed h2c upstream connection (an
// H2Session): its request body and trailers going up through nghttp2's data
// provider, its response (1xx, head, DATA, trailers) coming back to an
// UpstreamHandler, the same events an HTTP/1.1 UpstreamConnection gives.
// Owned by its exchange (its UpstreamChannel); the session only points at
// it while it is open.
//
// Flow control (RFC 9113 §5.2), both ways and bounded:
// - response DATA is consumed (WINDOW_UPDATE sent) as the handler takes it,
//   except while pause_reading() holds it (the client is congested): the
//   upstream then stops at the stream window, which is all we hold;
// - request bytes wait in a buffer nghttp2 drains as the upstream's window
//   allows; buffered_bytes() is what the exchange's backpressure reads.
// Timeouts, one at a time as for an HTTP/1.1 exchange: send_timeout while
// request bytes wait for the upstream's window (re-armed by each write),
// else read_timeout while the response is awaited or streams (re-armed by
// each read and each write, not run while paused); connect_timeout is the
// session's. Either resets only this stream (RST_STREAM CANCEL). A stream
// keeps only its deadline: its session's one timer runs to the earliest of
// its streams' (a libuv timer per stream cost an init, a heap insert, a
// close and a free per request: timer work was 3.3 % of an h2c run's CPU
// samples with it, 1.7 % without; −2.3 % instructions per request).
// Thread affinity: owning worker only.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/upstream/upstream_channel.h"
#include "data/upstream/upstream_handler.h"
#include "message/request.h"
#include "util/loop_context.h"
#include "util/state.h"

namespace tlsfront::upstream {

class H2Session;

class H2Stream : public UpstreamChannel {
 public:
  // The response, as received:
  //   Awaiting  -> Streaming   the final response head arrived
  //   Awaiting  -> Done        failed, refused or cancelled before it
  //   Streaming -> Done        END_STREAM arrived, or failed / cancelled
  // Done: no handler call follows.
  enum class Phase { Awaiting, Streaming, Done };

  // `handler` borrowed until detach(); `cfg` outlives the stream (its
  // group's). Created by H2Pool::open_stream, which submits it.
  H2Stream(uv_loop_t* loop, UpstreamHandler* handler, const config::Upstream& cfg);
  ~H2Stream() override;

  // Request body bytes (no framing: DATA frames carry them).
  void send_body(std::string_view bytes) override;
  // The request ends, with `trailers` (RFC 9113 §8.1: a HEADERS frame with
  // END_STREAM after the DATA) or without.
  void end(std::vector<http::Header> trailers) override;
  // Request bytes not yet taken by nghttp2.
  size_t buffered_bytes() const override { return out_.size() - out_off_; }
  // Request body bytes nghttp2 has taken (framed for the upstream).
  uint64_t bytes_written() const override { return body_taken_; }
  bool response_started() const override { return response_bytes_ > 0; }

  // Response backpressure: hold / release WINDOW_UPDATEs for this stream.
  void pause_reading() override;
  void resume_reading() override;
  // No further handler calls.
  void detach() override { handler_ = nullptr; }
  // Resets the stream (RST_STREAM CANCEL) unless it ended, and leaves its
  // session; idempotent. The owner still frees the object.
  void close() override;
  Phase phase() const { return phase_; }

  // --- called by H2Session ---
  void bind(H2Session* session, int32_t id);
  int32_t id() const { return id_; }
  // The session connected (a stream submitted while it was connecting):
  // handler->on_upstream_connected().
  void on_connected();
  // Submitted on an open session: no connect event (the lease says reused).
  void on_joined_open() { arm_timer(); }
  void on_begin_headers();
  // One response field; false when the head is too large (the stream is
  // then reset by the session).
  bool on_header(std::string_view name, std::string_view value);
  void on_headers_end(bool end_stream);
  void on_data(std::string_view data);
  void on_end_stream();
  // The read that carried this stream's frames is processed.
  void on_read_end();
  // nghttp2 closed the stream with `error_code` (RFC 9113 §7).
  void on_closed(uint32_t error_code);
  // The session failed or went away: `failure` for the handler.
  void on_session_failed(UpstreamFailure failure, const Error& error);
  // The request HEADERS never went out (the upstream's GOAWAY came first).
  void on_not_sent();
  // When the stream's timeout runs out (uv_now ms), or kNoDeadline.
  static constexpr uint64_t kNoDeadline = UINT64_MAX;
  uint64_t deadline() const { return deadline_; }
  // The session's timer found the deadline passed: the stream fails with
  // a send or read timeout and leaves the session.
  void on_deadline();
  // nghttp2_data_source_read_callback.
  ssize_t read_body(uint8_t* buf, size_t length, uint32_t* data_flags);
  // Called after the session's write for a stream that asked
  // (H2Session::wait_writable): a sender waiting for room goes on. False
  // when its buffer is still above the low watermark (it keeps waiting).
  bool notify_writable();

 private:
  void finish(UpstreamFailure failure, Error error);
  void arm_timer();
  void leave_session();

  UpstreamHandler* handler_;
  const config::Upstream& cfg_;
  H2Session* session_ = nullptr;
  int32_t id_ = -1;
  Phase phase_ = Phase::Awaiting;
  uint64_t deadline_ = kNoDeadline;
  // Request side.
  std::string out_;
  size_t out_off_ = 0;
  bool request_ended_ = false;
  std::vector<http::Header> trailers_;
  bool deferred_ = false;         // the data provider returned NGHTTP2_ERR_DEFERRED
  bool notify_writable_ = false;  // out_ was above the low watermark
  uint64_t body_taken_ = 0;
  // Response side.
  http::ResponseHead head_;
  bool final_head_ = false;
  size_t head_bytes_ = 0;
  uint64_t response_bytes_ = 0;
  bool paused_ = false;
  size_t unconsumed_ = 0;  // DATA taken while paused: acknowledged on resume
  bool read_end_due_ = false;
};

constexpr bool legal(H2Stream::Phase from, H2Stream::Phase to) {
  using P = H2Stream::Phase;
  return (from == P::Awaiting && (to == P::Streaming || to == P::Done)) || (from == P::Streaming && to == P::Done);
}
constexpr const char* name(H2Stream::Phase p) {
  constexpr const char* names[] = {"Awaiting", "Streaming", "Done"};
  return names[static_cast<int>(p)];
}

}  // namespace tlsfront::upstream
