#include "data/http/local_answer.h"

#include "data/http/admission.h"
#include "data/http/header_plan.h"
#include "message/error_response.h"

namespace tlsfront::http {

void build_local_answer(const SessionEnv& env, const ConnectionInfo& info, const RequestRecord& record,
                        const LocalAnswer& answer, ResponseHead& head, std::string& body) {
  head.status = answer.status;
  const bool returned = answer.fixed != nullptr && answer.fixed->location.empty();
  head.headers.push_back(Header{"Server", "tlsfront", HeaderToken::Other});
  if (!returned || !answer.fixed->body.empty()) {  // an empty body has nothing to type
    head.headers.push_back(
        Header{"Content-Type", returned ? answer.fixed->content_type : std::string("text/plain"), HeaderToken::Other});
  }
  if (!answer.location.empty()) head.headers.push_back(Header{"Location", answer.location, HeaderToken::Other});
  if (answer.retry_after != 0) {
    head.headers.push_back(Header{"Retry-After", std::to_string(answer.retry_after), HeaderToken::Other});
  }
  if (answer.allow != nullptr) head.headers.push_back(Header{"Allow", answer.allow, HeaderToken::Other});
  const HeaderEdit* edit = nullptr;
  if (answer.fixed != nullptr && record.route_headers != nullptr) {
    edit = &record.route_headers->response;
  } else {
    edit = local_answer_edit(env, info, record);
  }
  if (edit != nullptr && !edit->empty()) apply_edit(head.headers, *edit, header_vars(info, record));
  body = returned ? answer.fixed->body : !answer.body.empty() ? answer.body : make_error_body(answer.status);
  head.content_length = body.size();
}

std::string expand_location(const std::vector<config::HeaderValuePart>& parts, const HeaderVars& vars) {
  std::string out;
  for (const auto& p : parts) {
    if (p.variable >= 0) {
      out.append(vars[static_cast<size_t>(p.variable)]);
    } else {
      out.append(p.literal);
    }
  }
  return out;
}

namespace {

bool dns_name(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  size_t label = 0;
  for (size_t i = 0; i <= h.size(); ++i) {
    if (i == h.size() || h[i] == '.') {
      if (label == 0 || label > 63 || h[i - 1] == '-' || h[i - label] == '-') return false;
      label = 0;
      continue;
    }
    const char c = h[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    ++label;
  }
  return true;
}

bool ipv6_literal(std::string_view h) {
  if (h.size() < 4 || h.front() != '[' || h.back() != ']') return false;
  std::string_view inner = h.substr(1, h.size() - 2);
  if (inner.find(':') == std::string_view::npos || inner.size() > 45) return false;
  for (char c : inner) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.')) return false;
  }
  return true;
}

}  // namespace

bool redirectable_host(std::string_view host) { return dns_name(host) || ipv6_literal(host); }

std::string https_location(std::string_view host, uint16_t https_port, std::string_view request_uri) {
  std::string out = "https://";
  out.reserve(out.size() + host.size() + 6 + request_uri.size());
  out.append(host);
  if (https_port != 443) {
    out += ':';
    out += std::to_string(https_port);
  }
  out.append(request_uri);
  return out;
}

}  // namespace tlsfront::http
