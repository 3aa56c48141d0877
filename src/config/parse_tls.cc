// [tls]: protocol versions, cipher policy, trust store and session resumption;
// the certificates themselves: parse_certificate.cc.
#include <algorithm>
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

Status parse_tls_protocols(const TableReader& t, std::vector<TlsVersion>& out) {
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

namespace {

// The redis_* keys of [tls.session_cache]; only accepted with store = "redis".
Status parse_session_cache_redis(const TableReader& t, SessionCache& out) {
  if (out.store != SessionStore::Redis) {
    for (std::string_view key : kRedisKeys) {
      if (t.find(key) != nullptr) return t.error_at(key, "only used with store = \"redis\"");
    }
    return {};
  }
  return parse_redis_connection(t, out, Millis{1}, Millis{10'000});
}

Status parse_session_cache(const TableReader& tls, SessionCache& out) {
  auto table = table_of(tls, "session_cache");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader t(tls.context(), **table, tls.path_of("session_cache"));
  if (Status s = t.check_keys({"enabled", "size", "timeout", "store", "redis", "redis_user", "redis_password_file",
                               "redis_prefix", "redis_timeout", "redis_tls"});
      !s.ok()) {
    return s;
  }
  if (Status s = t.get_bool("enabled", out.enabled); !s.ok()) return s;
  // A session is a few hundred bytes; under 64k the cache would hold almost nothing.
  if (Status s = t.get_size("size", 64 * 1024, uint64_t{1} << 36, out.size_bytes); !s.ok()) return s;
  if (Status s = t.get_duration("timeout", Millis{1000}, out.timeout); !s.ok()) return s;
  if (out.timeout > Millis{7LL * 24 * 3600 * 1000}) {
    // RFC 8446 §4.6.1: ticket lifetimes are at most seven days.
    return t.error_at("timeout", "must be at most 7d (RFC 8446 §4.6.1)");
  }
  std::string store = "memory";
  if (Status s = t.get_string("store", store); !s.ok()) return s;
  if (store == "memory") {
    out.store = SessionStore::Memory;
  } else if (store == "redis") {
    out.store = SessionStore::Redis;
  } else {
    return t.error_at("store", "unknown store " + quote(store) + " (expected \"memory\" or \"redis\")");
  }
  return parse_session_cache_redis(t, out);
}

// The redis_* keys and wrap_key_file of [tls.ticket_keys]; they are only
// accepted with source = "redis".
Status parse_ticket_keys_redis(const TableReader& t, TicketKeys& out) {
  if (out.source != TicketKeySource::Redis) {
    for (std::string_view key : kRedisKeys) {
      if (t.find(key) != nullptr) return t.error_at(key, "only used with source = \"redis\"");
    }
    if (t.find("wrap_key_file") != nullptr) return t.error_at("wrap_key_file", "only used with source = \"redis\"");
    return {};
  }
  out.redis_origin = t.find("redis") ? t.position_of("redis") : t.context().position(t.table().source());
  if (Status s = parse_redis_connection(t, out, Millis{10}, Millis{60'000}); !s.ok()) return s;
  if (Status s = t.get_path("wrap_key_file", out.wrap_key_file, Presence::Optional, false); !s.ok()) return s;
  return {};
}

Status parse_ticket_keys(const TableReader& tls, TicketKeys& out) {
  auto table = table_of(tls, "ticket_keys");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader t(tls.context(), **table, tls.path_of("ticket_keys"));
  if (Status s = t.check_keys({"source", "rotate_every", "files", "redis", "redis_user", "redis_password_file",
                               "redis_prefix", "redis_timeout", "redis_tls", "wrap_key_file"});
      !s.ok()) {
    return s;
  }
  std::string source = "auto";
  if (Status s = t.get_string("source", source); !s.ok()) return s;
  if (Status s = t.get_duration("rotate_every", Millis{1000}, out.rotate_every); !s.ok()) return s;
  auto files = t.get_array("files", Presence::Optional);
  if (!files.ok()) return files.take_error();
  if (*files != nullptr) {
    for (size_t i = 0; i < (*files)->size(); ++i) {
      const toml::node& element = *(*files)->get(i);
      std::string path = t.path_of("files") + "[" + std::to_string(i) + "]";
      const auto* name = element.as_string();
      if (name == nullptr) return type_error(t.context(), element, path, "a string");
      if (name->get().empty()) return t.context().error(element.source(), path, "must not be empty");
      out.files.push_back(t.context().resolve_path(name->get()));
    }
  }
  out.files_origin = t.position_of("files");
  if (source == "auto") {
    out.source = TicketKeySource::Auto;
    if (!out.files.empty()) return t.error_at("files", "only used with source = \"files\"");
  } else if (source == "files") {
    out.source = TicketKeySource::Files;
    if (out.files.empty()) return t.error_at(*files ? "files" : "source", "source = \"files\" needs at least one file in files");
  } else if (source == "redis") {
    out.source = TicketKeySource::Redis;
    if (!out.files.empty()) return t.error_at("files", "only used with source = \"files\"");
  } else {
    return t.error_at("source", "unknown source " + quote(source) + " (expected \"auto\", \"files\" or \"redis\")");
  }
  return parse_ticket_keys_redis(t, out);
}

// early_data_methods: method tokens (RFC 9110 §9.1, case-sensitive), no
// duplicates, and none that is never idempotent: a replayed POST, PATCH or
// CONNECT may act twice (RFC 8470 §3).
Status parse_early_data_methods(const TableReader& t, std::vector<std::string>& out) {
  auto array = t.get_array("early_data_methods", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  std::vector<std::string> methods;
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    std::string path = t.path_of("early_data_methods") + "[" + std::to_string(i) + "]";
    const auto* name = element.as_string();
    if (name == nullptr) return type_error(t.context(), element, path, "a string");
    const std::string& m = name->get();
    const bool token = !m.empty() && std::all_of(m.begin(), m.end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
             std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
    if (!token) return t.context().error(element.source(), path, "not a method token: " + quote(m));
    if (m == "POST" || m == "PATCH" || m == "CONNECT") {
      return t.context().error(element.source(), path,
                               quote(m) + " is not idempotent: a replayed early-data request would act twice");
    }
    if (std::find(methods.begin(), methods.end(), m) != methods.end()) {
      return t.context().error(element.source(), path, "duplicate method " + quote(m));
    }
    methods.push_back(m);
  }
  out = std::move(methods);
  return {};
}

}  // namespace

Status parse_tls(const TableReader& root, Tls& out) {
  auto table = table_of(root, "tls");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return missing_table(root.context(), "tls", false);

  TableReader t(root.context(), **table, "tls");
  if (Status s = t.check_keys({"protocols", "ciphers", "ciphersuites", "groups", "prefer_server_ciphers",
                               "certificate", "key", "strict_sni", "trusted_ca", "issuers_dir", "session_tickets",
                               "session_ticket_count", "session_id_context",
                               "session_cache", "ticket_keys", "store", "ocsp", "ocsp_cache_dir", "hsts",
                               "early_data", "max_early_data", "early_data_methods", "client_ca",
                               "verify_client", "verify_depth", "crl"});
      !s.ok()) {
    return s;
  }
  if (Status s = parse_tls_protocols(t, out.protocols); !s.ok()) return s;
  if (Status s = t.get_string("ciphers", out.ciphers, Presence::Optional, false); !s.ok()) return s;
  if (Status s = t.get_string("ciphersuites", out.ciphersuites, Presence::Optional, false); !s.ok()) {
    return s;
  }
  if (Status s = t.get_string("groups", out.groups, Presence::Optional, false); !s.ok()) return s;
  if (Status s = t.get_bool("prefer_server_ciphers", out.prefer_server_ciphers); !s.ok()) return s;
  if (Status s = t.get_bool("strict_sni", out.strict_sni); !s.ok()) return s;
  if (Status s = parse_client_auth(t, out.client_auth); !s.ok()) return s;
  if (Status s = parse_certificates(root, t, out); !s.ok()) return s;
  if (Status s = t.get_path("trusted_ca", out.trusted_ca, Presence::Optional, false); !s.ok()) return s;
  out.trusted_ca_origin = t.position_of("trusted_ca");
  if (Status s = t.get_path("issuers_dir", out.issuers_dir, Presence::Optional, false); !s.ok()) return s;
  out.issuers_dir_origin = t.position_of("issuers_dir");
  out.ciphers_origin = t.position_of("ciphers");
  out.ciphersuites_origin = t.position_of("ciphersuites");
  out.groups_origin = t.position_of("groups");
  if (Status s = t.get_bool("session_tickets", out.session_tickets); !s.ok()) return s;
  if (Status s = parse_hsts(t, out.hsts); !s.ok()) return s;
  if (Status s = t.get_integer("session_ticket_count", 0, 10, out.session_ticket_count); !s.ok()) return s;
  std::string sid_ctx = "tlsfront";
  if (Status s = t.get_string("session_id_context", sid_ctx); !s.ok()) return s;
  if (sid_ctx == "tlsfront") {
    out.session_id_context = SessionIdContext::Tlsfront;
  } else if (sid_ctx == "nginx") {
    out.session_id_context = SessionIdContext::Nginx;
  } else {
    return t.error_at("session_id_context",
                      "unknown value " + quote(sid_ctx) + " (expected \"tlsfront\" or \"nginx\")");
  }
  if (Status s = t.get_bool("early_data", out.early_data); !s.ok()) return s;
  // At least one record's plaintext (RFC 8446 §5.1), at most what a client buffers sensibly.
  if (Status s = t.get_size("max_early_data", 1, 1024 * 1024, out.max_early_data); !s.ok()) return s;
  if (Status s = parse_early_data_methods(t, out.early_data_methods); !s.ok()) return s;
  if (Status s = parse_session_cache(t, out.session_cache); !s.ok()) return s;
  if (Status s = parse_ticket_keys(t, out.ticket_keys); !s.ok()) return s;
  if (Status s = parse_cert_store(t, out.store); !s.ok()) return s;
  if (Status s = parse_ocsp_cache_dir(t, out.ocsp_cache_dir); !s.ok()) return s;
  return {};
}

}  // namespace tlsfront::config::detail
