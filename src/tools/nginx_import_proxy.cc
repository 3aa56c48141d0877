// import-nginx: upstream blocks → [[upstream]], locations with proxy_pass or
// grpc_pass → [[route]] (tools/nginx_import.h has the rules).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <re2/re2.h>

#include "config/config.h"
#include "config/units.h"
#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {
namespace {

const std::vector<std::string> kOn{"on"};

// Upstream names: letters, digits, "_", "." and "-".
std::string sanitize(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  }
  return out.empty() ? "upstream" : out;
}

// "host[:port]" (`default_port` when absent) → "ip:port" or "name:port" (a
// name is resolved by tlsfront at its TTL, as nginx's `server ... resolve`),
// or the reason it is not one.
Result<std::string> server_address(const std::string& text, int default_port = 80) {
  std::string a = text;
  bool bracketed = a.starts_with("[");
  size_t close = bracketed ? a.find(']') : std::string::npos;
  bool has_port = bracketed ? close != std::string::npos && close + 1 < a.size() : a.find(':') != std::string::npos;
  if (!has_port) a += ":" + std::to_string(default_port);
  auto ep = config::parse_server_endpoint(a);
  if (!ep.ok()) return make_error(Errc::InvalidArgument, ep.error().detail);
  return ep->to_string();
}

struct UpstreamBlock {
  std::string name;
  const Directive* block = nullptr;
  std::vector<std::string> servers;  // TOML values: "host:port" or { address = ..., weight = N, backup = true }
  Keys keys;              // keepalive, keepalive_timeout, keepalive_requests, fail_timeout
  bool implicit = false;  // from a proxy_pass address
};

class ProxyImporter {
 public:
  ProxyImporter(const std::string& base_dir, Model& m, Ledger& l) : base_dir_(base_dir), m_(m), l_(l) {}

  void upstream(const Directive& d);
  void locations(const Server& s, const Directive& block, const Chain& outer, std::vector<Model::Route>& out);

 private:
  std::string route_upstream(const Directive& pass, const Chain& chain, const std::string& prefix, PassKind kind);
  // The [[upstream]] for `u` with the timeouts (and, when `tls`, the TLS
  // settings) that apply in `chain`: one per distinct combination.
  // `proxy_host`: the pass's host[:port] as written (nginx's $proxy_host,
  // the TLS name by default: "localhost", not the address it stands for).
  std::string variant(const UpstreamBlock& u, const Directive& pass, const Chain& chain, PassKind kind, bool tls,
                      const std::string& proxy_host);

  const std::string& base_dir_;
  Model& m_;
  Ledger& l_;
  std::map<std::string, UpstreamBlock> blocks_;
  std::map<std::string, std::string> variants_;  // "name connect read send [h2c] [tls {...}]" → [[upstream]] name

 public:
  std::set<std::string> used_;  // upstream blocks some route uses
};

