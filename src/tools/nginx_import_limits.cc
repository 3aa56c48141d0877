// import-nginx: allow/deny, limit_req_zone + limit_req, limit_conn_zone +
// limit_conn → each route's access, limit_req, limit_conn and the
// [[limit_req]] / [[limit_conn]] zones (tools/nginx_import_detail.h:
// import_limits). nginx's burst/nodelay/delay and limit_conn's number are
// set where a zone is used, tlsfront's on the zone: each distinct use
// becomes its own zone ("name", "name_2", ...), reported, since nginx's
// uses share one state.
#include <map>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"
#include "util/ip_address.h"

namespace tlsfront::tools::nginx::detail {
namespace {

// "$binary_remote_addr" → "$remote_addr"; "" when tlsfront has no such key.
std::string key_of(const std::string& v) {
  if (v == "$binary_remote_addr" || v == "$remote_addr") return "$remote_addr";
  if (v == "$host") return "$host";
  if (v.starts_with("$http_") && v.size() > 6) return "$header_" + v.substr(6);
  return "";
}

// "zone=name:10m" → {name, 10m}.
bool zone_arg(const std::string& arg, std::string& name, std::string& size) {
  if (!arg.starts_with("zone=")) return false;
  const std::string v = arg.substr(5);
  const size_t colon = v.find(':');
  name = v.substr(0, colon);
  size = colon == std::string::npos ? "" : v.substr(colon + 1);
  return !name.empty();
}

struct ZoneDef {
  const Directive* d = nullptr;
  std::string key, size, rate;
};

class LimitImporter {
 public:
  LimitImporter(const Directive& http, Model& m, Ledger& l) : m_(m), l_(l) {
    for (const Directive& d : http.children) {
      if (d.name != "limit_req_zone" && d.name != "limit_conn_zone") continue;
      ZoneDef z{&d, d.args.empty() ? "" : d.args[0], "", ""};
      std::string name;
      for (size_t i = 1; i < d.args.size(); ++i) {
        if (zone_arg(d.args[i], name, z.size)) continue;
        if (d.args[i].starts_with("rate=")) z.rate = d.args[i].substr(5);
      }
      if (name.empty()) continue;
      (d.name == "limit_req_zone" ? req_defs_ : conn_defs_)[name] = z;
    }
  }

  // A fixed answer's route takes access rules only (limits need an upstream).
  void route(Model::Route& r) {
    access(r);
    if (r.upstream.empty()) return;
    std::vector<std::string> req, conn;
    for (const Directive* d : effective(r.chain, "limit_req")) {
      if (auto zone = use_req(*d); !zone.empty()) req.push_back(toml_string(zone));
    }
    for (const Directive* d : effective(r.chain, "limit_conn")) {
      if (auto zone = use_conn(*d); !zone.empty()) conn.push_back(toml_string(zone));
    }
    if (!req.empty()) r.limits.push_back({"limit_req", list(req), ""});
    if (!conn.empty()) r.limits.push_back({"limit_conn", list(conn), ""});
  }

  void finish() {
    for (auto* defs : {&req_defs_, &conn_defs_}) {
      for (const auto& [name, def] : *defs) {
        if (!l_.carried(*def.d) && !l_.noted(*def.d)) l_.note(*def.d, "not carried over: no imported location uses it");
      }
    }
  }

 private:
  static std::string list(const std::vector<std::string>& v) {
    std::string out = "[";
    for (const auto& s : v) out += (out.size() > 1 ? ", " : "") + s;
    return out + "]";
  }

  // The innermost block with allow/deny rules gives them all, in order (nginx's access module).
  void access(Model::Route& r) {
    for (const Directive* block : r.chain) {
      std::vector<std::string> rules;
      bool any = false;
      for (const Directive& c : block->children) {
        if (c.name != "allow" && c.name != "deny") continue;
        any = true;
        std::string why;
        const bool all = c.args.size() == 1 && c.args[0] == "all";
        const auto cidr = all || c.args.size() != 1 ? std::nullopt : Cidr::parse(c.args[0], &why);
        if (!all && !cidr) {
          l_.note(c, "not carried over: one IP address, CIDR block or \"all\" (" +
                         (c.args.size() == 1 && c.args[0].starts_with("unix:") ? std::string("no UNIX-domain listeners")
                                                                               : why) +
                         ")");
          continue;
        }
        rules.push_back(toml_string(c.name + " " + (all ? std::string("all") : cidr->to_string())));
        l_.carry(c);
      }
      if (!any) continue;
      if (!rules.empty()) r.limits.push_back({"access", list(rules), origin(*block)});
      return;
    }
  }

