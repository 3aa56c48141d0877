#include "data/http/http1_session.h"

#include <cstdio>
#include <cstring>

#include "message/error_response.h"
#include "log/access_log.h"
#include "metrics/counters.h"

namespace tlsfront::http {
namespace {

constexpr size_t kOutputHighWatermark = 64 * 1024;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";


// Scratch for response heads, shared by the sessions of this worker thread: a
// head is built and handed to the transport (which copies it) in one call, so
// no session keeps a buffer of its own.
std::string& head_scratch() {
  thread_local std::string scratch;
  scratch.clear();
  return scratch;
}

// "HTTP/1.1 <status> <reason>\r\n" and the (already filtered) header lines.
void append_status_and_headers(std::string& out, const ResponseHead& head) {
  out += "HTTP/1.1 ";
  out += std::to_string(head.status);
  out += ' ';
  out += head.reason.empty() ? reason_phrase(head.status) : std::string_view(head.reason);
  out += "\r\n";
  for (const auto& h : head.headers) {
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
}

}  // namespace

#define TLSFRONT_SESSION static_cast<Http1Session*>(p->data)
struct RequestParserCallbacks {
  static int on_message_begin(llhttp_t* p) { return TLSFRONT_SESSION->on_message_begin(); }
  static int on_url(llhttp_t* p, const char* at, size_t n) { return TLSFRONT_SESSION->on_url(at, n); }
  static int on_header_field(llhttp_t* p, const char* at, size_t n) { return TLSFRONT_SESSION->on_header_field(at, n); }
  static int on_header_value(llhttp_t* p, const char* at, size_t n) { return TLSFRONT_SESSION->on_header_value(at, n); }
  static int on_headers_complete(llhttp_t* p) { return TLSFRONT_SESSION->on_headers_complete(); }
  static int on_body(llhttp_t* p, const char* at, size_t n) { return TLSFRONT_SESSION->on_body(at, n); }
  static int on_message_complete(llhttp_t* p) { return TLSFRONT_SESSION->on_message_complete(); }
  static llhttp_settings_t make() {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_message_begin = on_message_begin;
    s.on_url = on_url;
    s.on_header_field = on_header_field;
    s.on_header_value = on_header_value;
    s.on_headers_complete = on_headers_complete;
    s.on_body = on_body;
    s.on_message_complete = on_message_complete;
    return s;
  }
};
#undef TLSFRONT_SESSION

namespace {
const llhttp_settings_t kRequestSettings = RequestParserCallbacks::make();
}  // namespace

Http1Session::Http1Session(const SessionEnv& env, ClientTransport* transport, ConnectionInfo info)
    : env_(env), transport_(transport), info_(std::move(info)) {
  // Strict mode: llhttp's lenient flags all stay off.
  llhttp_init(&parser_, HTTP_REQUEST, &kRequestSettings);
  parser_.data = this;
  arm(TimerPurpose::Header);
}

Http1Session::~Http1Session() {
  if (exchange_) exchange_->cancel();
}

bool Http1Session::wants_input() const {
  if (closed_ || awaiting_response_ || !pending_input_.empty()) return false;
  return !(exchange_ && exchange_->request_body_congested());
}

void Http1Session::on_data(std::string_view data) {
  if (closed_) return;
  if (awaiting_response_ || !pending_input_.empty()) {
    pending_input_.append(data);
    return;
  }
  execute(data);
}

void Http1Session::execute(std::string_view data) {
  if (!in_request_ && timer_ == TimerPurpose::Idle) arm(TimerPurpose::Header);
  input_begin_ = data.data();
  llhttp_errno_t err = llhttp_execute(&parser_, data.data(), data.size());
  // Only compared by address, never dereferenced, after this call.
  input_end_prev_ = data.data() + data.size();
  if (field_in_input_ && !in_value_ && field_end_ != nullptr &&
      std::memchr(field_end_, '\n', static_cast<size_t>(input_end_prev_ - field_end_)) != nullptr) {
    lf_after_field_ = true;  // the value has not started yet; remember the gap had a LF
  }
  field_in_input_ = false;
  if (in_request_ || awaiting_response_) bytes_received_ += data.size();
  if (err == HPE_OK) return;
  if (err == HPE_PAUSED) {
    // Paused after a complete request: keep the rest for after the response.
    const char* pos = llhttp_get_error_pos(&parser_);
    size_t used = static_cast<size_t>(pos - data.data());
    bytes_received_ -= data.size() - used;
    pending_input_.assign(pos, data.size() - used);
    if (local_status_ != 0) respond_local(local_status_);
    return;
  }
  if (closed_) return;
  int status = error_status_ != 0 ? error_status_ : 400;
  if (exchange_) {
    exchange_->cancel();
    if (response_started_) {
      status_ = status;
      write_access_log();
      closed_ = true;
      transport_->close(false);
      return;
    }
  }
  close_after_response_ = true;
  in_request_ = false;
  respond_local(status);
}

void Http1Session::respond_local(int status) {
  if (exchange_) {
    exchange_->cancel();
    LoopContext::of(env_.loop).defer_delete(std::move(exchange_));
  }
  local_status_ = 0;
  status_ = status;
  // A request whose body we did not read leaves the connection unusable.
  if (in_request_) close_after_response_ = true;
  std::string resp = make_error_response(status, close_after_response_, req_.method == "HEAD");
  bytes_sent_ += resp.size();
  transport_->send(resp);
  awaiting_response_ = true;
  finish_request();
}

int Http1Session::reject(int status) {
  error_status_ = status;
  return -1;
}

int Http1Session::on_message_begin() {
  req_ = RequestHead{};
  req_.headers.reserve(kHeadersReserved);
  field_.clear();
  in_value_ = false;
  head_bytes_ = 0;
  body_bytes_ = 0;
  error_status_ = 0;
  local_status_ = 0;
  status_ = 0;
  bytes_sent_ = 0;
  bytes_received_ = 0;
  response_started_ = false;
  chunked_out_ = false;
  user_agent_.clear();
  in_request_ = true;
  req_time_ = std::chrono::system_clock::now();
  req_start_ = std::chrono::steady_clock::now();
  ++info_.requests;
  if (timer_ != TimerPurpose::Header) arm(TimerPurpose::Header);
  return 0;
}

int Http1Session::on_url(const char* at, size_t len) {
  req_.target.append(at, len);
  head_bytes_ += len;
  if (req_.target.size() > env_.config->limits.max_header_bytes) return reject(414);
  return 0;
}

int Http1Session::on_header_field(const char* at, size_t len) {
  if (in_value_) {
    in_value_ = false;
    field_.clear();
  }
  field_.append(at, len);
  field_end_ = at + len;
  field_in_input_ = true;
  lf_after_field_ = false;
  head_bytes_ += len;
  return head_bytes_ > env_.config->limits.max_header_bytes ? reject(431) : 0;
}

int Http1Session::on_header_value(const char* at, size_t len) {
  if (!in_value_) {
    // A line break between the colon and the value's first byte is obs-fold
    // with an empty first line ("Name:\r\n value").
    const char* from = field_in_input_ ? field_end_ : input_begin_;
    if (lf_after_field_ || std::memchr(from, '\n', static_cast<size_t>(at - from)) != nullptr) return reject(400);
    in_value_ = true;
    head_bytes_ += 4;  // ": " and CRLF
    req_.headers.push_back(Header{field_, {}, classify_header(field_)});
  } else if (at != value_end_ && !(value_end_ == input_end_prev_ && at == input_begin_)) {
    // The value resumed after a gap: llhttp unfolded an obs-fold. Rejected
    // (RFC 9112 §5.2 allows a 400) rather than guessing what the client meant.
    return reject(400);
  }
  value_end_ = at + len;
  req_.headers.back().value.append(at, len);
  head_bytes_ += len;
  return head_bytes_ > env_.config->limits.max_header_bytes ? reject(431) : 0;
}

int Http1Session::validate_head() {
  const bool http11 = req_.version_major == 1 && req_.version_minor >= 1;
  int hosts = 0, te = 0, cl = 0;
  const Header* host = nullptr;
  for (const auto& h : req_.headers) {
    if (!valid_field_name(h.name) || !valid_field_value(h.value)) return 400;
    switch (h.token) {
      case HeaderToken::Host:
        ++hosts;
        host = &h;
        break;
      case HeaderToken::TransferEncoding:
        ++te;
        // Only "chunked", once (RFC 9112 §6.1): anything else is a smuggling shape.
        if (!iequals(h.value, "chunked") || !http11) return 400;
        break;
      case HeaderToken::ContentLength:
        ++cl;
        break;
      case HeaderToken::Expect:
        if (!iequals(h.value, "100-continue")) return 417;
        req_.expect_continue = http11;
        break;
      case HeaderToken::UserAgent:
        user_agent_ = h.value;
        break;
      default:
        break;
    }
  }
  // RFC 9112 §6.3: Content-Length with Transfer-Encoding, or repeated framing.
  if (te > 1 || cl > 1 || (te && cl)) return 400;
  // RFC 9112 §3.2: exactly one Host in HTTP/1.1.
  if (hosts > 1 || (http11 && hosts == 0)) return 400;
  if (host && !valid_host(host->value)) return 400;

  std::string_view target = req_.target;
  if (!target.empty() && target.front() == '/') {
    // origin-form
  } else if (target == "*" && req_.method == "OPTIONS") {
    // asterisk-form
  } else if (target.starts_with("http://") || target.starts_with("https://")) {
    // absolute-form (RFC 9112 §3.2.2): its authority replaces Host.
    std::string_view rest = target.substr(target.find("//") + 2);
    size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (authority.empty() || !valid_host(authority) || authority.find('@') != std::string_view::npos) return 400;
    // RFC 9112 §3.2.2: the authority wins over Host, and what is forwarded
    // must say the same thing that was routed on.
    std::string host_value(authority);
    req_.host = host_key(authority);
    req_.target = slash == std::string_view::npos ? std::string("/") : std::string(rest.substr(slash));
    std::erase_if(req_.headers, [](const Header& h) { return h.token == HeaderToken::Host; });
    req_.headers.insert(req_.headers.begin(), Header{"Host", std::move(host_value), HeaderToken::Host});
    return 0;
  } else {
    return 400;
  }
  if (host) req_.host = host_key(host->value);
  return 0;
}

int Http1Session::on_headers_complete() {
  if (!in_value_ && !field_.empty()) {
    head_bytes_ += 4;
    req_.headers.push_back(Header{field_, {}, classify_header(field_)});
  }
  req_.method = llhttp_method_name(static_cast<llhttp_method_t>(llhttp_get_method(&parser_)));
  req_.version_major = llhttp_get_http_major(&parser_);
  req_.version_minor = llhttp_get_http_minor(&parser_);
  req_.keep_alive = llhttp_should_keep_alive(&parser_) != 0;
  req_.chunked = (parser_.flags & F_CHUNKED) != 0;
  if (parser_.flags & F_CONTENT_LENGTH) req_.content_length = parser_.content_length;
  if (timer_ == TimerPurpose::Header) arm(TimerPurpose::None);
  if (!req_.keep_alive || (env_.shutting_down && *env_.shutting_down)) close_after_response_ = true;

  // Upgrade is not proxied (the header is hop-by-hop and dropped): keep
  // llhttp parsing HTTP after this message instead of handing over the rest.
  parser_.upgrade = 0;
  if (req_.version_major != 1) return reject(505);
  if (req_.method == "CONNECT") return reject(405);
  if (int status = validate_head(); status != 0) return reject(status);
  const uint64_t max_body = env_.config->limits.max_body_bytes;
  if (max_body != 0 && req_.content_length && *req_.content_length > max_body) return reject(413);

  auto route = env_.router->match(req_.host, req_.target);
  if (!route) {
    local_status_ = 404;
    // Let llhttp read to the end of the message; the body (if any) is not
    // forwarded anywhere and the connection closes after the 404.
    if (req_.has_body()) {
      close_after_response_ = true;
      arm(TimerPurpose::Body);
    }
    return 0;
  }
  exchange_ = std::make_unique<ProxyExchange>(env_.loop, this, (*env_.upstreams)[*route].get(), req_);
  if (req_.expect_continue && req_.has_body()) {
    transport_->send(kContinue);
    bytes_sent_ += kContinue.size();
  }
  exchange_->start();
  if (closed_) return -1;
  if (req_.has_body()) arm(TimerPurpose::Body);
  return 0;
}

int Http1Session::on_body(const char* at, size_t len) {
  body_bytes_ += len;
  const uint64_t max_body = env_.config->limits.max_body_bytes;
  if (max_body != 0 && body_bytes_ > max_body) return reject(413);
  if (exchange_) exchange_->on_request_body(std::string_view(at, len));
  if (timer_ == TimerPurpose::Body) arm(TimerPurpose::Body);
  return closed_ ? -1 : 0;
}

int Http1Session::on_message_complete() {
  in_request_ = false;
  if (timer_ == TimerPurpose::Body) arm(TimerPurpose::None);
  awaiting_response_ = true;
  if (exchange_) exchange_->on_request_complete();
  // One request at a time: pipelined requests wait until this response ends.
  return HPE_PAUSED;
}

void Http1Session::send_informational(const ResponseHead& head) {
  if (req_.version_minor == 0) return;  // HTTP/1.0 clients do not expect 1xx
  std::string& out = head_scratch();
  append_status_and_headers(out, head);
  out += "\r\n";
  bytes_sent_ += out.size();
  transport_->send(out);
}

void Http1Session::send_response_head(const ResponseHead& head, bool has_body) {
  response_started_ = true;
  status_ = head.status;
  if (in_request_) close_after_response_ = true;  // the upstream answered before the body ended
  std::string& out = head_scratch();
  append_status_and_headers(out, head);
  chunked_out_ = false;
  if (has_body) {
    if (head.content_length) {
      out += "Content-Length: ";
      out += std::to_string(*head.content_length);
      out += "\r\n";
    } else if (req_.version_minor >= 1) {
      out += "Transfer-Encoding: chunked\r\n";
      chunked_out_ = true;
    } else {
      close_after_response_ = true;  // close-delimited for HTTP/1.0
    }
  } else if (head.content_length && head.status != 204 && head.status >= 200) {
    // HEAD and 304 may state the length the body would have (RFC 9110 §8.6).
    out += "Content-Length: ";
    out += std::to_string(*head.content_length);
    out += "\r\n";
  }
  if (close_after_response_) {
    out += "Connection: close\r\n";
  } else if (req_.version_minor == 0) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  bytes_sent_ += out.size();
  transport_->send(out);
}

void Http1Session::send_response_body(std::string_view data) {
  if (data.empty()) return;
  if (chunked_out_) {
    char size_line[24];
    int n = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", data.size());
    transport_->send(std::string_view(size_line, static_cast<size_t>(n)));
    transport_->send(data);
    transport_->send("\r\n");
    bytes_sent_ += static_cast<size_t>(n) + data.size() + 2;
  } else {
    transport_->send(data);
    bytes_sent_ += data.size();
  }
  // A client that stops reading gets timeouts.send to start again.
  if (timer_ == TimerPurpose::None && output_congested()) arm(TimerPurpose::Send);
}

void Http1Session::end_response() {
  if (chunked_out_) {
    transport_->send("0\r\n\r\n");
    bytes_sent_ += 5;
  }
  finish_request();
}

void Http1Session::fail_response(int status, std::string_view reason) {
  if (closed_) return;
  if (status == 0 || response_started_) {
    // The response is already on its way: all we can do is cut it short.
    write_access_log();
    closed_ = true;
    transport_->close(false);
    return;
  }
  respond_local(status);
}

bool Http1Session::output_congested() const { return transport_->buffered_output() > kOutputHighWatermark; }

void Http1Session::on_request_body_writable() {
  if (wants_input()) transport_->resume_input();
}

void Http1Session::on_output_drained() {
  if (exchange_) exchange_->on_output_drained();
  if (timer_ == TimerPurpose::Send) {
    transport_->stop_timer();
    timer_ = TimerPurpose::None;
  }
}

void Http1Session::finish_request() {
  write_access_log();
  if (exchange_) LoopContext::of(env_.loop).defer_delete(std::move(exchange_));
  awaiting_response_ = false;
  response_started_ = false;
  if (close_after_response_) {
    closed_ = true;
    // "Connection: close" from the client with nothing after its request: no
    // more input can come, so no lingering close (nginx lingers only when
    // unread input may follow, too).
    // Only when the request was read whole (the parser paused after it): a
    // request refused at its head (413 for its Content-Length, 400 for a bad
    // chunk, 505, ...) leaves its body still coming even with Connection: close.
    if (!req_.keep_alive && !in_request_ && pending_input_.empty() && llhttp_get_errno(&parser_) == HPE_PAUSED) {
      transport_->client_done();
    }
    transport_->close(true);
    return;
  }
  llhttp_resume(&parser_);
  if (!pending_input_.empty()) {
    arm(TimerPurpose::Resume);  // parse the pipelined rest on the next iteration
  } else {
    arm(TimerPurpose::Idle);
    transport_->resume_input();
  }
}

void Http1Session::on_timer() {
  TimerPurpose purpose = timer_;
  timer_ = TimerPurpose::None;
  switch (purpose) {
    case TimerPurpose::Resume: {
      std::string data = std::move(pending_input_);
      pending_input_.clear();
      execute(data);
      if (!closed_ && pending_input_.empty() && !awaiting_response_) {
        if (!in_request_) arm(TimerPurpose::Idle);
        transport_->resume_input();
      } else if (!closed_ && !awaiting_response_ && timer_ == TimerPurpose::None) {
        arm(TimerPurpose::Header);  // never leave a connection without a deadline
      }
      break;
    }
    case TimerPurpose::Body:
      if (exchange_ && exchange_->request_body_congested()) {
        arm(TimerPurpose::Body);  // we stopped reading, not the client: the upstream's timeouts apply
        return;
      }
      [[fallthrough]];
    case TimerPurpose::Header:
      if (in_request_ && !response_started_) {
        // RFC 9110 §15.5.9: the client took too long to send its request.
        if (exchange_) {
          exchange_->cancel();
          LoopContext::of(env_.loop).defer_delete(std::move(exchange_));
        }
        close_after_response_ = true;
        respond_local(408);
        return;
      }
      closed_ = true;
      transport_->close(true);
      break;
    case TimerPurpose::Idle:
      closed_ = true;
      transport_->close(true);
      break;
    case TimerPurpose::Send:
      if (exchange_) exchange_->cancel();
      closed_ = true;
      transport_->close(false);
      break;
    case TimerPurpose::None:
      break;
  }
}

void Http1Session::arm(TimerPurpose purpose) {
  timer_ = purpose;
  const auto& t = env_.config->timeouts;
  switch (purpose) {
    case TimerPurpose::Header: transport_->arm_timer(t.header); break;
    case TimerPurpose::Idle:
      transport_->arm_timer(t.keepalive);
      // Between requests nothing of the last one is needed: an idle
      // keepalive connection keeps no grown buffer, here or below.
      req_ = RequestHead{};
      std::string().swap(field_);
      std::string().swap(user_agent_);
      transport_->release_buffers();
      break;
    case TimerPurpose::Resume: transport_->arm_timer(std::chrono::milliseconds(0)); break;
    case TimerPurpose::Send: transport_->arm_timer(t.send); break;
    case TimerPurpose::Body: transport_->arm_timer(t.body); break;
    case TimerPurpose::None: transport_->stop_timer(); break;
  }
}

void Http1Session::on_client_closed() {
  if (closed_) return;
  closed_ = true;
  if (exchange_) {
    exchange_->cancel();
    status_ = 499;  // nginx's "client closed request"
    write_access_log();
  }
  transport_->close(false);
}

void Http1Session::on_shutdown() {
  close_after_response_ = true;
  // A connection that has not had its first request yet keeps it (bounded by
  // the idle timeout and the drain deadline): a client that connected just as
  // the stop began, e.g. while a restart hands over a socket-activated
  // listener, is served, not cut off. Idle keepalive connections close now.
  if (info_.requests == 0 && pending_input_.empty() && !in_request_) return;
  if (!in_request_ && !awaiting_response_ && pending_input_.empty()) {
    closed_ = true;
    transport_->close(true);
  }
}

void Http1Session::write_access_log() {
  const auto elapsed = std::chrono::steady_clock::now() - req_start_;
  const std::string_view protocol = req_.version_minor == 0 ? "HTTP/1.0" : "HTTP/1.1";
  if (env_.counters) env_.counters->count_request(protocol, status_, elapsed);
  if (!env_.access_log) return;
  log::AccessLogEntry e;
  fill_access_log_entry(e, info_, exchange_.get());
  e.time = req_time_;
  e.protocol = protocol;
  e.method = req_.method;
  e.path = req_.target;
  e.status = status_;
  e.bytes_sent = bytes_sent_;
  e.bytes_received = bytes_received_;
  e.request_time_ms = std::chrono::duration<double, std::milli>(elapsed).count();
  if (info_.requests == 1) e.tls_handshake_ms = info_.tls_handshake_ms;
  e.user_agent = user_agent_;
  env_.access_log->log(e);
}

}  // namespace tlsfront::http
