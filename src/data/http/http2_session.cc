#include "data/http/http2_session.h"

#include <openssl/x509v3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "log/log.h"
#include "util/state.h"

namespace tlsfront::http {
namespace {

#define TLSFRONT_SESSION static_cast<Http2Session*>(user_data)

int on_begin_frame_cb(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) noexcept {
  return TLSFRONT_SESSION->on_begin_frame(hd);
}

int on_begin_headers_cb(nghttp2_session*, const nghttp2_frame* frame, void* user_data) noexcept {
  return TLSFRONT_SESSION->on_begin_headers(frame);
}

int on_header_cb(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                 const uint8_t* value, size_t valuelen, uint8_t, void* user_data) noexcept {
  return TLSFRONT_SESSION->on_header(frame, std::string_view(reinterpret_cast<const char*>(name), namelen),
                                     std::string_view(reinterpret_cast<const char*>(value), valuelen));
}

int on_frame_recv_cb(nghttp2_session*, const nghttp2_frame* frame, void* user_data) noexcept {
  return TLSFRONT_SESSION->on_frame_recv(frame);
}

int on_data_chunk_recv_cb(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                          void* user_data) noexcept {
  return TLSFRONT_SESSION->on_data_chunk(stream_id, std::string_view(reinterpret_cast<const char*>(data), len));
}

int on_stream_close_cb(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data) noexcept {
  return TLSFRONT_SESSION->on_stream_close(stream_id, error_code);
}

int on_frame_send_cb(nghttp2_session*, const nghttp2_frame* frame, void* user_data) noexcept {
  return TLSFRONT_SESSION->on_frame_send(frame);
}

#undef TLSFRONT_SESSION

// Built once, shared read-only by every session of every worker.
const nghttp2_session_callbacks* callbacks() {
  static const Nghttp2CallbacksPtr table = [] {
    nghttp2_session_callbacks* cb = nullptr;
    if (nghttp2_session_callbacks_new(&cb) != 0) std::abort();  // OOM
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame_cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers_cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header_cb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv_cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk_recv_cb);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close_cb);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send_cb);
    H2ControlBudget::drop_unknown_frames(cb);
    return Nghttp2CallbacksPtr(cb);
  }();
  return table.get();
}

}  // namespace

Http2Session::Http2Session(const SessionEnv& env, ClientTransport* transport, ConnectionInfo info, X509* certificate)
    : env_(env),
      transport_(transport),
      info_(std::move(info)),
      certificate_(certificate) {
  const config::Http2& cfg = env_.config->http2;
  nghttp2_option* opt_raw = nullptr;
  if (nghttp2_option_new(&opt_raw) != 0) std::abort();  // OOM
  Nghttp2OptionPtr opt(opt_raw);
  // WINDOW_UPDATE only once the upstream took the bytes (nghttp2_session_consume).
  nghttp2_option_set_no_auto_window_update(opt.get(), 1);
  // A header block may span max_header_list_size / 16 KiB CONTINUATION frames, at least nghttp2's 8.
  nghttp2_option_set_max_continuations(opt.get(), std::max<size_t>(8, cfg.max_header_list_size / 16384 + 2));
  H2ControlBudget::see_unknown_frames(opt.get());  // so that on_begin_frame charges them
  nghttp2_session* raw = nullptr;
  if (nghttp2_session_server_new3(&raw, callbacks(), this, opt.get(), memory_.mem()) != 0) std::abort();  // OOM
  session_.reset(raw);

  // RFC 8441 §3: extended CONNECT only where some route can open a tunnel;
  // without the setting nghttp2 refuses :protocol (a stream error).
  const bool connect_protocol = std::any_of(env_.config->routes.begin(), env_.config->routes.end(),
                                            [](const config::Route& r) { return !r.upgrade.empty(); });
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, cfg.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, cfg.initial_window_size},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, cfg.max_frame_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, cfg.max_header_list_size},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      // RFC 9218 §2.1: no RFC 7540 priority tree to maintain (or abuse).
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
      {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},  // last: left out when no route allows it
  };
  nghttp2_submit_settings(session_.get(), NGHTTP2_FLAG_NONE, settings,
                          std::size(settings) - (connect_protocol ? 0 : 1));
  // Request DATA is acknowledged per connection at once and per stream only
  // when forwarded, so the connection window never stalls one stream behind
  // another's slow upstream; a larger window spares WINDOW_UPDATE round trips.
  const int64_t conn_window = std::min<int64_t>(int64_t{cfg.initial_window_size} * 16, (int64_t{1} << 31) - 1);
  nghttp2_session_set_local_window_size(session_.get(), NGHTTP2_FLAG_NONE, 0, static_cast<int32_t>(conn_window));
  update_timer();
  schedule_send();
}

