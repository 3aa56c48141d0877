// The keys of every table with a Redis ([tls.session_cache], [tls.ticket_keys],
// [tls.store], [[limit_req]]): where it is (redis), AUTH (redis_user,
// redis_password_file), the key prefix, the timeout and TLS (redis_tls), with
// the same names and rules everywhere.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

Status parse_redis_auth(const TableReader& t, std::string& user, std::string& password_file, std::string& prefix) {
  if (Status s = t.get_string("redis_user", user, Presence::Optional, /*allow_empty=*/false); !s.ok()) return s;
  if (Status s = t.get_path("redis_password_file", password_file, Presence::Optional, false); !s.ok()) return s;
  if (!user.empty() && password_file.empty()) {
    return t.error_at("redis_user", "needs redis_password_file (AUTH takes a user and a password)");
  }
  if (Status s = t.get_string("redis_prefix", prefix, Presence::Optional, /*allow_empty=*/false); !s.ok()) return s;
  for (char c : prefix) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return t.error_at("redis_prefix", "must not contain spaces or control characters");
    }
  }
  return {};
}

Status parse_redis_tls(const TableReader& t, const std::string& unix_socket, RedisTls& out) {
  const toml::node* node = t.find("redis_tls");
  if (node == nullptr) return {};
  out.origin = t.position_of("redis_tls");
  if (const auto* flag = node->as_boolean()) {
    out.enabled = flag->get();
  } else if (const auto* table = node->as_table()) {
    out.enabled = true;  // a table turns TLS on unless it says enabled = false
    TableReader sub(t.context(), *table, t.path_of("redis_tls"));
    if (Status s = sub.check_keys({"enabled", "server_name", "verify", "trusted_ca", "certificate", "key", "protocols"});
        !s.ok()) {
      return s;
    }
    if (Status s = sub.get_bool("enabled", out.enabled); !s.ok()) return s;
    if (Status s = parse_tls_client_keys(sub, out); !s.ok()) return s;
  } else {
    return type_error(t.context(), *node, t.path_of("redis_tls"), "a table or a boolean");
  }
  if (out.enabled && !unix_socket.empty()) {
    return t.error_at("redis_tls", "has no use with redis = \"unix:...\" (Redis speaks TLS on a TCP port, its tls-port)");
  }
  return {};
}

Status parse_redis_connection(const TableReader& t, Endpoint& address, std::string* unix_socket, std::string& user,
                              std::string& password_file, std::string& prefix, Millis& timeout, Millis min_timeout,
                              Millis max_timeout, RedisTls& tls) {
  std::string text;
  if (Status s = t.get_string("redis", text, Presence::Optional, /*allow_empty=*/false); !s.ok()) return s;
  if (unix_socket != nullptr && text.starts_with("unix:")) {
    std::string path = text.substr(5);
    if (path.empty()) return t.error_at("redis", "\"unix:\" needs a socket path");
    *unix_socket = t.context().resolve_path(path);
  } else if (!text.empty()) {
    Result<Endpoint> endpoint = parse_endpoint(text, /*allow_localhost=*/true);
    if (!endpoint.ok()) return t.error_at("redis", endpoint.error().message());
    address = *endpoint;
  }
  if (Status s = parse_redis_auth(t, user, password_file, prefix); !s.ok()) return s;
  if (Status s = t.get_duration("redis_timeout", min_timeout, timeout); !s.ok()) return s;
  if (timeout > max_timeout) {
    return t.error_at("redis_timeout", "must be at most " + std::to_string(max_timeout.count() / 1000) + "s");
  }
  return parse_redis_tls(t, unix_socket != nullptr ? *unix_socket : std::string(), tls);
}

}  // namespace tlsfront::config::detail
