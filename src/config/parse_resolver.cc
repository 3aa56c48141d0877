// [resolver]: the DNS servers and answer lifetimes for [[upstream]] servers
// given by name (nginx's `resolver address ... valid=time ipv4= ipv6=`).
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

Status parse_resolver(const TableReader& root, Resolver& out) {
  auto table = table_of(root, "resolver");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader t(root.context(), **table, "resolver");
  if (Status s = t.check_keys({"addresses", "valid", "min_ttl", "max_ttl", "timeout", "ipv4", "ipv6"}); !s.ok()) {
    return s;
  }
  if (auto array = t.get_array("addresses", Presence::Optional); !array.ok()) {
    return array.take_error();
  } else if (*array != nullptr) {
    for (size_t i = 0; i < (*array)->size(); ++i) {
      const toml::node& element = *(*array)->get(i);
      const std::string path = t.path_of("addresses") + "[" + std::to_string(i) + "]";
      const auto* text = element.as_string();
      if (text == nullptr) return type_error(t.context(), element, path, "a string");
      // A DNS server is an address, "host:port" (nginx's default port 53
      // is written out: nothing is implied).
      Result<Endpoint> endpoint = parse_endpoint(text->get(), /*allow_localhost=*/true);
      if (!endpoint.ok()) return t.context().error(element.source(), path, endpoint.error().detail);
      out.addresses.push_back(std::move(*endpoint));
    }
  }
  if (t.find("valid") != nullptr) {
    Millis valid{0};
    if (Status s = t.get_duration("valid", Millis{1'000}, valid); !s.ok()) return s;
    out.valid = valid;
  }
  if (Status s = t.get_duration("min_ttl", Millis{0}, out.min_ttl); !s.ok()) return s;
  if (Status s = t.get_duration("max_ttl", Millis{1'000}, out.max_ttl); !s.ok()) return s;
  if (out.min_ttl > out.max_ttl) return t.error_at("min_ttl", "must not be above max_ttl");
  if (Status s = t.get_duration("timeout", Millis{100}, out.timeout); !s.ok()) return s;
  if (Status s = t.get_bool("ipv4", out.ipv4); !s.ok()) return s;
  if (Status s = t.get_bool("ipv6", out.ipv6); !s.ok()) return s;
  if (!out.ipv4 && !out.ipv6) return t.error_at("ipv6", "ipv4 and ipv6 cannot both be false");
  return {};
}

}  // namespace tlsfront::config::detail
