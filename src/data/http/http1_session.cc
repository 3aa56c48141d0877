#include "data/http/http1_session.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "data/http/alt_svc.h"
#include "data/http/tunnel_session.h"
#include "log/log.h"
#include "message/chunked.h"
#include "message/error_response.h"

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

Http1Session::Http1Session(const SessionEnv& env, ClientTransport* transport, ConnectionInfo info)
    : env_(env), transport_(transport), info_(std::move(info)) {
  arm(TimerPurpose::Header);
}

Http1Session::~Http1Session() {
  // A request or tunnel still in flight when the connection is torn down
  // gets its line too: by the drain deadline (Connection::abort), a request
  // with no status sent yet as 503, the answer tlsfront gave up with; by a
  // failed write to the client, as 499 (it went away).
  if (has_exchange()) {
    const bool draining = env_.shutting_down != nullptr && *env_.shutting_down;
    if (record().status == 0) record().status = draining ? 503 : 499;
    log_request();
  }
}

bool Http1Session::wants_input() const {
  if (close_ == CloseMode::Closed) return false;
  // A tunnel reads whatever the phase before it held back.
  if (request_ != RequestPhase::Tunnel && (request_ == RequestPhase::Complete || !pending_input_.empty())) return false;
  return !(stream_ && stream_->request_body_congested());
}

void Http1Session::on_data(std::string_view data) {
  if (close_ == CloseMode::Closed) return;
  if (request_ == RequestPhase::Tunnel) {
    record().bytes_received += data.size();
    arm(TimerPurpose::Tunnel);
    stream().send_tunnel(data);
    // An idle tunnel keeps no buffer: what was read is passed on.
    transport_->release_buffers();
    return;
  }
  if (request_ == RequestPhase::Complete || !pending_input_.empty()) {
    pending_input_.append(data);
    return;
  }
  execute(data);
}

void Http1Session::execute(std::string_view data) {
  if (!in_request() && timer_ == TimerPurpose::Idle) arm(TimerPurpose::Header);
  // The hooks may end the request and let the connection go idle (or
  // become a tunnel): the reader goes only once this call is done with it.
  struct Parsing {
    Http1Session* self;
    explicit Parsing(Http1Session* s) : self(s) { self->parsing_ = true; }
    ~Parsing() {
      self->parsing_ = false;
      if (std::exchange(self->drop_reader_, false)) self->reader_.reset();
    }
  } parsing(this);
  Reader& r = reader();
  HeadScan& scan = r.scan;
  llhttp_t& parser = r.parser;
  scan.input_begin = data.data();
  llhttp_errno_t err = llhttp_execute(&parser, data.data(), data.size());
  // Only compared by address, never dereferenced, after this call.
  scan.input_end_prev = data.data() + data.size();
  if (scan.field_in_input && !scan.in_value && scan.field_end != nullptr &&
      std::memchr(scan.field_end, '\n', static_cast<size_t>(scan.input_end_prev - scan.field_end)) != nullptr) {
    scan.lf_after_field = true;  // the value has not started yet; remember the gap had a LF
  }
  scan.field_in_input = false;
  if (request_ != RequestPhase::Idle) record().bytes_received += data.size();
  if (err == HPE_OK) return;
  if (err == HPE_PAUSED) {
    // Paused after a complete request: keep the rest for after the response.
    const char* pos = llhttp_get_error_pos(&parser);
    size_t used = static_cast<size_t>(pos - data.data());
    // (An exchange that ended inside the parser's hooks may have let the
    // connection go idle already, with its record.)
    if (request_ != RequestPhase::Idle) record().bytes_received -= data.size() - used;
    pending_input_.assign(pos, data.size() - used);
    if (local_answer_) respond_local(std::move(*local_answer_));
    return;
  }
  if (close_ == CloseMode::Closed) return;
  // The HTTP/2 connection preface ("PRI * HTTP/2.0", prior knowledge) on
  // an HTTP/1.1 connection: tlsfront has no h2c, so 505, then the close.
  const int status = err == HPE_PAUSED_H2_UPGRADE ? 505 : rejection_.value_or(400);
  if (has_exchange() && response_ != ResponsePhase::Waiting) {
    close(false);  // the client has the response's head: its status stays the logged one
    return;
  }
  close_after_response();
  respond_local(status);
}

void Http1Session::on_local_answer() {
  local_answer_.reset();
  // A request whose body we did not read leaves the connection unusable.
  if (in_request()) close_after_response();
}

int Http1Session::reject(int status) {
  rejection_ = status;
  return -1;
}

