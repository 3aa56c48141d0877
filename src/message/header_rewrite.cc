#include "message/header_rewrite.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace tlsfront::http {
namespace {

// Names listed in every Connection header (RFC 9110 §7.6.1).
void connection_options(const std::vector<Header>& headers, std::vector<std::string_view>& out) {
  for (const auto& h : headers) {
    if (h.token == HeaderToken::Connection) split_list(h.value, out);
  }
}

// False when no Connection field of `headers` names a field that is not
// hop-by-hop anyway: its options are only keep-alive (the Keep-Alive field
// is) and close (when no field is named so), as most are. Then the options
// need no list (no allocation).
bool names_other_fields(const std::vector<Header>& headers) {
  auto names_none = [&headers](std::string_view o) {
    return iequals(o, "keep-alive") ||
           (iequals(o, "close") && std::none_of(headers.begin(), headers.end(),
                                                [](const Header& h) { return iequals(h.name, "close"); }));
  };
  return std::any_of(headers.begin(), headers.end(), [&names_none](const Header& h) {
    return h.token == HeaderToken::Connection &&
           for_each_list_item(h.value, [&names_none](std::string_view o) { return !names_none(o); });
  });
}

bool named_by(const std::vector<std::string_view>& options, std::string_view name) {
  return std::any_of(options.begin(), options.end(), [name](std::string_view o) { return iequals(o, name); });
}

void append_header(std::string& out, std::string_view name, std::string_view value) {
  // One growth and two copies per line (out is reserved for the whole
  // head): four appends each checked the capacity and called memcpy.
  const size_t at = out.size();
  out.resize(at + name.size() + value.size() + 4);
  char* p = out.data() + at;
  std::memcpy(p, name.data(), name.size());
  p += name.size();
  *p++ = ':';
  *p++ = ' ';
  std::memcpy(p, value.data(), value.size());
  p += value.size();
  *p++ = '\r';
  *p = '\n';
}

}  // namespace

