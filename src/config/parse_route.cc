// [[route]]: (host, path prefix) -> upstream, first match in file order wins.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

Status parse_host(const TableReader& t, std::string& out) {
  std::string host;
  if (Status s = t.get_string("host", host); !s.ok()) return s;
  for (char& c : host) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '/') {
      return t.error_at("host", "invalid host " + quote(host) +
                                    " (no spaces, control characters or \"/\")");
    }
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  out = std::move(host);
  return {};
}

// The route's header rules (parse_headers.cc).
Status parse_route_headers(const TableReader& t, Route& route) {
  if (Status s = parse_header_rules(t, "response_headers", HeaderDirection::Response, true, route.response_headers);
      !s.ok()) {
    return s;
  }
  return parse_header_rules(t, "request_headers", HeaderDirection::Request, true, route.request_headers);
}

}  // namespace

Status parse_route(const TableReader& root, const std::vector<Upstream>& upstreams,
                   std::vector<Route>& out) {
  auto tables = tables_of(root, "route");
  if (!tables.ok()) return tables.take_error();
  if (tables->empty()) return missing_table(root.context(), "route", true);

  for (size_t i = 0; i < tables->size(); ++i) {
    TableReader t(root.context(), *(*tables)[i], "route[" + std::to_string(i) + "]");
    if (Status s = t.check_keys({"host", "path_prefix", "upstream", "response_headers", "request_headers"}); !s.ok()) return s;

    Route route;
    if (Status s = parse_host(t, route.host); !s.ok()) return s;
    if (Status s = t.get_string("path_prefix", route.path_prefix); !s.ok()) return s;
    if (route.path_prefix.empty() || route.path_prefix[0] != '/') {
      return t.error_at("path_prefix", "must start with \"/\", got " + quote(route.path_prefix));
    }
    if (Status s = t.get_string("upstream", route.upstream, Presence::Required); !s.ok()) return s;
    bool known = false;
    for (const Upstream& u : upstreams) known = known || u.name == route.upstream;
    if (!known) {
      return t.error_at("upstream", "unknown upstream " + quote(route.upstream) +
                                        " (no [[upstream]] has this name)");
    }
    if (Status s = parse_route_headers(t, route); !s.ok()) return s;
    out.push_back(std::move(route));
  }
  return {};
}

}  // namespace tlsfront::config::detail
