// Http2Stream: one client-initiated HTTP/2 stream (RFC 9113 §5.1) hosted by an
// Http2Session: the HTTP/2 codec of one request (StreamCodec). The request
// head is assembled from nghttp2's validated header callbacks (:authority ->
// Host, cookie crumbs joined, §8.3.1 / §8.2.3) and handed to its
// RequestStream (data/http/request_stream.h: admission, the exchange, local
// answers, the tunnel's upstream side, the log line); the response comes
// back as HEADERS and a body buffered for nghttp2's data provider.
//
// Flow control (§5.2): request DATA is consumed (WINDOW_UPDATE sent, through
// nghttp2_session_consume_stream) only once the upstream write queue takes it,
// so a slow upstream holds at most one stream window per stream. Response
// bytes are buffered up to kResponseHighWatermark before the exchange pauses
// the upstream; nghttp2 drains the buffer as the client's window allows.
//
// RFC 8441 extended CONNECT (`:method CONNECT` + `:protocol`, allowed by the
// route's `upgrade` list) goes up as an HTTP/1.1 Upgrade request
// (data/http/extended_connect.h); the upstream's 101 becomes this stream's
// 200 and from then on DATA carries the tunnel both ways: client DATA is
// consumed only as the upstream takes it (the same flow control as a
// request body), upstream bytes wait in out_ for the client's window
// (kResponseHighWatermark pauses the upstream). END_STREAM from the client
// is a FIN to the upstream, the upstream's EOF is our END_STREAM, an error
// on the upstream connection is RST_STREAM CONNECT_ERROR (RFC 9113 §8.5),
// and timeouts.tunnel without a byte either way is RST_STREAM CANCEL. Once
// the 101's read is over the RequestStream drives the tunnel's upstream side
// (upstream::UpstreamTunnel) and the exchange goes.
//
// Trust: every header byte comes from the client; nghttp2 has already
// rejected what §8.2-8.3 forbids (uppercase names, connection-specific
// fields, TE other than "trailers", bad pseudo-headers) before we see it.
// Thread affinity: owning worker only.
#pragma once

#include <nghttp2/nghttp2.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/http/field_section_head.h"
#include "data/http/local_answer.h"
#include "data/http/request_stream.h"
#include "message/request.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"
#include "util/state.h"

namespace tlsfront::http {

class Http2Session;

class Http2Stream final : public Deletable, private StreamCodec {
 public:
  // Response bytes buffered per stream before the upstream is paused.
  static constexpr size_t kResponseHighWatermark = 32 * 1024;
  // Request body bytes acknowledged and dropped after a response that did not
  // need them, before the stream is reset (RFC 9113 §8.1).
  static constexpr uint64_t kMaxDiscardBytes = 1024 * 1024;

  // The request as received:
  //   Head -> Body       the header block ended without END_STREAM
  //   Head -> Complete   ... with END_STREAM (no body)
  //   Body -> Complete   END_STREAM on DATA or trailers
  //   Body -> Tunnel     an extended CONNECT's 200 was submitted: DATA is
  //                      the tunnel's, to the upstream as it takes it
  //   Tunnel -> Complete END_STREAM: the client's half of the tunnel ended
  //                      (a FIN to the upstream)
  enum class RequestPhase { Head, Body, Complete, Tunnel };
  // The exchange for it:
  //   None -> Pending    admitted (on_request_head); started once the read
  //                      that carried the head is processed (a stream opened
  //                      and reset within one read never reaches an upstream)
  //   Pending -> Started
  // A local answer (4xx) leaves it None; a retired exchange keeps the phase.
  enum class UpstreamPhase { None, Pending, Started };
  // The response:
  //   None -> Head       final head submitted with a body to come
  //   None -> Ended      final head submitted without a body
  //   None -> Tunnel     the upstream's 101 became our 200 (open_tunnel):
  //                      the upstream's tunnel bytes follow as DATA
  //   Head -> Ended      every body byte is in out_ (end_response)
  //   Tunnel -> Ended    the upstream closed the tunnel (its EOF)
  //   Ended -> EndSent   the frame with END_STREAM went out
  // 1xx heads are submitted in None and change nothing.
  enum class ResponsePhase { None, Head, Ended, EndSent, Tunnel };
  // The stream itself:
  //   Open -> ClientReset   the client sent RST_STREAM (closing follows)
  //   Open | ClientReset -> Closed   nghttp2 closed it (on_closed)
  // No sink call has any effect once Closed.
  enum class StreamEnd { Open, ClientReset, Closed };

  // `session` is borrowed and outlives the stream (it owns it).
  Http2Stream(Http2Session* session, int32_t id);
  ~Http2Stream() override;

  int32_t id() const { return id_; }

