#include "data/http/header_plan.h"

#include <algorithm>

#include "data/http/exchange_sink.h"
#include "data/http/request_record.h"

namespace tlsfront::http {
namespace {

static_assert(static_cast<size_t>(config::kLocationVariableCount) == kHeaderVarCount);

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

std::vector<EditRule> hsts_rules(const config::Config& cfg, Scheme scheme) {
  std::vector<EditRule> rules;
  if (cfg.tls.hsts.empty() || scheme == Scheme::Http) return rules;
  FieldTemplate t;
  t.name = "Strict-Transport-Security";
  t.segments.push_back(ValueSegment{cfg.tls.hsts});
  rules.push_back(EditRule{EditRule::Kind::Set, std::move(t)});
  return rules;
}

// RFC 6797 §7.2: never over plain HTTP, whoever would send it.
void drop_hsts(std::vector<EditRule>& rules) {
  rules.push_back(EditRule{EditRule::Kind::Remove, FieldTemplate{"strict-transport-security", {}, true}});
}

bool uses_identity(const config::HeaderField& f) {
  return std::any_of(f.value.begin(), f.value.end(), [](const config::HeaderValuePart& p) {
    return p.variable >= config::kFirstIdentityVariable && p.variable < config::kHeaderVariableCount;
  });
}

// A Remove rule for every request field name any request_headers rule of the
// configuration sends an identity variable ($ssl_client_*,
// $proxy_protocol_tlv_*) under: whatever route takes a request, a client
// cannot forge its identity in one of them.
std::vector<EditRule> identity_field_removals(const config::Config& cfg) {
  std::vector<EditRule> rules;
  auto scan = [&rules](const config::HeaderRules& r) {
    for (const auto* fields : {&r.set, &r.add}) {
      for (const auto& f : *fields) {
        if (uses_identity(f)) rules.push_back(EditRule{EditRule::Kind::Remove, FieldTemplate{f.name, {}, true}});
      }
    }
  };
  scan(cfg.request_headers);
  for (const auto& route : cfg.routes) scan(route.request_headers);
  return rules;
}

// One route's edits; `route` null for the requests no route took.
// `request` starts as identity_field_removals().
RouteHeaders compile(const config::Config& cfg, const config::Route* route, Scheme scheme,
                     std::vector<EditRule> request) {
  RouteHeaders out;
  const bool inherit = route == nullptr || route->response_headers.inherit;
  const bool inherit_request = route == nullptr || route->request_headers.inherit;
  std::vector<EditRule> response = hsts_rules(cfg, scheme), always = hsts_rules(cfg, scheme);
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
  if (scheme == Scheme::Http) {
    drop_hsts(response);
    drop_hsts(always);
  }
  compile_edit(out.response, response);
  compile_edit(out.response_always, always);
  compile_edit(out.request, request);
  return out;
}

}  // namespace

HeaderPlan::HeaderPlan(const config::Config& cfg) : request_id_header_(cfg.request_id_header) {
  const std::vector<EditRule> removals = identity_field_removals(cfg);
  for (Scheme scheme : {Scheme::Https, Scheme::Http}) {
    unrouted_[at(scheme)] = compile(cfg, nullptr, scheme, removals);
    routes_[at(scheme)].reserve(cfg.routes.size());
    for (const auto& r : cfg.routes) routes_[at(scheme)].push_back(compile(cfg, &r, scheme, removals));
  }
}

HeaderVars header_vars(const ConnectionInfo& info, const RequestRecord& record) {
  HeaderVars v;
  v[static_cast<size_t>(HeaderVar::Host)] = record.head.host;
  v[static_cast<size_t>(HeaderVar::RemoteAddr)] = record.client(info);
  v[static_cast<size_t>(HeaderVar::Scheme)] = scheme_name(info.scheme);
  v[static_cast<size_t>(HeaderVar::RequestId)] = record.request_id.view();
  v[static_cast<size_t>(HeaderVar::SslProtocol)] = info.ssl_protocol;
  v[static_cast<size_t>(HeaderVar::SslCipher)] = info.ssl_cipher;
  // nginx's: "r" or "." over TLS, "" on plain HTTP (as the other $ssl_*).
  v[static_cast<size_t>(HeaderVar::SslSessionReused)] = info.scheme == Scheme::Http ? ""
                                                        : info.ssl_session_reused   ? "r"
                                                                                    : ".";
  v[static_cast<size_t>(HeaderVar::ServerPort)] = info.server_port;
  if (const tls::ClientIdentity* id = info.client_cert.get()) {
    v[static_cast<size_t>(HeaderVar::SslClientVerify)] = id->verify;
    v[static_cast<size_t>(HeaderVar::SslClientSDn)] = id->subject_dn;
    v[static_cast<size_t>(HeaderVar::SslClientIDn)] = id->issuer_dn;
    v[static_cast<size_t>(HeaderVar::SslClientSerial)] = id->serial;
    v[static_cast<size_t>(HeaderVar::SslClientFingerprint)] = id->fingerprint;
    v[static_cast<size_t>(HeaderVar::SslClientCert)] = id->escaped_pem;
  } else if (info.scheme == Scheme::Https) {
    v[static_cast<size_t>(HeaderVar::SslClientVerify)] = "NONE";  // nginx's, when none was asked for
  }
  if (const ProxyTlvs* t = info.proxy_tlvs.get()) {
    v[static_cast<size_t>(HeaderVar::ProxyProtocolTlvAlpn)] = t->alpn;
    v[static_cast<size_t>(HeaderVar::ProxyProtocolTlvAuthority)] = t->authority;
    v[static_cast<size_t>(HeaderVar::ProxyProtocolTlvUniqueId)] = t->unique_id;
  }
  v[static_cast<size_t>(HeaderVar::RequestUri)] = record.head.target;
  return v;
}

}  // namespace tlsfront::http
