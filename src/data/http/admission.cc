#include "data/http/admission.h"

#include <algorithm>
#include <optional>

#include "data/files/file_resolver.h"
#include "data/files/open_file_cache.h"
#include "data/http/file_exchange.h"
#include "data/http/header_plan.h"
#include "data/http/request_limits.h"
#include "log/log.h"
#include "message/real_ip.h"
#include "message/request_path.h"
#include "tls/acme_challenges.h"

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

// [[listen]] trusted_proxies: the client a trusted peer's real_ip_header
// names becomes record.client_addr (message/real_ip.h has the rule). One
// branch when the listener trusts nobody.
void resolve_client_address(const ConnectionInfo& info, RequestRecord& record) {
  const config::Listener* l = info.listener;
  if (l == nullptr || l->trusted_proxies.empty()) return;
  const auto peer = IpAddress::parse(info.remote_addr);
  if (!peer) return;
  const HeaderToken header =
      l->real_ip_header == config::RealIpHeader::XRealIp ? HeaderToken::XRealIp : HeaderToken::XForwardedFor;
  const auto client = real_client_address(record.head.headers, header, *peer, l->trusted_proxies, l->real_ip_recursive);
  if (!client || *client == *peer) return;
  std::array<char, 46> buf;
  record.client_addr.assign(client->format(buf));
}

constexpr std::string_view kAcmeChallenge = "/.well-known/acme-challenge/";

const config::Listener* cleartext_listener(const ConnectionInfo& info) {
  return info.scheme == Scheme::Http ? info.listener : nullptr;
}

// RFC 8470 §3: what may go up before the handshake completes, because a
// replay of it acts no more than once does: a method the operator listed
// (early_data_methods; safe ones by default), no body, and no tunnel (an
// Upgrade or extended CONNECT would carry the early bytes after it, which a
// replay repeats, to the application).
bool replay_safe(const config::Config& cfg, const RequestHead& head) {
  if (head.has_body() || head.chunked || !head.upgrade.empty() || head.extended_connect) return false;
  const auto& methods = cfg.tls.early_data_methods;
  return std::find(methods.begin(), methods.end(), head.method) != methods.end();
}

// The exchange to upstream `upstream` (an index into Config::upstreams)
// with `rules` applied.
std::unique_ptr<ProxyExchange> forward(const SessionEnv& env, ExchangeSink* sink, RequestRecord& record, size_t upstream,
                  const RouteHeaders* rules, const config::Compression* compression) {
  ExchangeHeaders headers;
  headers.client_addr = record.client_addr;
  if (rules != nullptr) {
    record.route_headers = rules;
    headers.rules = rules;
    headers.record = &record;
    headers.request_id_header = env.headers->request_id_header();
    headers.request_id = record.request_id.view();
  }
  if (record.early_data) {
    headers.early = replay_safe(*env.config, record.head) ? EarlyData::Send : EarlyData::Hold;
    if (env.counters) {
      (headers.early == EarlyData::Send ? env.counters->early_data_requests_sent : env.counters->early_data_requests_held)
          .add();
    }
  }
  return std::make_unique<ProxyExchange>(env.loop, sink, (*env.upstreams)[upstream].get(), record.head, headers,
                                         compression, env.compression_budget);
}

// The Accept-Encoding fields of `head`, joined with ",".
std::string accept_encoding_of(const RequestHead& head) {
  std::string out;
  for (const Header& h : head.headers) {
    if (!iequals(h.name, "accept-encoding")) continue;
    if (!out.empty()) out += ',';
    out += h.value;
  }
  return out;
}

// The route's require_client_cert, access rules and limits, for the route
// that takes the request (`limited`: what the exchange then holds); the
// answer when one refuses it.
std::optional<LocalAnswer> check_route(const SessionEnv& env, const ConnectionInfo& info, RequestRecord& record,
                                       const config::Route& route, LimitDecision& limited) {
  if (route.require_client_cert && (info.client_cert == nullptr || !info.client_cert->verified())) {
    return LocalAnswer{403};
  }
  if (route.access.empty() && route.limit_req.empty() && route.limit_conn.empty()) return std::nullopt;
  limited = check_route_limits(*env.config, env.limits, route, info, record);
  if (limited.status == 0) return std::nullopt;
  if (env.counters) env.counters->count_limited(limited.status);
  LocalAnswer answer{limited.status};
  answer.retry_after = limited.retry_after_s;
  return answer;
}

