// `access` lists ([[listen]] and [[route]]: config.h AccessRule) and the
// client-limit zones [[limit_req]] and [[limit_conn]] with the routes'
// references to them. docs/configuration.md, "Access and limits".
#include <cmath>
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

// "allow 10.0.0.0/8" | "deny 2001:db8::/32" | "allow all" | "deny all".
Status parse_rule(const TableReader& t, const toml::node& element, const std::string& path, AccessRule& out) {
  const auto* text = element.as_string();
  if (text == nullptr) return type_error(t.context(), element, path, "a string");
  const std::string_view rule = text->get();
  const size_t space = rule.find(' ');
  const std::string_view verb = rule.substr(0, space);
  if (space == std::string_view::npos || (verb != "allow" && verb != "deny")) {
    return t.context().error(element.source(), path,
                             quote(std::string(rule)) +
                                 ": expected \"allow <CIDR>\", \"deny <CIDR>\", \"allow all\" or "
                                 "\"deny all\"");
  }
  out.allow = verb == "allow";
  const std::string_view what = rule.substr(space + 1);
  if (what == "all") {
    out.all = true;
    return {};
  }
  std::string why;
  const auto block = Cidr::parse(what, &why);
  if (!block) return t.context().error(element.source(), path, quote(std::string(what)) + ": " + why);
  out.block = *block;
  return {};
}

// "$remote_addr" | "$host" | "$header_<name>" (nginx's $http_<name> is
// taken too: underscores become hyphens).
Status parse_key(const TableReader& t, LimitKey& key, std::string& header) {
  std::string text = "$remote_addr";
  if (Status s = t.get_string("key", text); !s.ok()) return s;
  if (text == "$remote_addr" || text == "$binary_remote_addr") {
    key = LimitKey::RemoteAddr;
    return {};
  }
  if (text == "$host") {
    key = LimitKey::Host;
    return {};
  }
  if (text == "$ssl_client_fingerprint") {
    key = LimitKey::ClientFingerprint;
    return {};
  }
  for (std::string_view prefix : {"$header_", "$http_"}) {
    if (!text.starts_with(prefix) || text.size() == prefix.size()) continue;
    header = text.substr(prefix.size());
    for (char& c : header) {
      if (c == '_') c = '-';
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
        return t.error_at("key", "a header name has letters, digits and '_' only, got " + quote(text));
      }
    }
    key = LimitKey::Header;
    return {};
  }
  return t.error_at("key", "must be \"$remote_addr\", \"$host\", \"$header_<name>\" or \"$ssl_client_fingerprint\", got " +
                              quote(text));
}