Http2Session::~Http2Session() {
  LoopContext::of(env_.loop).cancel_flush(this);
  for (auto& [id, stream] : streams_) stream->on_closed(NGHTTP2_CANCEL);
  streams_.clear();
}

Http2Stream* Http2Session::find(int32_t stream_id) const {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void Http2Session::schedule_send() {
  if (!closed_) LoopContext::of(env_.loop).schedule_flush(this);
}

bool Http2Session::wants_input() const { return !closed_ && !input_stopped_ && !output_congested(); }

void Http2Session::on_data(std::string_view data) {
  if (closed_ || input_stopped_) return;
  frame_scanner_.scan(data, self_dependent_, data_streams_);
  if (!data_streams_.empty()) find_closed_data();
  ssize_t rv = nghttp2_session_mem_recv(session_.get(), reinterpret_cast<const uint8_t*>(data.data()), data.size());
  if (rv < 0) {
    // A callback that set terminate_code_ logged its reason already.
    uint32_t code = terminate_code_.value_or(NGHTTP2_PROTOCOL_ERROR);
    if (!terminate_code_) {
      if (rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS) code = NGHTTP2_ENHANCE_YOUR_CALM;
      if (rv == NGHTTP2_ERR_FLOODED && env_.counters != nullptr) {
        env_.counters->count_flood(metrics::Flood::H2ControlFrames);
      }
      log::info("conn={} client={}:{} h2: {}; GOAWAY {}", info_.id, info_.remote_addr, info_.remote_port,
                nghttp2_strerror(static_cast<int>(rv)), nghttp2_http2_strerror(code));
    }
    terminate(code);
  }
  if (!self_dependent_.empty()) reset_self_dependent();
  if (!closed_data_.empty()) answer_closed_data();
  // Exchanges start after the whole read was processed: a stream opened and
  // reset within it never costs an upstream connection.
  std::vector<int32_t> starts;
  starts.swap(to_start_);
  for (int32_t id : starts) {
    if (Http2Stream* s = find(id); s && !closed_ && !input_stopped_) s->start();
  }
  schedule_send();
}

void Http2Session::terminate(uint32_t error_code) {
  input_stopped_ = true;
  if (!goaway_sent_) {
    goaway_sent_ = true;
    nghttp2_session_terminate_session(session_.get(), error_code);
  }
  schedule_send();
}

void Http2Session::flush() {
  if (closed_) return;
  while (!output_congested()) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_.get(), &data);
    if (n < 0) {
      log::debug("conn={} h2 send: {}", info_.id, nghttp2_strerror(static_cast<int>(n)));
      close_now(false);
      return;
    }
    if (n == 0) break;
    frames_written_ = true;
    transport_->send(std::string_view(reinterpret_cast<const char*>(data), static_cast<size_t>(n)));
  }
  if (terminate_code_ && !goaway_sent_) {
    terminate(*terminate_code_);  // set inside a callback: act now that nghttp2 is not running
    flush();
    return;
  }
  const bool want_write = nghttp2_session_want_write(session_.get()) != 0;
  if (!want_write && (!nghttp2_session_want_read(session_.get()) || input_stopped_)) {
    close_now(true);
    return;
  }
  update_timer();
}

