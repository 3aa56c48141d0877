#include "data/http/admission.h"

#include "data/http/header_plan.h"
#include "message/request_path.h"

namespace tlsfront::http {
namespace {

void adopt_request_id(const SessionEnv& env, const ConnectionInfo& info, RequestRecord& record) {
  if (!info.trust_request_id || env.headers == nullptr) return;
  std::string_view name = env.headers->request_id_header();
  if (name.empty()) return;
  for (const auto& h : record.head.headers) {
    if (iequals(h.name, name)) {
      record.request_id.adopt(h.value);  // an invalid one keeps the generated ID
      return;
    }
  }
}

}  // namespace

int refused_method(const RequestHead& head) { return head.method == "CONNECT" ? 405 : 0; }

Admission admit(const SessionEnv& env, ExchangeSink* sink, RequestRecord& record) {
  RequestHead& head = record.head;
  adopt_request_id(env, sink->connection_info(), record);
  const uint64_t max_body = env.config->limits.max_body_bytes;
  if (max_body != 0 && head.content_length && *head.content_length > max_body) return {nullptr, 413};
  // asterisk-form (OPTIONS *, RFC 9110 §9.3.7) asks about the server, not a
  // resource: no path route matches it.
  if (head.target == "*") return {nullptr, 404};
  std::string scratch;  // allocates only when the path is not already normal
  NormalizedTarget normalized;
  if (normalize_target(head.target, scratch, normalized) != PathError::None) return {nullptr, 400};
  auto route = env.router->match(head.host, head.method, normalized.path);
  if (!route) return {nullptr, 404};
  if (route->pass_normalized && normalized.changed) {
    head.upstream_target.reserve(normalized.path.size() + normalized.query.size());
    head.upstream_target.assign(normalized.path);
    head.upstream_target.append(normalized.query);
  }
  ExchangeHeaders headers;
  if (env.headers != nullptr) {
    record.route_headers = &env.headers->route(route->route);
    headers.rules = record.route_headers;
    headers.vars = header_vars(sink->connection_info(), record);
    headers.request_id_header = env.headers->request_id_header();
    headers.request_id = record.request_id.view();
  }
  const config::Compression& compression = env.config->routes[route->route].compression;
  return {std::make_unique<ProxyExchange>(env.loop, sink, (*env.upstreams)[route->upstream].get(), head, headers,
                                          compression.encodings.empty() ? nullptr : &compression),
          0};
}

const HeaderEdit* local_answer_edit(const SessionEnv& env, const RequestRecord& record) {
  if (env.headers == nullptr) return nullptr;
  const RouteHeaders& rules = record.route_headers ? *record.route_headers : env.headers->unrouted();
  return rules.response_always.empty() ? nullptr : &rules.response_always;
}

}  // namespace tlsfront::http