void ProxyImporter::upstream(const Directive& d) {
  if (d.args.size() != 1) return;
  l_.carry(d);
  l_.examined(d);
  UpstreamBlock u{d.args[0], &d, {}, {}, false};
  std::vector<std::string> fail_timeouts;
  const Directive* first_fail_timeout = nullptr;
  std::vector<std::string> max_fails_each;
  const Directive* first_max_fails = nullptr;
  bool keepalive = false;
  for (const Directive& c : d.children) {
    if (c.name == "server" && !c.args.empty()) {
      auto addr = server_address(c.args[0]);
      if (c.args[0].starts_with("unix:")) {
        l_.note(c, "not carried over: no UNIX-domain upstreams");
        continue;
      }
      if (!addr.ok()) {
        l_.note(c, "not carried over: " + addr.error().detail);
        continue;
      }
      bool skip = false;
      std::string fail_timeout;
      std::string weight;
      bool backup = false;
      std::string max_fails;
      for (size_t i = 1; i < c.args.size(); ++i) {
        const std::string& p = c.args[i];
        if (p.starts_with("fail_timeout=")) {
          auto t = parse_time(p.substr(13));
          if (t) fail_timeout = config::format_duration(*t);
          else l_.note(c, "parameter " + p + " not carried over: invalid time");
        } else if (p == "resolve") {
          // tlsfront resolves every server given by name at its TTL.
        } else if (p.starts_with("weight=")) {
          const std::string n = p.substr(7);
          if (!n.empty() && n.size() < 5 && n.find_first_not_of("0123456789") == std::string::npos &&
              std::stoul(n) >= 1 && std::stoul(n) <= 1000) {
            if (std::stoul(n) != 1) weight = std::to_string(std::stoul(n));
          } else {
            l_.note(c, "parameter " + p + " not carried over: weight is 1..1000");
          }
        } else if (p.starts_with("max_fails=")) {
          const std::string n = p.substr(10);
          if (!n.empty() && n.size() < 7 && n.find_first_not_of("0123456789") == std::string::npos) {
            max_fails = std::to_string(std::stoul(n));
          } else {
            l_.note(c, "parameter " + p + " not carried over: max_fails is 0..1000000");
          }
        } else if (p == "backup") {
          backup = true;
        } else if (p == "down") {
          l_.note(c, "not carried over: marked down");
          skip = true;
        } else {
          l_.note(c, "parameter " + p + " not carried over: no equivalent");
        }
      }
      if (skip) continue;
      if (!fail_timeout.empty()) {
        fail_timeouts.push_back(fail_timeout);
        if (first_fail_timeout == nullptr) first_fail_timeout = &c;
      }
      if (!max_fails.empty()) {
        max_fails_each.push_back(max_fails);
        if (first_max_fails == nullptr) first_max_fails = &c;
      }
      l_.carry(c);
      if (weight.empty() && !backup) {
        u.servers.push_back(toml_string(*addr));
      } else {
        u.servers.push_back("{ address = " + toml_string(*addr) + (weight.empty() ? "" : ", weight = " + weight) +
                            (backup ? ", backup = true" : "") + " }");
      }
    } else if ((c.name == "keepalive" || c.name == "keepalive_requests") && c.args.size() == 1 &&
               !c.args[0].empty() && c.args[0].find_first_not_of("0123456789") == std::string::npos && c.args[0].size() < 10) {
      if (c.name == "keepalive_requests" && std::stoull(c.args[0]) == 0) {  // "0", "000": nginx reads 0
        l_.note(c, "not carried over: keepalive_requests is >= 1");
        continue;
      }
      // A TOML integer: no leading zeros.
      if (!put(u.keys, {c.name, std::to_string(std::stoull(c.args[0])), origin(c)}, c, l_)) continue;
      keepalive = keepalive || c.name == "keepalive";
      l_.carry(c);
    } else if (c.name == "keepalive_timeout" && c.args.size() == 1) {
      auto t = parse_time(c.args[0]);
      if (!t || t->count() == 0) {
        l_.note(c, "not carried over: invalid or zero time");
        continue;
      }
      if (put(u.keys, {"keepalive_timeout", toml_string(config::format_duration(*t)), origin(c)}, c, l_)) l_.carry(c);
    } else if (c.name == "zone") {
      l_.note(c, "not needed: pools are per worker, nothing is shared");
    } else if (c.name == "least_conn" || (c.name == "random" && !c.args.empty() && c.args[0] == "two" &&
                                          (c.args.size() == 1 || c.args[1] == "least_conn"))) {
      // nginx's least_conn takes the global least; tlsfront the lesser of
      // two drawn at random, which avoids the herd on the least loaded.
      if (put(u.keys, {"balance", toml_string("least_request"), origin(c)}, c, l_)) {
        l_.note(c, "carried over as balance = \"least_request\": the fewer outstanding requests of two servers "
                   "drawn at random (per worker)");
      }
    } else if (c.name == "random" && c.args.empty()) {
      if (put(u.keys, {"balance", toml_string("random"), origin(c)}, c, l_)) l_.carry(c);
    } else if (c.name == "ip_hash" && c.args.empty()) {
      if (put(u.keys, {"balance", toml_string("hash"), origin(c)}, c, l_)) {
        u.keys.push_back({"hash", toml_string("$remote_addr"), origin(c)});
        l_.note(c, "carried over as balance = \"hash\", hash = \"$remote_addr\": a consistent hash of the whole "
                   "client address (nginx's ip_hash takes the first three octets of an IPv4 one)");
      }
    } else if (c.name == "hash" && !c.args.empty() && c.args.size() <= 2 &&
               (c.args.size() == 1 || c.args[1] == "consistent")) {
      std::string key;
      const std::string& v = c.args[0];
      if (v == "$remote_addr" || v == "$binary_remote_addr") {
        key = "$remote_addr";
      } else if (v.starts_with("$http_") && v.size() > 6) {
        key = "$header_" + v.substr(6);
      } else if (v.starts_with("$cookie_") && v.size() > 8) {
        key = v;
      }
      if (key.empty()) {
        l_.note(c, "not carried over: tlsfront hashes $remote_addr, a request field ($http_NAME) or a cookie "
                   "($cookie_NAME)");
      } else if (put(u.keys, {"balance", toml_string("hash"), origin(c)}, c, l_)) {
        u.keys.push_back({"hash", toml_string(key), origin(c)});
        if (c.args.size() == 1) {
          l_.note(c, "carried over as a consistent hash (nginx's plain hash remaps most keys when a server leaves)");
        } else {
          l_.carry(c);
        }
      }
    } else if (c.name == "ip_hash" || c.name == "hash" || c.name == "random") {
      l_.note(c, "not carried over: no equivalent for these parameters");
    } else if (c.name == "keepalive_time") {
      l_.note(c, "no equivalent: connections are closed by idle time and request count only");
    }
  }
  const bool hashed = std::any_of(u.keys.begin(), u.keys.end(), [](const Key& k) { return k.key == "hash"; });
  if (hashed && std::any_of(u.servers.begin(), u.servers.end(),
                            [](const std::string& v) { return v.find("backup = true") != std::string::npos; })) {
    // nginx refuses the pair too: a key's server is its place on the ring.
    std::erase_if(u.keys, [](const Key& k) { return k.key == "hash" || k.key == "balance"; });
    l_.note(d, "hash balancing not carried over: the group has backup servers, which a hash never uses");
  }
  if (keepalive && u.servers.size() > 1) {
    for (const Directive& c : d.children) {
      if (c.name == "keepalive" && l_.carried(c)) {
        l_.note(c, fmt::format("carried over, but nginx keeps at most {} idle connections per worker for the whole group, "
                               "tlsfront {} per worker for each of its {} servers",
                               c.args[0], c.args[0], u.servers.size()));
      }
    }
  }
  if (!keepalive) u.keys.insert(u.keys.begin(), {"keepalive", "0", "nginx keeps no idle connections without `keepalive`"});
  if (!max_fails_each.empty()) {
    bool all_same = std::all_of(max_fails_each.begin(), max_fails_each.end(),
                                [&](const auto& n) { return n == max_fails_each[0]; });
    if (all_same && max_fails_each.size() == u.servers.size()) {
      u.keys.push_back({"max_fails", max_fails_each[0], origin(*first_max_fails)});
    } else {
      l_.note(d, "max_fails not carried over: it differs between servers; tlsfront has one per upstream");
    }
  }
  if (!fail_timeouts.empty()) {
    bool all_same = std::all_of(fail_timeouts.begin(), fail_timeouts.end(), [&](const auto& t) { return t == fail_timeouts[0]; });
    if (all_same && fail_timeouts.size() == u.servers.size()) {
      u.keys.push_back({"fail_timeout", toml_string(fail_timeouts[0]), origin(*first_fail_timeout)});
    } else {
      l_.note(d, "fail_timeout not carried over: it differs between servers; tlsfront has one per upstream");
    }
  }
  if (u.servers.empty()) l_.note(d, "not carried over: no usable server");
  blocks_[u.name] = std::move(u);
}

