// [[listen]]: the addresses tlsfront accepts connections on: TLS, or
// cleartext HTTP/1.1 (tls = false) with its redirect and ACME keys.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

// alpn = ["h2", "http/1.1"]: non-empty, known names, no duplicates.
Status parse_alpn(const TableReader& t, std::vector<std::string>& out) {
  auto array = t.get_array("alpn", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  if ((*array)->empty()) return t.error_at("alpn", "must not be empty");
  std::vector<std::string> protocols;
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    std::string path = t.path_of("alpn") + "[" + std::to_string(i) + "]";
    const auto* name = element.as_string();
    if (name == nullptr) return type_error(t.context(), element, path, "a string");
    if (name->get() != "h2" && name->get() != "http/1.1") {
      return t.context().error(element.source(), path,
                               "unknown protocol " + quote(name->get()) + " (expected \"h2\" or \"http/1.1\")");
    }
    for (const auto& seen : protocols) {
      if (seen == name->get()) return t.context().error(element.source(), path, "duplicate protocol " + quote(seen));
    }
    protocols.push_back(name->get());
  }
  out = std::move(protocols);
  return {};
}

// The keys of a tls = false listener; refused on a TLS one (they would do
// nothing there) and alpn refused on a cleartext one (HTTP/1.1 only).
Status parse_cleartext(const TableReader& t, Listener& listener) {
  if (Status s = t.get_bool("tls", listener.tls); !s.ok()) return s;
  if (listener.tls) {
    for (const char* key : {"redirect_https", "https_port", "acme_upstream"}) {
      if (t.find(key) != nullptr) return t.error_at(key, "only for a cleartext listener (tls = false)");
    }
    return {};
  }
  if (t.find("alpn") != nullptr) {
    return t.error_at("alpn", "a cleartext listener (tls = false) speaks HTTP/1.1 only (no h2c): remove alpn");
  }
  if (Status s = t.get_bool("redirect_https", listener.redirect_https); !s.ok()) return s;
  if (Status s = t.get_integer("https_port", 1, 65535, listener.https_port); !s.ok()) return s;
  if (Status s = t.get_string("acme_upstream", listener.acme_upstream); !s.ok()) return s;
  if (listener.acme_upstream.empty() && t.find("acme_upstream") != nullptr) {
    return t.error_at("acme_upstream", "must not be empty (omit it for none)");
  }
  return {};
}

// quic = true and its Alt-Svc (alt_svc_max_age), after tls and proxy_protocol.
Status parse_quic(const TableReader& t, Listener& listener) {
  if (Status s = t.get_bool("quic", listener.quic); !s.ok()) return s;
  if (!listener.quic) {
    if (t.find("alt_svc_max_age") != nullptr) return t.error_at("alt_svc_max_age", "only with quic = true");
    if (t.find("quic_retry") != nullptr) return t.error_at("quic_retry", "only with quic = true");
    return {};
  }
  if (!listener.tls) return t.error_at("quic", "QUIC is TLS 1.3 only: not on a cleartext listener (tls = false)");
  if (listener.proxy_protocol) {
    return t.error_at("quic", "no PROXY protocol over UDP: QUIC cannot be on a proxy_protocol listener");
  }
  if (Status s = t.get_bool("quic_retry", listener.quic_retry); !s.ok()) return s;
  return t.get_integer("alt_svc_max_age", 0, 31536000, listener.alt_svc_max_age);
}

// tcp_fastopen = N (0..65535, 0 = off) or "auto" (the default).
Status parse_tcp_fastopen(const TableReader& t, int& out) {
  const toml::node* node = t.find("tcp_fastopen");
  if (node == nullptr) return {};
  if (const auto* s = node->as_string()) {
    if (s->get() == "auto") return {};
    return t.error_at("tcp_fastopen", "must be \"auto\" or a queue length 0..65535 (0 = off), got " + quote(s->get()));
  }
  return t.get_integer("tcp_fastopen", 0, 65535, out);
}

}  // namespace

Status parse_listen(const TableReader& root, std::vector<Listener>& out) {
  auto tables = tables_of(root, "listen");
  if (!tables.ok()) return tables.take_error();
  if (tables->empty()) return missing_table(root.context(), "listen", true);

  std::vector<std::string> positions;  // of each address key, for duplicate reports
  for (size_t i = 0; i < tables->size(); ++i) {
    TableReader t(root.context(), *(*tables)[i], "listen[" + std::to_string(i) + "]");
    if (Status s = t.check_keys({"address", "name", "backlog", "tcp_fastopen", "alpn", "trust_request_id", "tls",
                                 "redirect_https", "https_port", "acme_upstream", "proxy_protocol",
                                 "proxy_protocol_from", "trusted_proxies", "real_ip_header", "real_ip_recursive",
                                 "access", "quic", "quic_retry", "alt_svc_max_age"});
        !s.ok()) {
      return s;
    }

    Listener listener;
    std::string address;
    if (Status s = t.get_string("address", address, Presence::Required); !s.ok()) return s;
    Result<Endpoint> endpoint = parse_endpoint(address, /*allow_localhost=*/false, /*allow_port_zero=*/true);
    if (!endpoint.ok()) return t.error_at("address", endpoint.error().detail);
    listener.address = std::move(*endpoint);
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j].address.host == listener.address.host &&
          out[j].address.port == listener.address.port) {
        return t.error_at("address", "duplicate listen address " +
                                         quote(listener.address.to_string()) +
                                         " (first at " + positions[j] +
                                         (listener.address.port == 0 ? "; port 0 is one free port per host: list it once"
                                                                     : "") +
                                         ")");
      }
    }
    if (Status s = get_label_name(t, listener.name); !s.ok()) return s;
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j].label() == listener.label()) {
        return t.error_at(listener.name.empty() ? "address" : "name",
                          "the metrics label " + quote(listener.label()) + " is taken by the listener at " +
                              positions[j] + " (names must differ from each other and from the addresses)");
      }
    }
    if (Status s = t.get_integer("backlog", 1, 65535, listener.backlog); !s.ok()) return s;
    if (Status s = parse_tcp_fastopen(t, listener.tcp_fastopen); !s.ok()) return s;
    if (Status s = parse_alpn(t, listener.alpn); !s.ok()) return s;
    if (Status s = t.get_bool("trust_request_id", listener.trust_request_id); !s.ok()) return s;
    if (Status s = parse_cleartext(t, listener); !s.ok()) return s;
    if (Status s = parse_client_address(t, listener); !s.ok()) return s;
    if (Status s = parse_access(t, listener.access); !s.ok()) return s;
    if (Status s = parse_quic(t, listener); !s.ok()) return s;
    positions.push_back(t.position_of("address"));
    out.push_back(std::move(listener));
  }
  return {};
}

Status check_acme_upstreams(const TableReader& root, const std::vector<Listener>& listeners,
                            const std::vector<Upstream>& upstreams) {
  auto tables = tables_of(root, "listen");
  if (!tables.ok()) return tables.take_error();
  for (size_t i = 0; i < listeners.size() && i < tables->size(); ++i) {
    const std::string& name = listeners[i].acme_upstream;
    if (name.empty()) continue;
    bool known = false;
    for (const Upstream& u : upstreams) known = known || u.name == name;
    if (known) continue;
    TableReader t(root.context(), *(*tables)[i], "listen[" + std::to_string(i) + "]");
    return t.error_at("acme_upstream", "unknown upstream " + quote(name) + " (no [[upstream]] has this name)");
  }
  return {};
}

}  // namespace tlsfront::config::detail
