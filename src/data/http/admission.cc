#include "data/http/admission.h"

#include "message/request_path.h"

namespace tlsfront::http {

int refused_method(const RequestHead& head) { return head.method == "CONNECT" ? 405 : 0; }

Admission admit(const SessionEnv& env, ExchangeSink* sink, RequestHead& head) {
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
  return {std::make_unique<ProxyExchange>(env.loop, sink, (*env.upstreams)[route->upstream].get(), head), 0};
}

}  // namespace tlsfront::http
