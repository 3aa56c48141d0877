// [[upstream]] health_check = { path = "/healthz", interval = "5s", ... }:
// active health checks (control/health_checker.h).
#include <charconv>
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

// "200-399" or "200": a range of statuses, 100..599.
bool parse_status_range(std::string_view text, int& lo, int& hi) {
  auto number = [](std::string_view s, int& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && out >= 100 && out <= 599;
  };
  const size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    if (!number(text, lo)) return false;
    hi = lo;
    return true;
  }
  return number(text.substr(0, dash), lo) && number(text.substr(dash + 1), hi) && lo <= hi;
}

}  // namespace

Status parse_health_check(const TableReader& t, Upstream& u) {
  const toml::node* node = t.find("health_check");
  if (node == nullptr) return {};
  const auto* table = node->as_table();
  if (table == nullptr) return type_error(t.context(), *node, t.path_of("health_check"), "a table");
  HealthCheck& hc = u.health_check;
  hc.enabled = true;
  hc.origin = t.position_of("health_check");
  TableReader sub(t.context(), *table, t.path_of("health_check"));
  if (Status s = sub.check_keys({"type", "path", "host", "service", "interval", "timeout", "rise", "fall",
                                 "expect_status"});
      !s.ok()) {
    return s;
  }
  std::string type = "http";
  if (Status s = sub.get_string("type", type); !s.ok()) return s;
  if (type == "grpc") {
    hc.kind = HealthCheck::Kind::Grpc;
    if (!is_http2(u.protocol)) {
      return sub.error_at("type", "gRPC health checks need protocol = \"h2c\" or \"h2\"");
    }
    for (std::string_view key : {"path", "expect_status"}) {
      if (sub.find(key) != nullptr) return sub.error_at(key, "does not apply to type = \"grpc\"");
    }
  } else if (type != "http") {
    return sub.error_at("type", "unknown type " + quote(type) + " (expected \"http\" or \"grpc\")");
  } else if (sub.find("service") != nullptr) {
    return sub.error_at("service", "applies to type = \"grpc\" only");
  }
  if (Status s = sub.get_string("path", hc.path, Presence::Optional, false); !s.ok()) return s;
  if (hc.path.front() != '/') return sub.error_at("path", "must start with \"/\"");
  for (char c : hc.path) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return sub.error_at("path", "must not hold spaces or control characters");
    }
  }
  if (Status s = sub.get_string("host", hc.host); !s.ok()) return s;
  if (Status s = sub.get_string("service", hc.service); !s.ok()) return s;
  if (Status s = sub.get_duration("interval", Millis{100}, hc.interval); !s.ok()) return s;
  if (Status s = sub.get_duration("timeout", Millis{1}, hc.timeout); !s.ok()) return s;
  if (hc.timeout > hc.interval) return sub.error_at("timeout", "must not be longer than interval");
  if (Status s = sub.get_integer("rise", 1, 100, hc.rise); !s.ok()) return s;
  if (Status s = sub.get_integer("fall", 1, 100, hc.fall); !s.ok()) return s;
  if (sub.find("expect_status") != nullptr) {
    std::string text;
    if (Status s = sub.get_string("expect_status", text); !s.ok()) return s;
    if (!parse_status_range(text, hc.expect_min, hc.expect_max)) {
      return sub.error_at("expect_status", "expected a status or a range of them, \"200\" or \"200-399\" (100..599)");
    }
  }
  return {};
}

}  // namespace tlsfront::config::detail
