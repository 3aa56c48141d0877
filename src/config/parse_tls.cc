// [tls]: protocol versions, cipher policy and the certificate/key files.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

Status parse_protocols(const TableReader& t, std::vector<TlsVersion>& out) {
  auto array = t.get_array("protocols", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  if ((*array)->empty()) return t.error_at("protocols", "must not be empty");

  std::vector<TlsVersion> protocols;
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    std::string path = t.path_of("protocols") + "[" + std::to_string(i) + "]";
    const auto* name = element.as_string();
    if (name == nullptr) return type_error(t.context(), element, path, "a string");
    TlsVersion version = TlsVersion::Tls12;
    if (name->get() == "TLSv1.2") {
      version = TlsVersion::Tls12;
    } else if (name->get() == "TLSv1.3") {
      version = TlsVersion::Tls13;
    } else {
      return t.context().error(element.source(), path,
                               "unknown protocol " + quote(name->get()) +
                                   " (expected \"TLSv1.2\" or \"TLSv1.3\")");
    }
    for (TlsVersion seen : protocols) {
      if (seen == version) {
        return t.context().error(element.source(), path,
                                 "duplicate protocol " + quote(name->get()));
      }
    }
    protocols.push_back(version);
  }
  out = std::move(protocols);
  return {};
}

}  // namespace

Status parse_tls(const TableReader& root, Tls& out) {
  auto table = table_of(root, "tls");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return missing_table(root.context(), "tls", false);

  TableReader t(root.context(), **table, "tls");
  if (Status s = t.check_keys({"protocols", "ciphers", "ciphersuites", "groups",
                               "prefer_server_ciphers", "certificate", "key"});
      !s.ok()) {
    return s;
  }
  if (Status s = parse_protocols(t, out.protocols); !s.ok()) return s;
  if (Status s = t.get_string("ciphers", out.ciphers, Presence::Optional, false); !s.ok()) return s;
  if (Status s = t.get_string("ciphersuites", out.ciphersuites, Presence::Optional, false); !s.ok()) {
    return s;
  }
  if (Status s = t.get_string("groups", out.groups, Presence::Optional, false); !s.ok()) return s;
  if (Status s = t.get_bool("prefer_server_ciphers", out.prefer_server_ciphers); !s.ok()) return s;
  if (Status s = t.get_path("certificate", out.certificate, Presence::Required, false); !s.ok()) {
    return s;
  }
  out.certificate_origin = t.position_of("certificate");
  if (Status s = t.get_path("key", out.key, Presence::Required, false); !s.ok()) return s;
  out.key_origin = t.position_of("key");
  out.ciphers_origin = t.position_of("ciphers");
  out.ciphersuites_origin = t.position_of("ciphersuites");
  out.groups_origin = t.position_of("groups");
  return {};
}

}  // namespace tlsfront::config::detail
