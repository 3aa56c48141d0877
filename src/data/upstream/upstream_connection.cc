#include "data/upstream/upstream_connection.h"

#include <sys/socket.h>

#include <cerrno>

#include "data/upstream/upstream_pool.h"
#include "message/chunked.h"

namespace tlsfront::upstream {

constexpr size_t kKeptOutputBytes = 4 * 1024;  // a pooled connection keeps a request-head-sized buffer
// A response head (status line reason, field names and values, all of them
// together; a trailer section likewise) larger than this is a bad upstream,
// not a reason to buffer (as H2Stream's).
constexpr size_t kMaxResponseHeadBytes = 64 * 1024;

#define TLSFRONT_PARSER_SELF static_cast<UpstreamConnection*>(p->data)

struct ParserCallbacks {
  static int on_message_begin(llhttp_t* p) { return TLSFRONT_PARSER_SELF->on_message_begin(); }
  static int on_status(llhttp_t* p, const char* at, size_t n) { return TLSFRONT_PARSER_SELF->on_status(at, n); }
  static int on_header_field(llhttp_t* p, const char* at, size_t n) {
    return TLSFRONT_PARSER_SELF->on_header_field(at, n);
  }
  static int on_header_value(llhttp_t* p, const char* at, size_t n) {
    return TLSFRONT_PARSER_SELF->on_header_value(at, n);
  }
  static int on_header_value_complete(llhttp_t* p) { return TLSFRONT_PARSER_SELF->on_header_value_complete(); }
  static int on_headers_complete(llhttp_t* p) { return TLSFRONT_PARSER_SELF->on_headers_complete(); }
  static int on_body(llhttp_t* p, const char* at, size_t n) { return TLSFRONT_PARSER_SELF->on_body(at, n); }
  static int on_message_complete(llhttp_t* p) { return TLSFRONT_PARSER_SELF->on_message_complete(); }

