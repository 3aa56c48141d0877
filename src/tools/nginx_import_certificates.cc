// import-nginx: ssl_certificate / ssl_certificate_key pairs → [tls]
// certificate/key or [[certificate]] tables, with their stapling settings
// (tools/nginx_import.h has the rules).
#include <algorithm>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {

bool one_path(const Directive& d) { return d.args.size() == 1 && !d.args[0].empty() && !has_variable(d.args[0]); }

namespace {

bool same_keys(const Keys& a, const Keys& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const Key& x, const Key& y) { return x.key == y.key && x.value == y.value; });
}

void ocsp(const Server& s, const std::string& base, Keys& out, Ledger& l) {
  const Directive* st = effective_one(s.chain, "ssl_stapling");
  bool on = st && st->args == std::vector<std::string>{"on"};
  if (st) l.carry(*st);
  out.push_back({"stapling", on ? "true" : "false", st ? origin(*st) : "nginx's default (ssl_stapling off)"});
  const Directive* file = effective_one(s.chain, "ssl_stapling_file");
  const Directive* responder = effective_one(s.chain, "ssl_stapling_responder");
  const Directive* verify = effective_one(s.chain, "ssl_stapling_verify");
  if (verify) {
    l.note(*verify, verify->args == std::vector<std::string>{"on"}
                        ? "not needed: tlsfront always verifies a response "
                          "before stapling it"
                        : "no equivalent: tlsfront always verifies a response "
                          "before stapling it");
  }
  if (!on) {
    for (const Directive* d : {file, responder}) {
      if (d) l.note(*d, "not needed: ssl_stapling is off");
    }
    return;
  }
  if (file && one_path(*file)) {
    out.push_back({"response_file", toml_string(absolute(base, file->args[0])), origin(*file)});
    l.carry(*file);
    if (responder) l.note(*responder, "not needed: ssl_stapling_file is used instead, never fetched");
  } else if (responder && responder->args.size() == 1) {
    const std::string& url = responder->args[0];
    if (!url.starts_with("http://") || url.size() == 7 || std::any_of(url.begin(), url.end(), [](char c) {
          return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
        })) {
      l.note(*responder, "not carried over: an http:// URL");
    } else {
      out.push_back({"responder", toml_string(responder->args[0]), origin(*responder)});
      l.carry(*responder);
    }
  }
}

}  // namespace

void import_certificates(const std::vector<Server>& servers, const std::string& base, Model& m, Ledger& l) {
  for (const Server& s : servers) {
    if (!s.tls) continue;
    auto certs = effective(s.chain, "ssl_certificate");
    auto keys = effective(s.chain, "ssl_certificate_key");
    if (certs.empty()) {
      l.note(*s.block,
             "not carried over: a TLS server without ssl_certificate "
             "(nginx refuses its handshakes)");
      continue;
    }
    Keys ocsp;
    detail::ocsp(s, base, ocsp, l);
    const Keys client_auth = client_certificate_keys(s, base, l);
    std::vector<std::string> names = s.exact_names;
    for (const auto& w : s.wildcard_names) names.push_back(w);
    // [[certificate]] names are DNS names: no IP addresses.
    names.erase(std::remove_if(names.begin(), names.end(),
                               [](const std::string& n) {
                                 return n.find_first_not_of("0123456789.") == std::string::npos ||
                                        n.find(':') != std::string::npos;
                               }),
                names.end());
    for (size_t i = 0; i < certs.size(); ++i) {
      const Directive& c = *certs[i];
      if (i >= keys.size()) {
        l.note(c, "not carried over: no ssl_certificate_key for it");
        continue;
      }
      const Directive& k = *keys[i];
      if (!one_path(c) || !one_path(k)) {
        l.note(c, "not carried over: one file name without variables");
        continue;
      }
      if (c.args[0].starts_with("data:") || k.args[0].starts_with("data:") || k.args[0].starts_with("engine:")) {
        l.note(c,
               "not carried over: data: and engine: values have no "
               "equivalent (PEM files only)");
        continue;
      }
      l.carry(c);
      l.carry(k);
      std::string cert = absolute(base, c.args[0]), key = absolute(base, k.args[0]);
      auto same =
          std::find_if(m.certs.begin(), m.certs.end(), [&](const auto& x) { return x.cert == cert && x.key == key; });
      if (same != m.certs.end()) {  // one certificate for several servers: one
                                    // table with all their names
        for (const auto& n : names) {
          if (std::find(same->names.begin(), same->names.end(), n) == same->names.end()) same->names.push_back(n);
        }
        same->is_default = same->is_default || (s.is_default && i == 0);
        if (!same_keys(same->client_auth, client_auth)) {
          l.note(c, "client certificate settings not carried over for this server: its certificate serves another "
                    "server with other ones (" + same->origin + "), and tlsfront has them per certificate");
        }
        continue;
      }
      m.certs.push_back({cert, key, names, s.is_default && i == 0, ocsp, origin(k), client_auth});
    }
    for (size_t i = certs.size(); i < keys.size(); ++i) l.note(*keys[i], "not carried over: no ssl_certificate for it");
  }
}

}  // namespace tlsfront::tools::nginx::detail
