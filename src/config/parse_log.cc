// [log]: access log file and error log level.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

Status parse_log(const TableReader& root, Log& out) {
  auto table = table_of(root, "log");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};

  TableReader t(root.context(), **table, "log");
  if (Status s = t.check_keys({"access_log", "level"}); !s.ok()) return s;
  if (Status s = t.get_path("access_log", out.access_log, Presence::Optional, true); !s.ok()) {
    return s;
  }
  std::string level = out.level;
  if (Status s = t.get_string("level", level); !s.ok()) return s;
  if (level != "debug" && level != "info" && level != "warn" && level != "error") {
    return t.error_at("level", "unknown level " + quote(level) +
                                   " (expected \"debug\", \"info\", \"warn\" or \"error\")");
  }
  out.level = std::move(level);
  return {};
}

}  // namespace tlsfront::config::detail