// The exchange of a route with an upstream (`upstream`, an index into
// Config::upstreams), holding what its limits gave (`limited`).
Admission proxy_to(const SessionEnv& env, ExchangeSink* sink, RequestRecord& record, const config::Route& route,
                   size_t upstream, const NormalizedTarget& normalized, const RouteHeaders* rules,
                   LimitDecision& limited) {
  RequestHead& head = record.head;
  if (!head.upgrade.empty()) {
    // Only the route's upgrade tokens open a tunnel; any other Upgrade is
    // dropped (hop-by-hop) and the request forwarded as an ordinary one.
    const auto& allowed = route.upgrade;
    if (std::find(allowed.begin(), allowed.end(), head.upgrade) == allowed.end()) {
      // An RFC 8441 extended CONNECT has no ordinary request to fall back to.
      if (head.extended_connect) return {nullptr, {400}};
      head.upgrade.clear();
    }
  }
  if (route.pass_normalized && normalized.changed) {
    head.upstream_target.reserve(normalized.path.size() + normalized.query.size());
    head.upstream_target.assign(normalized.path);
    head.upstream_target.append(normalized.query);
  }
  const config::Compression& compression = route.compression;
  std::unique_ptr<ProxyExchange> exchange =
      forward(env, sink, record, upstream, rules, compression.encodings.empty() ? nullptr : &compression);
  if (limited.wait_ms != 0 || !limited.slots.empty()) {
    exchange->hold_limits(std::move(limited.slots), limited.wait_ms);
  }
  if (!limited.remote.empty() && env.remote_limiter != nullptr) {
    exchange->check_remote_limits(env.remote_limiter, env.config, env.limits, std::move(limited.remote),
                                  env.counters);
  }
  return {std::move(exchange), {}};
}

Admission dispatch(const SessionEnv& env, ExchangeSink* sink, RequestRecord& record, const Router::Match& route,
                   const NormalizedTarget& normalized, bool rematched);

// A RouteAction::Files route's answer (admit()'s comment); `rematched`:
// the path is try_files' fallback routed again.
Admission serve_files(const SessionEnv& env, ExchangeSink* sink, RequestRecord& record, const config::Route& route,
                      const NormalizedTarget& normalized, const RouteHeaders* rules, bool rematched) {
  const RequestHead& head = record.head;
  record.route_headers = rules;
  if (head.method != "GET" && head.method != "HEAD") {
    LocalAnswer answer{405};
    answer.allow = "GET, HEAD";
    return {nullptr, std::move(answer)};
  }
  const std::string accept = route.files->precompressed.empty() ? std::string() : accept_encoding_of(head);
  const files::CacheUse cache{&files::OpenFileCache::local(), &env.config->open_file_cache,
                              env.loop != nullptr ? uv_now(env.loop) : 0,
                              env.loop != nullptr ? LoopContext::of(env.loop).pass() : 0};
  files::Resolution found = files::resolve(route, normalized.path, normalized.query, accept, &cache, rematched);
  switch (found.kind) {
    case files::Resolution::Kind::File:
      record.cache = found.cache_hit ? "hit" : "miss";
      return {std::make_unique<FileExchange>(env.loop, sink, *route.files, std::move(found), record,
                                             rules ? &rules->response : nullptr, &route.compression,
                                             env.compression_budget),
              {}};
    case files::Resolution::Kind::Redirect:
      return {nullptr, {301, nullptr, std::move(found.location)}};
    case files::Resolution::Kind::Route: {
      // As if the named route had taken the request: its checks, rules and upstream.
      const config::Route& fallback = env.config->routes[found.route];
      const ConnectionInfo& info = sink->connection_info();
      record.route = static_cast<uint32_t>(found.route);
      LimitDecision limited;
      if (auto refused = check_route(env, info, record, fallback, limited)) return {nullptr, std::move(*refused)};
      const RouteHeaders* fallback_rules = env.headers ? &env.headers->route(found.route, info.scheme) : nullptr;
      for (size_t i = 0; i < env.config->upstreams.size(); ++i) {
        if (env.config->upstreams[i].name == fallback.upstream) {
          return proxy_to(env, sink, record, fallback, i, normalized, fallback_rules, limited);
        }
      }
      return {nullptr, {502}};  // the loader makes sure it exists
    }
    case files::Resolution::Kind::Rematch: {
      // nginx's internal redirect: the fallback URI goes through the routes
      // again, without the query; a proxy route sends it as the target.
      RequestHead& h = record.head;
      h.upstream_target = std::move(found.location);
      auto again = env.router->match(h.host, h.method, h.upstream_target);
      if (!again) return {nullptr, {404}};
      return dispatch(env, sink, record, *again, NormalizedTarget{h.upstream_target, {}, false}, true);
    }
    case files::Resolution::Kind::Status:
      break;
  }
  if (!found.error.empty()) {
    log::info("route {}: {} {}: {} ({})", route.name, head.method, normalized.path, found.status, found.error);
  }
  return {nullptr, {found.status}};
}