void Http2Session::close_now(bool notify) {
  if (closed_) return;
  closed_ = true;
  transport_->stop_timer();
  for (auto& [id, stream] : streams_) {
    stream->on_closed(NGHTTP2_CANCEL);
    LoopContext::of(env_.loop).defer_delete(std::move(stream));
  }
  streams_.clear();
  finished_streams_ = pending_streams_ = 0;
  transport_->close(notify);
}

void Http2Session::release_frame_buffer() {
  // nghttp2's outbound frame buffer holds nothing once no frame is being
  // sent, and its large inbound buffers (a frame's payload, a header value
  // being decoded) nothing between frames outside a header block.
  if (!frames_written_ || input_stopped_ || header_block_open_ || !frame_scanner_.between_frames() ||
      nghttp2_session_want_write(session_.get()) != 0) {
    return;
  }
  frames_written_ = false;
  memory_.discard();
}

void Http2Session::update_timer() {
#if TLSFRONT_CHECK_TRANSITIONS
  // The counts against a walk over the streams (sanitizer and fuzz builds).
  size_t finished = 0, pending = 0;
  for (const auto& [id, st] : streams_) {
    finished += st->response_finished();
    pending += st->has_pending_output();
  }
  if (finished != finished_streams_ || pending != pending_streams_) {
    std::fprintf(stderr, "Http2Session: %zu/%zu streams finished, %zu/%zu with pending output (counted/walked)\n",
                 finished_streams_, finished, pending_streams_, pending);
    std::abort();
  }
#endif
  TimerPurpose want = TimerPurpose::None;
  if (header_block_open_) {
    want = TimerPurpose::Header;  // armed once, when the block opened: CONTINUATIONs do not extend it
  } else if (output_congested()) {
    want = TimerPurpose::Send;
  } else if (finished_streams_ == streams_.size()) {
    // No stream or only ones whose response is out (request bodies being
    // dropped): idle, whatever the client keeps sending.
    want = TimerPurpose::Idle;
  } else if (pending_streams_ > 0) {
    want = TimerPurpose::Stall;
  }
  if (want == timer_) return;
  timer_ = want;
  release_due_ = false;
  switch (want) {
    case TimerPurpose::None: transport_->stop_timer(); break;
    case TimerPurpose::Header: transport_->arm_timer(env_.config->timeouts.header); break;
    case TimerPurpose::Idle:
      // The frame buffer's pages go once the session has been idle for
      // kFrameBufferRelease (on_timer), then the rest of the keepalive runs.
      release_due_ = streams_.empty() && frames_written_ && env_.config->timeouts.keepalive > kFrameBufferRelease;
      transport_->arm_timer(release_due_ ? kFrameBufferRelease : env_.config->timeouts.keepalive);
      if (streams_.empty()) transport_->release_buffers();  // what was sent goes out first
      break;
    case TimerPurpose::Send: transport_->arm_timer(env_.config->timeouts.send); break;
    case TimerPurpose::Stall: transport_->arm_timer(env_.config->timeouts.send); break;
  }
}

