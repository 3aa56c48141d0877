// The certificates: [[certificate]] entries, or the [tls] certificate/key
// shorthand for a single one. Name coverage by the leaf and SNI selection are
// checked when the certificates are loaded (tls/cert_index.h); here only the
// shape of each entry.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

Status parse_names(const TableReader& t, std::vector<std::string>& out) {
  auto array = t.get_array("names", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  if ((*array)->empty()) return t.error_at("names", "must not be empty (omit it to use the certificate's names)");
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const std::string path = t.path_of("names") + "[" + std::to_string(i) + "]";
    const auto* value = element.as_string();
    if (value == nullptr) return type_error(t.context(), element, path, "a string");
    std::string name = value->get();
    if (std::string why = check_dns_name(name); !why.empty()) {
      return t.context().error(element.source(), path, quote(value->get()) + " " + why);
    }
    for (const auto& seen : out) {
      if (seen == name) return t.context().error(element.source(), path, "duplicate name " + quote(name));
    }
    out.push_back(std::move(name));
  }
  return {};
}

// cert + key of one entry; `cert_key` is "certificate" in [tls], "cert" in [[certificate]].
Status parse_files(const TableReader& t, std::string_view cert_key, Certificate& out) {
  if (Status s = t.get_path(cert_key, out.cert, Presence::Required, false); !s.ok()) return s;
  if (Status s = t.get_path("key", out.key, Presence::Required, false); !s.ok()) return s;
  out.cert_setting = t.path_of(cert_key);
  out.key_setting = t.path_of("key");
  out.names_setting = t.path_of("names");
  out.cert_origin = t.position_of(cert_key);
  out.key_origin = t.position_of("key");
  return {};
}

// `out.client_auth` holds [tls]'s on entry.
Status parse_entry(const TableReader& t, Certificate& out) {
  if (Status s = t.check_keys({"cert", "key", "names", "default", "ocsp", "client_ca", "verify_client",
                               "verify_depth", "crl"});
      !s.ok()) {
    return s;
  }
  if (Status s = parse_client_auth(t, out.client_auth); !s.ok()) return s;
  if (Status s = parse_ocsp(t, out.ocsp); !s.ok()) return s;
  if (Status s = parse_files(t, "cert", out); !s.ok()) return s;
  if (Status s = parse_names(t, out.names); !s.ok()) return s;
  out.names_origin = t.find("names") ? t.position_of("names") : t.context().position(t.table().source());
  return t.get_bool("default", out.is_default);
}

}  // namespace

Status parse_certificates(const TableReader& root, const TableReader& tls, Tls& out) {
  auto tables = tables_of(root, "certificate");
  if (!tables.ok()) return tables.take_error();
  const bool shorthand = tls.find("certificate") != nullptr || tls.find("key") != nullptr;
  if (!tables->empty() && tls.find("ocsp") != nullptr) {
    return tls.error_at("ocsp", "with [[certificate]] entries, OCSP settings go in each entry's [certificate.ocsp]");
  }
  if (shorthand && !tables->empty()) {
    return tls.error_at(tls.find("certificate") ? "certificate" : "key",
                        "use either [tls] certificate/key or [[certificate]] entries, not both");
  }
  if (tables->empty()) {
    Certificate only;
    only.is_default = true;
    only.client_auth = out.client_auth;
    if (Status s = parse_files(tls, "certificate", only); !s.ok()) return s;
    if (Status s = parse_ocsp(tls, only.ocsp); !s.ok()) return s;
    only.names_origin = only.cert_origin;
    out.certificates.push_back(std::move(only));
    return {};
  }
  std::string default_at;
  for (size_t i = 0; i < tables->size(); ++i) {
    TableReader t(root.context(), *(*tables)[i], "certificate[" + std::to_string(i) + "]");
    Certificate entry;
    entry.client_auth = out.client_auth;
    if (Status s = parse_entry(t, entry); !s.ok()) return s;
    if (entry.is_default) {
      if (!default_at.empty()) {
        return t.error_at("default", "only one certificate can be the default (the other is at " + default_at + ")");
      }
      if (out.strict_sni) return t.error_at("default", "a default certificate is never used with tls.strict_sni = true");
      default_at = t.position_of("default");
    }
    out.certificates.push_back(std::move(entry));
  }
  return {};
}

}  // namespace tlsfront::config::detail
