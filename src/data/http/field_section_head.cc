#include "data/http/field_section_head.h"

#include <charconv>

namespace tlsfront::http {

void FieldSectionHead::add(RequestRecord& record, std::string_view name, std::string_view value) {
  RequestHead& req = record.head;
  if (!name.empty() && name.front() == ':') {
    if (name == ":method") req.method = value;
    else if (name == ":path") req.target = value;
    else if (name == ":authority") authority_ = value;
    else if (name == ":protocol") protocol_ = value;  // CONNECT only, once the setting was sent
    return;  // :scheme is "https" or "http" (the codec library checked it); we always forward https
  }
  if (name == "cookie") {
    if (!cookie_.empty()) cookie_ += "; ";
    cookie_.append(value);
    return;
  }
  Header h{std::string(name), std::string(value), classify_header(name)};
  if (h.token == HeaderToken::ContentLength) {
    uint64_t n = 0;  // one non-negative integer, checked by the codec library
    std::from_chars(value.data(), value.data() + value.size(), n);
    req.content_length = n;
  } else if (h.token == HeaderToken::UserAgent) {
    record.user_agent = value;
  }
  if (req.headers.empty()) req.headers.reserve(kFieldsReserved);
  req.headers.push_back(std::move(h));
}

int FieldSectionHead::finish(RequestRecord& record, bool end_stream) {
  RequestHead& req = record.head;
  const Header* host = req.find(HeaderToken::Host);
  std::string_view host_value = authority_;
  if (!authority_.empty()) {
    if (host && !iequals(host->value, authority_)) return kMalformed;
    if (!host) req.headers.insert(req.headers.begin(), Header{"host", authority_, HeaderToken::Host});
  } else if (host) {
    host_value = host->value;
  }
  if (!host_value.empty() && !valid_host(host_value)) return 400;
  set_routing_host(req);  // the Host field forwarded (:authority's copy) loses a trailing dot too
  if (!cookie_.empty()) req.headers.push_back(Header{"cookie", cookie_, HeaderToken::Other});
  if (!req.content_length && !req.extended_connect) {
    if (!end_stream) {
      req.chunked = true;  // length unknown: chunked upstream (RFC 9113 §8.2.2)
    } else if (req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
      req.content_length = 0;
    }
  }
  return 0;
}

void FieldSectionHead::release() {
  std::string().swap(authority_);
  std::string().swap(cookie_);
}

}  // namespace tlsfront::http