namespace {

// Calls `emit(name, value, token, per_message, transient)` for every end-to-end field of
// the request sent upstream, in order: the client's fields (hop-by-hop ones,
// those its Connection names, framing, Expect and tlsfront's own removed),
// Host (or `opts.default_host`), X-Forwarded-For, X-Real-IP,
// X-Forwarded-Proto, the request ID, then the configured additions.
// `te_trailers`: whether the client's TE asked for trailers (the one TE an
// HTTP/2 request may carry). `token`: classify_header(name), known without a
// lookup for all but the configured names. `per_message`: the value changes
// with every request (the request ID, a configured field with a variable),
// which HTTP/2 sends never indexed, as Header::no_index says. `transient`:
// `value` lives only during the call (a joined X-Forwarded-For, a configured
// field's value); every other name and value is a view into `head` or `opts`.
template <typename Emit>
void for_each_upstream_field(const RequestHead& head, const UpstreamRequestOptions& opts, bool& te_trailers,
                             Emit&& emit) {
  // What the configured rules delete applies to tlsfront's own fields too.
  const HeaderEdit* edit = opts.edit != nullptr && !opts.edit->empty() ? opts.edit : nullptr;
  const bool erasing = edit != nullptr && !edit->erase.empty();
  auto erased = [erasing, edit](std::string_view name) { return erasing && edit->erases(name); };
  std::vector<std::string_view> options;
  if (names_other_fields(head.headers)) connection_options(head.headers, options);
  std::string xff;
  bool have_host = erased("host");
  te_trailers = false;
  for (const auto& h : head.headers) {
    if (h.token == HeaderToken::Te) te_trailers = te_trailers || list_contains(h.value, "trailers");
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
    emit(std::string_view(h.name), std::string_view(h.value), h.token, false, false);
  }
  if (!have_host) emit(std::string_view("Host"), opts.default_host, HeaderToken::Host, false, false);
  if (!erased("x-forwarded-for")) {
    if (xff.empty()) {
      emit(std::string_view("X-Forwarded-For"), opts.client_addr, HeaderToken::XForwardedFor, false, false);
    } else {
      xff.append(", ");
      xff.append(opts.client_addr);
      emit(std::string_view("X-Forwarded-For"), std::string_view(xff), HeaderToken::XForwardedFor, false, true);
    }
  }
  if (!erased("x-real-ip")) {
    emit(std::string_view("X-Real-IP"), opts.real_ip.empty() ? opts.client_addr : opts.real_ip, HeaderToken::XRealIp,
         false, false);
  }
  if (!erased("x-forwarded-proto"))
    emit(std::string_view("X-Forwarded-Proto"), opts.scheme, HeaderToken::XForwardedProto, false, false);
  if (!opts.request_id_header.empty() && !erased(opts.request_id_header)) {
    emit(opts.request_id_header, opts.request_id, classify_header(opts.request_id_header), true, false);
  }
  if (edit != nullptr) {
    std::string value;
    for (const auto& f : edit->append) {
      value.clear();
      f.append_value(value, *opts.vars);
      emit(std::string_view(f.name), std::string_view(value), classify_header(f.name), !f.constant, true);
    }
  }
}

bool has_upper(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

// tlsfront's own fields, as HTTP/2 names them (a literal: no copy to
// lowercase); "" for any other.
std::string_view h2_name(HeaderToken token) {
  switch (token) {
    case HeaderToken::XForwardedFor: return "x-forwarded-for";
    case HeaderToken::XRealIp: return "x-real-ip";
    case HeaderToken::XForwardedProto: return "x-forwarded-proto";
    default: return {};
  }
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
      [&out](std::string_view name, std::string_view value, HeaderToken, bool, bool) { append_header(out, name, value); });
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

void H2RequestFields::add(std::string_view name, std::string_view value, bool no_index, bool lower_name,
                          bool copy_value) {
  FieldView f{name, value, no_index};
  if (lower_name || copy_value) {
    // Views already taken into text_ follow it when it grows (compared as
    // integers: the old buffer is never read).
    if (text_.empty()) text_.reserve(text_hint_);  // one allocation for a head's names, usually
    const auto before = reinterpret_cast<uintptr_t>(text_.data());
    const size_t name_at = text_.size();
    if (lower_name) {
      text_.append(name);
      for (size_t i = name_at; i < text_.size(); ++i) {
        if (text_[i] >= 'A' && text_[i] <= 'Z') text_[i] = static_cast<char>(text_[i] + 32);
      }
    }
    const size_t value_at = text_.size();
    if (copy_value) text_.append(value);
    const auto after = reinterpret_cast<uintptr_t>(text_.data());
    if (after != before) {
      auto rebase = [&](std::string_view v) {
        return std::string_view(text_.data() + (reinterpret_cast<uintptr_t>(v.data()) - before), v.size());
      };
      for (FieldView& g : fields_) {
        if (g.owned & FieldView::kOwnedName) g.name = rebase(g.name);
        if (g.owned & FieldView::kOwnedValue) g.value = rebase(g.value);
      }
    }
    if (lower_name) f.name = std::string_view(text_.data() + name_at, name.size());
    if (copy_value) f.value = std::string_view(text_.data() + value_at, value.size());
    f.owned =
        static_cast<uint8_t>((lower_name ? FieldView::kOwnedName : 0) | (copy_value ? FieldView::kOwnedValue : 0));
  }
  fields_.push_back(f);
}

void H2RequestFields::build(const RequestHead& head, const UpstreamRequestOptions& opts) {
  fields_.clear();
  text_.clear();
  fields_.reserve(head.headers.size() + 10);
  text_hint_ = 64;
  for (const auto& h : head.headers) text_hint_ += h.name.size();
  add(":method", head.method, false, false, false);
  add(":scheme", opts.upstream_tls ? "https" : "http", false, false, false);
  add(":authority", {}, false, false, false);
  add(":path", head.upstream_target.empty() ? head.target : head.upstream_target, false, false, false);
  bool te_trailers = false;
  for_each_upstream_field(
      head, opts, te_trailers,
      [this](std::string_view name, std::string_view value, HeaderToken token, bool per_message, bool transient) {
        if (token == HeaderToken::Host) {
          // RFC 9113 §8.3.1: the authority goes in :authority, not Host (the
          // last one wins when a rule adds one).
          add(":authority", value, false, false, transient);
          std::swap(fields_[2], fields_.back());
          fields_.pop_back();
          return;
        }
        const std::string_view own = h2_name(token);
        if (!own.empty()) return add(own, value, per_message, false, transient);
        const bool upper = has_upper(name);
        // The default request_id_header, without a copy per request.
        if (upper && iequals(name, "x-request-id")) {
          return add("x-request-id", value, per_message, false, transient);
        }
        add(name, value, per_message, upper, transient);
      });
  if (fields_[2].value.empty()) fields_.erase(fields_.begin() + 2);
  if (te_trailers) add("te", "trailers", false, false, false);
  if (head.content_length) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, *head.content_length).ptr;
    add("content-length", std::string_view(digits, static_cast<size_t>(end - digits)), false, false, true);
  }
}

void strip_response_headers(std::vector<Header>& headers) {
  auto framing_or_hop = [](const Header& h) { return is_hop_by_hop(h.token) || h.token == HeaderToken::ContentLength; };
  if (!names_other_fields(headers)) {
    std::erase_if(headers, framing_or_hop);
    return;
  }
  std::vector<std::string_view> options;
  connection_options(headers, options);
  std::vector<std::string> named(options.begin(), options.end());  // views die with the erase below
  std::erase_if(headers, [&named, &framing_or_hop](const Header& h) {
    if (framing_or_hop(h)) return true;
    return std::any_of(named.begin(), named.end(), [&h](const std::string& o) { return iequals(o, h.name); });
  });
}

bool response_has_no_body(std::string_view method, int status) {
  return method == "HEAD" || (status >= 100 && status < 200) || status == 204 || status == 304;
}

}  // namespace tlsfront::http