std::string ProxyImporter::variant(const UpstreamBlock& u, const Directive& pass, const Chain& chain, PassKind kind,
                                   bool tls, const std::string& proxy_host) {
  struct T {
    const char* directive;
    const char* key;
  };
  const PassDirectives& names = pass_directives(kind);
  Keys timeouts;
  std::string id = u.name;
  for (const T& t : {T{names.connect_timeout, "connect_timeout"}, T{names.read_timeout, "read_timeout"},
                     T{names.send_timeout, "send_timeout"}}) {
    const Directive* d = effective_one(chain, t.directive);
    config::Millis ms{60'000};
    std::string from = std::string("nginx's default (no ") + t.directive + ")";
    if (d) {
      auto v = d->args.size() == 1 ? parse_time(d->args[0]) : std::nullopt;
      if (v && v->count() > 0) {
        ms = *v;
        from = origin(*d);
        l_.carry(*d);
      } else {
        l_.note(*d, "not carried over: invalid or zero time (nginx's default, 60s, kept)");
      }
    }
    timeouts.push_back({t.key, toml_string(config::format_duration(ms)), from});
    id += " " + config::format_duration(ms);
  }
  if (kind == PassKind::Grpc) id += " h2c";
  const std::string tls_value = tls ? upstream_tls_value(pass, chain, kind, proxy_host, base_dir_, l_) : "";
  if (tls) id += " tls " + tls_value;
  if (auto it = variants_.find(id); it != variants_.end()) return it->second;
  std::string name = sanitize(u.name);
  for (int n = 2; std::any_of(m_.upstreams.begin(), m_.upstreams.end(), [&](const auto& x) { return x.name == name; }); ++n) {
    name = sanitize(u.name) + "-" + std::to_string(n);
  }
  std::string servers = "[";
  for (size_t i = 0; i < u.servers.size(); ++i) servers += (i ? ", " : "") + u.servers[i];
  Keys keys{{"servers", servers + "]", u.block ? origin(*u.block) : std::string(names.pass) + " address"}};
  if (kind == PassKind::Grpc) {
    keys.push_back(tls ? Key{"protocol", toml_string("h2"), "grpc_pass grpcs://: HTTP/2 over TLS"}
                       : Key{"protocol", toml_string("h2c"), "grpc_pass: HTTP/2 with prior knowledge"});
  }
  for (const Key& k : u.keys) {
    // An h2c upstream always keeps its connections (keepalive >= 1 bounds
    // them): nginx's keepalive = 0 without `keepalive` does not apply.
    if (kind == PassKind::Grpc && k.key == "keepalive" && k.value == "0") continue;
    keys.push_back(k);
  }
  keys.insert(keys.end(), timeouts.begin(), timeouts.end());
  if (tls) keys.push_back({"tls", tls_value, origin(pass)});
  m_.upstreams.push_back({name, std::move(keys), u.implicit ? "" : "upstream " + u.name});
  variants_[id] = name;
  return name;
}

// proxy_pass's URL → "host[:port]" (`tls` for https://), or "" with a report line.
std::string http_target(const Directive& pass, const std::string& prefix, bool& tls, Ledger& l) {
  const std::string& url = pass.args[0];
  tls = url.starts_with("https://");
  if (!tls && !url.starts_with("http://")) {
    l.note(pass, "not carried over: not an http:// or https:// URL (no route)");
    return {};
  }
  std::string rest = url.substr(tls ? 8 : 7);
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash), uri = slash == std::string::npos ? "" : rest.substr(slash);
  if (!uri.empty() && uri != prefix) {
    l.note(pass, "not carried over: with the URI " + uri + " nginx replaces the location's prefix " + prefix +
                     " by it; tlsfront forwards the path unchanged (no route)");
    return {};
  }
  return hostport;
}

