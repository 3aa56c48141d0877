// Http1Session's request reading (declared in http1_session.h): the llhttp
// hooks up to the end of a request head, the scan of header lines across
// llhttp's spans (obs-fold, head size against limits.max_header_bytes), the
// head's validation (RFC 9112 framing, the smuggling defences, Host and
// absolute-form, Upgrade), and the reader's lifetime (Http1Session::Reader:
// on the heap from a request's first byte until the connection goes idle or
// becomes a tunnel). What follows the head (admission, the body, the
// response) is http1_session.cc's.
// Thread affinity: owning worker only.
#include "data/http/http1_session.h"

#include <cstring>

namespace tlsfront::http {

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

Http1Session::Reader& Http1Session::reader() {
  if (!reader_) {
    reader_ = std::make_unique<Reader>();
    // Strict mode: llhttp's lenient flags all stay off.
    llhttp_init(&reader_->parser, HTTP_REQUEST, &kRequestSettings);
    reader_->parser.data = this;
  }
  return *reader_;
}

void Http1Session::drop_reader() {
  if (parsing_) {
    drop_reader_ = true;  // llhttp (or execute() after it) still uses it
    return;
  }
  reader_.reset();
}

int Http1Session::on_message_begin() {
  HeadScan& scan = reader_->scan;  // a hook: execute() holds the reader
  transition(request_, RequestPhase::Head);
  record().begin();
  scan.field.clear();
  scan.in_value = false;
  scan.head_bytes = 0;
  scan.trailers.clear();
  rejection_.reset();
  local_answer_.reset();
  ++info_.requests;
  if (timer_ != TimerPurpose::Header) arm(TimerPurpose::Header);
  return 0;
}

int Http1Session::on_url(const char* at, size_t len) {
  HeadScan& scan = reader_->scan;  // a hook: execute() holds the reader
  record().head.target.append(at, len);
  scan.head_bytes += len;
  if (record().head.target.size() > env_.config->limits.max_header_bytes) return reject(414);
  return 0;
}

int Http1Session::on_header_field(const char* at, size_t len) {
  HeadScan& scan = reader_->scan;  // a hook: execute() holds the reader
  if (scan.in_value) {
    scan.in_value = false;
    scan.field.clear();
  }
  scan.field.append(at, len);
  scan.field_end = at + len;
  scan.field_in_input = true;
  scan.lf_after_field = false;
  scan.head_bytes += len;
  return scan.head_bytes > env_.config->limits.max_header_bytes ? reject(431) : 0;
}

int Http1Session::on_header_value(const char* at, size_t len) {
  HeadScan& scan = reader_->scan;  // a hook: execute() holds the reader
  auto& headers = request_ == RequestPhase::Head ? record().head.headers : scan.trailers;
  if (!scan.in_value) {
    // A line break between the colon and the value's first byte is obs-fold
    // with an empty first line ("Name:\r\n value").
    const char* from = scan.field_in_input ? scan.field_end : scan.input_begin;
    if (scan.lf_after_field || std::memchr(from, '\n', static_cast<size_t>(at - from)) != nullptr) return reject(400);
    scan.in_value = true;
    scan.head_bytes += 4;  // ": " and CRLF
    headers.push_back(Header{scan.field, {}, classify_header(scan.field)});
  } else if (at != scan.value_end && !(scan.value_end == scan.input_end_prev && at == scan.input_begin)) {
    // The value resumed after a gap: llhttp unfolded an obs-fold. Rejected
    // (RFC 9112 §5.2 allows a 400) rather than guessing what the client meant.
    return reject(400);
  }
  scan.value_end = at + len;
  headers.back().value.append(at, len);
  scan.head_bytes += len;
  return scan.head_bytes > env_.config->limits.max_header_bytes ? reject(431) : 0;
}

int Http1Session::validate_head() {
  RequestHead& req = record().head;
  const bool http11 = req.version_major == 1 && req.version_minor >= 1;
  int hosts = 0, te = 0, cl = 0;
  const Header* host = nullptr;
  const Header* upgrade = nullptr;
  bool connection_upgrade = false;
  for (const auto& h : req.headers) {
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
        req.expect_continue = http11;
        break;
      case HeaderToken::UserAgent:
        record().user_agent = h.value;
        break;
      case HeaderToken::Connection:
        connection_upgrade = connection_upgrade || list_contains(h.value, "upgrade");
        break;
      case HeaderToken::Upgrade:
        if (upgrade == nullptr) upgrade = &h;
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
  // RFC 9110 §7.8: Upgrade counts only when Connection names it; a request
  // with a body is not upgraded (its body would have to go first), and
  // HTTP/1.0 has no Upgrade. admit() keeps it only if the route allows it.
  if (upgrade != nullptr && connection_upgrade && http11 && te == 0 && !req.content_length.value_or(0)) {
    std::vector<std::string_view> protocols;
    split_list(upgrade->value, protocols);
    // One protocol only: a list would leave the upstream to choose, and the
    // route's check to one of them.
    if (protocols.size() == 1) {
      req.upgrade.assign(protocols.front());
      for (char& c : req.upgrade) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
  }

  std::string_view target = req.target;
  if (!target.empty() && target.front() == '/') {
    // origin-form
  } else if (target == "*" && req.method == "OPTIONS") {
    // asterisk-form
  } else if (iequals(target.substr(0, 7), "http://") || iequals(target.substr(0, 8), "https://")) {
    // absolute-form (RFC 9112 §3.2.2): its authority replaces Host. The
    // authority ends at the path or, when the path is empty, at the query
    // (RFC 3986 §3.2): "http://h?q" is "/?q" at h.
    std::string_view rest = target.substr(target.find("//") + 2);
    size_t end = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, end);
    if (authority.empty() || !valid_host(authority) || authority.find('@') != std::string_view::npos) return 400;
    // RFC 9112 §3.2.2: the authority wins over Host, and what is forwarded
    // must say the same thing that was routed on.
    std::string host_value(authority);
    if (end == std::string_view::npos) {
      req.target = "/";
    } else if (rest[end] == '?') {
      req.target = "/" + std::string(rest.substr(end));
    } else {
      req.target = std::string(rest.substr(end));
    }
    std::erase_if(req.headers, [](const Header& h) { return h.token == HeaderToken::Host; });
    req.headers.insert(req.headers.begin(), Header{"Host", std::move(host_value), HeaderToken::Host});
    set_routing_host(req);
    return 0;
  } else {
    return 400;
  }
  set_routing_host(req);  // one trailing dot goes, from the Host forwarded too
  return 0;
}

}  // namespace tlsfront::http
