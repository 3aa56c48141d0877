#include "data/upstream/h2_stream.h"

#include <charconv>
#include <cstring>

#include "data/upstream/h2_session.h"
#include "util/nghttp2_fields.h"

namespace tlsfront::upstream {
namespace {
// A response head (or trailer section) larger than this is a bad upstream.
constexpr size_t kMaxResponseHeadBytes = 64 * 1024;
constexpr size_t kMaxResponseFields = 256;
}  // namespace

H2Stream::H2Stream(uv_loop_t* loop, UpstreamHandler* handler, const config::Upstream& cfg)
    : UpstreamChannel(loop), handler_(handler), cfg_(cfg) {}

H2Stream::~H2Stream() { close(); }

void H2Stream::bind(H2Session* session, int32_t id) {
  session_ = session;
  id_ = id;
}

void H2Stream::leave_session() {
  if (H2Session* s = std::exchange(session_, nullptr)) s->release(this, phase_ != Phase::Done);
}

void H2Stream::close() {
  handler_ = nullptr;
  deadline_ = kNoDeadline;
  leave_session();
  if (phase_ != Phase::Done) transition(phase_, Phase::Done);
}

void H2Stream::send_body(std::string_view bytes) {
  if (phase_ == Phase::Done || request_ended_ || bytes.empty()) return;
  if (out_off_ > 0 && out_off_ == out_.size()) {
    out_.clear();
    out_off_ = 0;
  }
  out_.append(bytes);
  arm_timer();  // send_timeout until nghttp2 takes them
  if (!notify_writable_ && buffered_bytes() >= kWriteLowWatermark) {
    notify_writable_ = true;
    if (session_) session_->wait_writable(id_);
  }
  if (deferred_ && session_) {
    deferred_ = false;
    nghttp2_session_resume_data(session_->ng(), id_);
  }
  if (session_) session_->schedule_send();
}

void H2Stream::end(std::vector<http::Header> trailers) {
  if (phase_ == Phase::Done || request_ended_) return;
  request_ended_ = true;
  trailers_ = std::move(trailers);
  if (deferred_ && session_) {
    deferred_ = false;
    nghttp2_session_resume_data(session_->ng(), id_);
  }
  if (session_) session_->schedule_send();
}

ssize_t H2Stream::read_body(uint8_t* buf, size_t length, uint32_t* data_flags) {
  const size_t n = std::min(length, buffered_bytes());
  if (n > 0) {
    std::memcpy(buf, out_.data() + out_off_, n);
    out_off_ += n;
    body_taken_ += n;
    arm_timer();  // a write: send_timeout again, or read_timeout once all went
  }
  if (buffered_bytes() == 0) {
    out_.clear();
    out_off_ = 0;
    if (!request_ended_) {
      if (n == 0) {
        deferred_ = true;
        return NGHTTP2_ERR_DEFERRED;
      }
      return static_cast<ssize_t>(n);
    }
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!trailers_.empty() && session_) {
      // RFC 9113 §8.1: the trailer section ends the stream instead.
      FieldBlock& block = FieldBlock::start();
      for (const auto& h : trailers_) block.add(h.name, h.value);
      if (nghttp2_submit_trailer(session_->ng(), id_, block.nva(), block.size()) == 0) {
        *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      }
      trailers_.clear();
    }
  }
  return static_cast<ssize_t>(n);
}

bool H2Stream::notify_writable() {
  if (!notify_writable_) return true;
  if (buffered_bytes() >= kWriteLowWatermark) return false;
  notify_writable_ = false;
  if (handler_) handler_->on_upstream_writable();
  return true;
}

void H2Stream::pause_reading() {
  paused_ = true;
  arm_timer();  // the client is slow, not the upstream: only a send still runs
}

void H2Stream::resume_reading() {
  if (!paused_) return;
  paused_ = false;
  if (phase_ == Phase::Done) return;
  if (unconsumed_ > 0 && session_) {
    session_->consume(id_, unconsumed_);
    session_->schedule_send();
  }
  unconsumed_ = 0;
  arm_timer();
}

void H2Stream::arm_timer() {
  if (phase_ == Phase::Done) return;
  std::chrono::milliseconds ms;
  if (buffered_bytes() > 0) {
    ms = cfg_.send_timeout;
  } else if (!paused_) {
    ms = cfg_.read_timeout;
  } else {
    deadline_ = kNoDeadline;
    return;
  }
  deadline_ = uv_now(loop_) + static_cast<uint64_t>(ms.count());
  if (session_) session_->watch_deadline(deadline_);
}

void H2Stream::on_connected() {
  arm_timer();
  if (handler_) handler_->on_upstream_connected();
}

void H2Stream::on_begin_headers() {
  head_ = http::ResponseHead{};
  head_.version_minor = 1;
  head_bytes_ = 0;
  arm_timer();
}

