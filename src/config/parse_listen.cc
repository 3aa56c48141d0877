// [[listen]]: the addresses tlsfront accepts TLS connections on.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

Status parse_listen(const TableReader& root, std::vector<Listener>& out) {
  auto tables = tables_of(root, "listen");
  if (!tables.ok()) return tables.take_error();
  if (tables->empty()) return missing_table(root.context(), "listen", true);

  std::vector<std::string> positions;  // of each address key, for duplicate reports
  for (size_t i = 0; i < tables->size(); ++i) {
    TableReader t(root.context(), *(*tables)[i], "listen[" + std::to_string(i) + "]");
    if (Status s = t.check_keys({"address", "backlog"}); !s.ok()) return s;

    Listener listener;
    std::string address;
    if (Status s = t.get_string("address", address, Presence::Required); !s.ok()) return s;
    Result<Endpoint> endpoint = parse_endpoint(address, /*allow_localhost=*/false);
    if (!endpoint.ok()) return t.error_at("address", endpoint.error().detail);
    listener.address = std::move(*endpoint);
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j].address.host == listener.address.host &&
          out[j].address.port == listener.address.port) {
        return t.error_at("address", "duplicate listen address " +
                                         quote(listener.address.to_string()) +
                                         " (first at " + positions[j] + ")");
      }
    }
    if (Status s = t.get_integer("backlog", 1, 65535, listener.backlog); !s.ok()) return s;
    positions.push_back(t.position_of("address"));
    out.push_back(std::move(listener));
  }
  return {};
}

}  // namespace tlsfront::config::detail
