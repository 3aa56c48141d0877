// [http2]: the SETTINGS tlsfront sends to HTTP/2 clients (RFC 9113 §6.5.2).
#include "config/parse_context.h"

namespace tlsfront::config::detail {

Status parse_http2(const TableReader& root, Http2& out) {
  auto table = table_of(root, "http2");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};

  TableReader t(root.context(), **table, "http2");
  if (Status s = t.check_keys({"max_concurrent_streams", "initial_window_size", "max_frame_size",
                               "max_header_list_size"});
      !s.ok()) {
    return s;
  }
  constexpr int64_t kMaxWindow = (int64_t{1} << 31) - 1;  // RFC 9113 §6.9.1
  if (Status s = t.get_integer("max_concurrent_streams", 1, 65536, out.max_concurrent_streams); !s.ok()) return s;
  uint64_t v = out.initial_window_size;
  if (Status s = t.get_size("initial_window_size", 1, kMaxWindow, v); !s.ok()) return s;
  out.initial_window_size = static_cast<uint32_t>(v);
  v = out.max_frame_size;
  if (Status s = t.get_size("max_frame_size", 16384, 16777215, v); !s.ok()) return s;  // RFC 9113 §6.5.2
  out.max_frame_size = static_cast<uint32_t>(v);
  v = out.max_header_list_size;
  if (Status s = t.get_size("max_header_list_size", 1024, 1024 * 1024, v); !s.ok()) return s;
  out.max_header_list_size = static_cast<uint32_t>(v);
  return {};
}

}  // namespace tlsfront::config::detail