void Http2Session::on_timer() {
  TimerPurpose purpose = timer_;
  timer_ = TimerPurpose::None;
  if (closed_) return;
  switch (purpose) {
    case TimerPurpose::Header:
      // The HTTP/2 form of a slowloris: a header block that never ends holds
      // a stream slot and HPACK state. Like an HTTP/1.1 head past
      // timeouts.header, the connection ends (GOAWAY, then close).
      log::info("conn={} client={}:{} h2: header block not completed within {} ms; GOAWAY", info_.id,
                info_.remote_addr, info_.remote_port, env_.config->timeouts.header.count());
      terminate(NGHTTP2_PROTOCOL_ERROR);
      return;
    case TimerPurpose::Idle:
      if (release_due_) {
        release_due_ = false;
        release_frame_buffer();
        timer_ = TimerPurpose::Idle;
        transport_->arm_timer(env_.config->timeouts.keepalive - kFrameBufferRelease);
        return;
      }
      // RFC 9113 §6.8: GOAWAY NO_ERROR, then close once it is written.
      terminate(NGHTTP2_NO_ERROR);
      return;
    case TimerPurpose::Send:
      close_now(false);  // the client stopped reading
      return;
    case TimerPurpose::Stall: {
      // Streams whose output has not moved for the whole timeout (one armed
      // later waits for the next firing: at most twice the timeout).
      const uint64_t now = uv_now(env_.loop);
      const auto timeout = static_cast<uint64_t>(env_.config->timeouts.send.count());
      for (auto& [id, s] : streams_) {
        if (s->has_pending_output() && now - s->output_moved_at() >= timeout) {
          log::info("conn={} client={}:{} h2: stream {} got no window for {} ms; RST_STREAM", info_.id,
                    info_.remote_addr, info_.remote_port, id, env_.config->timeouts.send.count());
          s->abort_stalled();
        }
      }
      schedule_send();
      break;
    }
    case TimerPurpose::None:
      break;
  }
}

void Http2Session::on_output_drained() {
  if (closed_) return;
  if (!drain_waiting_.empty()) {
    // A stream still congested enrols again (Http2Stream::output_congested).
    std::vector<int32_t> ids;
    ids.swap(drain_waiting_);
    for (int32_t id : ids) {
      if (Http2Stream* s = find(id)) s->on_drain_notice();
      if (closed_) return;
    }
  }
  schedule_send();
  if (wants_input()) transport_->resume_input();
}

void Http2Session::on_client_closed() { close_now(false); }

void Http2Session::on_handshake_done(double tls_handshake_ms) {
  info_.early_data = false;
  info_.tls_handshake_ms = tls_handshake_ms;
  std::vector<int32_t> ids;
  ids.reserve(streams_.size());
  for (const auto& [id, s] : streams_) ids.push_back(id);
  for (int32_t id : ids) {
    if (Http2Stream* s = find(id)) s->on_handshake_done();
  }
  schedule_send();
}

void Http2Session::on_shutdown() {
  if (closed_ || goaway_sent_) return;
  // RFC 9113 §6.8: streams up to the last one processed finish; later ones
  // are refused by nghttp2; the connection closes when none is left.
  goaway_sent_ = true;
  nghttp2_submit_goaway(session_.get(), NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_.get()),
                        NGHTTP2_NO_ERROR, nullptr, 0);
  schedule_send();
}

bool Http2Session::close_if_idle() {
  if (closed_ || timer_ != TimerPurpose::Idle) return false;
  terminate(NGHTTP2_NO_ERROR);  // as the keepalive timeout does (RFC 9113 §6.8)
  return true;
}

bool Http2Session::certificate_covers(std::string_view host) const {
  if (!certificate_ || host.empty() || host == covered_host_) return true;
  std::string h(host);
  if (h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (X509_check_ip_asc(certificate_, h.c_str(), 0) != 1 &&
      X509_check_host(certificate_, h.data(), h.size(), 0, nullptr) != 1) {
    return false;
  }
  covered_host_.assign(host);  // the SAN parse above was ~4% of a stream's CPU: once per connection
  return true;
}

int Http2Session::on_begin_headers(const nghttp2_frame* frame) {
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  if (input_stopped_) return NGHTTP2_ERR_CALLBACK_FAILURE;
  last_stream_id_ = std::max(last_stream_id_, frame->hd.stream_id);
  const uint64_t limit = env_.config->limits.keepalive_requests;
  if (info_.requests >= limit) {
    // Past [limits] keepalive_requests, sent before our GOAWAY reached the
    // client: refused, never started nor logged; the client retries it on a
    // new connection (REFUSED_STREAM, RFC 9113 §8.7).
    nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
    remember_closed(frame->hd.stream_id, ClosedBy::Us);
    schedule_send();
    return 0;
  }
  ++info_.requests;
  control_frames_.earn();  // a client may widen a new stream's window at once (gRPC does)
  if (info_.requests == limit && !goaway_sent_) {
    // RFC 9113 §6.8: this stream is the last one served; the connection
    // closes once it is done.
    goaway_sent_ = true;
    nghttp2_submit_goaway(session_.get(), NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR, nullptr, 0);
    schedule_send();
  }
  streams_[frame->hd.stream_id] = std::make_unique<Http2Stream>(this, frame->hd.stream_id);
  update_timer();
  return 0;
}

int Http2Session::on_header(const nghttp2_frame* frame, std::string_view name, std::string_view value) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Http2Stream* s = find(frame->hd.stream_id);
  if (s == nullptr) return 0;
  if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    s->on_header(name, value);
  } else {
    s->on_trailer(name, value);  // the request's trailer section (RFC 9113 §8.1)
  }
  return 0;
}