std::string ProxyImporter::route_upstream(const Directive& pass, const Chain& chain, const std::string& prefix,
                                          PassKind kind) {
  if (pass.args.size() != 1 || has_variable(pass.args[0])) {
    l_.note(pass, "not carried over: " + pass.name + " with variables (no route)");
    return {};
  }
  std::string why;
  bool tls = false;
  std::string hostport =
      kind == PassKind::Grpc ? grpc_target(pass.args[0], tls, why) : http_target(pass, prefix, tls, l_);
  if (hostport.empty()) {
    if (!why.empty()) l_.note(pass, why);
    return {};
  }
  const UpstreamBlock* u = nullptr;
  if (auto it = blocks_.find(hostport); it != blocks_.end()) {
    u = &it->second;
    if (u->servers.empty()) {
      l_.note(pass, "not carried over: upstream " + hostport + " has no usable server (no route)");
      return {};
    }
  } else {
    auto addr = server_address(hostport, tls ? 443 : 80);
    if (!addr.ok()) {
      l_.note(pass, "not carried over: " + addr.error().detail + " (no route)");
      return {};
    }
    UpstreamBlock implicit{*addr, nullptr, {toml_string(*addr)},
                           {{"keepalive", "0", "nginx keeps no idle connections without an upstream block's `keepalive`"}},
                           true};
    // Kept by address: http://10.0.0.5 (port 80) and https://10.0.0.5 (443) differ.
    u = &blocks_.try_emplace(*addr, std::move(implicit)).first->second;
  }
  l_.carry(pass);
  if (kind == PassKind::Grpc) {
    const bool keepalive = std::any_of(u->keys.begin(), u->keys.end(),
                                       [](const Key& k) { return k.key == "keepalive" && k.value != "0"; });
    const std::string as = tls ? "an h2 upstream (HTTP/2 over TLS)" : "an h2c upstream";
    l_.note(pass, keepalive ? "carried over as " + as + "; the upstream block's keepalive bounds its HTTP/2 "
                                  "connections per worker per server (each carrying many calls), not idle ones"
                            : "carried over as " + as + ": calls share up to keepalive (32) HTTP/2 "
                                  "connections per worker per server, where nginx without the upstream block's "
                                  "keepalive opens one connection per call");
  } else {
    bool host_set = false;
    for (const Directive* h : effective(chain, "proxy_set_header")) {
      if (h->args.size() == 2 && (h->args[0] == "Host" || h->args[0] == "host")) host_set = true;
    }
    if (!host_set) {
      l_.note(pass, "carried over, but nginx sends the backend Host: " + hostport +
                        " (its default, $proxy_host) and tlsfront the client's Host");
    }
  }
  used_.insert(hostport);
  return variant(*u, pass, chain, kind, tls, hostport);
}

