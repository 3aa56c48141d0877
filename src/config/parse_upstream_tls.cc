// [upstream.tls] (or `tls = true`): TLS to one [[upstream]]'s servers, and
// the client keys it shares with redis_tls (config/parse_redis.cc).
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

Status parse_server_name(const TableReader& t, std::string& out) {
  if (Status s = t.get_string("server_name", out, Presence::Optional, /*allow_empty=*/false); !s.ok()) return s;
  if (out.empty() || is_ip_literal(out)) return {};
  if (!is_upstream_dns_name(out)) {
    return t.error_at("server_name", "invalid server name " + quote(out) +
                                         " (expected a DNS name such as \"api.internal\", without a trailing dot, "
                                         "or an IP address)");
  }
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return {};
}

Status parse_table(const TableReader& t, UpstreamTls& out) {
  if (Status s = t.check_keys(
          {"enabled", "server_name", "verify", "trusted_ca", "certificate", "key", "protocols", "session_reuse"});
      !s.ok()) {
    return s;
  }
  if (Status s = t.get_bool("enabled", out.enabled); !s.ok()) return s;
  if (Status s = parse_tls_client_keys(t, out); !s.ok()) return s;
  if (Status s = t.get_bool("session_reuse", out.session_reuse); !s.ok()) return s;
  return {};
}

}  // namespace

Status parse_tls_client_keys(const TableReader& t, std::string& server_name, bool& verify, std::string& trusted_ca,
                             std::string& certificate, std::string& key, std::vector<TlsVersion>& protocols) {
  if (Status s = parse_server_name(t, server_name); !s.ok()) return s;
  if (Status s = t.get_bool("verify", verify); !s.ok()) return s;
  if (Status s = t.get_path("trusted_ca", trusted_ca, Presence::Optional, false); !s.ok()) return s;
  if (!verify && t.find("trusted_ca") != nullptr) {
    return t.error_at("trusted_ca", "has no use with verify = false (no certificate is checked)");
  }
  if (Status s = t.get_path("certificate", certificate, Presence::Optional, false); !s.ok()) return s;
  if (Status s = t.get_path("key", key, Presence::Optional, false); !s.ok()) return s;
  if (certificate.empty() != key.empty()) {
    const char* present = certificate.empty() ? "key" : "certificate";
    return t.error_at(present, "a client certificate needs both certificate and key");
  }
  return parse_tls_protocols(t, protocols);
}

Status parse_upstream_tls(const TableReader& t, Upstream& u) {
  const toml::node* node = t.find("tls");
  const bool h2 = u.protocol == UpstreamProtocol::H2;
  if (node == nullptr) {
    u.tls.enabled = h2;
    if (h2) u.tls.origin = t.position_of("protocol");
    return {};
  }
  u.tls.origin = t.position_of("tls");
  if (const auto* flag = node->as_boolean()) {
    u.tls.enabled = flag->get();
  } else if (const auto* table = node->as_table()) {
    u.tls.enabled = true;  // a [upstream.tls] table turns TLS on unless it says enabled = false
    TableReader sub(t.context(), *table, t.path_of("tls"));
    if (Status s = parse_table(sub, u.tls); !s.ok()) return s;
  } else {
    return type_error(t.context(), *node, t.path_of("tls"), "a table ([upstream.tls]) or a boolean");
  }
  if (h2 && !u.tls.enabled) {
    return t.error_at("tls", "protocol = \"h2\" is HTTP/2 over TLS; for HTTP/2 over cleartext TCP use protocol = \"h2c\"");
  }
  if (u.protocol == UpstreamProtocol::H2c && u.tls.enabled) {
    return t.error_at("tls", "protocol = \"h2c\" is HTTP/2 over cleartext TCP; for HTTP/2 over TLS use protocol = \"h2\"");
  }
  return {};
}

}  // namespace tlsfront::config::detail
