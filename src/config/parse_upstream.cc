// [[upstream]]: named groups of backend servers and their connection policy.
#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

bool is_valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// servers = ["10.0.0.7:8080", { address = "api.internal:8080", weight = 3, backup = true }].
Status parse_servers(const TableReader& t, Upstream& u) {
  auto array = t.get_array("servers", Presence::Required);
  if (!array.ok()) return array.take_error();
  if ((*array)->empty()) return t.error_at("servers", "must list at least one \"host:port\"");
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    std::string path = t.path_of("servers") + "[" + std::to_string(i) + "]";
    const toml::node* address = &element;
    ServerOptions options;
    if (const auto* table = element.as_table()) {
      TableReader sub(t.context(), *table, path);
      if (Status s = sub.check_keys({"address", "weight", "backup"}); !s.ok()) return s;
      address = sub.find("address");
      if (address == nullptr) return sub.missing("address");
      path = sub.path_of("address");
      if (Status s = sub.get_integer("weight", 1, 1000, options.weight); !s.ok()) return s;
      if (Status s = sub.get_bool("backup", options.backup); !s.ok()) return s;
    }
    const auto* text = address->as_string();
    if (text == nullptr) return type_error(t.context(), *address, path, "a string or a table { address = ... }");
    Result<Endpoint> endpoint = parse_server_endpoint(text->get());
    if (!endpoint.ok()) {
      std::string detail = endpoint.error().detail;
      if (text->get().starts_with("https://")) {
        detail += "; for TLS to the servers, set tls = true or write an [upstream.tls] table";
      }
      return t.context().error(address->source(), path, detail);
    }
    u.servers.push_back(std::move(*endpoint));
    u.server_positions.at.push_back(t.context().position(address->source()));
    if (options != ServerOptions{}) {
      u.server_options.resize(u.servers.size());
      u.server_options.back() = options;
    }
  }
  const auto& all = u.server_options;
  if (!all.empty() && std::all_of(all.begin(), all.end(), [](const ServerOptions& o) { return o.backup; }) &&
      all.size() == u.servers.size()) {
    return t.error_at("servers", "every server is a backup: at least one must not be");
  }
  return {};
}

// protocol = "http/1.1" (default) | "h2c" | "h2" (HTTP/2 over TLS, ALPN).
Status parse_protocol(const TableReader& t, UpstreamProtocol& out) {
  if (t.find("protocol") == nullptr) return {};
  std::string text;
  if (Status s = t.get_string("protocol", text); !s.ok()) return s;
  if (text == "http/1.1") {
    out = UpstreamProtocol::Http1;
  } else if (text == "h2c") {
    out = UpstreamProtocol::H2c;
  } else if (text == "h2") {
    out = UpstreamProtocol::H2;
  } else {
    return t.error_at("protocol",
                      "unknown protocol " + quote(text) + " (expected \"http/1.1\", \"h2c\" or \"h2\")");
  }
  return {};
}

