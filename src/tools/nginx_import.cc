// import-nginx: the main context, servers, listen addresses, certificates
// and the settings tlsfront has once ([tls], [log], [timeouts], ...).
// Upstreams and routes: nginx_import_proxy.cc.
#include "tools/nginx_import.h"

#include <algorithm>

#include <fmt/format.h>

#include "config/units.h"
#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx {

bool detail::same_args(const std::vector<const Directive*>& a, const std::vector<const Directive*>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]->args != b[i]->args) return false;
  }
  return true;
}

namespace {

using namespace detail;

std::string quoted_duration(config::Millis ms) { return toml_string(config::format_duration(ms)); }

// A TOML file is UTF-8: a carried-over directive whose words are not is an
// error at its place (nginx takes any bytes).
Status check_utf8(const std::vector<Directive>& v, const Ledger& l) {
  for (const Directive& d : v) {
    if (l.carried(d)) {
      for (const std::string& a : d.args) {
        if (!valid_utf8(a)) {
          return make_error(Errc::InvalidArgument, d.where() + ": " + d.name + ": not valid UTF-8, which a tlsfront configuration must be");
        }
      }
    }
    if (Status s = check_utf8(d.children, l); !s.ok()) return s;
  }
  return {};
}

class Importer {
 public:
  Importer(const std::string& base_dir, Model& m, Ledger& l) : base_(base_dir), m_(m), l_(l) {}

  void main_context(const std::vector<Directive>& tree);
  const Directive* http() const { return http_; }
  const std::vector<Server>& servers() const { return servers_; }
  size_t default_server() const { return def_; }
  bool any_tls() const { return def_ != SIZE_MAX; }
  void servers_of(const Directive& http);
  void globals();

 private:
  void listen(Server& s, const Directive& d, bool ssl_on, bool http2_on, bool quic_retry_on);
  void names(Server& s);
  // The setting `name` of the default server, applied by `apply`; other
  // servers' different values are listed.
  template <typename F>
  void global(const std::string& name, F apply);