  // One decoded request header field (nghttp2_on_header_callback); views are
  // valid during the call only. Fields past max_header_list_size are counted
  // and dropped (the request is then answered 431).
  void on_header(std::string_view name, std::string_view value);
  // One field of the request's trailer section; kept (within
  // max_header_list_size, with the head) for an h2c upstream.
  void on_trailer(std::string_view name, std::string_view value);
  // The request head is complete (HEADERS + CONTINUATION received).
  // `end_stream`: no request body follows. Answers locally (4xx) or creates
  // the exchange; returns true when start() must be called.
  bool on_request_head(bool end_stream);
  // Starts the exchange created by on_request_head(); called by the session
  // after nghttp2_session_mem_recv returns, so a stream reset within the same
  // read never reaches an upstream.
  void start();
  // Request DATA payload; valid during the call only.
  void on_request_data(std::string_view data);
  // END_STREAM received from the client.
  void on_request_end();
  // The client sent RST_STREAM.
  void on_client_reset();
  // nghttp2 closed the stream (nghttp2_on_stream_close_callback): writes the
  // access log line and cancels the exchange. No sink call has effect after.
  void on_closed(uint32_t error_code);
  // A frame carrying END_STREAM went out. The rest of an unfinished request
  // body is dropped; past kMaxDiscardBytes the stream is reset with NO_ERROR
  // (RFC 9113 §8.1).
  void on_response_end_sent();
  // The connection's output drained: let a paused upstream read on.
  void on_output_drained();
  // The session's drain notice for a stream on its wait_drained list (the
  // one call that takes it off: read_response() calls on_output_drained()
  // at every chunk, and clearing the mark there let the stream enrol again
  // while its id was still listed).
  void on_drain_notice() {
    drain_waiting_ = false;
    on_output_drained();
  }
  // A HEADERS frame of this stream went out (1xx, final head or trailers).
  void on_headers_sent() {
    if (++heads_sent_ == final_head_) held_head_ = ResponseHead{};  // nghttp2 is done with its fields
  }
  // nghttp2_data_source_read_callback for the response body.
  ssize_t read_response(uint8_t* buf, size_t length, uint32_t* data_flags);

  bool response_finished() const { return response_ == ResponsePhase::EndSent; }
  // The client ended its request with END_STREAM, our response ended with
  // it, and nobody reset the stream (our RST_STREAM NO_ERROR after a
  // response only ever cuts an unfinished request).
  bool ended_by_both_sides() const {
    return request_ == RequestPhase::Complete && response_ == ResponsePhase::EndSent && end_ == StreamEnd::Open;
  }
  // Response bytes waiting for the client's flow-control window, and when
  // (the loop's clock, uv_now ms) they last moved: became pending or were
  // taken by nghttp2 (the stall timeout's progress mark).
  bool has_pending_output() const { return pending_output() > 0; }
  uint64_t output_moved_at() const { return output_moved_at_; }
  // The client opened no window for timeouts.send: RST_STREAM CANCEL.
  void abort_stalled();
  bool closed() const { return end_ == StreamEnd::Closed; }
  // The client's RST_STREAM ended the stream (before it closed).
  bool reset_by_client() const { return end_ == StreamEnd::ClientReset; }

  // The client's handshake completed (Http2Session::on_handshake_done): a
  // request held for it goes up.
  void on_handshake_done() { stream_.on_handshake_done(); }
  const ConnectionInfo& connection_info() const override;

 private:
  // StreamCodec
  void encode_informational(const ResponseHead& head) override;
  void encode_head(ResponseHead&& head, bool has_body) override;
  // The 200 an extended CONNECT's 101 became: submitted without END_STREAM.
  void encode_tunnel_open(const ResponseHead& head, std::string_view protocol) override;
  void encode_body(std::string_view data) override;
  void encode_trailers(const std::vector<Header>& trailers) override;
  void encode_end() override;
  bool answerable() const override { return !closed() && response_ == ResponsePhase::None; }
  void abort_response() override;
  void on_local_answer() override { drop_held_body(); }
  // True while this stream or the connection holds more than its high
  // watermark. A true answer for the connection's output also enrols the
  // stream for the session's next on_output_drained (Http2Session::wait_drained).
  bool output_congested() const override;
  void on_request_body_writable() override;

