#include "data/upstream/h2_session.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <sys/socket.h>

#include "config/units.h"
#include "data/upstream/h2_pool.h"
#include "util/nghttp2_fields.h"

namespace tlsfront::upstream {
namespace {

// Output pulled from nghttp2 per write: past this the socket is slow and
// request bodies wait in their streams (bounded there) instead.
constexpr size_t kPullHighWatermark = 256 * 1024;
// The connection window we open (RFC 9113 §6.9.2): streams paused by their
// clients hold at most one stream window (65,535) each of it.
constexpr int32_t kConnectionWindow = 16 * 1024 * 1024;

#define TLSFRONT_H2 static_cast<H2Session*>(user_data)

int begin_frame_cb(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) {
  return TLSFRONT_H2->on_begin_frame(hd);
}
int begin_headers_cb(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  return TLSFRONT_H2->on_begin_headers(frame);
}
int header_cb(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen, const uint8_t* value,
              size_t valuelen, uint8_t, void* user_data) {
  return TLSFRONT_H2->on_header(frame, std::string_view(reinterpret_cast<const char*>(name), namelen),
                                std::string_view(reinterpret_cast<const char*>(value), valuelen));
}
int frame_recv_cb(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  return TLSFRONT_H2->on_frame_recv(frame);
}
int data_chunk_cb(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len, void* user_data) {
  return TLSFRONT_H2->on_data_chunk(stream_id, std::string_view(reinterpret_cast<const char*>(data), len));
}
int stream_close_cb(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data) {
  return TLSFRONT_H2->on_stream_close(stream_id, error_code);
}
int frame_not_send_cb(nghttp2_session*, const nghttp2_frame* frame, int, void* user_data) {
  return TLSFRONT_H2->on_frame_not_send(frame);
}
#undef TLSFRONT_H2

ssize_t body_read_cb(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags,
                     nghttp2_data_source* source, void*) {
  // The stream is looked up, never dereferenced from the source: an
  // exchange may have let it go since the request was submitted.
  auto* session = static_cast<H2Session*>(source->ptr);
  H2Stream* stream = session->stream(stream_id);
  if (stream == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // resets the stream
  const ssize_t n = stream->read_body(buf, length, data_flags);
  if (n > 0) session->note_data_sent(static_cast<size_t>(n));
  return n;
}

nghttp2_option* options() {
  static nghttp2_option* opt = [] {
    nghttp2_option* o = nullptr;
    nghttp2_option_new(&o);
    // Flow control is ours: WINDOW_UPDATE only for bytes a handler took.
    nghttp2_option_set_no_auto_window_update(o, 1);
    // Until the server's SETTINGS say otherwise (RFC 9113 §6.5.2's default
    // is unlimited; 100 is what §5.1.2 recommends a server allow).
    nghttp2_option_set_peer_max_concurrent_streams(o, 100);
    // HTTP messaging stays on (no nghttp2_option_set_no_http_messaging):
    // the heads H2Stream passes on are well-formed by nghttp2's field checks.
    H2ControlBudget::see_unknown_frames(o);  // so that they are charged (on_begin_frame)
    return o;
  }();
  return opt;
}

nghttp2_session_callbacks* callbacks() {
  static nghttp2_session_callbacks* cbs = [] {
    nghttp2_session_callbacks* c = nullptr;
    nghttp2_session_callbacks_new(&c);
    nghttp2_session_callbacks_set_on_begin_frame_callback(c, begin_frame_cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(c, begin_headers_cb);
    nghttp2_session_callbacks_set_on_header_callback(c, header_cb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, frame_recv_cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, data_chunk_cb);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, stream_close_cb);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(c, frame_not_send_cb);
    H2ControlBudget::drop_unknown_frames(c);
    return c;
  }();
  return cbs;
}

}  // namespace

H2Session::H2Session(uv_loop_t* loop, H2Pool* pool, const config::Upstream& cfg, TlsTarget* tls)
    : loop_(loop), pool_(pool), cfg_(cfg), socket_(loop, this, tls, UpstreamSocket::FloodAnswer::Fail) {
  nghttp2_session* s = nullptr;
  // The frame buffer in pages of its own, as for client sessions (Nghttp2Memory).
  if (nghttp2_session_client_new3(&s, callbacks(), this, options(), memory_.mem()) != 0) std::abort();  // OOM
  ng_.reset(s);
  // RFC 9113 §3.4: the preface, then SETTINGS. We push nothing back, and
  // send no RFC 7540 priority signals (RFC 9218 §2.1): nghttp2 then keeps
  // no dependency tree for the streams (inserting and removing each one
  // cost instructions on every request; streams' DATA go round-robin).
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}, {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1}};
  nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(s, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
}

H2Session::~H2Session() {
  LoopContext::of(loop_).cancel_flush(this);
  pool_ = nullptr;  // its pool is freeing it
  close(UpstreamFailure::Closed, make_error(Errc::Upstream, "upstream connection closed"));
}

H2Stream* H2Session::stream(int32_t id) const {
  if (id == last_id_) return last_;
  auto it = streams_.find(id);
  if (it == streams_.end()) return nullptr;
  last_id_ = id;
  last_ = it->second;
  return last_;
}

void H2Session::forget(std::unordered_map<int32_t, H2Stream*>::iterator it) {
  if (it->first == last_id_) last_id_ = 0;
  streams_.erase(it);
}

Status H2Session::connect(const sockaddr_storage& addr) {
  timer_.init(
      loop_, [](void* self) { static_cast<H2Session*>(self)->on_timer(); }, this);
  ping_timer_.init(
      loop_, [](void* self) { static_cast<H2Session*>(self)->on_ping_timer(); }, this);
  stream_timer_.init(
      loop_, [](void* self) { static_cast<H2Session*>(self)->on_stream_timer(); }, this);
  if (Status st = socket_.connect(addr); !st) {
    transition(state_, State::Closed);
    return st;
  }
  timer_.arm(cfg_.connect_timeout);
  return {};
}

bool H2Session::has_room() const {
  if (!usable() || streams_opened_ >= cfg_.keepalive_requests) return false;
  // Until the server's SETTINGS arrive its limit is unknown: the streams
  // wait here (nghttp2 holds any above the default) rather than each burst
  // opening connections the limit may turn out not to need.
  if (!settings_received_) return true;
  const uint32_t max = nghttp2_session_get_remote_settings(ng_.get(), NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return streams_.size() < max;
}

Status H2Session::submit(H2Stream* stream, const std::vector<http::FieldView>& fields, bool has_body) {
  // Every field held (its name lowercase, both views alive until the
  // frame is sent), in one array on the stack: a request head rarely has
  // more than kOnStack fields; more take the thread's FieldBlock.
  constexpr size_t kOnStack = 32;
  nghttp2_nv on_stack[kOnStack];
  nghttp2_nv* nva = on_stack;
  if (fields.size() > kOnStack) nva = FieldBlock::start().reserve_nva(fields.size());
  const bool first = streams_opened_ == 0;
  for (size_t i = 0; i < fields.size(); ++i)
    nva[i] = held_field(fields[i].name, fields[i].value, fields[i].no_index && !first);
  nghttp2_data_provider provider{};
  provider.source.ptr = this;
  provider.read_callback = body_read_cb;
  const int32_t id =
      nghttp2_submit_request(ng_.get(), nullptr, nva, fields.size(), has_body ? &provider : nullptr, nullptr);
  if (id < 0) return make_error(Errc::Upstream, std::string("HTTP/2 request refused: ") + nghttp2_strerror(id));
  stream->bind(this, id);
  streams_[id] = stream;
  ++streams_opened_;
  control_budget_.earn();  // the server may answer a new stream with a WINDOW_UPDATE
  if (!connecting()) timer_.stop();  // no longer idle (a connecting one keeps its connect timer)
  ping_timer_.stop();
  if (pool_ && streams_.size() == 1) pool_->update_idle_gauge();
  if (state_ == State::Open) stream->on_joined_open();
  if (state_ == State::Open && streams_opened_ >= cfg_.keepalive_requests) start_draining();
  schedule_send();
  return {};
}

void H2Session::schedule_send() {
  if (state_ == State::Open || state_ == State::Pinging || state_ == State::Draining) {
    LoopContext::of(loop_).schedule_flush(this);
  }
}

void H2Session::release(H2Stream* stream, bool reset) {
  const int32_t id = stream->id();
  auto it = streams_.find(id);
  if (it == streams_.end() || it->second != stream) return;
  forget(it);
  if (state_ == State::Closed) {
    // nghttp2 sends nothing more.
  } else if (nghttp2_session_find_stream(ng_.get(), id) == nullptr) {
    // Its HEADERS has not gone out (nghttp2 opens a client stream when it
    // sends them; a stream it closed has left streams_): RST_STREAM cancels
    // the queued frame, so the upstream never gets a request nobody waits
    // for, and nghttp2 never reads its fields (submit(): not copied).
    nghttp2_submit_rst_stream(ng_.get(), NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  } else if (in_recv_ && !reset) {
    // Let go during a read, most often the one that carried its
    // END_STREAM, on which nghttp2 closes the stream once the frame is
    // processed: only a stream still open after the read is reset
    // (on_read). Resetting every stream had cost the upstream a
    // 13-octet frame per request.
    released_in_recv_.push_back(id);
  } else {
    // Still open on our side: the exchange is done with it (RFC 9113
    // §8.1: NO_ERROR after a complete response to an unfinished request).
    nghttp2_submit_rst_stream(ng_.get(), NGHTTP2_FLAG_NONE, id, reset ? NGHTTP2_CANCEL : NGHTTP2_NO_ERROR);
    schedule_send();
  }
  check_idle();
}

void H2Session::consume(int32_t id, size_t n) {
  if (state_ == State::Closed || n == 0) return;
  nghttp2_session_consume(ng_.get(), id, n);
  if (!in_recv_) schedule_send();
}

void H2Session::check_idle() {
  if (state_ == State::Closed || !streams_.empty()) return;
  if (state_ == State::Draining) {
    close_idle();
    return;
  }
  if (state_ == State::Open) {
    timer_.arm(cfg_.keepalive_timeout);
    if (cfg_.h2_ping_interval.count() > 0) ping_timer_.arm(cfg_.h2_ping_interval);
  }
  if (pool_) pool_->update_idle_gauge();
}

void H2Session::on_socket_handshaking() {
  // The connect timer goes on: connect_timeout covers the handshake too.
  transition(state_, State::Handshaking);
}

void H2Session::on_established() {
  transition(state_, State::Open);
  timer_.stop();
  schedule_send();
  // Handlers may close streams (and so this session) from here: by id.
  std::vector<int32_t> ids;
  ids.reserve(streams_.size());
  for (const auto& [id, s] : streams_) ids.push_back(id);
  for (int32_t id : ids) {
    if (H2Stream* s = stream(id)) s->on_connected();
  }
  // A handshake that began before a reload replaced the pool's TLS context
  // serves what waits here and takes nothing new (UpstreamPool::set_tls).
  const bool old_context = !socket_.tls_current();
  if (state_ == State::Open && (streams_opened_ >= cfg_.keepalive_requests || old_context)) start_draining();
  check_idle();
}

void H2Session::on_socket_end(int status, bool) {
  const char* what = state_ == State::Handshaking ? "upstream closed the connection during the TLS handshake"
                                                  : "upstream closed the HTTP/2 connection";
  close(status == UV_EOF ? UpstreamFailure::Closed : UpstreamFailure::Reset,
        make_error(Errc::Upstream, status == UV_EOF ? std::string(what)
                                                    : std::string("recv() failed: ") + uv_strerror(status)));
}

void H2Session::on_bytes(const char* data, size_t len) {
  in_recv_ = true;
  const ssize_t rc = nghttp2_session_mem_recv(ng_.get(), reinterpret_cast<const uint8_t*>(data), len);
  in_recv_ = false;
  if (state_ == State::Closed) return;
  // nghttp2's own bound: ACKs (SETTINGS, PING) queued faster than we write.
  if (rc < 0 && (flooded_ || rc == NGHTTP2_ERR_FLOODED)) {
    end_flood();
    return;
  }
  if (rc < 0) {
    close(UpstreamFailure::InvalidResponse,
          make_error(Errc::Protocol, std::string("upstream broke HTTP/2: ") + nghttp2_strerror(static_cast<int>(rc))));
    return;
  }
  for (int32_t id : released_in_recv_) {
    if (nghttp2_session_find_stream(ng_.get(), id) != nullptr) {
      nghttp2_submit_rst_stream(ng_.get(), NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
    }
  }
  released_in_recv_.clear();
  std::vector<int32_t> touched = std::move(read_touched_);
  read_touched_.clear();
  for (int32_t id : touched) {
    if (H2Stream* s = stream(id)) s->on_read_end();
    if (state_ == State::Closed) return;
  }
  schedule_send();  // which also closes a session nghttp2 is done with (flush)
}

void H2Session::flush() {
  if (state_ != State::Open && state_ != State::Pinging && state_ != State::Draining) return;
  bool capped = true;  // stopped at kPullHighWatermark, not because nghttp2 had nothing more
  while (socket_.writer().buffered_bytes() + out_.size() < kPullHighWatermark) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(ng_.get(), &data);
    if (n < 0) {
      close(UpstreamFailure::Reset,
            make_error(Errc::Upstream, std::string("HTTP/2 send failed: ") + nghttp2_strerror(static_cast<int>(n))));
      return;
    }
    if (n == 0) {
      capped = false;
      break;
    }
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (!out_.empty()) {
    // More waits in nghttp2 (several streams' bodies at once): the write's
    // completion (on_write_done) pulls it, in a later loop iteration. Had
    // the socket taken these bytes at once there would be no completion,
    // and nothing else might come to flush again (no client data left, no
    // frame from a server whose windows are open).
    if (capped) socket_.writer().queue_next();
    if (int rc = socket_.send(out_); rc != 0) {
      fail_write(make_error(Errc::Upstream, std::string("write: ") + uv_strerror(rc)));
      return;
    }
  }
  // nghttp2 wants neither to read nor to write: the server ended the
  // connection (its GOAWAY, every stream done), or nghttp2 did over the
  // server's connection error (RFC 9113 §5.4.1; a malformed frame, a field
  // block HPACK cannot decode) and its GOAWAY just went out. Nothing more
  // will come for the streams, and a stream given to the session now would
  // never be sent: it closes, and they fail at once.
  if (!capped && !nghttp2_session_want_read(ng_.get()) && !nghttp2_session_want_write(ng_.get())) {
    if (streams_.empty()) {
      close(UpstreamFailure::Closed, make_error(Errc::Upstream, "upstream ended the HTTP/2 connection"));
    } else {
      close(UpstreamFailure::InvalidResponse,
            make_error(Errc::Protocol, "upstream broke HTTP/2: connection error, GOAWAY sent"));
    }
    return;
  }
  // Streams waiting for room in their request buffers go on; one still
  // above its low watermark waits for the next flush.
  if (!writable_waiting_.empty()) {
    std::vector<int32_t> ids;
    ids.swap(writable_waiting_);
    for (int32_t id : ids) {
      H2Stream* s = stream(id);
      if (s != nullptr && !s->notify_writable()) writable_waiting_.push_back(id);
      if (state_ == State::Closed) return;
    }
  }
  if (state_ == State::Draining && streams_.empty() && socket_.writer().idle()) close_idle();
}

void H2Session::on_socket_written() {
  if (state_ == State::Closed) return;
  if (nghttp2_session_want_write(ng_.get())) schedule_send();
  if (state_ == State::Draining && streams_.empty() && socket_.writer().idle()) close_idle();
}

void H2Session::fail_write(const Error& error) {
  // Nothing more is written: the reads below may make the TLS layer answer,
  // and a write failing again inside them would recurse into here.
  socket_.stop_writing();
  if (!in_recv_) socket_.read_now();
  close(UpstreamFailure::Reset, error);
}

void H2Session::on_timer() {
  if (connecting()) {
    close(UpstreamFailure::TimeoutConnect,
          make_error(Errc::Timeout, state_ == State::Handshaking ? "upstream timed out during the TLS handshake"
                                                                 : "upstream timed out while connecting"));
    return;
  }
  if (streams_.empty()) close_idle();  // keepalive_timeout
}

void H2Session::on_ping_timer() {
  if (state_ == State::Open && streams_.empty()) {
    // RFC 9113 §6.7: the server must answer with an ACK; until it does
    // the session takes no stream.
    if (int rc = nghttp2_submit_ping(ng_.get(), NGHTTP2_FLAG_NONE, nullptr); rc != 0) {
      close(UpstreamFailure::Reset,
            make_error(Errc::Upstream, std::string("HTTP/2 PING refused: ") + nghttp2_strerror(rc)));
      return;
    }
    transition(state_, State::Pinging);
    ping_timer_.arm(cfg_.h2_ping_timeout);
    schedule_send();
    return;
  }
  if (state_ != State::Pinging) return;
  const std::string why = "no PING ACK within h2_ping_timeout " + config::format_duration(cfg_.h2_ping_timeout);
  if (pool_) pool_->count_ping_timeout(why);
  close(UpstreamFailure::TimeoutRead, make_error(Errc::Timeout, why));
}

void H2Session::start_draining() {
  if (state_ != State::Open && state_ != State::Pinging) return;
  transition(state_, State::Draining);
}

void H2Session::close_idle() {
  if (state_ == State::Closed) return;
  // (Not from inside nghttp2_session_mem_recv, which mem_send must not nest in.)
  if (!connecting() && !in_recv_ && socket_.writer().idle() && out_.empty()) {
    // A courtesy GOAWAY; the close_notify follows it (RFC 8446 §6.1).
    nghttp2_submit_goaway(ng_.get(), NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(ng_.get()),
                          NGHTTP2_NO_ERROR, nullptr, 0);
    write_last_frames();
  }
  close(UpstreamFailure::Closed, make_error(Errc::Upstream, "upstream connection closed"));
}

void H2Session::write_last_frames() {
  const uint8_t* data = nullptr;
  const ssize_t n = nghttp2_session_mem_send(ng_.get(), &data);
  if (n > 0 && socket_.writer().idle()) {
    std::string bytes(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    (void)socket_.send(bytes);
  }
}

void H2Session::close(UpstreamFailure failure, const Error& error) {
  if (state_ == State::Closed) return;
  transition(state_, State::Closed);
  // Over TLS, a close_notify (or the alert of a TLS failure or flood) goes
  // first when nothing waits before it.
  socket_.close();
  timer_.close();
  ping_timer_.close();
  stream_timer_.close();
  std::unordered_map<int32_t, H2Stream*> streams = std::move(streams_);
  streams_.clear();
  last_id_ = 0;
  for (auto& [id, s] : streams) s->on_session_failed(failure, error);
  if (pool_) pool_->remove(this);
}

void H2Session::watch_deadline(uint64_t deadline) {
  if (deadline >= stream_due_ || state_ == State::Closed) return;
  stream_due_ = deadline;
  const uint64_t now = uv_now(loop_);
  stream_timer_.arm(std::chrono::milliseconds(deadline > now ? deadline - now : 0));
}

void H2Session::on_stream_timer() {
  stream_due_ = H2Stream::kNoDeadline;
  const uint64_t now = uv_now(loop_);
  std::vector<int32_t> due;
  for (const auto& [id, s] : streams_) {
    if (s->deadline() <= now) due.push_back(id);
  }
  // A timed-out stream leaves the session (its handler may end others):
  // look each one up again.
  for (int32_t id : due) {
    H2Stream* s = stream(id);
    if (s != nullptr && s->deadline() <= now) s->on_deadline();
  }
  for (const auto& [id, s] : streams_) watch_deadline(s->deadline());
}

}  // namespace tlsfront::upstream