// An nginx regex location (PCRE, searched anywhere in the path) as a
// path_regex (RE2, matching the whole path): ".*" on each side the pattern
// does not anchor with ^ / $, "(?i)" for ~*. Empty and the reason when RE2
// cannot compile it (backreferences, lookaround, possessive quantifiers).
std::string regex_of(const std::string& pcre, bool caseless, std::string& why) {
  bool alternation = pcre.find('|') != std::string::npos;
  bool start = !alternation && pcre.starts_with("^");
  bool end = !alternation && pcre.ends_with("$") && !pcre.ends_with("\\$");
  std::string body = pcre.substr(start ? 1 : 0, pcre.size() - (start ? 1 : 0) - (end ? 1 : 0));
  if (alternation) body = "(?:" + body + ")";
  std::string re = std::string(caseless ? "(?i)" : "") + (start ? "" : ".*") + body + (end ? "" : ".*");
  re2::RE2::Options options;
  options.set_log_errors(false);
  re2::RE2 compiled(re, options);
  if (!compiled.ok()) {
    why = "regex location: RE2 cannot compile " + toml_string(re) + " (" + compiled.error() +
          "; no backreferences or lookaround)";
    return {};
  }
  return re;
}

bool is_location_setting(const std::string& name) {
  static const char* kGlobal[] = {"access_log", "keepalive_timeout", "keepalive_requests", "client_max_body_size",
                                  "client_body_timeout", "send_timeout"};
  return std::any_of(std::begin(kGlobal), std::end(kGlobal), [&](const char* g) { return name == g; });
}

void ProxyImporter::locations(const Server& s, const Directive& block, const Chain& outer, std::vector<Model::Route>& out) {
  for (const Directive& d : block.children) {
    if (d.name != "location" || !d.block) continue;
    std::string mod, path;
    if (d.args.size() == 2) {
      mod = d.args[0];
      path = d.args[1];
    } else if (d.args.size() == 1) {
      path = d.args[0];
      for (const char* m : {"^~", "~*", "~", "="}) {
        if (path.size() > std::strlen(m) && path.starts_with(m) && path[0] != '/') {
          mod = m;
          path = path.substr(mod.size());
          break;
        }
      }
    }
    size_t inside = count_all(d.children);
    if (path.starts_with("@")) {
      l_.note(d, fmt::format("not carried over: named location: no try_files or error_page (its {} directive(s) neither)", inside));
      continue;
    }
    Model::Match match = Model::Match::Prefix;
    if (mod == "=") {
      match = Model::Match::Exact;
    } else if (mod == "~" || mod == "~*") {
      std::string why;
      path = regex_of(path, mod == "~*", why);
      if (path.empty()) {
        l_.note(d, fmt::format("not carried over: {} (its {} directive(s) neither)", why, inside));
        continue;
      }
      match = Model::Match::Regex;
    } else if (mod == "^~") {
      match = Model::Match::StopPrefix;
    }
    if ((!mod.empty() && match == Model::Match::Prefix) || path.empty() || (match != Model::Match::Regex && path[0] != '/')) {
      l_.note(d, "not carried over: a prefix or exact location starts with \"/\"");
      continue;
    }
    l_.carry(d);
    l_.examined(d);
    Chain chain{&d};
    chain.insert(chain.end(), outer.begin(), outer.end());
    bool routed = false;
    const size_t first_route = out.size();
    auto ret = std::find_if(d.children.begin(), d.children.end(), [](const Directive& c) { return c.name == "return"; });
    if (ret != d.children.end()) {
      Keys answer = fixed_answer(*ret, chain, l_);
      routed = !answer.empty();
      if (routed) out.push_back({"", path, "", origin(d), match, chain, {}, std::move(answer)});
    }
    for (const Directive& c : d.children) {
      const bool pass = c.name == "proxy_pass" || c.name == "grpc_pass";
      if (pass && ret != d.children.end()) {
        l_.note(c, "not needed: nginx's return in this location answers before " + c.name + " would");
      } else if (pass) {
        const PassKind kind = c.name == "grpc_pass" ? PassKind::Grpc : PassKind::Http;
        std::string up = route_upstream(c, chain, path, kind);
        if (!up.empty()) out.push_back({"", path, up, origin(d), match, chain, {}, {}, kind == PassKind::Grpc});
        routed = routed || !up.empty();
      } else if (c.name == "access_log" && c.args == std::vector<std::string>{"off"}) {
        // location_log_switch, below
      } else if (is_location_setting(c.name)) {
        l_.note(c, "not carried over: tlsfront has this setting once for all servers and paths, not per location");
      }
    }
    routed = import_file_location(d, chain, path, match, base_dir_, first_route, routed, out, l_);
    if (!routed) {
      l_.note(d, "no route: no usable proxy_pass, grpc_pass, return or root in it (what it does instead is listed)");
    } else if (match == Model::Match::Regex) {
      l_.note(d, "carried over as path_regex " + toml_string(path) +
                     ": RE2, tried in file order after exact and ^~ routes, against tlsfront's normalized path "
                     "(docs/configuration.md, [[route]]), which keeps %XX of reserved characters encoded where nginx decodes them");
    }
    locations(s, d, chain, out);
  }
}