// "10r/s" | "600r/m": the interval between two requests, in nanoseconds.
Status parse_rate(const TableReader& t, LimitReqZone& zone) {
  if (Status s = t.get_string("rate", zone.rate_text, Presence::Required); !s.ok()) return s;
  const std::string& text = zone.rate_text;
  const size_t r = text.find("r/");
  uint64_t n = 0;
  bool digits = r != std::string::npos && r > 0 && r <= 9;
  for (size_t i = 0; digits && i < r; ++i) {
    if (text[i] < '0' || text[i] > '9') digits = false;
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  const std::string unit = digits ? text.substr(r + 2) : "";
  if (!digits || n == 0 || n > 1'000'000 || (unit != "s" && unit != "m")) {
    return t.error_at("rate", "must be \"<N>r/s\" or \"<N>r/m\" with N in 1..1000000, got " + quote(text));
  }
  zone.emission_ns = (unit == "s" ? 1'000'000'000ull : 60'000'000'000ull) / n;
  return {};
}

// store = "memory" | "redis" and, with "redis", where and how.
Status parse_zone_store(const TableReader& t, LimitReqZone& zone) {
  std::string store = "memory";
  if (Status s = t.get_string("store", store); !s.ok()) return s;
  if (store != "memory" && store != "redis") {
    return t.error_at("store", "unknown store " + quote(store) + " (expected \"memory\" or \"redis\")");
  }
  if (store == "memory") {
    for (std::string_view key : kRedisKeys) {
      if (t.find(key) != nullptr) return t.error_at(key, "only used with store = \"redis\"");
    }
    return {};
  }
  zone.store = SessionStore::Redis;
  return parse_redis_connection(t, zone, Millis{1}, Millis{10'000});
}

Status unique_name(const TableReader& t, const std::vector<std::string>& seen, std::string& name) {
  if (Status s = t.get_string("name", name, Presence::Required, false); !s.ok()) return s;
  for (const auto& other : seen) {
    if (other == name) return t.error_at("name", "duplicate zone name " + quote(name));
  }
  return {};
}

// `key` = ["zone", ...]: each the name of one of `names`, no duplicates.
Status parse_zone_refs(const TableReader& t, std::string_view key, const std::vector<std::string>& names,
                       std::string_view table, std::vector<size_t>& out) {
  auto array = t.get_array(key, Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const std::string path = t.path_of(key) + "[" + std::to_string(i) + "]";
    const auto* text = element.as_string();
    if (text == nullptr) return type_error(t.context(), element, path, "a string");
    size_t index = 0;
    while (index < names.size() && names[index] != text->get()) ++index;
    if (index == names.size()) {
      return t.context().error(element.source(), path, "no [[" + std::string(table) + "]] named " + quote(text->get()));
    }
    for (size_t seen : out) {
      if (seen == index) return t.context().error(element.source(), path, "duplicate " + quote(text->get()));
    }
    out.push_back(index);
  }
  return {};
}

}  // namespace

Status parse_access(const TableReader& t, std::vector<AccessRule>& out) {
  auto array = t.get_array("access", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  if ((*array)->empty()) return t.error_at("access", "must not be empty (omit it to allow everyone)");
  std::vector<AccessRule> rules;
  for (size_t i = 0; i < (*array)->size(); ++i) {
    AccessRule rule;
    if (Status s = parse_rule(t, *(*array)->get(i), t.path_of("access") + "[" + std::to_string(i) + "]", rule);
        !s.ok()) {
      return s;
    }
    rules.push_back(rule);
  }
  out = std::move(rules);
  return {};
}

Status parse_limit_zones(const TableReader& root, std::vector<LimitReqZone>& req, std::vector<LimitConnZone>& conn) {
  auto req_tables = tables_of(root, "limit_req");
  if (!req_tables.ok()) return req_tables.take_error();
  std::vector<std::string> names;
  for (size_t i = 0; i < req_tables->size(); ++i) {
    TableReader t(root.context(), *(*req_tables)[i], "limit_req[" + std::to_string(i) + "]");
    if (Status s = t.check_keys({"name", "key", "rate", "burst", "nodelay", "delay", "size", "store", "redis",
                                 "redis_user", "redis_password_file", "redis_prefix", "redis_timeout", "redis_tls"});
        !s.ok()) {
      return s;
    }
    LimitReqZone zone;
    if (Status s = unique_name(t, names, zone.name); !s.ok()) return s;
    if (Status s = parse_key(t, zone.key, zone.header); !s.ok()) return s;
    if (Status s = parse_rate(t, zone); !s.ok()) return s;
    if (Status s = t.get_integer("burst", 0, 100'000, zone.burst); !s.ok()) return s;
    bool nodelay = false;
    if (Status s = t.get_bool("nodelay", nodelay); !s.ok()) return s;
    if (Status s = t.get_integer("delay", 0, 100'000, zone.delay); !s.ok()) return s;
    if (nodelay && t.find("delay") != nullptr)
      return t.error_at("delay", "nodelay = true already lets the whole burst through at once");
    if (zone.delay > zone.burst)
      return t.error_at("delay", "must be at most burst (" + std::to_string(zone.burst) + ")");
    if (nodelay) zone.delay = LimitReqZone::kNoDelay;
    if (Status s = t.get_size("size", 64 * 1024, uint64_t{1} << 34, zone.size_bytes); !s.ok()) return s;
    if (Status s = parse_zone_store(t, zone); !s.ok()) return s;
    names.push_back(zone.name);
    req.push_back(std::move(zone));
  }
  auto conn_tables = tables_of(root, "limit_conn");
  if (!conn_tables.ok()) return conn_tables.take_error();
  names.clear();
  for (size_t i = 0; i < conn_tables->size(); ++i) {
    TableReader t(root.context(), *(*conn_tables)[i], "limit_conn[" + std::to_string(i) + "]");
    if (Status s = t.check_keys({"name", "key", "max", "size"}); !s.ok()) return s;
    LimitConnZone zone;
    if (Status s = unique_name(t, names, zone.name); !s.ok()) return s;
    if (Status s = parse_key(t, zone.key, zone.header); !s.ok()) return s;
    if (t.find("max") == nullptr) return t.missing("max");
    if (Status s = t.get_integer("max", 1, 1'000'000, zone.max); !s.ok()) return s;
    if (Status s = t.get_size("size", 64 * 1024, uint64_t{1} << 34, zone.size_bytes); !s.ok()) return s;
    names.push_back(zone.name);
    conn.push_back(std::move(zone));
  }
  return {};
}

Status parse_route_limits(const TableReader& t, const std::vector<LimitReqZone>& req,
                          const std::vector<LimitConnZone>& conn, Route& route) {
  if (Status s = parse_access(t, route.access); !s.ok()) return s;
  std::vector<std::string> names;
  for (const auto& z : req) names.push_back(z.name);
  if (Status s = parse_zone_refs(t, "limit_req", names, "limit_req", route.limit_req); !s.ok()) return s;
  names.clear();
  for (const auto& z : conn) names.push_back(z.name);
  if (Status s = parse_zone_refs(t, "limit_conn", names, "limit_conn", route.limit_conn); !s.ok()) return s;
  if (route.action != RouteAction::Proxy) {
    for (const char* key : {"limit_req", "limit_conn"}) {
      if (t.find(key) != nullptr)
        return t.error_at(key, "only in a route with an upstream (a fixed answer costs nothing)");
    }
  }
  return {};
}

}  // namespace tlsfront::config::detail