  // A zone of tlsfront's for this use of nginx's zone `name` with `params`
  // (as TOML lines), reusing one made for the same use.
  std::string zone_for(std::vector<Model::Zone>& zones, const std::string& name, const Keys& params,
                       const Directive& d) {
    int same_name = 0;
    for (const auto& z : zones) {
      if (z.nginx_name != name) continue;
      ++same_name;
      bool same = z.keys.size() == params.size();
      for (size_t i = 0; same && i < params.size(); ++i)
        same = z.keys[i].key == params[i].key && z.keys[i].value == params[i].value;
      if (same) return z.name;
    }
    const std::string mine = same_name == 0 ? name : name + "_" + std::to_string(same_name + 1);
    if (same_name > 0) {
      l_.note(d, "carried over as zone " + toml_string(mine) +
                     ": tlsfront sets these on the zone, so this use has a "
                     "zone of its own (nginx's uses of one zone share its state)");
    }
    zones.push_back({mine, name, params});
    return mine;
  }

  // limit_req zone=NAME [burst=N] [nodelay | delay=N]
  std::string use_req(const Directive& d) {
    std::string name, unused;
    Keys params;
    std::string burst = "0", delay;
    bool nodelay = false;
    for (const auto& a : d.args) {
      if (zone_arg(a, name, unused)) continue;
      if (a.starts_with("burst="))
        burst = a.substr(6);
      else if (a.starts_with("delay="))
        delay = a.substr(6);
      else if (a == "nodelay")
        nodelay = true;
    }
    auto def = req_defs_.find(name);
    if (def == req_defs_.end()) {
      l_.note(d, "not carried over: no limit_req_zone defines its zone");
      return "";
    }
    const std::string key = key_of(def->second.key);
    if (key.empty() || def->second.rate.empty()) {
      l_.note(d, "not carried over: its zone's key " + def->second.key +
                     " is not one tlsfront has ($remote_addr, $binary_remote_addr, $host, $http_<name>)");
      l_.note(*def->second.d, "not carried over: tlsfront keys zones by $remote_addr, $host or $http_<name>");
      return "";
    }
    params.push_back({"key", toml_string(key), origin(*def->second.d)});
    params.push_back({"rate", toml_string(def->second.rate), ""});
    if (!def->second.size.empty()) params.push_back({"size", toml_string(def->second.size), ""});
    if (burst != "0") params.push_back({"burst", burst, origin(d)});
    if (nodelay) params.push_back({"nodelay", "true", ""});
    if (!delay.empty() && delay != "0") params.push_back({"delay", delay, ""});
    l_.carry(d);
    l_.carry(*def->second.d);
    l_.note(d, "carried over: refused requests get 429 with Retry-After (nginx's default limit_req_status is 503)");
    return zone_for(m_.limit_req_zones, name, params, d);
  }

  // limit_conn NAME N
  std::string use_conn(const Directive& d) {
    if (d.args.size() != 2) return "";
    auto def = conn_defs_.find(d.args[0]);
    if (def == conn_defs_.end()) {
      l_.note(d, "not carried over: no limit_conn_zone defines its zone");
      return "";
    }
    const std::string key = key_of(def->second.key);
    if (key.empty()) {
      l_.note(d, "not carried over: its zone's key " + def->second.key + " is not one tlsfront has");
      return "";
    }
    Keys params{{"key", toml_string(key), origin(*def->second.d)}, {"max", d.args[1], origin(d)}};
    if (!def->second.size.empty()) params.push_back({"size", toml_string(def->second.size), ""});
    l_.carry(d);
    l_.carry(*def->second.d);
    return zone_for(m_.limit_conn_zones, d.args[0], params, d);
  }

  Model& m_;
  Ledger& l_;
  std::map<std::string, ZoneDef> req_defs_, conn_defs_;
};

}  // namespace

void import_limits(const Directive& http, Model& m, Ledger& l) {
  LimitImporter im(http, m, l);
  for (auto& r : m.routes) im.route(r);
  im.finish();
}

}  // namespace tlsfront::tools::nginx::detail