bool H2Stream::on_header(std::string_view name, std::string_view value) {
  head_bytes_ += name.size() + value.size() + 32;  // RFC 9113 §6.5.2 sizes
  if (head_bytes_ > kMaxResponseHeadBytes || head_.headers.size() >= kMaxResponseFields) return false;
  response_bytes_ += name.size() + value.size();
  if (name == ":status") {
    int status = 0;
    std::from_chars(value.data(), value.data() + value.size(), status);  // nghttp2 checked: 3 digits
    head_.status = status;
    return status >= 100 && status <= 599;  // else malformed (RFC 9110 §15): reset, as nghttp2 does for fields
  }
  if (head_.headers.empty()) head_.headers.reserve(http::kFieldsReserved);
  // Built in place: no temporary Header moved in and destroyed per field.
  http::Header& h = head_.headers.emplace_back();
  h.name.assign(name);
  h.value.assign(value);
  h.token = http::classify_header(name);
  // A trailer section's content-length is only passed on.
  if (!final_head_ && h.token == http::HeaderToken::ContentLength) {
    uint64_t n = 0;  // nghttp2 checked it is one non-negative integer
    std::from_chars(value.data(), value.data() + value.size(), n);
    head_.content_length = n;
  }
  return true;
}

void H2Stream::on_headers_end(bool end_stream) {
  if (phase_ == Phase::Done) return;
  arm_timer();
  if (final_head_) {
    // The trailer section (RFC 9113 §8.1), which nghttp2 requires to end the stream.
    std::vector<http::Header> trailers = std::move(head_.headers);
    head_.headers.clear();
    if (handler_ && !trailers.empty()) handler_->on_upstream_trailers(std::move(trailers));
    if (end_stream) on_end_stream();
    return;
  }
  const bool informational = head_.status >= 100 && head_.status < 200;
  if (!informational) {
    final_head_ = true;
    transition(phase_, Phase::Streaming);
    // The stream ends with its head (gRPC's trailers-only form): no body,
    // which a zero length tells the exchange. Otherwise a body, trailers or
    // both may follow, even after a content-length: 0.
    if (end_stream && !head_.content_length) head_.content_length = 0;
    head_.trailers_may_follow = !end_stream;
  }
  http::ResponseHead head = std::move(head_);
  head_ = http::ResponseHead{};
  if (handler_) handler_->on_upstream_head(std::move(head), informational);
  if (end_stream && phase_ != Phase::Done) on_end_stream();
}

void H2Stream::on_data(std::string_view data) {
  if (phase_ != Phase::Streaming) {
    // DATA before a final head is a protocol error nghttp2 already refuses;
    // after Done the bytes only need acknowledging.
    if (session_) session_->consume(id_, data.size());
    return;
  }
  response_bytes_ += data.size();
  arm_timer();
  read_end_due_ = true;
  if (handler_) handler_->on_upstream_body(data);
  if (phase_ == Phase::Done || !session_) return;
  if (paused_) {
    unconsumed_ += data.size();
  } else {
    session_->consume(id_, data.size());
  }
}

void H2Stream::on_read_end() {
  if (!std::exchange(read_end_due_, false) || phase_ != Phase::Streaming) return;
  if (handler_) handler_->on_upstream_read_end();
}

void H2Stream::on_end_stream() {
  if (phase_ != Phase::Streaming) {
    // END_STREAM without a final response: nghttp2 resets such a stream.
    return;
  }
  transition(phase_, Phase::Done);
  deadline_ = kNoDeadline;
  read_end_due_ = false;
  if (UpstreamHandler* h = std::exchange(handler_, nullptr)) h->on_upstream_complete();
}

void H2Stream::finish(UpstreamFailure failure, Error error) {
  if (phase_ == Phase::Done) return;
  transition(phase_, Phase::Done);
  deadline_ = kNoDeadline;
  if (UpstreamHandler* h = std::exchange(handler_, nullptr)) h->on_upstream_error(failure, std::move(error));
}

void H2Stream::on_closed(uint32_t error_code) {
  session_ = nullptr;  // the session forgets us before this call
  if (phase_ == Phase::Done) return;
  if (error_code == NGHTTP2_REFUSED_STREAM && !final_head_) {
    finish(UpstreamFailure::Unprocessed,
           make_error(Errc::Upstream, "upstream refused the stream unprocessed (REFUSED_STREAM or GOAWAY)"));
    return;
  }
  finish(UpstreamFailure::StreamReset,
         make_error(Errc::Upstream, std::string("upstream reset the stream: ") + nghttp2_http2_strerror(error_code)));
}

void H2Stream::on_session_failed(UpstreamFailure failure, const Error& error) {
  session_ = nullptr;
  finish(failure, error);
}

void H2Stream::on_not_sent() {
  session_ = nullptr;
  finish(UpstreamFailure::Unprocessed,
         make_error(Errc::Upstream, "upstream connection went away before the request was sent (GOAWAY)"));
}

void H2Stream::on_deadline() {
  deadline_ = kNoDeadline;
  if (phase_ == Phase::Done) return;
  // Request bytes the upstream's flow-control window kept out: a send
  // timeout (RFC 9113 §5.2: it stopped sending WINDOW_UPDATE).
  const bool sending = buffered_bytes() > 0;
  const char* what = sending       ? "upstream timed out while sending request"
                     : final_head_ ? "upstream timed out while reading response"
                                   : "upstream timed out while reading response header";
  leave_session();  // RST_STREAM CANCEL: the upstream may stop working on it
  finish(sending ? UpstreamFailure::TimeoutSend : UpstreamFailure::TimeoutRead, make_error(Errc::Timeout, what));
}

}  // namespace tlsfront::upstream