  std::string base_;
  Model& m_;
  Ledger& l_;
  const Directive* http_ = nullptr;
  std::vector<Server> servers_;
  size_t def_ = SIZE_MAX;
};

void Importer::main_context(const std::vector<Directive>& tree) {
  for (const Directive& d : tree) {
    if (d.name == "http" && d.block) {
      if (http_ != nullptr) {
        l_.note(d, "not carried over: a second http block (nginx refuses it)");
        continue;
      }
      http_ = &d;
      l_.carry(d);
      l_.examined(d);
    } else if (d.name == "worker_processes" && d.args.size() == 1) {
      const std::string& v = d.args[0];
      bool digits = !v.empty() && v.size() < 4 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (v == "auto" || (digits && std::stoi(v) >= 1 && std::stoi(v) <= 256)) {
        if (put(m_.root, {"workers", v == "auto" ? "\"auto\"" : std::to_string(std::stoi(v)), origin(d)}, d, l_)) l_.carry(d);
      } else {
        l_.note(d, "not carried over: workers is \"auto\" or 1..256");
      }
    } else if (d.name == "events" && d.block) {
      l_.carry(d);
      l_.examined(d);
    } else if (d.name == "stream" || d.name == "mail") {
      l_.note(d, fmt::format("no equivalent: tlsfront proxies HTTP only (a block: its {} directive(s) neither)", count_all(d.children)));
    }
  }
}

void Importer::listen(Server& s, const Directive& d, bool ssl_on, bool http2_on, bool quic_retry_on) {
  if (d.args.empty()) return l_.note(d, "not carried over: no address");
  bool ssl = ssl_on, h2 = http2_on, is_default = false, skip = false, proxy_protocol = false, quic = false;
  int backlog = 0, tcp_fastopen = -1;
  std::vector<std::string> why;
  for (size_t i = 1; i < d.args.size(); ++i) {
    const std::string& p = d.args[i];
    if (p == "ssl") {
      ssl = true;
    } else if (p == "http2") {
      h2 = true;
    } else if (p == "default_server" || p == "default") {
      is_default = true;
    } else if (p.starts_with("backlog=")) {
      try {
        backlog = std::stoi(p.substr(8));
      } catch (...) {
        backlog = 0;
      }
      if (backlog < 1 || backlog > 65535) {
        why.push_back("parameter " + p + " not carried over: backlog is 1..65535");
        backlog = 0;
      }
    } else if (p.starts_with("fastopen=")) {
      // nginx's TFO queue length (RFC 7413 §4.2) is tlsfront's tcp_fastopen;
      // without the parameter tlsfront keeps its "auto" (on where the kernel allows it).
      try {
        tcp_fastopen = std::stoi(p.substr(9));
      } catch (...) {
        tcp_fastopen = -1;
      }
      if (tcp_fastopen < 0 || tcp_fastopen > 65535) {
        why.push_back("parameter " + p + " not carried over: fastopen is 0..65535");
        tcp_fastopen = -1;
      }
    } else if (p == "reuseport") {
      why.push_back("parameter reuseport not needed: every worker has its own SO_REUSEPORT socket");
    } else if (p == "deferred") {
      why.push_back("parameter deferred not carried over: no TCP_DEFER_ACCEPT (measured, no gain)");
    } else if (p == "ipv6only=on") {
      why.push_back("parameter ipv6only=on not needed: IPv6 listeners are IPv6-only");
    } else if (p == "proxy_protocol") {
      proxy_protocol = true;
      why.push_back("parameter proxy_protocol carried over as proxy_protocol = true: its address is the client's "
                    "everywhere ($remote_addr, X-Forwarded-For, X-Real-IP, the log), as nginx's with real_ip_header "
                    "proxy_protocol (without it nginx keeps the load balancer's address in $remote_addr)");
    } else if (p == "quic" || p == "http3") {
      // nginx's HTTP/3 listen beside the TLS one of the same address.
      quic = true;
      ssl = true;
      why.push_back("parameter " + p + " carried over as quic = true on the TLS listener of this address (which "
                    "serves TLS over TCP too, and adds Alt-Svc itself: an add_header Alt-Svc is not needed)");
    } else {
      why.push_back("parameter " + p + " not carried over: no equivalent");
    }
  }
  for (auto& w : why) l_.note(d, w);
  if (skip) return;
  // Address: "443", "*:443", "1.2.3.4", "1.2.3.4:443", "[::]:443", "unix:/path", "name:443".
  std::string a = d.args[0];
  if (a.starts_with("unix:")) return l_.note(d, "not carried over: no UNIX-domain listeners");
  std::string host = "0.0.0.0", port = "80";
  if (std::all_of(a.begin(), a.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    port = a;
  } else if (a.starts_with("[")) {
    size_t close = a.find(']');
    host = close == std::string::npos ? a : a.substr(0, close + 1);
    if (close != std::string::npos && close + 1 < a.size() && a[close + 1] == ':') port = a.substr(close + 2);
  } else if (size_t colon = a.rfind(':'); colon != std::string::npos) {
    host = a.substr(0, colon);
    port = a.substr(colon + 1);
  } else {
    host = a;
  }
  if (host == "*") host = "0.0.0.0";
  std::string address = host + ":" + port;
  auto ep = config::parse_endpoint(address, /*allow_localhost=*/false);
  if (!ep.ok()) {
    return l_.note(d, "not carried over: " + ep.error().detail + " (listen addresses are IP literals)");
  }
  address = ep->to_string();
  if (!ssl) {
    s.cleartext.push_back({address, &d, tcp_fastopen, proxy_protocol});  // servers_of decides
    return;
  }
  l_.carry(d);
  s.tls = true;
  s.is_default = s.is_default || is_default;
  for (auto& l : m_.listens) {
    if (l.address == address) {  // one socket per address: http2 on any listen of it applies to all, as in nginx
      l.h2 = l.h2 || h2;
      if (backlog) l.backlog = backlog;
      if (tcp_fastopen >= 0) l.tcp_fastopen = tcp_fastopen;
      l.proxy_protocol = l.proxy_protocol || proxy_protocol;
      l.quic = l.quic || quic;
      l.quic_retry = l.quic_retry || (quic && quic_retry_on);
      return;
    }
  }
  m_.listens.push_back({.address = address,
                        .h2 = h2,
                        .backlog = backlog,
                        .tcp_fastopen = tcp_fastopen,
                        .proxy_protocol = proxy_protocol,
                        .quic = quic,
                        .quic_retry = quic && quic_retry_on,
                        .origin = origin(d)});
}

void Importer::names(Server& s) {
  for (const Directive* d : effective({s.block}, "server_name")) {
    bool all = true;
    for (const std::string& raw : d->args) {
      std::string n = raw;
      std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (!n.empty() && n.back() == '.') n.pop_back();  // an absolute name
      if (n == "_" || n.empty()) continue;
      // Kept when tlsfront takes it as a DNS name (config::check_dns_name), once.
      auto add = [&](std::vector<std::string>& into, std::string name) {
        if (std::string why = config::check_dns_name(name); !why.empty()) {
          l_.note(*d, "name " + raw + " not carried over: " + name + " " + why);
          all = false;
        } else if (std::find(into.begin(), into.end(), name) == into.end()) {
          into.push_back(std::move(name));
        }
      };
      if (n[0] == '~') {
        l_.note(*d, "name " + raw + " not carried over: no regex server names");
        all = false;
      } else if (n[0] == '.') {
        add(s.exact_names, n.substr(1));
        add(s.wildcard_names, "*" + n);
      } else if (n.starts_with("*.")) {
        add(s.wildcard_names, n);
      } else if (n.find('*') != std::string::npos || has_variable(n)) {
        l_.note(*d, "name " + raw + " not carried over: only a leading \"*.\" wildcard is supported");
        all = false;
      } else {
        add(s.exact_names, n);
      }
    }
    if (all) l_.carry(*d);
  }
}

void Importer::servers_of(const Directive& http) {
  for (const Directive& d : http.children) {
    if (d.name != "server" || !d.block) continue;
    Server s;
    s.block = &d;
    s.chain = {&d, &http};
    // `ssl on` (nginx before 1.25.1) and `http2 on` (1.25.1 and later), in the server or inherited.
    bool ssl_on = false, http2_on = false;
    if (const Directive* c = effective_one(s.chain, "ssl"); c && c->args.size() == 1) {
      ssl_on = c->args[0] == "on";
      l_.note(*c, ssl_on ? "not needed: every listener is TLS (ssl on is read as listen ... ssl)" : "not needed");
    }
    if (const Directive* c = effective_one(s.chain, "http2"); c && c->args.size() == 1) {
      http2_on = c->args[0] == "on";
      l_.carry(*c);
    }
    bool quic_retry_on = false;  // quic_retry on: Retry on this server's quic listens
    if (const Directive* c = effective_one(s.chain, "quic_retry"); c && c->args.size() == 1) {
      quic_retry_on = c->args[0] == "on";
      l_.carry(*c);
    }
    bool any_listen = false;
    for (const Directive& c : d.children) {
      if (c.name == "listen") {
        any_listen = true;
        listen(s, c, ssl_on, http2_on, quic_retry_on);
      }
    }
    if (!s.tls) {
      if (!redirect_server(s, m_, l_)) {
        l_.note(d, fmt::format("not carried over: {} (its {} directive(s) neither)",
                               any_listen ? "no TLS listen (listen ... ssl), and not a redirect to https (return 301 "
                                            "https://$host$request_uri): tlsfront's routes are those of every listener"
                                          : "no listen, so nginx's plain-HTTP *:80",
                               count_all(d.children)));
      }
      servers_.push_back(std::move(s));
      continue;
    }
    cleartext_listens(s, false, m_, l_);
    l_.carry(d);
    l_.examined(d);
    names(s);
    servers_.push_back(std::move(s));
  }
  for (size_t i = 0; i < servers_.size() && def_ == SIZE_MAX; ++i) {
    if (servers_[i].tls && servers_[i].is_default) def_ = i;
  }
  for (size_t i = 0; i < servers_.size() && def_ == SIZE_MAX; ++i) {
    if (servers_[i].tls) def_ = i;
  }
  if (def_ != SIZE_MAX) servers_[def_].is_default = true;
  for (size_t i = 0; i < servers_.size(); ++i) {
    if (i != def_) servers_[i].is_default = false;
  }
}

template <typename F>
void Importer::global(const std::string& name, F apply) {
  const Server& def = servers_[def_];
  auto ref = effective(def.chain, name);
  if (!ref.empty()) apply(ref);
  for (const Server& s : servers_) {
    if (!s.tls || &s == &def) continue;
    auto mine = effective(s.chain, name);
    if (mine.empty() && !ref.empty()) {
      l_.note(*s.block, name + " not carried over for this server: nginx's default here; tlsfront applies the default server's (" +
                            ref[0]->where() + ") to all");
      continue;
    }
    if (same_args(mine, ref)) {
      for (size_t i = 0; i < mine.size(); ++i) l_.same_as(*mine[i], *ref[i]);
      continue;
    }
    for (const Directive* d : mine) {
      l_.note(*d, "not carried over: differs from the default server's (" +
                      (ref.empty() ? std::string("nginx's default") : ref[0]->where()) +
                      "), which tlsfront applies to all servers");
    }
  }
}


void Importer::globals() {
  Keys& tls = m_.tls;
  global("ssl_protocols", [&](const auto& v) {
    const Directive& d = *v.back();
    std::vector<std::string> kept;
    for (const std::string& p : d.args) {
      if (p == "TLSv1.2" || p == "TLSv1.3") {
        if (std::find(kept.begin(), kept.end(), p) == kept.end()) kept.push_back(p);
      } else {
        l_.note(d, p + " not carried over: TLS 1.2 and 1.3 only");
      }
    }
    if (kept.empty()) return l_.note(d, "not carried over: no version tlsfront supports (its default: TLSv1.2 TLSv1.3)");
    std::string list = "[";
    for (size_t i = 0; i < kept.size(); ++i) list += (i ? ", " : "") + toml_string(kept[i]);
    tls.push_back({"protocols", list + "]", origin(d)});
    l_.carry(d);
  });
  global("ssl_ciphers", [&](const auto& v) {
    const Directive& d = *v.back();
    if (d.args.size() != 1 || d.args[0].empty()) return l_.note(d, "not carried over: one non-empty cipher list");
    tls.push_back({"ciphers", toml_string(d.args[0]), origin(d)});
    l_.carry(d);
  });
  global("ssl_conf_command", [&](const auto& v) {
    for (const Directive* d : v) {
      if (d->args.size() == 2 && d->args[1].empty()) {
        l_.note(*d, "not carried over: an empty value");
      } else if (d->args.size() == 2 && d->args[0] == "Ciphersuites") {
        if (put(tls, {"ciphersuites", toml_string(d->args[1]), origin(*d)}, *d, l_)) l_.carry(*d);
      } else if (d->args.size() == 2 && (d->args[0] == "Groups" || d->args[0] == "Curves")) {
        if (put(tls, {"groups", toml_string(d->args[1]), origin(*d)}, *d, l_)) l_.carry(*d);
      } else {
        l_.note(*d, "not carried over: only Ciphersuites and Groups have an equivalent (ciphersuites, groups)");
      }
    }
  });
  global("ssl_ecdh_curve", [&](const auto& v) {
    const Directive& d = *v.back();
    if (d.args.size() != 1 || d.args[0].empty()) return l_.note(d, "not carried over: one non-empty list of curves");
    if (d.args[0] == "auto") return l_.note(d, "not carried over: \"auto\" is OpenSSL's list; tlsfront's default groups are X25519:P-256");
    if (put(tls, {"groups", toml_string(d.args[0]), origin(d)}, d, l_)) l_.carry(d);
  });
  global("ssl_prefer_server_ciphers", [&](const auto& v) {
    const Directive& d = *v.back();
    tls.push_back({"prefer_server_ciphers", d.args == std::vector<std::string>{"on"} ? "true" : "false", origin(d)});
    l_.carry(d);
  });
  global("ssl_session_tickets", [&](const auto& v) {
    const Directive& d = *v.back();
    tls.push_back({"session_tickets", d.args == std::vector<std::string>{"off"} ? "false" : "true", origin(d)});
    l_.carry(d);
  });
  if (effective(servers_[def_].chain, "ssl_session_cache").empty()) {
    m_.session_cache.push_back({"enabled", "false", "nginx's default (no ssl_session_cache: none, nothing kept)"});
  }
  global("ssl_session_cache", [&](const auto& v) {
    const Directive& d = *v.back();
    bool carried = false;
    for (const std::string& a : d.args) {
      if (a == "off" || a == "none") {
        carried = put(m_.session_cache, {"enabled", "false", origin(d)}, d, l_) || carried;
      } else if (a.starts_with("builtin")) {
        l_.note(d, a + " not carried over: OpenSSL's per-worker cache; tlsfront's is shared by all workers, sized in bytes");
      } else if (a.starts_with("shared:") && a.rfind(':') > 6) {
        auto size = parse_size(a.substr(a.rfind(':') + 1));
        if (!size) {
          l_.note(d, a + " not carried over: invalid size");
          continue;
        }
        uint64_t bytes = *size;
        if (bytes < 64 * 1024) {
          l_.note(d, a + ": raised to tlsfront's minimum, 64k");
          bytes = 64 * 1024;
        } else if (bytes > uint64_t{1} << 36) {
          l_.note(d, a + ": lowered to tlsfront's maximum, 64g");
          bytes = uint64_t{1} << 36;
        }
        carried = put(m_.session_cache, {"size", toml_string(config::format_size(bytes)), origin(d)}, d, l_) || carried;
      } else {
        l_.note(d, a + " not carried over: unknown");
      }
    }
    if (carried) l_.carry(d);
  });
  // nginx keeps sessions 5 minutes unless told otherwise; tlsfront 1 day.
  const Directive* timeout = effective_one(servers_[def_].chain, "ssl_session_timeout");
  global("ssl_session_timeout", [&](const auto& v) {
    const Directive& d = *v.back();
    auto t = d.args.size() == 1 ? parse_time(d.args[0]) : std::nullopt;
    if (!t) return l_.note(d, "not carried over: invalid time");
    config::Millis ms = std::clamp(*t, config::Millis{1000}, config::Millis{7 * 86'400'000LL});
    if (ms != *t) l_.note(d, "clamped to tlsfront's range 1s..7d (RFC 8446 §4.6.1): " + config::format_duration(ms));
    m_.session_cache.push_back({"timeout", quoted_duration(ms), origin(d)});
    l_.carry(d);
  });
  if (timeout == nullptr) m_.session_cache.push_back({"timeout", "\"5m\"", "nginx's default (no ssl_session_timeout)"});
  global("ssl_session_ticket_key", [&](const auto& v) {
    std::string files = "[";
    size_t n = 0;
    for (const Directive* d : v) {
      if (!one_path(*d)) {
        l_.note(*d, "not carried over: one file name without variables");
        continue;
      }
      files += (n++ ? ", " : "") + toml_string(absolute(base_, d->args[0]));
      l_.carry(*d);
    }
    if (n == 0) return;
    m_.ticket_keys.push_back({"source", "\"files\"", "ssl_session_ticket_key: the first encrypts, all decrypt"});
    m_.ticket_keys.push_back({"files", files + "]", origin(*v.front())});
    // Key files shared with nginx nodes: resume their sessions too (a
    // migration node by node); "tlsfront" once no nginx node is left.
    m_.tls.push_back({"session_id_context", "\"nginx\"",
                      "nginx's derivation, so nodes sharing these key files resume each other's sessions"});
  });
  // nginx forwards every request read in early data and leaves the replay
  // check to the backend ($ssl_early_data); tlsfront does not.
  static constexpr const char* kEarlyDataDifference =
      "carried over; only GET, HEAD and OPTIONS without a body go up before the handshake completes (with "
      "Early-Data: 1), any other request waits for it (nginx forwards all of them)";
  global("ssl_early_data", [&](const auto& v) {
    const Directive& d = *v.back();
    if (d.args != std::vector<std::string>{"on"}) return l_.note(d, "not needed: early data is off by default");
    m_.tls.push_back({"early_data", "true", "nginx's ssl_early_data on"});
    l_.note(d, kEarlyDataDifference);
  });
  global("keepalive_timeout", [&](const auto& v) {
    const Directive& d = *v.back();
    auto t = d.args.empty() ? std::nullopt : parse_time(d.args[0]);
    if (!t) return l_.note(d, "not carried over: invalid time");
    if (t->count() == 0) return l_.note(d, "not carried over: 0 turns client keepalive off; tlsfront's keepalive is > 0");
    if (d.args.size() > 1) l_.note(d, "second value " + d.args[1] + " not carried over: no Keep-Alive response header");
    m_.timeouts.push_back({"keepalive", quoted_duration(*t), origin(d)});
    l_.carry(d);
  });
  global("keepalive_requests", [&](const auto& v) {
    const Directive& d = *v.back();
    const std::string n = d.args.size() == 1 ? d.args[0] : "";
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos || std::stoull(n) == 0) {
      return l_.note(d, "not carried over: [limits] keepalive_requests is 1..1000000000");
    }
    m_.limits.push_back({"keepalive_requests", std::to_string(std::stoull(n)), origin(d)});  // no leading zeros
    l_.carry(d);
  });
  struct Simple {
    const char* directive;
    Keys* table;
    const char* key;
    bool is_size;
  };
  for (const Simple& s : {Simple{"client_max_body_size", &m_.limits, "max_body_bytes", true},
                          Simple{"client_header_timeout", &m_.timeouts, "header", false},
                          Simple{"client_body_timeout", &m_.timeouts, "body", false},
                          Simple{"send_timeout", &m_.timeouts, "send", false}}) {
    global(s.directive, [&](const auto& v) {
      const Directive& d = *v.back();
      if (d.args.size() != 1) return;
      if (s.is_size) {
        auto n = parse_size(d.args[0]);
        if (!n) return l_.note(d, "not carried over: invalid size");
        s.table->push_back({s.key, toml_string(config::format_size(*n)), origin(d)});
      } else {
        auto t = parse_time(d.args[0]);
        if (!t || t->count() == 0) return l_.note(d, "not carried over: invalid or zero time");
        s.table->push_back({s.key, quoted_duration(*t), origin(d)});
      }
      l_.carry(d);
    });
  }
  if (effective_one(servers_[def_].chain, "client_header_timeout") == nullptr) {
    m_.timeouts.insert(m_.timeouts.begin(), {"header", "\"1m\"", "nginx's default (no client_header_timeout)"});
  }
  global("http2_max_concurrent_streams", [&](const auto& v) {
    const Directive& d = *v.back();
    int n = 0;
    try {
      n = d.args.size() == 1 ? std::stoi(d.args[0]) : 0;
    } catch (...) {
    }
    if (n < 1 || n > 65536) return l_.note(d, "not carried over: max_concurrent_streams is 1..65536");
    m_.http2.push_back({"max_concurrent_streams", std::to_string(n), origin(d)});
    l_.carry(d);
  });
  global("access_log", [&](const auto& v) { import_access_log(v, http_, base_, m_, l_); });
  if (effective(servers_[def_].chain, "access_log").empty()) default_access_log(servers_[def_], m_, l_);
}

}  // namespace

