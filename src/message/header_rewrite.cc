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

void append_upstream_request_head(std::string& out, const RequestHead& head, const UpstreamRequestOptions& opts) {
  const std::string& target = head.upstream_target.empty() ? head.target : head.upstream_target;
  size_t size = head.method.size() + target.size() + 256;  // + request line, Host, X-Forwarded-* and Via
  for (const auto& h : head.headers) size += h.name.size() + h.value.size() + 4;
  out.reserve(out.size() + size);
  out.append(head.method);
  out.push_back(' ');
  out.append(target);
  out.append(" HTTP/1.1\r\n");

  // What the configured rules delete applies to tlsfront's own fields too.
  const HeaderEdit* edit = opts.edit != nullptr && !opts.edit->empty() ? opts.edit : nullptr;
  const bool erasing = edit != nullptr && !edit->erase.empty();
  auto erased = [erasing, edit](std::string_view name) { return erasing && edit->erases(name); };
  std::vector<std::string_view> options;
  connection_options(head.headers, options);
  std::string xff;
  bool have_host = erased("host");
  for (const auto& h : head.headers) {
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
    append_header(out, h.name, h.value);
  }
  if (!have_host) append_header(out, "Host", opts.default_host);
  if (!erased("x-forwarded-for")) {
    if (!xff.empty()) xff.append(", ");
    xff.append(opts.client_addr);
    append_header(out, "X-Forwarded-For", xff);
  }
  if (!erased("x-real-ip")) append_header(out, "X-Real-IP", opts.client_addr);
  if (!erased("x-forwarded-proto")) append_header(out, "X-Forwarded-Proto", opts.scheme);
  if (!opts.request_id_header.empty() && !erased(opts.request_id_header)) {
    append_header(out, opts.request_id_header, opts.request_id);
  }
  if (edit != nullptr) {
    for (const auto& f : edit->append) {
      out.append(f.name);
      out.append(": ");
      f.append_value(out, *opts.vars);
      out.append("\r\n");
    }
  }
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