  RequestRecord& record() { return stream_.record(); }
  const RequestRecord& record() const { return stream_.record(); }
  // `held`: `head` is held_head_, whose fields nghttp2 points at uncopied.
  void submit_head(const ResponseHead& head, bool has_body, bool informational, bool held = false);
  void reset(uint32_t error_code);
  void consume(size_t n);
  // Request bytes held back for an upstream that no longer wants them:
  // acknowledged (WINDOW_UPDATE) and dropped.
  void drop_held_body();
  void resume_provider();
  // DATA on an extended CONNECT stream: tunnel bytes (held before the
  // answer, forwarded in the tunnel, dropped otherwise).
  void on_tunnel_data(std::string_view data);
  void forward_tunnel(std::string_view data);
  // timeouts.tunnel passed without a byte either way.
  void on_tunnel_idle();
  size_t pending_output() const { return out_.size() - out_off_; }
  bool head_too_large() const;
  bool final_head_sent() const { return final_head_ > 0 && heads_sent_ >= final_head_; }

  Http2Session* session_;
  uv_loop_t* loop_;  // the session's
  int32_t id_;
  RequestPhase request_ = RequestPhase::Head;
  UpstreamPhase upstream_ = UpstreamPhase::None;
  ResponsePhase response_ = ResponsePhase::None;
  StreamEnd end_ = StreamEnd::Open;

  // The request (its record's bytes_sent: heads as submitted; the DATA
  // bytes, bytes_out_, join at on_closed).
  RequestStream stream_;
  int heads_submitted_ = 0;  // HEADERS frames submitted (1xx and final heads)
  int final_head_ = 0;       // the final head's ordinal among them (0: none yet)
  int heads_sent_ = 0;       // HEADERS frames nghttp2 has written
  uint64_t final_head_bytes_ = 0;
  FieldSectionHead head_;         // the request head from its fields (:authority, cookie crumbs, :protocol)
  LazyTimer tunnel_timer_;        // timeouts.tunnel, from open_tunnel on
  size_t header_bytes_ = 0;  // RFC 9113 §6.5.2 sizes, against max_header_list_size
  std::string early_body_;  // DATA received while Pending
  std::vector<Header> request_trailers_;  // until the exchange takes them at the request's end
  size_t unconsumed_ = 0;   // received, not yet acknowledged by WINDOW_UPDATE
  uint64_t discarded_ = 0;  // request body bytes dropped (see kMaxDiscardBytes)

  // Response side.
  // The final head, names lowercased, from its submission until nghttp2 has
  // sent its HEADERS frame (FieldBlock::add_view's held fields): nghttp2
  // reads them only while encoding that frame, which it never does once the
  // stream is closed, before this object goes.
  ResponseHead held_head_;
  std::string out_;
  size_t out_off_ = 0;
  std::vector<Header> trailers_;  // submitted (nghttp2_submit_trailer) after the last DATA
  bool provider_deferred_ = false;  // the data provider returned NGHTTP2_ERR_DEFERRED
  mutable bool drain_waiting_ = false;  // on the session's wait_drained list
  uint64_t bytes_out_ = 0;          // response body bytes nghttp2 has taken
  uint64_t output_moved_at_ = 0;    // uv_now when pending output last moved (has_pending_output())
};

// The transition tables (util/state.h).
constexpr bool legal(Http2Stream::RequestPhase from, Http2Stream::RequestPhase to) {
  using P = Http2Stream::RequestPhase;
  return (from == P::Head && (to == P::Body || to == P::Complete)) ||
         (from == P::Body && (to == P::Complete || to == P::Tunnel)) || (from == P::Tunnel && to == P::Complete);
}
constexpr const char* name(Http2Stream::RequestPhase p) {
  constexpr const char* names[] = {"Head", "Body", "Complete", "Tunnel"};
  return names[static_cast<int>(p)];
}
constexpr bool legal(Http2Stream::UpstreamPhase from, Http2Stream::UpstreamPhase to) {
  return static_cast<int>(to) == static_cast<int>(from) + 1;
}
constexpr const char* name(Http2Stream::UpstreamPhase p) {
  constexpr const char* names[] = {"None", "Pending", "Started"};
  return names[static_cast<int>(p)];
}
constexpr bool legal(Http2Stream::ResponsePhase from, Http2Stream::ResponsePhase to) {
  using P = Http2Stream::ResponsePhase;
  return (from == P::None && (to == P::Head || to == P::Ended || to == P::Tunnel)) ||
         ((from == P::Head || from == P::Tunnel) && to == P::Ended) || (from == P::Ended && to == P::EndSent);
}
constexpr const char* name(Http2Stream::ResponsePhase p) {
  constexpr const char* names[] = {"None", "Head", "Ended", "EndSent", "Tunnel"};
  return names[static_cast<int>(p)];
}
constexpr bool legal(Http2Stream::StreamEnd from, Http2Stream::StreamEnd to) {
  return static_cast<int>(to) > static_cast<int>(from);
}
constexpr const char* name(Http2Stream::StreamEnd e) {
  constexpr const char* names[] = {"Open", "ClientReset", "Closed"};
  return names[static_cast<int>(e)];
}

}  // namespace tlsfront::http
