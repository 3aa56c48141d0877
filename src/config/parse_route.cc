// [[route]]: (host, methods, path) -> upstream, or a fixed answer (return,
// redirect; exactly one of the three), first match in file order wins. The
// path keys (path_prefix, path_exact, path_regex; at most one) are compared
// with the normalized request path (message/request_path.h); path_regex is
// compiled here, so a bad pattern is a load error.
#include <re2/re2.h>

#include <algorithm>

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
  const size_t star = host.find('*');
  if (star != std::string::npos && (star != 0 || host.size() < 3 || host[1] != '.' ||
                                    host.find('*', 1) != std::string::npos)) {
    return t.error_at("host", "invalid host " + quote(host) +
                                  " (a wildcard is \"*.\" followed by a name, as in \"*.example.com\": one label)");
  }
  out = std::move(host);
  return {};
}

// upgrade = ["websocket", ...]: RFC 9110 §7.8 protocol names (tokens,
// matched case-insensitively, so kept lowercase); [] allows none.
Status parse_upgrade(const TableReader& t, std::vector<std::string>& out) {
  auto array = t.get_array("upgrade", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  out.clear();
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const std::string path = t.path_of("upgrade") + "[" + std::to_string(i) + "]";
    const auto* value = element.as_string();
    if (value == nullptr) return type_error(t.context(), element, path, "a string");
    std::string token = value->get();
    bool valid = !token.empty();
    for (char& c : token) {
      valid = valid && is_tchar(static_cast<unsigned char>(c)) && c != '/';
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    if (!valid) {
      return t.context().error(element.source(), path,
                               quote(value->get()) + " is not an Upgrade protocol name (RFC 9110 token, no version)");
    }
    if (token == "h2c") {
      return t.context().error(element.source(), path,
                               "\"h2c\" cannot be tunnelled (HTTP/2 to clients is TLS ALPN h2)");
    }
    if (std::find(out.begin(), out.end(), token) != out.end()) {
      return t.context().error(element.source(), path, quote(token) + " is listed twice");
    }
    out.push_back(std::move(token));
  }
  return {};
}

Status parse_methods(const TableReader& t, std::vector<std::string>& out) {
  auto array = t.get_array("methods", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  if ((*array)->empty()) return t.error_at("methods", "must not be empty (omit it to match every method)");
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const std::string path = t.path_of("methods") + "[" + std::to_string(i) + "]";
    const auto* value = element.as_string();
    if (value == nullptr) return type_error(t.context(), element, path, "a string");
    const std::string& m = value->get();
    bool token = !m.empty();
    for (char c : m) token = token && is_tchar(static_cast<unsigned char>(c));
    if (!token) return t.context().error(element.source(), path, quote(m) + " is not a method name (RFC 9110 token)");
    std::string upper = m;
    for (char& c : upper) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
    for (std::string_view standard : {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"}) {
      if (upper == standard && m != upper) {
        return t.context().error(element.source(), path,
                                 quote(m) + ": methods are case-sensitive (RFC 9110 §9.1); clients send " +
                                     quote(upper));
      }
    }
    for (const auto& seen : out) {
      if (seen == m) return t.context().error(element.source(), path, "duplicate method " + quote(m));
    }
    out.push_back(m);
  }
  return {};
}

Status parse_path(const TableReader& t, Route& route) {
  const char* key = nullptr;
  for (const char* k : {"path_prefix", "path_exact", "path_regex"}) {
    if (t.find(k) == nullptr) continue;
    if (key != nullptr) {
      return t.error_at(k, std::string("only one of path_prefix, path_exact and path_regex per route (") + key +
                               " is set too)");
    }
    key = k;
  }
  if (key == nullptr) return {};  // path_prefix = "/"
  if (Status s = t.get_string(key, route.path); !s.ok()) return s;
  const std::string_view k(key);
  if (k == "path_regex") {
    route.path_match = PathMatch::Regex;
    if (route.path.empty()) return t.error_at(key, "must not be empty");
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_shared<const re2::RE2>(route.path, options);
    if (!re->ok()) {
      std::string where;
      // RE2 names the offending piece; the whole pattern (a missing ")")
      // has no one position to give.
      if (!re->error_arg().empty() && re->error_arg() != route.path) {
        size_t at = route.path.find(re->error_arg());
        if (at != std::string::npos) where = " at character " + std::to_string(at + 1) + " of the pattern";
      }
      return t.error_at(key, "invalid regular expression " + quote(route.path) + where + ": " + re->error() +
                                 " (RE2 syntax)");
    }
    route.regex = std::move(re);
    return {};
  }
  route.path_match = k == "path_exact" ? PathMatch::Exact : PathMatch::Prefix;
  if (route.path.empty() || route.path[0] != '/') {
    return t.error_at(key, "must start with \"/\", got " + quote(route.path));
  }
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

// redirect = { status = 301, location = "https://example.com$request_uri" }:
// RFC 9110 §15.4's redirections with a Location (not 300 or 304).
Status parse_redirect(const TableReader& route, const toml::table& table, FixedAnswer& out) {
  TableReader t(route.context(), table, route.path_of("redirect"));
  if (Status s = t.check_keys({"status", "location"}); !s.ok()) return s;
  if (t.find("status") == nullptr) return t.missing("status");
  if (Status s = t.get_integer("status", 0, 999, out.status); !s.ok()) return s;
  if (out.status != 301 && out.status != 302 && out.status != 303 && out.status != 307 && out.status != 308) {
    return t.error_at("status", "must be 301, 302, 303, 307 or 308, got " + std::to_string(out.status));
  }
  const toml::node* location = t.find("location");
  if (location == nullptr) return t.missing("location");
  if (Status s =
          parse_header_value(t.context(), *location, t.path_of("location"), kLocationVariableCount, out.location);
      !s.ok()) {
    return s;
  }
  if (out.location.empty()) return t.error_at("location", "must not be empty");
  for (const auto& part : out.location) {
    if (part.variable < 0 && part.literal.find_first_of(" \t") != std::string::npos) {
      return t.error_at("location", "a URI has no spaces (RFC 3986 §2): percent-encode them as %20");
    }
  }
  return {};
}

// return = { status = 200, body = "ok", content_type = "text/plain" }.
Status parse_return(const TableReader& route, const toml::table& table, FixedAnswer& out) {
  TableReader t(route.context(), table, route.path_of("return"));
  if (Status s = t.check_keys({"status", "body", "content_type"}); !s.ok()) return s;
  if (t.find("status") == nullptr) return t.missing("status");
  if (Status s = t.get_integer("status", 0, 999, out.status); !s.ok()) return s;
  if (out.status < 200 || out.status > 599) {
    return t.error_at("status", "must be 200..599 (a final status, RFC 9110 §15), got " + std::to_string(out.status));
  }
  if (Status s = t.get_string("body", out.body); !s.ok()) return s;
  constexpr size_t kMaxBody = 64 * 1024;
  if (out.body.size() > kMaxBody) return t.error_at("body", "longer than 64k: a fixed answer, not a file");
  if ((out.status == 204 || out.status == 304) && !out.body.empty()) {
    return t.error_at("body", "a " + std::to_string(out.status) + " response has no body (RFC 9110 §15)");
  }
  if (Status s = t.get_string("content_type", out.content_type, Presence::Optional, false); !s.ok()) return s;
  for (unsigned char c : out.content_type) {
    if (c < 0x20 || c == 0x7f) return t.error_at("content_type", "contains a control character");
  }
  return {};
}

// The keys only a route with root or alias takes (parse_files.cc).
constexpr std::string_view kFileKeys[] = {"index",  "try_files", "expires", "precompressed",
                                          "types", "follow_symlinks", "dotfiles"};

// Exactly one of upstream, return, redirect, root and alias.
Status parse_action(const TableReader& t, const std::vector<Upstream>& upstreams, Route& route) {
  const char* key = nullptr;
  for (const char* k : {"upstream", "return", "redirect", "root", "alias"}) {
    if (t.find(k) == nullptr) continue;
    if (key != nullptr) {
      return t.error_at(k, std::string("only one of upstream, return, redirect, root and alias per route (") + key +
                               " is set too)");
    }
    key = k;
  }
  if (key == nullptr) {
    return t.context().error(t.table().source(), t.path_of("upstream"),
                             "missing required key (a route has one of upstream, return, redirect, root and alias)");
  }
  const bool files = std::string_view(key) == "root" || std::string_view(key) == "alias";
  if (!files) {
    for (std::string_view file_key : kFileKeys) {
      if (t.find(file_key) != nullptr) {
        return t.error_at(file_key, "needs root or alias (it is about serving files)");
      }
    }
  }
  const std::string_view k(key);
  if (k == "upstream") {
    if (Status s = t.get_string("upstream", route.upstream, Presence::Required); !s.ok()) return s;
    for (const Upstream& u : upstreams) {
      if (u.name == route.upstream) return {};
    }
    return t.error_at("upstream", "unknown upstream " + quote(route.upstream) + " (no [[upstream]] has this name)");
  }
  // Nothing goes upstream from a fixed answer: keys about that would do nothing.
  for (const char* upstream_only : {"pass_normalized", "request_headers"}) {
    if (t.find(upstream_only) != nullptr) {
      return t.error_at(upstream_only, std::string("does nothing in a route with ") + key + " (nothing goes upstream)");
    }
  }
  if (files) {
    route.action = RouteAction::Files;
    route.files = std::make_shared<FileRoute>();
    return parse_files(t, route, *route.files);
  }
  auto table = table_of(t, k);
  if (!table.ok()) return table.take_error();
  route.action = k == "return" ? RouteAction::Return : RouteAction::Redirect;
  return k == "return" ? parse_return(t, **table, route.answer) : parse_redirect(t, **table, route.answer);
}

// A route's label when it has no name: its match as written, nginx-style:
// the host ("*" for any), then the path_prefix, "=" path_exact or "~"
// path_regex, then its methods: "api.example.com/v1/", "*=/healthz",
// "*~^/img/.*$ GET,HEAD".
std::string default_route_name(const Route& route) {
  std::string name = route.host.empty() ? "*" : route.host;
  if (route.path_match == PathMatch::Exact) name += '=';
  if (route.path_match == PathMatch::Regex) name += '~';
  name += route.path;
  for (size_t i = 0; i < route.methods.size(); ++i) name += (i == 0 ? " " : ",") + route.methods[i];
  return name;
}

// Every route's label (Route::name): named ones as given (two the same is an
// error), the others their default_route_name, with " #<index>" added when
// that is already taken (a duplicate route, which the router warns of).
Status name_routes(const std::vector<const toml::table*>& tables, const TableReader& root, std::vector<Route>& routes) {
  for (size_t i = 0; i < routes.size(); ++i) {
    for (size_t j = 0; j < i && !routes[i].name.empty(); ++j) {
      if (routes[j].name != routes[i].name) continue;
      TableReader t(root.context(), *tables[i], "route[" + std::to_string(i) + "]");
      return t.error_at("name", "duplicate route name " + quote(routes[i].name) + " (first at " +
                                    routes[j].position + ")");
    }
  }
  for (size_t i = 0; i < routes.size(); ++i) {
    if (!routes[i].name.empty()) continue;
    std::string name = default_route_name(routes[i]);
    for (const Route& other : routes) {
      if (other.name == name) name += " #" + std::to_string(i);
    }
    routes[i].name = std::move(name);
  }
  return {};
}

}  // namespace

Status parse_route(const TableReader& root, const Config& config, std::vector<Route>& out) {
  const std::vector<Upstream>& upstreams = config.upstreams;
  auto tables = tables_of(root, "route");
  if (!tables.ok()) return tables.take_error();
  if (tables->empty()) return missing_table(root.context(), "route", true);

  for (size_t i = 0; i < tables->size(); ++i) {
    TableReader t(root.context(), *(*tables)[i], "route[" + std::to_string(i) + "]");
    if (Status s = t.check_keys({"name", "host", "path_prefix", "path_exact", "path_regex", "methods", "pass_normalized",
                                 "upgrade", "upstream", "return", "redirect", "response_headers", "request_headers",
                                 "access", "limit_req", "limit_conn",
                                 "require_client_cert", "access_log",
                                 // parse_files.cc
                                 "root", "alias", "index", "try_files", "expires", "precompressed", "types",
                                 "follow_symlinks", "dotfiles",
                                 // parse_compression.cc reads these
                                 "compress", "compress_types", "compress_min_bytes", "compress_level"});
        !s.ok()) {
      return s;
    }

    Route route;
    route.position = root.context().position((*tables)[i]->source());
    if (Status s = get_label_name(t, route.name); !s.ok()) return s;
    if (Status s = parse_host(t, route.host); !s.ok()) return s;
    if (Status s = parse_path(t, route); !s.ok()) return s;
    if (Status s = parse_methods(t, route.methods); !s.ok()) return s;
    if (Status s = parse_upgrade(t, route.upgrade); !s.ok()) return s;
    if (Status s = t.get_bool("pass_normalized", route.pass_normalized); !s.ok()) return s;
    if (Status s = t.get_bool("require_client_cert", route.require_client_cert); !s.ok()) return s;
    if (Status s = t.get_bool("access_log", route.access_log); !s.ok()) return s;
    if (Status s = parse_action(t, upstreams, route); !s.ok()) return s;
    if (Status s = parse_route_headers(t, route); !s.ok()) return s;
    if (Status s = parse_route_limits(t, config.limit_req, config.limit_conn, route); !s.ok()) return s;
    out.push_back(std::move(route));
  }
  if (Status s = name_routes(*tables, root, out); !s.ok()) return s;
  return resolve_try_files_routes(*tables, root, out);
}

}  // namespace tlsfront::config::detail
