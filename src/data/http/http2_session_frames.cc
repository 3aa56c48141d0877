// Http2Session's frame rules, applied as each client frame begins
// (on_begin_frame, before nghttp2 acts on it): the control-frame budget
// (H2ControlBudget), RFC 9113 §5.1 for frames on closed streams, PRIORITY
// on stream 0 (§6.3) and on itself (§5.3.1), the SETTINGS snapshot that
// §6.9.2's overflow check replays, and the rapid-reset budget. The session,
// its streams and output: http2_session.cc.
#include <algorithm>

#include "data/http/http2_session.h"
#include "log/log.h"

namespace tlsfront::http {

int Http2Session::on_begin_frame(const nghttp2_frame_hd* hd) {
  // A header block is open from a HEADERS without END_HEADERS until the
  // CONTINUATION that ends it; any other frame means it ended (or nghttp2
  // failed the connection).
  const bool block_open =
      (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION) && (hd->flags & NGHTTP2_FLAG_END_HEADERS) == 0;
  if (block_open != header_block_open_) {
    header_block_open_ = block_open;
    update_timer();
  }
  if (hd->type == NGHTTP2_SETTINGS && (hd->flags & NGHTTP2_FLAG_ACK) == 0) {
    windows_before_settings_.clear();
    initial_window_before_settings_ =
        nghttp2_session_get_remote_settings(session_.get(), NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE);
    for (const auto& [id, s] : streams_) {
      windows_before_settings_.push_back(nghttp2_session_get_stream_remote_window_size(session_.get(), id));
    }
  }
  // With NO_RFC7540_PRIORITIES nghttp2 drops PRIORITY frames unseen: check
  // them here. RFC 9113 §6.3: one on stream 0 is a connection error.
  if (hd->type == NGHTTP2_PRIORITY && hd->stream_id == 0) {
    log::info("conn={} client={}:{} h2: PRIORITY on stream 0; GOAWAY PROTOCOL_ERROR", info_.id, info_.remote_addr,
              info_.remote_port);
    terminate_code_ = NGHTTP2_PROTOCOL_ERROR;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  if (!control_frames_.admit(session_.get(), *hd))
    return flood("control frame flood", metrics::Flood::H2ControlFrames);
  // (DATA for a closed stream never gets here: nghttp2 drops it unseen, and
  // find_closed_data judges it.)
  if (hd->type == NGHTTP2_HEADERS && hd->stream_id != 0 && hd->stream_id <= last_stream_id_ &&
      find(hd->stream_id) == nullptr) {
    return on_headers_for_closed_stream(hd->stream_id);
  }
  return 0;
}

const Http2Session::ClosedStream* Http2Session::recently_closed(int32_t stream_id) const {
  auto it = std::find_if(recently_closed_.begin(), recently_closed_.end(),
                         [stream_id](const ClosedStream& c) { return c.id == stream_id; });
  return it == recently_closed_.end() ? nullptr : &*it;
}

int Http2Session::on_headers_for_closed_stream(int32_t stream_id) {
  const ClosedStream* closed = recently_closed(stream_id);
  if (closed == nullptr) {
    // §5.1.1: a HEADERS frame on a lower, never opened (or long closed)
    // stream is a connection error; nghttp2 1.52 ignores it.
    log::info("conn={} client={}:{} h2: HEADERS on stream {} after {}; GOAWAY PROTOCOL_ERROR", info_.id,
              info_.remote_addr, info_.remote_port, stream_id, last_stream_id_);
    terminate_code_ = NGHTTP2_PROTOCOL_ERROR;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  const uint32_t error = answer_closed_stream(*closed, "HEADERS");
  return error != 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

uint32_t Http2Session::answer_closed_stream(const ClosedStream& closed, const char* type) {
  switch (closed.by) {
    case ClosedBy::Us:
      // §5.1, "closed": frames the client sent before it saw our
      // RST_STREAM may still arrive; they are ignored.
      return 0;
    case ClosedBy::ClientReset:
      // §5.1: any frame but PRIORITY after the client's own RST_STREAM is
      // a stream error STREAM_CLOSED. The answer is charged as a control
      // frame: a loop of them moves nothing forward.
      if (!control_frames_.charge()) {
        (void)flood("control frame flood", metrics::Flood::H2ControlFrames);
        return NGHTTP2_ENHANCE_YOUR_CALM;
      }
      log::debug("conn={} h2: {} on stream {} after the client's RST_STREAM; RST_STREAM STREAM_CLOSED", info_.id, type,
                 closed.id);
      nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, closed.id, NGHTTP2_STREAM_CLOSED);
      schedule_send();
      return 0;
    case ClosedBy::BothEnded:
      // §5.1: frames after END_STREAM both ways (other than WINDOW_UPDATE,
      // PRIORITY, RST_STREAM) are a connection error STREAM_CLOSED, as
      // nghttp2 already answers while the stream is half-closed.
      if (!terminate_code_) {
        log::info("conn={} client={}:{} h2: {} on closed stream {}; GOAWAY STREAM_CLOSED", info_.id, info_.remote_addr,
                  info_.remote_port, type, closed.id);
        terminate_code_ = NGHTTP2_STREAM_CLOSED;
      }
      return *terminate_code_;
  }
  return 0;
}

void Http2Session::find_closed_data() {
  // A stream closed now stays closed whatever the read holds; one the read
  // itself closes (the client's RST_STREAM before its DATA) is not caught
  // here, and its DATA ignored as nghttp2 does.
  for (int32_t id : data_streams_) {
    if (id == 0 || id > last_stream_id_ || find(id) != nullptr) continue;
    const ClosedStream* closed = recently_closed(id);
    if (closed != nullptr && closed->by != ClosedBy::Us) closed_data_.push_back(*closed);
  }
  data_streams_.clear();
}

void Http2Session::answer_closed_data() {
  for (const ClosedStream& closed : closed_data_) {
    if (input_stopped_) break;
    if (answer_closed_stream(closed, "DATA") != 0) {
      terminate(*terminate_code_);
      break;
    }
  }
  closed_data_.clear();
}

void Http2Session::remember_closed(int32_t stream_id, ClosedBy by) {
  if (recently_closed_.size() < kRecentlyClosed) {
    recently_closed_.push_back({stream_id, by});
  } else {
    recently_closed_[closed_next_] = {stream_id, by};
    closed_next_ = (closed_next_ + 1) % kRecentlyClosed;
  }
}

void Http2Session::reset_self_dependent() {
  // §5.3.1: a stream error PROTOCOL_ERROR (each such frame was charged as a
  // PRIORITY frame already). On a stream still open this ends its exchange,
  // and on_stream_close counts it as a reset. An idle stream cannot take a
  // RST_STREAM (§6.4), so there it is a connection error, as nghttp2 makes
  // it when RFC 7540 priorities are on.
  for (int32_t id : self_dependent_) {
    if (input_stopped_) break;
    if (id > last_stream_id_) {
      log::info("conn={} client={}:{} h2: PRIORITY on idle stream {} depends on itself; GOAWAY PROTOCOL_ERROR",
                info_.id, info_.remote_addr, info_.remote_port, id);
      terminate(NGHTTP2_PROTOCOL_ERROR);
      break;
    }
    log::debug("conn={} h2: PRIORITY on stream {} depends on itself; RST_STREAM PROTOCOL_ERROR", info_.id, id);
    nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, id, NGHTTP2_PROTOCOL_ERROR);
    schedule_send();
  }
  self_dependent_.clear();
}

int Http2Session::flood(const char* what, metrics::Flood kind) {
  if (!terminate_code_) {
    log::info("conn={} client={}:{} h2: {}; GOAWAY ENHANCE_YOUR_CALM", info_.id, info_.remote_addr, info_.remote_port,
              what);
    if (env_.counters != nullptr) env_.counters->count_flood(kind);
    terminate_code_ = NGHTTP2_ENHANCE_YOUR_CALM;
  }
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

void Http2Session::count_reset() {
  if (!resets_.take()) (void)flood("streams reset faster than they complete (rapid reset)", metrics::Flood::H2Resets);
}

bool Http2Session::settings_overflow_window(const nghttp2_frame* frame) {
  if (frame->hd.flags & NGHTTP2_FLAG_ACK) return false;
  // nghttp2 applied the entries in order (a stream whose window would
  // overflow keeps it and is reset); replay that from the windows before.
  int64_t initial = initial_window_before_settings_;
  bool overflow = false;
  for (size_t i = 0; i < frame->settings.niv; ++i) {
    const nghttp2_settings_entry& e = frame->settings.iv[i];
    if (e.settings_id != NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE) continue;
    const int64_t delta = int64_t{e.value} - initial;
    for (int64_t& w : windows_before_settings_) {
      if (w + delta > NGHTTP2_MAX_WINDOW_SIZE) {
        overflow = true;
      } else {
        w += delta;
      }
    }
    initial = e.value;
  }
  return overflow;
}

}  // namespace tlsfront::http