int Http1Session::on_headers_complete() {
  HeadScan& scan = reader_->scan;  // a hook: execute() holds the reader
  llhttp_t& parser = reader_->parser;
  RequestHead& req = record().head;
  if (!scan.in_value && !scan.field.empty()) {
    scan.head_bytes += 4;
    req.headers.push_back(Header{scan.field, {}, classify_header(scan.field)});
  }
  req.method = llhttp_method_name(static_cast<llhttp_method_t>(llhttp_get_method(&parser)));
  req.version_major = llhttp_get_http_major(&parser);
  req.version_minor = llhttp_get_http_minor(&parser);
  req.keep_alive = llhttp_should_keep_alive(&parser) != 0;
  req.chunked = (parser.flags & F_CHUNKED) != 0;
  if (parser.flags & F_CONTENT_LENGTH) req.content_length = parser.content_length;
  if (timer_ == TimerPurpose::Header) arm(TimerPurpose::None);
  if (!req.keep_alive || (env_.shutting_down && *env_.shutting_down) ||
      info_.requests >= env_.config->limits.keepalive_requests) {
    close_after_response();
  }

  // Upgrade is not proxied (the header is hop-by-hop and dropped): keep
  // llhttp parsing HTTP after this message instead of handing over the rest.
  parser.upgrade = 0;
  if (req.version_major != 1) return reject(505);
  LocalAnswer answer = stream().admit([this] { return validate_head(); });
  if (answer.head_refused || answer.status == 413) return reject(answer.status);
  transition(request_, RequestPhase::Body);
  if (!stream_->has_exchange()) {
    if (req.expect_continue && req.has_body()) {
      // RFC 9110 §10.1.1: the client waits for a 100 before its body; a final
      // status instead tells it not to send one. Answer now and close
      // (lingering: the body may still come).
      respond_local(std::move(answer));
      return -1;
    }
    local_answer_ = std::make_unique<LocalAnswer>(std::move(answer));
    // Let llhttp read to the end of the message; the body (if any) is not
    // forwarded anywhere and the connection closes after the answer.
    if (req.has_body()) {
      close_after_response();
      arm(TimerPurpose::Body);
    }
    return 0;
  }
  // An Upgrade request's connection ends with its answer unless it becomes
  // a tunnel: what the client sent after it is the tunnel's or nothing,
  // never a request parsed here.
  if (!req.upgrade.empty()) close_after_response();
  if (req.expect_continue && req.has_body()) {
    transport_->send(kContinue);
    record().bytes_sent += kContinue.size();
  }
  stream_->start();
  if (close_ == CloseMode::Closed) return -1;
  if (req.has_body()) arm(TimerPurpose::Body);
  return 0;
}

int Http1Session::on_body(const char* at, size_t len) {
  if (!record().add_body(len, env_.config->limits.max_body_bytes)) return reject(413);
  stream().on_request_body(std::string_view(at, len));
  if (timer_ == TimerPurpose::Body) arm(TimerPurpose::Body);
  return close_ == CloseMode::Closed ? -1 : 0;
}

int Http1Session::on_message_complete() {
  transition(request_, RequestPhase::Complete);
  if (timer_ == TimerPurpose::Body) arm(TimerPurpose::None);
  stream().on_request_complete();
  // One request at a time: pipelined requests wait until this response ends.
  return HPE_PAUSED;
}

void Http1Session::encode_informational(const ResponseHead& head) {
  std::string& out = head_scratch();
  append_status_and_headers(out, head);
  out += "\r\n";
  record().bytes_sent += out.size();
  transport_->send(out);
}

void Http1Session::encode_tunnel_open(const ResponseHead& head, std::string_view protocol) {
  std::string& out = head_scratch();
  append_status_and_headers(out, head);
  out += "Upgrade: ";
  out += protocol;
  out += "\r\nConnection: upgrade\r\n\r\n";
  record().bytes_sent += out.size();
  transport_->send(out);
  transition(response_, ResponsePhase::Tunnel);
  transition(request_, RequestPhase::Tunnel);
  arm(TimerPurpose::Tunnel);
  // What only reading requests needed goes: a tunnel may stay open for
  // hours (docs/ARCHITECTURE.md, "Idle connections").
  drop_reader();
  transport_->release_buffers();
  // Bytes the client sent after its request, before the 101, are the tunnel's.
  if (!pending_input_.empty()) {
    std::string early;
    early.swap(pending_input_);
    on_data(early);
  }
  if (wants_input()) transport_->resume_input();
}

void Http1Session::on_tunnel_taken() {
  if (request_ != RequestPhase::Tunnel || close_ == CloseMode::Closed) {
    stream_->retire();
    return;
  }
  transition(close_, CloseMode::Closed);
  transport_->replace_session(
      std::make_unique<TunnelSession>(env_, transport_, info_, stream_->record().to_tunnel(), stream_->take_tunnel()));
  // This session is deleted at the end of the iteration.
}