// hash = "$remote_addr" | "$header_NAME" | "$cookie_NAME".
Status parse_hash_key(const TableReader& t, HashKey& out) {
  std::string text;
  if (Status s = t.get_string("hash", text); !s.ok()) return s;
  auto named = [&](std::string_view prefix, HashKey::Kind kind) {
    if (!text.starts_with(prefix) || text.size() == prefix.size()) return false;
    out.kind = kind;
    out.name = text.substr(prefix.size());
    if (kind == HashKey::Kind::Header) {
      for (char& c : out.name) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return true;
  };
  if (text == "$remote_addr") {
    out.kind = HashKey::Kind::RemoteAddr;
  } else if (!named("$header_", HashKey::Kind::Header) && !named("$cookie_", HashKey::Kind::Cookie)) {
    return t.error_at("hash", "unknown hash key " + quote(text) +
                                  " (expected \"$remote_addr\", \"$header_NAME\" or \"$cookie_NAME\")");
  }
  return {};
}

// balance = "least_request" (default) | "round_robin" | "random" | "hash"
// (with `hash`, the key).
Status parse_balance(const TableReader& t, Upstream& u) {
  Balance& out = u.balance;
  if (t.find("balance") == nullptr) {
    if (t.find("hash") != nullptr) return t.error_at("hash", "needs balance = \"hash\"");
    return {};
  }
  std::string text;
  if (Status s = t.get_string("balance", text); !s.ok()) return s;
  if (text == "least_request") {
    out = Balance::LeastRequest;
  } else if (text == "round_robin") {
    out = Balance::RoundRobin;
  } else if (text == "random") {
    out = Balance::Random;
  } else if (text == "hash") {
    out = Balance::Hash;
  } else {
    return t.error_at("balance", "unknown balance " + quote(text) +
                                     " (expected \"least_request\", \"round_robin\", \"random\" or \"hash\")");
  }
  if (out != Balance::Hash) {
    if (t.find("hash") != nullptr) return t.error_at("hash", "needs balance = \"hash\"");
    return {};
  }
  if (t.find("hash") == nullptr) return t.error_at("balance", "balance = \"hash\" needs a `hash` key");
  if (Status s = parse_hash_key(t, u.hash); !s.ok()) return s;
  for (size_t i = 0; i < u.servers.size(); ++i) {
    // nginx refuses it too: a key's server is its place on the ring, and a
    // backup has none.
    if (u.options_of(i).backup) return t.error_at("balance", "balance = \"hash\" has no backup servers");
  }
  return {};
}

// failure_statuses = [502, 503, 504]: 400..599, no duplicate.
Status parse_failure_statuses(const TableReader& t, std::vector<int>& out) {
  auto array = t.get_array("failure_statuses", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const std::string path = t.path_of("failure_statuses") + "[" + std::to_string(i) + "]";
    const auto* n = element.as_integer();
    if (n == nullptr) return type_error(t.context(), element, path, "an integer");
    if (n->get() < 400 || n->get() > 599) {
      return t.context().error(element.source(), path, "a status in 400..599, got " + std::to_string(n->get()));
    }
    const int status = static_cast<int>(n->get());
    if (std::find(out.begin(), out.end(), status) != out.end()) {
      return t.context().error(element.source(), path, std::to_string(status) + " is listed twice");
    }
    out.push_back(status);
  }
  return {};
}

// h2_ping_interval / h2_ping_timeout: HTTP/2 PING liveness (RFC 9113 §6.7)
// of idle HTTP/2 connections (Envoy's connection_keepalive interval/timeout).
Status parse_ping(const TableReader& t, Upstream& u) {
  if (!is_http2(u.protocol)) {
    for (std::string_view key : {"h2_ping_interval", "h2_ping_timeout"}) {
      if (t.find(key) != nullptr) {
        return t.error_at(key, "only applies to protocol = \"h2c\" or \"h2\" (an HTTP/1.1 connection has no PING)");
      }
    }
    return {};
  }
  if (Status s = t.get_duration("h2_ping_interval", Millis{0}, u.h2_ping_interval); !s.ok()) return s;
  if (Status s = t.get_duration("h2_ping_timeout", Millis{1}, u.h2_ping_timeout); !s.ok()) return s;
  return {};
}

Status parse_one(const TableReader& t, Upstream& u) {
  if (Status s = t.check_keys({"name", "servers", "keepalive", "keepalive_timeout", "keepalive_requests",
                               "connect_timeout", "read_timeout", "send_timeout", "fail_timeout", "protocol",
                               "h2_ping_interval", "h2_ping_timeout", "tls", "resolve_at_start", "max_fails",
                               "max_ejected_percent", "balance", "max_retries", "retry_non_idempotent", "hash",
                               "slow_start", "health_check", "failure_statuses"});
      !s.ok()) {
    return s;
  }
  if (Status s = t.get_string("name", u.name, Presence::Required); !s.ok()) return s;
  if (!is_valid_name(u.name)) {
    return t.error_at("name", "invalid upstream name " + quote(u.name) +
                                  " (allowed: letters, digits, \"_\", \".\", \"-\")");
  }
  if (Status s = parse_servers(t, u); !s.ok()) return s;
  if (Status s = t.get_bool("resolve_at_start", u.resolve_at_start); !s.ok()) return s;
  if (Status s = parse_protocol(t, u.protocol); !s.ok()) return s;
  if (Status s = parse_upstream_tls(t, u); !s.ok()) return s;

  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  constexpr Millis kPositive{1};
  if (Status s = t.get_integer("keepalive", 0, kMaxInt, u.keepalive); !s.ok()) return s;
  if (Status s = t.get_duration("keepalive_timeout", kPositive, u.keepalive_timeout); !s.ok()) {
    return s;
  }
  if (Status s = t.get_integer("keepalive_requests", 1, kMaxInt64, u.keepalive_requests); !s.ok()) {
    return s;
  }
  if (Status s = t.get_duration("connect_timeout", kPositive, u.connect_timeout); !s.ok()) return s;
  if (Status s = t.get_duration("read_timeout", kPositive, u.read_timeout); !s.ok()) return s;
  if (Status s = t.get_duration("send_timeout", kPositive, u.send_timeout); !s.ok()) return s;
  // 0 is allowed: a failed server is never skipped.
  if (Status s = t.get_duration("fail_timeout", Millis{0}, u.fail_timeout); !s.ok()) return s;
  if (Status s = t.get_integer("max_fails", 0, 1'000'000, u.max_fails); !s.ok()) return s;
  if (Status s = t.get_integer("max_ejected_percent", 0, 100, u.max_ejected_percent); !s.ok()) return s;
  if (Status s = t.get_integer("max_retries", 0, 16, u.max_retries); !s.ok()) return s;
  if (Status s = parse_failure_statuses(t, u.failure_statuses); !s.ok()) return s;
  if (Status s = t.get_bool("retry_non_idempotent", u.retry_non_idempotent); !s.ok()) return s;
  if (Status s = parse_balance(t, u); !s.ok()) return s;
  if (Status s = t.get_duration("slow_start", Millis{0}, u.slow_start); !s.ok()) return s;
  if (Status s = parse_health_check(t, u); !s.ok()) return s;
  if (Status s = parse_ping(t, u); !s.ok()) return s;
  if (is_http2(u.protocol) && u.keepalive == 0) {
    // An HTTP/2 connection carries many streams at once and stays open between
    // them: there is nothing to turn off, and one connection per request
    // would undo what HTTP/2 is for.
    return t.error_at("keepalive",
                      "must be >= 1 with protocol = \"" + std::string(protocol_name(u.protocol)) +
                          "\" (it bounds the HTTP/2 connections per worker per server)");
  }
  return {};
}

}  // namespace

Status parse_upstream(const TableReader& root, std::vector<Upstream>& out) {
  auto tables = tables_of(root, "upstream");
  if (!tables.ok()) return tables.take_error();
  // None is fine when every route answers itself (files, return,
  // redirect); a route with an upstream names one that must exist.
  if (tables->empty()) return {};

  std::vector<std::string> name_positions;
  for (size_t i = 0; i < tables->size(); ++i) {
    TableReader t(root.context(), *(*tables)[i], "upstream[" + std::to_string(i) + "]");
    Upstream upstream;
    if (Status s = parse_one(t, upstream); !s.ok()) return s;
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j].name == upstream.name) {
        return t.error_at("name", "duplicate upstream name " + quote(upstream.name) +
                                      " (first defined at " + name_positions[j] + ")");
      }
    }
    name_positions.push_back(t.position_of("name"));
    out.push_back(std::move(upstream));
  }
  return {};
}

}  // namespace tlsfront::config::detail