int Http2Session::on_frame_recv(const nghttp2_frame* frame) {
  control_frames_.received(*frame);
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  Http2Stream* s = frame->hd.stream_id != 0 ? find(frame->hd.stream_id) : nullptr;
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
      if (header_block_open_) {
        header_block_open_ = false;  // END_HEADERS arrived on the last CONTINUATION
        update_timer();
      }
      if (!s) break;
      if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        if (s->on_request_head(end_stream)) to_start_.push_back(s->id());
      } else if (end_stream) {
        s->on_request_end();
      }
      break;
    case NGHTTP2_DATA:
      // Padding counts against flow control but never reaches a stream.
      if (frame->data.padlen > 0) nghttp2_session_consume(session_.get(), frame->hd.stream_id, frame->data.padlen);
      if (s && end_stream) s->on_request_end();
      break;
    case NGHTTP2_RST_STREAM:
      if (s) {
        s->on_client_reset();
        if (!s->response_finished()) count_reset();
      }
      break;
    case NGHTTP2_SETTINGS:
      if (settings_overflow_window(frame) && !terminate_code_) {
        log::info("conn={} client={}:{} h2: SETTINGS_INITIAL_WINDOW_SIZE overflows a stream window; GOAWAY",
                  info_.id, info_.remote_addr, info_.remote_port);
        terminate_code_ = NGHTTP2_FLOW_CONTROL_ERROR;
      }
      break;
    default:
      break;
  }
  return terminate_code_ ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

int Http2Session::on_data_chunk(int32_t stream_id, std::string_view data) {
  // Per connection at once; per stream when the upstream took it (Http2Stream).
  nghttp2_session_consume_connection(session_.get(), data.size());
  if (Http2Stream* s = find(stream_id)) {
    s->on_request_data(data);
  } else {
    nghttp2_session_consume_stream(session_.get(), stream_id, data.size());
  }
  return 0;
}

int Http2Session::on_stream_close(int32_t stream_id, uint32_t error_code) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return 0;
  // A stream we reset for the client's protocol error counts as a reset too
  // ("MadeYouReset"): it cost work and completed nothing.
  if (error_code == NGHTTP2_PROTOCOL_ERROR && !it->second->response_finished()) count_reset();
  remember_closed(stream_id, it->second->reset_by_client() ? ClosedBy::ClientReset
                             : error_code == NGHTTP2_NO_ERROR && it->second->ended_by_both_sides()
                                 ? ClosedBy::BothEnded
                                 : ClosedBy::Us);
  it->second->on_closed(error_code);
  if (it->second->response_finished()) --finished_streams_;
  if (it->second->has_pending_output()) --pending_streams_;
  LoopContext::of(env_.loop).defer_delete(std::move(it->second));
  streams_.erase(it);
  update_timer();
  return 0;
}

int Http2Session::on_frame_send(const nghttp2_frame* frame) {
  if (frame->hd.type == NGHTTP2_HEADERS) {
    if (Http2Stream* s = find(frame->hd.stream_id)) s->on_headers_sent();
  }
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
    if (Http2Stream* s = find(frame->hd.stream_id)) s->on_response_end_sent();
  }
  return 0;
}

}  // namespace tlsfront::http