void Http1Session::encode_head(ResponseHead&& head, bool has_body) {
  if (in_request()) close_after_response();  // the upstream answered before the body ended
  std::string& out = head_scratch();
  append_status_and_headers(out, head);
  ResponsePhase framing = ResponsePhase::Sized;
  // An HTTP/2 upstream's response may end in trailers whatever its
  // Content-Length says; only a chunked body carries them to an HTTP/1.1
  // client (RFC 9110 §6.5, RFC 9112 §7.1.2), so one that asked for them
  // gets the body chunked, without the length (as nginx does when it
  // expects trailers).
  const bool chunk_for_trailers = has_body && head.content_length && head.trailers_may_follow &&
                                  record().head.version_minor >= 1 && client_accepts_trailers();
  if ((has_body && !head.content_length) || chunk_for_trailers) {
    if (record().head.version_minor >= 1) {
      out += "Transfer-Encoding: chunked\r\n";
      framing = ResponsePhase::Chunked;
    } else {
      close_after_response();  // close-delimited for HTTP/1.0
      framing = ResponsePhase::UntilClose;
    }
  } else if (head.states_length()) {
    out += "Content-Length: ";
    out += std::to_string(*head.content_length);
    out += "\r\n";
  }
  transition(response_, framing);
  AltSvcBuffer alt_svc;
  if (std::string_view value = alt_svc_value(info_, head, alt_svc); !value.empty()) {
    out += "Alt-Svc: ";
    out += value;
    out += "\r\n";
  }
  if (close_ != CloseMode::KeepAlive) {
    out += "Connection: close\r\n";
  } else if (record().head.version_minor == 0) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  record().bytes_sent += out.size();
  transport_->send(out);
}

void Http1Session::encode_body(std::string_view data) {
  if (data.empty()) return;
  if (response_ == ResponsePhase::Tunnel) {
    transport_->send(data);
    record().bytes_sent += data.size();
    arm(TimerPurpose::Tunnel);
    transport_->release_buffers();  // once written (an idle tunnel keeps no buffer)
    return;
  }
  if (response_ == ResponsePhase::Chunked) {
    record().bytes_sent += write_chunk(data, [this](std::string_view part) { transport_->send(part); });
  } else {
    transport_->send(data);
    record().bytes_sent += data.size();
  }
  // A client that stops reading gets timeouts.send to start again.
  if (timer_ == TimerPurpose::None && output_congested()) arm(TimerPurpose::Send);
}

bool Http1Session::client_accepts_trailers() {
  const Header* te = record().head.find(HeaderToken::Te);
  if (te == nullptr) return false;
  std::vector<std::string_view> codings;
  split_list(te->value, codings);
  return std::any_of(codings.begin(), codings.end(), [](std::string_view c) { return iequals(c, "trailers"); });
}

void Http1Session::encode_trailers(const std::vector<Header>& trailers) {
  if (response_ != ResponsePhase::Chunked || !client_accepts_trailers()) return;
  trailer_section_.clear();
  for (const auto& h : trailers) {
    trailer_section_ += h.name;
    trailer_section_ += ": ";
    trailer_section_ += h.value;
    trailer_section_ += "\r\n";
  }
}

void Http1Session::encode_end() {
  if (response_ == ResponsePhase::Tunnel) {
    // The upstream closed the tunnel: so does the client connection.
    record().response_complete = true;
    close(true);
    return;
  }
  if (response_ == ResponsePhase::Chunked) {
    if (trailer_section_.empty()) {
      transport_->send(kLastChunk);
      record().bytes_sent += kLastChunk.size();
    } else {
      std::string last = "0\r\n" + trailer_section_ + "\r\n";
      std::string().swap(trailer_section_);
      transport_->send(last);
      record().bytes_sent += last.size();
    }
  }
  finish_request();
}

void Http1Session::abort_response() {
  if (close_ != CloseMode::Closed) close(false);
}

bool Http1Session::output_congested() const { return transport_->buffered_output() > kOutputHighWatermark; }

void Http1Session::on_request_body_writable() {
  if (wants_input()) transport_->resume_input();
}

void Http1Session::on_output_drained() {
  if (stream_) stream_->on_output_drained();
  if (timer_ == TimerPurpose::Send) {
    transport_->stop_timer();
    timer_ = TimerPurpose::None;
  }
}

