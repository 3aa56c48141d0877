// [admin]: the admin listener (/metrics, /healthz).
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

Status parse_admin(const TableReader& root, const std::vector<Listener>& listeners, Admin& out) {
  auto table = table_of(root, "admin");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader t(root.context(), **table, "admin");
  if (Status s = t.check_keys({"enabled", "address"}); !s.ok()) return s;
  if (Status s = t.get_bool("enabled", out.enabled); !s.ok()) return s;
  std::string address;
  if (Status s = t.get_string("address", address, Presence::Optional, /*allow_empty=*/false); !s.ok()) return s;
  if (!address.empty()) {
    if (!out.enabled) return t.error_at("address", "not used with enabled = false");
    Result<Endpoint> endpoint = parse_endpoint(address, /*allow_localhost=*/false, /*allow_port_zero=*/true);
    if (!endpoint.ok()) return t.error_at("address", endpoint.error().message());
    // Port 0 on both sides is no clash: each socket gets its own free port.
    for (const auto& l : listeners) {
      if (l.address == *endpoint && endpoint->port != 0) return t.error_at("address", "is also a [[listen]] address");
    }
    out.address = *endpoint;
  }
  return {};
}

}  // namespace tlsfront::config::detail
