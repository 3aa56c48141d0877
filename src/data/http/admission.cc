#include "data/http/admission.h"

namespace tlsfront::http {

int refused_method(const RequestHead& head) { return head.method == "CONNECT" ? 405 : 0; }

Admission admit(const SessionEnv& env, ExchangeSink* sink, const RequestHead& head) {
  const uint64_t max_body = env.config->limits.max_body_bytes;
  if (max_body != 0 && head.content_length && *head.content_length > max_body) return {nullptr, 413};
  auto route = env.router->match(head.host, head.target);
  if (!route) return {nullptr, 404};
  return {std::make_unique<ProxyExchange>(env.loop, sink, (*env.upstreams)[*route].get(), head), 0};
}

}  // namespace tlsfront::http