void Http1Session::finish_request() {
  record().response_complete = true;
  log_request();
  if (response_ != ResponsePhase::Waiting) transition(response_, ResponsePhase::Waiting);
  if (close_ != CloseMode::KeepAlive) {
    // "Connection: close" from the client with nothing after its request: no
    // more input can come, so no lingering close (nginx lingers only when
    // unread input may follow, too). Only when the request was read whole
    // (Complete: the parser paused after it): a request refused at its head
    // (413 for its Content-Length, 400 for a bad chunk, 505, ...) leaves its
    // body still coming even with Connection: close.
    if (!record().head.keep_alive && request_ == RequestPhase::Complete && pending_input_.empty()) {
      transport_->client_done();
    }
    close(true);
    return;
  }
  transition(request_, RequestPhase::Idle);
  if (reader_) llhttp_resume(&reader_->parser);
  if (!pending_input_.empty()) {
    arm(TimerPurpose::Resume);  // parse the pipelined rest on the next iteration
  } else {
    arm(TimerPurpose::Idle);
    transport_->resume_input();
  }
}

void Http1Session::close(bool notify) {
  // A request still in flight (its response cut short, or never sent) gets
  // its line now: every request that started is logged once.
  if (has_exchange()) log_request();
  transition(close_, CloseMode::Closed);
  transport_->close(notify);
}

void Http1Session::on_timer() {
  TimerPurpose purpose = timer_;
  timer_ = TimerPurpose::None;
  switch (purpose) {
    case TimerPurpose::Resume: {
      std::string data = std::move(pending_input_);
      pending_input_.clear();
      execute(data);
      if (close_ == CloseMode::Closed || request_ == RequestPhase::Complete) break;
      if (pending_input_.empty()) {
        if (!in_request()) arm(TimerPurpose::Idle);
        transport_->resume_input();
      } else if (timer_ == TimerPurpose::None) {
        arm(TimerPurpose::Header);  // never leave a connection without a deadline
      }
      break;
    }
    case TimerPurpose::Body:
      if (stream_ && stream_->request_body_congested()) {
        arm(TimerPurpose::Body);  // we stopped reading, not the client: the upstream's timeouts apply
        return;
      }
      [[fallthrough]];
    case TimerPurpose::Header:
      if (in_request() && response_ == ResponsePhase::Waiting) {
        // RFC 9110 §15.5.9: the client took too long to send its request.
        close_after_response();
        respond_local(408);
        return;
      }
      close(true);
      break;
    case TimerPurpose::Idle:
      close(true);
      break;
    case TimerPurpose::Tunnel:
      close(true);  // timeouts.tunnel without a byte either way (logged with the tunnel)
      break;
    case TimerPurpose::Send:
      close(false);  // the client stopped reading: its response is cut short (and logged)
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
      stream_.reset();
      drop_reader();
      transport_->release_buffers();
      break;
    case TimerPurpose::Resume: transport_->arm_timer(std::chrono::milliseconds(0)); break;
    case TimerPurpose::Send: transport_->arm_timer(t.send); break;
    case TimerPurpose::Body: transport_->arm_timer(t.body); break;
    case TimerPurpose::Tunnel: transport_->arm_timer(t.tunnel); break;
    case TimerPurpose::None: transport_->stop_timer(); break;
  }
}

void Http1Session::on_client_closed() {
  if (close_ == CloseMode::Closed) return;
  // nginx's "client closed request", unless the client already had a status.
  if (has_exchange() && response_ == ResponsePhase::Waiting) record().status = 499;
  // A tunnel ends when either side closes: the client's close is its end.
  if (response_ == ResponsePhase::Tunnel) record().response_complete = true;
  close(false);
}

void Http1Session::on_handshake_done(double tls_handshake_ms) {
  info_.early_data = false;
  info_.tls_handshake_ms = tls_handshake_ms;
  if (stream_) stream_->on_handshake_done();
}

void Http1Session::on_shutdown() {
  if (close_ == CloseMode::Closed) return;
  close_after_response();
  // A connection that has not had its first request yet keeps it (bounded by
  // the idle timeout and the drain deadline): a client that connected just as
  // the stop began, e.g. while a restart hands over a socket-activated
  // listener, is served, not cut off. Idle keepalive connections close now.
  if (info_.requests == 0 && pending_input_.empty() && !in_request()) return;
  if (request_ == RequestPhase::Idle && pending_input_.empty()) close(true);
}

bool Http1Session::close_if_idle() {
  // The Idle timer runs exactly while a connection waits between requests
  // (not before the first one: that is Header).
  if (close_ == CloseMode::Closed || timer_ != TimerPurpose::Idle) return false;
  close(true);
  return true;
}

void Http1Session::log_request() {
  const std::string_view protocol = record().head.version_minor == 0 ? "HTTP/1.0" : "HTTP/1.1";
  stream().log(protocol, 0, info_.requests == 1);
}

}  // namespace tlsfront::http
