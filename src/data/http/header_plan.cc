#include "data/http/header_plan.h"

#include "data/http/exchange_sink.h"
#include "data/http/request_record.h"

namespace tlsfront::http {
namespace {

static_assert(static_cast<size_t>(config::kHeaderVariableCount) == kHeaderVarCount);

FieldTemplate make_template(const config::HeaderField& field) {
  FieldTemplate t;
  t.name = field.name;
  for (const auto& part : field.value) {
    ValueSegment s;
    if (part.variable >= 0) {
      s.is_var = true;
      s.var = static_cast<HeaderVar>(part.variable);
      t.constant = false;
    } else {
      s.literal = part.literal;
    }
    t.segments.push_back(std::move(s));
  }
  return t;
}

// `rules` as remove, set, add, appended to `out`.
void append_rules(std::vector<EditRule>& out, const config::HeaderRules& rules) {
  for (const auto& name : rules.remove) out.push_back(EditRule{EditRule::Kind::Remove, FieldTemplate{name, {}, true}});
  for (const auto& f : rules.set) out.push_back(EditRule{EditRule::Kind::Set, make_template(f)});
  for (const auto& f : rules.add) out.push_back(EditRule{EditRule::Kind::Add, make_template(f)});
}

std::vector<EditRule> hsts_rules(const config::Config& cfg) {
  std::vector<EditRule> rules;
  if (cfg.tls.hsts.empty()) return rules;
  FieldTemplate t;
  t.name = "Strict-Transport-Security";
  t.segments.push_back(ValueSegment{cfg.tls.hsts});
  rules.push_back(EditRule{EditRule::Kind::Set, std::move(t)});
  return rules;
}

// One route's edits; `route` null for the requests no route took.
RouteHeaders compile(const config::Config& cfg, const config::Route* route) {
  RouteHeaders out;
  const bool inherit = route == nullptr || route->response_headers.inherit;
  const bool inherit_request = route == nullptr || route->request_headers.inherit;
  std::vector<EditRule> response = hsts_rules(cfg), always = hsts_rules(cfg), request;
  if (inherit) {
    append_rules(response, cfg.response_headers);
    if (cfg.response_headers.always) append_rules(always, cfg.response_headers);
  }
  if (inherit_request) append_rules(request, cfg.request_headers);
  if (route != nullptr) {
    append_rules(response, route->response_headers);
    if (route->response_headers.always) append_rules(always, route->response_headers);
    append_rules(request, route->request_headers);
  }
  compile_edit(out.response, response);
  compile_edit(out.response_always, always);
  compile_edit(out.request, request);
  return out;
}

}  // namespace

HeaderPlan::HeaderPlan(const config::Config& cfg)
    : unrouted_(compile(cfg, nullptr)), request_id_header_(cfg.request_id_header) {
  routes_.reserve(cfg.routes.size());
  for (const auto& r : cfg.routes) routes_.push_back(compile(cfg, &r));
}

HeaderVars header_vars(const ConnectionInfo& info, const RequestRecord& record) {
  HeaderVars v;
  v[static_cast<size_t>(HeaderVar::Host)] = record.head.host;
  v[static_cast<size_t>(HeaderVar::RemoteAddr)] = info.remote_addr;
  v[static_cast<size_t>(HeaderVar::Scheme)] = "https";  // every listener is TLS
  v[static_cast<size_t>(HeaderVar::RequestId)] = record.request_id.view();
  v[static_cast<size_t>(HeaderVar::SslProtocol)] = info.ssl_protocol;
  v[static_cast<size_t>(HeaderVar::SslCipher)] = info.ssl_cipher;
  v[static_cast<size_t>(HeaderVar::SslSessionReused)] = info.ssl_session_reused ? "r" : ".";
  v[static_cast<size_t>(HeaderVar::ServerPort)] = info.server_port;
  return v;
}

}  // namespace tlsfront::http
