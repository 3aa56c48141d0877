// [limits] and [timeouts]: client-side request size limits and deadlines.
#include <limits>
#include <string>

#include "config/parse_context.h"

namespace tlsfront::config::detail {

Status parse_limits(const TableReader& root, Limits& out) {
  auto table = table_of(root, "limits");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};

  TableReader t(root.context(), **table, "limits");
  if (Status s = t.check_keys({"max_header_bytes", "max_body_bytes", "keepalive_requests",
                               "max_connections", "max_connections_per_client",
                               "max_full_handshakes_per_client"}); !s.ok()) return s;
  uint64_t header_bytes = out.max_header_bytes;
  if (Status s = t.get_size("max_header_bytes", 1024, 1024 * 1024, header_bytes); !s.ok()) return s;
  out.max_header_bytes = static_cast<size_t>(header_bytes);
  // 0 means unlimited.
  if (Status s = t.get_size("max_body_bytes", 0, std::numeric_limits<uint64_t>::max(),
                            out.max_body_bytes);
      !s.ok()) {
    return s;
  }
  if (Status s = t.get_integer("keepalive_requests", 1, 1'000'000'000, out.keepalive_requests); !s.ok()) return s;
  if (Status s = t.get_integer("max_connections", 0, 10'000'000, out.max_connections); !s.ok()) return s;
  if (Status s = t.get_integer("max_connections_per_client", 0, 10'000'000, out.max_connections_per_client); !s.ok()) {
    return s;
  }
  if (Status s = t.get_integer("max_full_handshakes_per_client", 0, 1'000'000, out.max_full_handshakes_per_client);
      !s.ok()) {
    return s;
  }
  return {};
}

Status parse_timeouts(const TableReader& root, Timeouts& out) {
  auto table = table_of(root, "timeouts");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};

  TableReader t(root.context(), **table, "timeouts");
  if (Status s = t.check_keys({"handshake", "header", "body", "keepalive", "send", "tunnel"}); !s.ok()) return s;
  constexpr Millis kPositive{1};
  if (Status s = t.get_duration("handshake", kPositive, out.handshake); !s.ok()) return s;
  if (Status s = t.get_duration("header", kPositive, out.header); !s.ok()) return s;
  if (Status s = t.get_duration("body", kPositive, out.body); !s.ok()) return s;
  if (Status s = t.get_duration("keepalive", kPositive, out.keepalive); !s.ok()) return s;
  if (Status s = t.get_duration("send", kPositive, out.send); !s.ok()) return s;
  if (Status s = t.get_duration("tunnel", kPositive, out.tunnel); !s.ok()) return s;
  return {};
}

}  // namespace tlsfront::config::detail