  static llhttp_settings_t make() {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_message_begin = on_message_begin;
    s.on_status = on_status;
    s.on_header_field = on_header_field;
    s.on_header_value = on_header_value;
    s.on_header_value_complete = on_header_value_complete;
    s.on_headers_complete = on_headers_complete;
    s.on_body = on_body;
    s.on_message_complete = on_message_complete;
    return s;
  }
};
#undef TLSFRONT_PARSER_SELF

namespace {
const llhttp_settings_t kResponseSettings = ParserCallbacks::make();
}  // namespace

UpstreamConnection::UpstreamConnection(uv_loop_t* loop, UpstreamPool* pool, const config::Upstream& cfg,
                                       TlsTarget* tls)
    : UpstreamChannel(loop),
      pool_(pool),
      cfg_(cfg),
      socket_(std::make_unique<UpstreamSocket>(loop, static_cast<UpstreamSocket::Owner*>(this), tls,
                                               UpstreamSocket::FloodAnswer::HoldReads)) {
  llhttp_init(&parser_, HTTP_RESPONSE, &kResponseSettings);
  parser_.data = this;
}

UpstreamConnection::~UpstreamConnection() {
  LoopContext::of(loop_).cancel_flush(this);
  close();
}

Status UpstreamConnection::connect(const sockaddr_storage& addr) {
  timer_.init(loop_, [](void* self) { static_cast<UpstreamConnection*>(self)->on_timer(); }, this);
  if (Status st = socket_->connect(addr); !st) {
    transition(state_, State::Closed);
    return st;
  }
  arm_timer(cfg_.connect_timeout);
  return {};
}

void UpstreamConnection::attach(Handler* handler, bool head_request, bool upgrade, bool chunked) {
  handler_ = handler;
  head_request_ = head_request;
  upgrade_ = upgrade;
  chunked_ = chunked;
  if (state_ == State::Idle) transition(state_, State::Active);  // reused; a new one is still Connecting
  if (response_ != ResponsePhase::Waiting) transition(response_, ResponsePhase::Waiting);
  written_at_attach_ = socket_->writer().bytes_written();
  response_bytes_ = 0;
  if (state_ == State::Active) {
    arm_timer(cfg_.read_timeout);
    resume_reading();
  }
}

void UpstreamConnection::send(std::string_view bytes) {
  if (state_ == State::Closed) return;
  out_.append(bytes);
  if (buffered_bytes() >= kWriteLowWatermark) notify_writable_ = true;  // a sender may now wait for room
  LoopContext::of(loop_).schedule_flush(this);
  if (state_ == State::Active) arm_timer(cfg_.send_timeout);
}

void UpstreamConnection::send_body(std::string_view bytes) {
  if (!chunked_) {
    send(bytes);
    return;
  }
  http::write_chunk(bytes, [this](std::string_view part) { send(part); });
}

void UpstreamConnection::end(std::vector<http::Header> trailers) {
  if (!chunked_) return;  // a sized body has no trailer section
  // RFC 9112 §7.1.2: the last chunk, the trailer fields, an empty line.
  std::string last(http::kLastChunkLine);
  for (const auto& h : trailers) last += h.name + ": " + h.value + "\r\n";
  last += "\r\n";
  send(last);
}

bool UpstreamConnection::give_back(bool request_whole) {
  if (!request_whole || !reusable() || upgrade_) return false;
  pool_->release(std::unique_ptr<UpstreamConnection>(this));
  return true;
}

void UpstreamConnection::write_now() {
  if (state_ == State::Closed || out_.empty()) return;
  // Over TLS the request waits for the handshake (on_established writes it).
  if (socket_->wants_tls() && (!socket_->tls() || !socket_->tls()->handshake_done())) return;
  if (int rc = socket_->send(out_); rc != 0) {
    fail(UpstreamFailure::Reset, make_error(Errc::Upstream, std::string("write: ") + uv_strerror(rc)));
    return;
  }
  if (out_.capacity() > kKeptOutputBytes) {
    std::string().swap(out_);  // a large request body passed: it keeps no buffer
    socket_->writer().release_buffer();
  }
  if (state_ != State::Active) return;
  arm_timer(io_timeout());
}

std::chrono::milliseconds UpstreamConnection::io_timeout() const {
  return socket_->writer().idle() ? cfg_.read_timeout : cfg_.send_timeout;
}

void UpstreamConnection::flush() {
  write_now();
  if (state_ != State::Active) return;
  // Written at once (no write callback will come): a sender waiting for room goes on.
  if (notify_writable_ && handler_ && socket_->writer().buffered_bytes() < kWriteLowWatermark) {
    notify_writable_ = false;
    handler_->on_upstream_writable();
  }
}

void UpstreamConnection::on_socket_handshaking() {
  // The connect timer goes on: connect_timeout covers the handshake too.
  transition(state_, State::Handshaking);
}

void UpstreamConnection::on_established() {
  transition(state_, State::Active);
  // What was queued while the handshake ran goes out; flush() also tells a
  // sender waiting for room (the socket may take it all at once, and then
  // no write callback would).
  if (socket_->tls()) flush();
  if (state_ != State::Active) return;
  arm_timer(io_timeout());
  resume_reading();
  if (handler_) handler_->on_upstream_connected();
}

void UpstreamConnection::on_socket_written() {
  if (state_ != State::Active) return;
  arm_timer(io_timeout());
  if (handler_ && socket_->writer().buffered_bytes() < kWriteLowWatermark) handler_->on_upstream_writable();
}

void UpstreamConnection::pause_reading() {
  socket_->pause_reading();
  if (state_ == State::Active && socket_->writer().idle()) timer_.stop();
}

void UpstreamConnection::resume_reading() {
  if (socket_->resume_reading() && state_ == State::Active) arm_timer(io_timeout());
}

void UpstreamConnection::park_idle(std::chrono::milliseconds idle_timeout) {
  handler_ = nullptr;
  transition(state_, State::Idle);
  resume_reading();
  arm_timer(idle_timeout);
}

bool UpstreamConnection::still_open() const { return state_ == State::Idle && socket_->still_open(); }

void UpstreamConnection::on_socket_data(const char* data, size_t len) {
  if (state_ == State::Idle) {
    // Bytes on an idle connection: it can no longer carry a request.
    close();
    pool_->remove_idle(this);
    return;
  }
  on_bytes(data, len);
}

void UpstreamConnection::on_socket_end(int status, bool close_notify) {
  if (state_ == State::Idle) {
    // EOF or close_notify on an idle connection: it is done.
    close();
    pool_->remove_idle(this);
    return;
  }
  on_end(status, close_notify);
}

void UpstreamConnection::on_end(int status, bool close_notify) {
  // Over TLS only the server's close_notify ends a close-delimited body: a
  // bare FIN may be anyone's on the path, and what it cut is incomplete
  // (RFC 8446 §6.1, RFC 9112 §9.8).
  const bool truncated = status == UV_EOF && socket_->tls() && !close_notify && response_ == ResponsePhase::Reading &&
                         llhttp_message_needs_eof(&parser_) == 1;
  if (status == UV_EOF && response_ == ResponsePhase::Reading && !truncated) {
    // A close-delimited body ends at EOF (RFC 9112 §6.3 item 8).
    llhttp_errno_t err = llhttp_finish(&parser_);
    if (err == HPE_OK && response_ != ResponsePhase::Reading) return;
  }
  const char* what = state_ == State::Handshaking ? "upstream closed the connection during the TLS handshake"
                     : truncated
                         ? "upstream closed the connection without a TLS close_notify: the response is truncated"
                         : "upstream prematurely closed connection";
  fail(status == UV_EOF ? UpstreamFailure::Closed : UpstreamFailure::Reset,
       make_error(Errc::Upstream, status == UV_EOF ? std::string(what) : std::string("recv() failed: ") + uv_strerror(status)));
}

void UpstreamConnection::on_bytes(const char* data, size_t len) {
  const auto nread = static_cast<ssize_t>(len);
  arm_timer(cfg_.read_timeout);
  response_bytes_ += len;
  input_begin_ = data;
  llhttp_errno_t err = llhttp_execute(&parser_, data, static_cast<size_t>(nread));
  // The last two bytes, for preceded_by_crlf() at the start of the next read.
  tail_[0] = nread >= 2 ? data[nread - 2] : tail_[1];
  tail_[1] = data[nread - 1];
  if (err == HPE_PAUSED_UPGRADE && response_ == ResponsePhase::Tunnel) {
    // The 101's head ended; what follows it in this read is the tunnel's,
    // the last thing this connection passes on (the socket is the
    // tunnel's already).
    const char* pos = llhttp_get_error_pos(&parser_);
    if (Handler* h = std::exchange(handler_, nullptr); h && pos != data + nread)
      h->on_upstream_body(std::string_view(pos, static_cast<size_t>(data + nread - pos)));
    return;
  }
  if (err == HPE_PAUSED) {
    // Paused at the end of a final response. Anything after it is unsolicited.
    const char* pos = llhttp_get_error_pos(&parser_);
    llhttp_resume(&parser_);
    if (pos != data + nread) {
      if (response_ == ResponsePhase::Reusable) transition(response_, ResponsePhase::Final);
      if (state_ == State::Idle) {
        close();
        pool_->remove_idle(this);
      }
    }
    return;
  }
  if (err == HPE_OK) {
    if (handler_ && state_ != State::Closed && response_ == ResponsePhase::Reading) handler_->on_upstream_read_end();
    return;
  }
  {
    if (state_ == State::Closed) return;  // a handler closed us from a callback
    fail(UpstreamFailure::InvalidResponse,
         make_error(Errc::Protocol, std::string("upstream sent an invalid response: ") + llhttp_errno_name(err) + " " +
                                        llhttp_get_error_reason(&parser_)));
  }
}

void UpstreamConnection::on_timer() {
  if (state_ == State::Idle) {
    close();
    pool_->remove_idle(this);
    return;
  }
  UpstreamFailure failure = state_ == State::Connecting || state_ == State::Handshaking ? UpstreamFailure::TimeoutConnect
                            : socket_->writer().idle()                                   ? UpstreamFailure::TimeoutRead
                                                                                         : UpstreamFailure::TimeoutSend;
  const char* what = state_ == State::Handshaking                ? "upstream timed out during the TLS handshake"
                     : failure == UpstreamFailure::TimeoutConnect ? "upstream timed out while connecting"
                     : failure == UpstreamFailure::TimeoutRead  ? "upstream timed out while reading response header"
                                                                : "upstream timed out while sending request";
  if (state_ == State::Active && response_bytes_ > 0) {
    failure = UpstreamFailure::TimeoutRead;
    what = "upstream timed out while reading response";
  }
  fail(failure, make_error(Errc::Timeout, what));
}

void UpstreamConnection::arm_timer(std::chrono::milliseconds ms) { timer_.arm(ms); }

std::unique_ptr<UpstreamTunnel> UpstreamConnection::hand_over() {
  LoopContext::of(loop_).cancel_flush(this);
  timer_.close();  // a tunnel has no deadline of its own: the client session's timeouts.tunnel covers it
  if (UpstreamTls* tls = socket_->tls()) tls->forget_slot();
  auto tunnel = std::make_unique<UpstreamTunnel>(loop_, std::move(socket_), std::move(out_), handler_);
  transition(state_, State::Closed);
  return tunnel;
}

void UpstreamConnection::fail(UpstreamFailure failure, Error error) {
  const bool idle = state_ == State::Idle;
  close();
  if (idle) {
    pool_->remove_idle(this);  // no exchange to tell (e.g. a failed write of a TLS answer): it leaves the pool
    return;
  }
  if (Handler* h = std::exchange(handler_, nullptr)) h->on_upstream_error(failure, std::move(error));
}

void UpstreamConnection::close() {
  if (state_ != State::Closed) transition(state_, State::Closed);
  timer_.close();
  if (socket_) socket_->close();
}

bool UpstreamConnection::preceded_by_crlf(const char* at) const {
  const size_t before = static_cast<size_t>(at - input_begin_);
  const char c1 = before >= 1 ? at[-1] : tail_[1];
  const char c2 = before >= 2 ? at[-2] : before == 1 ? tail_[1] : tail_[0];
  return c2 == '\r' && c1 == '\n';
}

int UpstreamConnection::on_message_begin() {
  head_ = http::ResponseHead{};
  head_.headers.reserve(http::kHeadersReserved);
  field_.clear();
  in_value_ = false;
  head_bytes_ = 0;
  transition(response_, ResponsePhase::Reading);
  return 0;
}

int UpstreamConnection::on_status(const char* at, size_t len) {
  head_.reason.append(at, len);
  return (head_bytes_ += len) > kMaxResponseHeadBytes ? -1 : 0;
}

int UpstreamConnection::on_header_field(const char* at, size_t len) {
  // llhttp 8.1 takes a bare CR plus any byte as a line end in responses
  // ("200 OK\rX-Injected: 1"): every header line must follow a real CRLF.
  if (!in_value_ && field_.empty() && !preceded_by_crlf(at)) return -1;
  if (in_value_ && !preceded_by_crlf(at)) return -1;
  if (in_value_) {
    in_value_ = false;
    field_.clear();
  }
  field_.append(at, len);
  return (head_bytes_ += len) > kMaxResponseHeadBytes ? -1 : 0;
}

int UpstreamConnection::on_header_value(const char* at, size_t len) {
  if (!in_value_) {
    in_value_ = true;
    if (head_.headers.size() >= 256) return -1;
    http::Header& h = head_.headers.emplace_back();  // in place: no temporary moved in
    h.name.assign(field_);
    h.token = http::classify_header(field_);
  }
  head_.headers.back().value.append(at, len);
  return (head_bytes_ += len) > kMaxResponseHeadBytes ? -1 : 0;
}

int UpstreamConnection::on_header_value_complete() { return 0; }

int UpstreamConnection::on_headers_complete() {
  if (!in_value_ && !field_.empty()) {
    // A header with an empty value: llhttp emits no value span for it.
    head_.headers.push_back(http::Header{field_, {}, http::classify_header(field_)});
  }
  head_.status = llhttp_get_status_code(&parser_);
  head_.version_minor = llhttp_get_http_minor(&parser_);
  head_.chunked = (parser_.flags & F_CHUNKED) != 0;
  if (parser_.flags & F_CONTENT_LENGTH) head_.content_length = parser_.content_length;
  if (!http::valid_response_head(head_)) {
    // llhttp 8.1 is more lenient than what a proxy may pass on.
    fail(UpstreamFailure::InvalidResponse, make_error(Errc::Protocol, "upstream sent an invalid response head"));
    return -1;
  }
  const int status = head_.status;
  bool informational = status >= 100 && status < 200;
  if (status == 101) {
    // A 101 we did not ask for is a broken upstream.
    if (!upgrade_ || !handler_) return -1;
    transition(response_, ResponsePhase::Tunnel);
    ++requests_;
    handler_->on_upstream_tunnel(hand_over());
    if (handler_) handler_->on_upstream_head(std::move(head_), false);
    // 2: no body, and llhttp stops after this head (HPE_PAUSED_UPGRADE).
    return handler_ ? 2 : -1;
  }
  if (handler_) handler_->on_upstream_head(std::move(head_), informational);
  // From here on the parser may deliver a trailer section (chunked only);
  // a trailer field with an empty value is dropped.
  head_.headers.clear();
  field_.clear();
  in_value_ = false;
  head_bytes_ = 0;  // a trailer section has a budget of its own
  if (state_ == State::Closed) return -1;
  // RFC 9110 §6.4.1: a response to HEAD, a 1xx, 204 or 304 has no content,
  // whatever its Content-Length or Transfer-Encoding says (llhttp 8.1 would
  // read one and hand it on as body).
  const bool no_body = head_request_ || informational || status == 204 || status == 304;
  return no_body ? 1 : 0;
}

int UpstreamConnection::on_body(const char* at, size_t len) {
  if (handler_) handler_->on_upstream_body(std::string_view(at, len));
  return state_ == State::Closed ? -1 : 0;
}

int UpstreamConnection::on_message_complete() {
  if (response_ == ResponsePhase::Tunnel) return 0;  // the 101's: the socket is the tunnel's
  int status = llhttp_get_status_code(&parser_);
  if (status >= 100 && status < 200) {
    transition(response_, ResponsePhase::Waiting);
    return 0;
  }
  ++requests_;
  // Request bytes still queued (the backend answered before the body was
  // sent) would reach the next exchange: such a connection is not reused.
  const bool reusable = llhttp_should_keep_alive(&parser_) && socket_->writer().idle() && out_.empty() &&
                        requests_ < cfg_.keepalive_requests;
  transition(response_, reusable ? ResponsePhase::Reusable : ResponsePhase::Final);
  timer_.stop();
  if (handler_ && !head_.headers.empty()) handler_->on_upstream_trailers(std::move(head_.headers));
  if (state_ == State::Closed) return -1;
  if (Handler* h = std::exchange(handler_, nullptr)) h->on_upstream_complete();
  return HPE_PAUSED;
}

}  // namespace tlsfront::upstream
