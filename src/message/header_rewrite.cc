#include "message/header_rewrite.h"

#include <algorithm>

namespace tlsfront::http {
namespace {

// Names listed in every Connection header (RFC 9110 §7.6.1).
void connection_options(const std::vector<Header>& headers, std::vector<std::string_view>& out) {
  for (const auto& h : headers) {
    if (h.token == HeaderToken::Connection) split_list(h.value, out);
  }
}

bool named_by(const std::vector<std::string_view>& options, std::string_view name) {
  return std::any_of(options.begin(), options.end(), [name](std::string_view o) { return iequals(o, name); });
}

void append_header(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out.append(": ");
  out.append(value);
  out.append("\r\n");
}

}  // namespace

namespace {

// Calls `emit(name, value, token, per_message)` for every end-to-end field of
// the request sent upstream, in order: the client's fields (hop-by-hop ones,
// those its Connection names, framing, Expect and tlsfront's own removed),
// Host (or `opts.default_host`), X-Forwarded-For, X-Real-IP,
// X-Forwarded-Proto, the request ID, then the configured additions.
// `te_trailers`: whether the client's TE asked for trailers (the one TE an
// HTTP/2 request may carry). `token`: classify_header(name), known without a
// lookup for all but the configured names. `per_message`: the value changes
// with every request (the request ID, a configured field with a variable),
// which HTTP/2 sends never indexed, as Header::no_index says.
template <typename Emit>
void for_each_upstream_field(const RequestHead& head, const UpstreamRequestOptions& opts, bool& te_trailers,
                             Emit&& emit) {
  // What the configured rules delete applies to tlsfront's own fields too.
  const HeaderEdit* edit = opts.edit != nullptr && !opts.edit->empty() ? opts.edit : nullptr;
  const bool erasing = edit != nullptr && !edit->erase.empty();
  auto erased = [erasing, edit](std::string_view name) { return erasing && edit->erases(name); };
  std::vector<std::string_view> options;
  connection_options(head.headers, options);
  std::string xff;
  bool have_host = erased("host");
  te_trailers = false;
  for (const auto& h : head.headers) {
    if (h.token == HeaderToken::Te) {
      std::vector<std::string_view> codings;
      split_list(h.value, codings);
      for (std::string_view c : codings) te_trailers = te_trailers || iequals(c, "trailers");
    }
    if (is_hop_by_hop(h.token)) continue;
    switch (h.token) {
      case HeaderToken::ContentLength:
      case HeaderToken::Expect:  // 100-continue is answered by the proxy itself
      case HeaderToken::XRealIp:
      case HeaderToken::XForwardedProto:
        continue;
      case HeaderToken::XForwardedFor:
        if (!xff.empty()) xff.append(", ");
        xff.append(h.value);
        continue;
      case HeaderToken::Host:
        have_host = true;
        if (erasing && erased(h.name)) continue;
        break;
      default:
        if (!options.empty() && named_by(options, h.name)) continue;
        if (!opts.request_id_header.empty() && iequals(h.name, opts.request_id_header)) continue;
        if (erasing && erased(h.name)) continue;
        break;
    }
    emit(std::string_view(h.name), std::string_view(h.value), h.token, false);
  }
  if (!have_host) emit(std::string_view("Host"), opts.default_host, HeaderToken::Host, false);
  if (!erased("x-forwarded-for")) {
    if (!xff.empty()) xff.append(", ");
    xff.append(opts.client_addr);
    emit(std::string_view("X-Forwarded-For"), std::string_view(xff), HeaderToken::XForwardedFor, false);
  }
  if (!erased("x-real-ip")) {
    emit(std::string_view("X-Real-IP"), opts.real_ip.empty() ? opts.client_addr : opts.real_ip, HeaderToken::XRealIp,
         false);
  }
  if (!erased("x-forwarded-proto"))
    emit(std::string_view("X-Forwarded-Proto"), opts.scheme, HeaderToken::XForwardedProto, false);
  if (!opts.request_id_header.empty() && !erased(opts.request_id_header)) {
    emit(opts.request_id_header, opts.request_id, classify_header(opts.request_id_header), true);
  }
  if (edit != nullptr) {
    std::string value;
    for (const auto& f : edit->append) {
      value.clear();
      f.append_value(value, *opts.vars);
      emit(std::string_view(f.name), std::string_view(value), classify_header(f.name), !f.constant);
    }
  }
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  return out;
}

}  // namespace

void append_upstream_request_head(std::string& out, const RequestHead& head, const UpstreamRequestOptions& opts) {
  const std::string& target = head.upstream_target.empty() ? head.target : head.upstream_target;
  size_t size = head.method.size() + target.size() + 256;  // + request line, Host, X-Forwarded-* and Via
  for (const auto& h : head.headers) size += h.name.size() + h.value.size() + 4;
  out.reserve(out.size() + size);
  out.append(head.method);
  out.push_back(' ');
  out.append(target);
  out.append(" HTTP/1.1\r\n");
  bool te_trailers = false;
  for_each_upstream_field(
      head, opts, te_trailers,
      [&out](std::string_view name, std::string_view value, HeaderToken, bool) { append_header(out, name, value); });
  if (head.chunked) {
    append_header(out, "Transfer-Encoding", "chunked");
  } else if (head.content_length) {
    append_header(out, "Content-Length", std::to_string(*head.content_length));
  }
  if (!head.upgrade.empty()) {
    // RFC 9110 §7.8: the hop-by-hop pair, for this hop, on a connection that
    // carries nothing else (never a pooled one).
    append_header(out, "Upgrade", head.upgrade);
    append_header(out, "Connection", "upgrade");
  } else if (opts.close) {
    append_header(out, "Connection", "close");
  }
  out.append("\r\n");
}

std::vector<Header> upstream_h2_request_fields(const RequestHead& head, const UpstreamRequestOptions& opts) {
  std::vector<Header> out;
  out.reserve(head.headers.size() + 10);
  out.push_back(Header{":method", head.method});
  out.push_back(Header{":scheme", opts.upstream_tls ? "https" : "http"});
  out.push_back(Header{":authority", {}});
  out.push_back(Header{":path", head.upstream_target.empty() ? head.target : head.upstream_target});
  bool te_trailers = false;
  for_each_upstream_field(head, opts, te_trailers,
                          [&out](std::string_view name, std::string_view value, HeaderToken token, bool per_message) {
                            if (token == HeaderToken::Host) {
                              // RFC 9113 §8.3.1: the authority goes in :authority, not Host (the
                              // last one wins when a rule adds one).
                              out[2].value = value;
                              return;
                            }
                            out.push_back(Header{lowercase(name), std::string(value), token, per_message});
                          });
  if (out[2].value.empty()) out.erase(out.begin() + 2);
  if (te_trailers) out.push_back(Header{"te", "trailers", HeaderToken::Te});
  if (head.content_length) {
    out.push_back(Header{"content-length", std::to_string(*head.content_length), HeaderToken::ContentLength});
  }
  return out;
}

void strip_response_headers(std::vector<Header>& headers) {
  std::vector<std::string_view> options;
  connection_options(headers, options);
  std::vector<std::string> named(options.begin(), options.end());  // views die with the erase below
  std::erase_if(headers, [&named](const Header& h) {
    if (is_hop_by_hop(h.token) || h.token == HeaderToken::ContentLength) return true;
    return std::any_of(named.begin(), named.end(), [&h](const std::string& o) { return iequals(o, h.name); });
  });
}

bool response_has_no_body(std::string_view method, int status) {
  return method == "HEAD" || (status >= 100 && status < 200) || status == 204 || status == 304;
}

}  // namespace tlsfront::http
