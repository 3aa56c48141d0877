// HeaderPlan: the response_headers / request_headers rules of one
// configuration (config::HeaderRules; tls.hsts), compiled at load into one
// HeaderEdit per route and direction (message/header_edit.h), so a request
// pays for no lookup and no parsing. Per route, in the order applied: on
// the request, the removal of every field name any request rule of the
// configuration sends a $ssl_client_* or $proxy_protocol_tlv_* variable under
// (no forged identity);
// tls.hsts (a set of Strict-Transport-Security), the defaults (unless the
// route says inherit = false), then the route's own rules; each set of rules
// as remove, then set, then add. tlsfront's own answers (404, 502, ...) get
// only the rules marked always = true, and HSTS.
// Each route's rules exist twice, per scheme: on a cleartext listener
// (Scheme::Http) no Strict-Transport-Security field is ever sent, neither
// tls.hsts nor a configured rule's nor an upstream's (RFC 6797 §7.2).
// Built once per Generation; read-only afterwards.
// Thread affinity: any thread (immutable).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/http/exchange_sink.h"
#include "message/header_edit.h"

namespace tlsfront::http {

struct RequestRecord;

struct RouteHeaders {
  HeaderEdit response;         // on responses from the upstream
  HeaderEdit response_always;  // on tlsfront's own answers
  HeaderEdit request;          // on the request sent upstream
};

class HeaderPlan {
 public:
  HeaderPlan() = default;  // no rules at all
  explicit HeaderPlan(const config::Config& cfg);

  // The rules of route `index` (into Config::routes) for a request that came
  // with `scheme`; `unrouted()` for a request no route took (404, refused
  // before routing: 400, 431, ..., or a cleartext listener's redirect).
  const RouteHeaders& route(size_t index, Scheme scheme) const { return routes_[at(scheme)][index]; }
  const RouteHeaders& unrouted(Scheme scheme) const { return unrouted_[at(scheme)]; }
  // Where $request_id goes upstream; "" for nowhere.
  std::string_view request_id_header() const { return request_id_header_; }

 private:
  static size_t at(Scheme s) { return s == Scheme::Https ? 0 : 1; }
  std::vector<RouteHeaders> routes_[2];  // by at(scheme)
  RouteHeaders unrouted_[2];
  std::string request_id_header_;
};

// The variables' values for one request: borrowed from `info` and `record`,
// which must outlive the result and stay unchanged while it is used.
HeaderVars header_vars(const ConnectionInfo& info, const RequestRecord& record);

}  // namespace tlsfront::http