Result<Imported> import(const std::vector<Directive>& given, const std::string& base_dir, const std::string& source,
                        std::vector<Note>* notes_on_failure) {
  Model m;
  Ledger ledger;
  std::vector<Directive> wrapped;
  if (auto http = http_of_site_file(given)) {
    wrapped.push_back(std::move(*http));
    ledger.note(wrapped.front(),
                "no http block: the file's directives are read as the content of one, as nginx reads a "
                "sites-available file that nginx.conf's http block includes (relative paths resolve against "
                "this file's directory; nginx resolves them against its prefix, e.g. /etc/nginx)");
  }
  const std::vector<Directive>& tree = wrapped.empty() ? given : wrapped;
  // clang-format off
  ledger.handled({"ssl_protocols", "ssl_ciphers", "ssl_conf_command", "ssl_ecdh_curve", "ssl_prefer_server_ciphers",
                  "ssl_session_tickets", "ssl_session_cache", "ssl_session_timeout",
                  "ssl_session_ticket_key", "ssl_early_data", "keepalive_timeout", "keepalive_requests",
                  "client_max_body_size", "client_header_timeout", "client_body_timeout", "send_timeout",
                  "http2_max_concurrent_streams", "access_log", "log_format", "ssl_certificate", "ssl_certificate_key",
                  "ssl_stapling", "ssl_stapling_file", "ssl_stapling_responder", "ssl_stapling_verify",
                  "proxy_connect_timeout", "proxy_read_timeout", "proxy_send_timeout", "grpc_connect_timeout",
                  "grpc_read_timeout", "grpc_send_timeout", "upstream", "server_name", "set_real_ip_from",
                  "real_ip_header", "real_ip_recursive", "allow", "deny", "limit_req", "limit_req_zone",
                  "limit_conn", "limit_conn_zone", "ssl_verify_client", "ssl_client_certificate", "ssl_crl",
                  "ssl_verify_depth"});
  // clang-format on
  Importer im(base_dir, m, ledger);
  im.main_context(tree);
  std::string missing;
  if (im.http() == nullptr) {
    missing = "no http block";
  } else {
    im.servers_of(*im.http());
    if (!im.any_tls()) {
      missing = "no server with a TLS listen (listen ... ssl)";
    } else {
      im.globals();
      import_certificates(im.servers(), base_dir, m, ledger);
      import_proxy(*im.http(), im.servers(), im.default_server(), base_dir, m, ledger);
      import_headers(*im.http(), im.servers()[im.default_server()], m, ledger);
      import_compression(im.servers()[im.default_server()], m, ledger);
      import_resolver(im.servers()[im.default_server()], m, ledger);
      import_client_address(im.servers(), im.default_server(), m, ledger);
      import_limits(*im.http(), m, ledger);
      if (m.listens.empty()) missing = "no usable TLS listen address";
      else if (m.certs.empty()) missing = "no usable certificate (ssl_certificate + ssl_certificate_key)";
      // Fixed answers alone are no API edge (and tlsfront needs an [[upstream]]).
      else if (m.routes.empty() || m.upstreams.empty())
        missing = "no location with a usable proxy_pass or grpc_pass in a TLS server";
    }
  }
  if (missing.empty()) {
    if (Status s = check_utf8(tree, ledger); !s.ok()) return s.take_error();
  }
  std::vector<Note> notes = ledger.list(tree);
  if (!missing.empty()) {
    if (notes_on_failure) *notes_on_failure = std::move(notes);
    return make_error(Errc::NotFound, "nothing to import: " + missing);
  }
  std::string toml = render(m, source, notes.size());
  return Imported{std::move(toml), std::move(notes)};
}

}  // namespace tlsfront::tools::nginx
