// [[route]]: (host, methods, path) -> upstream, first match in file order wins.
// The path keys (path_prefix, path_exact, path_regex; at most one) are
// compared with the normalized request path (message/request_path.h);
// path_regex is compiled here, so a bad pattern is a load error.
#include <re2/re2.h>

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

}  // namespace

Status parse_route(const TableReader& root, const std::vector<Upstream>& upstreams,
                   std::vector<Route>& out) {
  auto tables = tables_of(root, "route");
  if (!tables.ok()) return tables.take_error();
  if (tables->empty()) return missing_table(root.context(), "route", true);

  for (size_t i = 0; i < tables->size(); ++i) {
    TableReader t(root.context(), *(*tables)[i], "route[" + std::to_string(i) + "]");
    if (Status s = t.check_keys({"host", "path_prefix", "path_exact", "path_regex", "methods", "pass_normalized",
                                 "upstream", "response_headers", "request_headers",
                                 // parse_compression.cc reads these
                                 "compress", "compress_types", "compress_min_bytes", "compress_level"});
        !s.ok()) {
      return s;
    }

    Route route;
    route.position = root.context().position((*tables)[i]->source());
    if (Status s = parse_host(t, route.host); !s.ok()) return s;
    if (Status s = parse_path(t, route); !s.ok()) return s;
    if (Status s = parse_methods(t, route.methods); !s.ok()) return s;
    if (Status s = t.get_bool("pass_normalized", route.pass_normalized); !s.ok()) return s;
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