std::optional<size_t> upstream_index(const config::Config& cfg, std::string_view name) {
  for (size_t i = 0; i < cfg.upstreams.size(); ++i) {
    if (cfg.upstreams[i].name == name) return i;
  }
  return std::nullopt;
}

// A cleartext listener's answer for a request not under its ACME path.
Admission redirect_to_https(const config::Listener& listener, const RequestRecord& record) {
  const RequestHead& head = record.head;
  if (!redirectable_host(head.host)) return {nullptr, {400}};
  const int status = head.method == "GET" || head.method == "HEAD" ? 301 : 308;
  return {nullptr, {status, nullptr, https_location(head.host, listener.https_port, head.target)}};
}

}  // namespace

int refused_method(const RequestHead& head) { return head.method == "CONNECT" ? 405 : 0; }

Admission admit(const SessionEnv& env, ExchangeSink* sink, RequestRecord& record) {
  RequestHead& head = record.head;
  const ConnectionInfo& info = sink->connection_info();
  record.early_data = info.early_data;
  resolve_client_address(info, record);
  adopt_request_id(env, info, record);
  const uint64_t max_body = env.config->limits.max_body_bytes;
  if (max_body != 0 && head.content_length && *head.content_length > max_body) return {nullptr, {413}};
  // asterisk-form (OPTIONS *, RFC 9110 §9.3.7) asks about the server, not a
  // resource: no path route matches it.
  if (head.target == "*") return {nullptr, {404}};
  std::string scratch;  // allocates only when the path is not already normal
  NormalizedTarget normalized;
  if (normalize_target(head.target, scratch, normalized) != PathError::None) return {nullptr, {400}};
  // A host whose name asks for client certificates otherwise than the one
  // the handshake was made for (tls::CertIndex::same_client_auth).
  if (env.client_auth_names != nullptr && info.tls_context != nullptr &&
      !env.client_auth_names->same_client_auth(info.tls_context, head.host)) {
    return {nullptr, {421}};
  }
  if (const config::Listener* cleartext = cleartext_listener(info)) {
    // [acme]'s own HTTP-01 tokens (RFC 8555 §8.3), published by the fleet.
    if (env.acme != nullptr && normalized.path.starts_with(kAcmeChallenge)) {
      if (auto key_authorization = env.acme->http01(normalized.path.substr(kAcmeChallenge.size()))) {
        head.upgrade.clear();
        LocalAnswer answer{200};
        answer.body = std::move(*key_authorization);
        return {nullptr, std::move(answer)};
      }
    }
    if (!cleartext->acme_upstream.empty() && normalized.path.starts_with(kAcmeChallenge)) {
      if (auto upstream = upstream_index(*env.config, cleartext->acme_upstream)) {
        head.upgrade.clear();
        return {forward(env, sink, record, *upstream, env.headers ? &env.headers->unrouted(info.scheme) : nullptr,
                        nullptr),
                {}};
      }
    }
    if (cleartext->redirect_https) return redirect_to_https(*cleartext, record);
  }
  auto route = env.router->match(head.host, head.method, normalized.path);
  if (!route) return {nullptr, {404}};
  return dispatch(env, sink, record, *route, normalized, false);
}

namespace {

// What the matched `route` makes of the request: its checks, header rules
// and action.
Admission dispatch(const SessionEnv& env, ExchangeSink* sink, RequestRecord& record, const Router::Match& route,
                   const NormalizedTarget& normalized, bool rematched) {
  const ConnectionInfo& info = sink->connection_info();
  record.route = static_cast<uint32_t>(route.route);
  const config::Route& route_config = env.config->routes[route.route];
  LimitDecision limited;
  if (auto refused = check_route(env, info, record, route_config, limited)) return {nullptr, std::move(*refused)};
  const RouteHeaders* rules = env.headers ? &env.headers->route(route.route, info.scheme) : nullptr;
  if (route.action == config::RouteAction::Files) {
    record.head.upgrade.clear();
    return serve_files(env, sink, record, route_config, normalized, rules, rematched);
  }
  if (route.action != config::RouteAction::Proxy) {
    record.route_headers = rules;
    LocalAnswer answer{route.answer->status, route.answer};
    if (route.action == config::RouteAction::Redirect) {
      answer.location = expand_location(route.answer->location, header_vars(info, record));
    }
    return {nullptr, std::move(answer)};
  }
  return proxy_to(env, sink, record, route_config, route.upstream, normalized, rules, limited);
}

}  // namespace

const HeaderEdit* local_answer_edit(const SessionEnv& env, const ConnectionInfo& info, const RequestRecord& record) {
  if (env.headers == nullptr) return nullptr;
  const RouteHeaders& rules = record.route_headers ? *record.route_headers : env.headers->unrouted(info.scheme);
  return rules.response_always.empty() ? nullptr : &rules.response_always;
}

}  // namespace tlsfront::http
