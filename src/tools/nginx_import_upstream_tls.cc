// import-nginx: the TLS of a `proxy_pass https://` or `grpc_pass grpcs://`
// location as the [[upstream]]'s `tls` inline table, from the proxy_ssl_*
// (grpc_ssl_*) directives that apply to it (tools/nginx_import_detail.h).
#include <string>
#include <vector>

#include "config/units.h"
#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {
namespace {

// $proxy_host's host: "backend" (an upstream block), "10.0.0.5" of
// "10.0.0.5:8443", "::1" of "[::1]:8443".
std::string host_of(const std::string& proxy_host) {
  if (proxy_host.starts_with("[")) {
    const size_t close = proxy_host.find(']');
    return proxy_host.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  }
  return proxy_host.substr(0, proxy_host.find(':'));
}

// What [upstream.tls] server_name takes: an IP address or a DNS name.
bool usable_name(const std::string& name) { return config::is_ip_literal(name) || config::is_upstream_dns_name(name); }

}  // namespace

std::string upstream_tls_value(const Directive& pass, const Chain& chain, PassKind kind, const std::string& proxy_host,
                               const std::string& base_dir, Ledger& l) {
  const std::string p = kind == PassKind::Grpc ? "grpc_ssl_" : "proxy_ssl_";
  std::vector<std::string> parts;
  auto one = [&](const char* name) -> const Directive* {
    const Directive* d = effective_one(chain, p + name);
    return d != nullptr && d->args.size() == 1 && !has_variable(d->args[0]) ? d : nullptr;
  };
  auto file = [&](const char* name, const char* key) {
    if (const Directive* d = one(name)) {
      parts.push_back(std::string(key) + " = " + toml_string(absolute(base_dir, d->args[0])));
      l.carry(*d);
    }
  };
  const Directive* verify = one("verify");
  const bool verified = verify != nullptr && verify->args[0] == "on";
  if (verify) l.carry(*verify);
  if (!verified) {
    parts.push_back("verify = false");
    l.note(verify ? *verify : pass,
           "carried over as verify = false: nginx checks no certificate of the server (" + p +
               "verify off, its default), tlsfront checks it by default; set trusted_ca and drop verify = false");
  } else {
    file("trusted_certificate", "trusted_ca");
  }
  // The name nginx checks (verify on) and sends (server_name on): ssl_name, by default $proxy_host.
  const Directive* name = one("name");
  if (const Directive* d = effective_one(chain, p + "name"); d != nullptr && name == nullptr) {
    // nginx evaluates it per request (e.g. $host); tlsfront has one name per [[upstream]].
    l.note(*d,
           "not carried over: a name with a variable has no equivalent (one name per upstream); the name "
           "checked is " +
               (verified ? toml_string(host_of(proxy_host)) + ", nginx's default ($proxy_host)"
                         : std::string("none: verify = false")));
  }
  const Directive* sni = one("server_name");
  if (sni) l.carry(*sni);
  const bool sends = sni != nullptr && sni->args[0] == "on";
  std::string server_name = name ? name->args[0] : host_of(proxy_host);
  if (name) l.carry(*name);
  if ((verified || sends) && usable_name(server_name)) {
    parts.push_back("server_name = " + toml_string(server_name));
    if (verified && !sends && !config::is_ip_literal(server_name)) {
      l.note(name ? *name : pass, "carried over as server_name " + toml_string(server_name) +
                                      ", which tlsfront also sends as SNI (nginx: " + p + "server_name off)");
    }
  } else if (verified || sends) {
    l.note(name ? *name : pass, "not carried over: " + toml_string(server_name) +
                                    " is not a name tlsfront can send or check (the server's IP address is checked)");
  }
  file("certificate", "certificate");
  file("certificate_key", "key");
  if (const Directive* d = effective_one(chain, p + "protocols")) {
    std::string list;
    size_t kept = 0;
    for (const std::string& v : d->args) {
      if (v != "TLSv1.2" && v != "TLSv1.3") continue;
      list += (kept++ ? ", " : "") + toml_string(v);
    }
    if (list.empty()) {
      l.note(*d, "not carried over: tlsfront speaks TLSv1.2 and TLSv1.3 only (its default kept)");
    } else {
      parts.push_back("protocols = [" + list + "]");
      l.carry(*d);
      if (kept != d->args.size()) l.note(*d, "carried over without what is older than TLSv1.2");
    }
  }
  if (const Directive* d = one("session_reuse")) {
    l.carry(*d);
    if (d->args[0] == "off") parts.push_back("session_reuse = false");
  }
  for (const char* other : {"ciphers", "conf_command", "crl", "verify_depth", "password_file"}) {
    if (const Directive* d = effective_one(chain, p + other)) {
      l.note(*d, "no equivalent yet: TLS to upstreams takes OpenSSL's defaults for this");
    }
  }
  std::string value = "{ ";
  for (size_t i = 0; i < parts.size(); ++i) value += (i ? ", " : "") + parts[i];
  return value + (parts.empty() ? "}" : " }");
}

}  // namespace tlsfront::tools::nginx::detail
