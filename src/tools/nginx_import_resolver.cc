// import-nginx: the default server's `resolver` and `resolver_timeout` →
// [resolver] (tools/nginx_import_detail.h: import_resolver). nginx asks
// them for `server ... resolve` names (and OCSP responders); tlsfront for
// every [[upstream]] server given by name.
#include "config/units.h"
#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {

void import_resolver(const Server& def, Model& m, Ledger& l) {
  if (const Directive* d = effective_one(def.chain, "resolver")) {
    std::string addresses;
    bool bad = false;
    for (const std::string& a : d->args) {
      if (a.starts_with("valid=")) {
        if (auto t = parse_time(a.substr(6)); t && t->count() >= 1000) {
          m.resolver.push_back({"valid", toml_string(config::format_duration(*t)), origin(*d)});
        } else {
          l.note(*d, "parameter " + a + " not carried over: valid is at least 1s");
        }
      } else if (a == "ipv4=off" || a == "ipv6=off") {
        m.resolver.push_back({a.substr(0, 4), "false", origin(*d)});
      } else if (a == "ipv4=on" || a == "ipv6=on") {
      } else if (a.find('=') != std::string::npos) {
        l.note(*d, "parameter " + a + " not carried over");
      } else {
        // nginx's default port is 53; tlsfront's addresses write it out.
        const bool has_port = a.starts_with("[") ? a.find("]:") != std::string::npos
                                                 : a.find(':') != std::string::npos && a.find(':') == a.rfind(':');
        const bool v6 = !a.starts_with("[") && a.find(':') != a.rfind(':');
        const std::string text = has_port ? a : v6 ? "[" + a + "]:53" : a + ":53";
        auto ep = config::parse_endpoint(text, /*allow_localhost=*/true);
        if (!ep.ok()) {
          l.note(*d, "address " + a + " not carried over: " + ep.error().detail);
          bad = true;
          continue;
        }
        addresses += (addresses.empty() ? "" : ", ") + toml_string(ep->to_string());
      }
    }
    if (!addresses.empty()) m.resolver.insert(m.resolver.begin(), {"addresses", "[" + addresses + "]", origin(*d)});
    if (!bad) l.carry(*d);
  }
  if (const Directive* d = effective_one(def.chain, "resolver_timeout")) {
    auto t = d->args.size() == 1 ? parse_time(d->args[0]) : std::nullopt;
    if (!t || t->count() < 100) {
      l.note(*d, "not carried over: a time of at least 100ms");
    } else {
      m.resolver.push_back({"timeout", toml_string(config::format_duration(*t)), origin(*d)});
      l.carry(*d);
    }
  }
}

}  // namespace tlsfront::tools::nginx::detail