// A prefix location inside a shorter ^~ one (`^~ /a/` and `/a/b/`): nginx
// takes the longer for /a/b/x (then tries regexes), tlsfront's earlier ^~
// route takes it.
void note_shadowed_prefixes(const std::vector<Model::Route>& routes, Ledger& l) {
  for (const auto& p : routes) {
    if (p.match != Model::Match::Prefix) continue;
    for (const auto& stop : routes) {
      if (stop.match == Model::Match::StopPrefix && p.path.size() > stop.path.size() && p.path.starts_with(stop.path)) {
        l.note(*p.chain.front(), "carried over, but its requests go to the route of ^~ " + stop.path +
                                     " (tried first); nginx takes the longer prefix");
      }
    }
  }
}

}  // namespace

void import_proxy(const Directive& http, const std::vector<Server>& servers, size_t def, const std::string& base_dir,
                  Model& m, Ledger& l) {
  ProxyImporter p(base_dir, m, l);
  for (const Directive& d : http.children) {
    if (d.name == "upstream" && d.block) p.upstream(d);
  }
  std::vector<Model::Route> any_host;
  for (size_t i = 0; i < servers.size(); ++i) {
    const Server& s = servers[i];
    if (!s.tls) continue;
    std::vector<Model::Route> routes;
    p.locations(s, *s.block, s.chain, routes);
    // nginx: an exact location, else the longest matching prefix unless it
    // is ^~ and a regex matches; tlsfront: the first match. Hence: exact,
    // ^~ prefixes, regexes (in file order), other prefixes; longest first.
    std::stable_sort(routes.begin(), routes.end(), [](const auto& a, const auto& b) {
      if (a.match != b.match) return a.match < b.match;
      return a.match != Model::Match::Regex && a.path.size() > b.path.size();
    });
    note_shadowed_prefixes(routes, l);
    if (i == def) {
      any_host = std::move(routes);
      continue;
    }
    if (s.exact_names.empty() && !routes.empty()) {
      l.note(*s.block,
             "locations not carried over: routes match exact host names, and this server has none "
             "(its requests go to the default server's routes)");
      continue;
    }
    if (!s.wildcard_names.empty()) {
      for (const Directive* n : effective({s.block}, "server_name")) {
        l.note(*n,
               "wildcard names: routes match exact hosts, so requests for them go to the default server's routes "
               "(certificates still follow them)");
      }
    }
    for (const std::string& host : s.exact_names) {
      for (auto r : routes) {
        r.host = host;
        m.routes.push_back(std::move(r));
      }
    }
  }
  for (auto& r : any_host) m.routes.push_back(std::move(r));
  for (const Directive& d : http.children) {
    if (d.name == "upstream" && d.block && d.args.size() == 1 && !p.used_.count(d.args[0])) {
      l.note(d, fmt::format("not carried over: no imported location proxies to it (its {} directive(s) neither)", count_all(d.children)));
    }
  }
}

}  // namespace tlsfront::tools::nginx::detail
