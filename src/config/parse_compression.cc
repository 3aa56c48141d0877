// Response compression: top-level [compression] (the defaults of every
// route) and each [[route]]'s compress, compress_types, compress_min_bytes
// and compress_level, which replace the matching default for that route
// (compress_level per codec: a route naming only br keeps the gzip level).
//
//   [compression]                          [[route]]
//   encodings = ["br", "gzip"]             compress = ["gzip"]
//   types = ["application/json", ...]      compress_types = [...]
//   min_bytes = "1k"                       compress_min_bytes = "256"
//   level = { gzip = 1, br = 4 }           compress_level = { gzip = 5 }
//   max_memory = "64m"  (per worker, [compression] only)
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

// The key names of one place: the [compression] table's or a route's.
struct Keys {
  std::string_view encodings, types, min_bytes, level;
};
constexpr Keys kDefaultKeys{"encodings", "types", "min_bytes", "level"};
constexpr Keys kRouteKeys{"compress", "compress_types", "compress_min_bytes", "compress_level"};

constexpr int kGzipMin = 1, kGzipMax = 9;       // zlib levels (0 would store, not compress)
constexpr int kBrotliMin = 0, kBrotliMax = 11;  // BROTLI_PARAM_QUALITY
constexpr uint64_t kMaxMinBytes = uint64_t{1} << 30;
// Below 1 MiB not one br stream at the default level fits.
constexpr uint64_t kMinMaxMemory = uint64_t{1} << 20, kMaxMaxMemory = uint64_t{1} << 40;

// Each element of the array `key` as a string, with its path and node.
template <typename F>
Status for_each_string(const TableReader& t, std::string_view key, F&& f) {
  for (size_t i = 0; i < t.find(key)->as_array()->size(); ++i) {
    const toml::node& element = *t.find(key)->as_array()->get(i);
    const std::string path = t.path_of(key) + "[" + std::to_string(i) + "]";
    const auto* value = element.as_string();
    if (value == nullptr) return type_error(t.context(), element, path, "a string");
    if (Status s = f(value->get(), element, path); !s.ok()) return s;
  }
  return {};
}

Status parse_encodings(const TableReader& t, std::string_view key, std::vector<std::string>& out) {
  auto array = t.get_array(key, Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  std::vector<std::string> encodings;
  Status s =
      for_each_string(t, key, [&](const std::string& name, const toml::node& node, const std::string& path) -> Status {
        if (name != "gzip" && name != "br") {
          std::string hint = name == "deflate"
                                 ? " (deflate is not offered: clients disagree on its framing, RFC 9110 §8.4.1.2)"
                             : name == "identity" ? " (identity is no compression: leave it out)"
                                                  : "";
          return t.context().error(
              node.source(), path,
              "unknown content coding " + quote(name) + ": tlsfront compresses with \"br\" and \"gzip\"" + hint);
        }
        for (const auto& seen : encodings) {
          if (seen == name) return t.context().error(node.source(), path, "duplicate content coding " + quote(name));
        }
        encodings.push_back(name);
        return {};
      });
  if (!s.ok()) return s;
  out = std::move(encodings);  // [] turns compression off
  return {};
}

bool token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_tchar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Status parse_types(const TableReader& t, std::string_view key, std::vector<std::string>& out) {
  auto array = t.get_array(key, Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  if ((*array)->empty()) {
    return t.error_at(key, "must not be empty (to turn compression off, leave the encodings empty)");
  }
  std::vector<std::string> types;
  Status s =
      for_each_string(t, key, [&](const std::string& type, const toml::node& node, const std::string& path) -> Status {
        const size_t slash = type.find('/');
        const bool valid = slash != std::string::npos && token(type.substr(0, slash)) &&
                           (type.substr(slash + 1) == "*" || token(type.substr(slash + 1))) &&
                           type.substr(0, slash) != "*";
        if (!valid) {
          return t.context().error(node.source(), path,
                                   "invalid media type " + quote(type) +
                                       " (\"type/subtype\" or \"type/*\", no parameters, RFC 9110 §8.3.1)");
        }
        std::string lower = type;
        for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
        types.push_back(std::move(lower));
        return {};
      });
  if (!s.ok()) return s;
  out = std::move(types);
  return {};
}

Status parse_levels(const TableReader& parent, std::string_view key, Compression& out) {
  auto table = table_of(parent, key);
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader t(parent.context(), **table, parent.path_of(key));
  if (Status s = t.check_keys({"gzip", "br"}); !s.ok()) return s;
  if (Status s = t.get_integer("gzip", kGzipMin, kGzipMax, out.gzip_level); !s.ok()) return s;
  return t.get_integer("br", kBrotliMin, kBrotliMax, out.brotli_level);
}

Status parse_keys(const TableReader& t, const Keys& keys, Compression& out) {
  if (Status s = parse_encodings(t, keys.encodings, out.encodings); !s.ok()) return s;
  if (Status s = parse_types(t, keys.types, out.types); !s.ok()) return s;
  if (Status s = t.get_size(keys.min_bytes, 0, kMaxMinBytes, out.min_bytes); !s.ok()) return s;
  return parse_levels(t, keys.level, out);
}

}  // namespace

Status parse_compression(const TableReader& root, Compression& defaults, std::vector<Route>& routes) {
  auto table = table_of(root, "compression");
  if (!table.ok()) return table.take_error();
  if (*table != nullptr) {
    TableReader t(root.context(), **table, "compression");
    if (Status s = t.check_keys({"encodings", "types", "min_bytes", "level", "max_memory"}); !s.ok()) return s;
    if (Status s = parse_keys(t, kDefaultKeys, defaults); !s.ok()) return s;
    if (Status s = t.get_size("max_memory", kMinMaxMemory, kMaxMaxMemory, defaults.max_memory); !s.ok()) return s;
  }
  auto tables = tables_of(root, "route");
  if (!tables.ok()) return tables.take_error();
  for (size_t i = 0; i < tables->size() && i < routes.size(); ++i) {
    TableReader t(root.context(), *(*tables)[i], "route[" + std::to_string(i) + "]");
    routes[i].compression = defaults;
    if (Status s = parse_keys(t, kRouteKeys, routes[i].compression); !s.ok()) return s;
  }
  return {};
}

}  // namespace tlsfront::config::detail
