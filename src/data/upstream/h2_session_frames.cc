// H2Session's frame callbacks (nghttp2 calls them from inside
// nghttp2_session_mem_recv, on_bytes): response heads, bodies, stream ends,
// GOAWAY and PING ACKs handed to the streams and the session's state, and
// the flood budget that every received frame passes first (on_begin_frame,
// end_flood). The session, its socket, TLS and writes: h2_session.cc.
#include <string>

#include "data/upstream/h2_pool.h"
#include "data/upstream/h2_session.h"

namespace tlsfront::upstream {

void H2Session::end_flood() {
  // RFC 9113 §5.4.1: GOAWAY ENHANCE_YOUR_CALM, written now if the socket
  // takes it, then close; the streams fail (invalid_response) and their
  // exchanges may retry elsewhere.
  nghttp2_session_terminate_session(ng_.get(), NGHTTP2_ENHANCE_YOUR_CALM);
  write_last_frames();
  const Error error = make_error(Errc::Protocol,
                                 "upstream flooded HTTP/2 control frames (empty DATA, WINDOW_UPDATE, PRIORITY, "
                                 "SETTINGS, PING or unknown types); GOAWAY ENHANCE_YOUR_CALM");
  if (pool_) pool_->count_flood(error.message());
  close(UpstreamFailure::InvalidResponse, error);
}

// --- nghttp2 callbacks ---

int H2Session::on_begin_frame(const nghttp2_frame_hd* hd) {
  // (DATA with octets costs what it carries, whichever stream it names: it
  // is not charged.)
  if (control_budget_.admit(ng_.get(), *hd)) return 0;
  flooded_ = true;
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

int H2Session::on_begin_headers(const nghttp2_frame* frame) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  if (H2Stream* s = stream(frame->hd.stream_id)) s->on_begin_headers();
  return 0;
}

int H2Session::on_header(const nghttp2_frame* frame, std::string_view name, std::string_view value) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  H2Stream* s = stream(frame->hd.stream_id);
  if (s != nullptr && !s->on_header(name, value)) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // RST_STREAM
  return 0;
}

int H2Session::on_frame_recv(const nghttp2_frame* frame) {
  control_budget_.received(*frame);
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
      if (H2Stream* s = stream(frame->hd.stream_id)) s->on_headers_end(end_stream);
      break;
    case NGHTTP2_DATA:
      if (end_stream) {
        if (H2Stream* s = stream(frame->hd.stream_id)) s->on_end_stream();
      }
      break;
    case NGHTTP2_SETTINGS:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) settings_received_ = true;
      break;
    case NGHTTP2_PING:
      // (nghttp2 answers the server's own PINGs.) The one we sent is
      // answered: the session is usable again, the next PING in an interval.
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0 && state_ == State::Pinging) {
        transition(state_, State::Open);
        ping_timer_.arm(cfg_.h2_ping_interval);
      }
      break;
    case NGHTTP2_GOAWAY:
      // RFC 9113 §6.8: nghttp2 closes the streams above last-stream-id with
      // REFUSED_STREAM (their exchanges retry them); the rest run on.
      start_draining();
      check_idle();
      break;
    default:
      break;
  }
  return 0;
}

int H2Session::on_data_chunk(int32_t id, std::string_view data) {
  H2Stream* s = stream(id);
  if (s == nullptr) {
    nghttp2_session_consume(ng_.get(), id, data.size());  // a stream we let go: acknowledge only
    return 0;
  }
  if (read_touched_.empty() || read_touched_.back() != id) read_touched_.push_back(id);
  s->on_data(data);
  return 0;
}

int H2Session::on_stream_close(int32_t id, uint32_t error_code) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return 0;
  H2Stream* s = it->second;
  forget(it);
  s->on_closed(error_code);
  check_idle();
  return 0;
}

int H2Session::on_frame_not_send(const nghttp2_frame* frame) {
  // A request HEADERS that could not go out (the server's GOAWAY arrived
  // after it was submitted): the server never saw it.
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto it = streams_.find(frame->hd.stream_id);
  if (it == streams_.end()) return 0;
  H2Stream* s = it->second;
  forget(it);
  s->on_not_sent();
  check_idle();
  return 0;
}

}  // namespace tlsfront::upstream
