// A [[route]]'s file keys (config/files_config.h): root or alias, index,
// try_files, expires, precompressed, types, follow_symlinks, dotfiles.
// parse_files() reads them when the route has root or alias;
// resolve_try_files_routes() then turns each "@name" fallback into the
// index of a route with an upstream, once every route is named.
// parse_open_file_cache() reads the top-level [open_file_cache].
#include <algorithm>
#include <charconv>
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config {

std::string file_dir_error(std::string_view dir) {
  if (!dir.starts_with("/")) return "must be an absolute path, got " + quote(dir);
  if (dir.find('\0') != std::string_view::npos) return "contains a NUL";
  return {};
}

std::string index_name_error(std::string_view s) {
  const bool ok = !s.empty() && s != "." && s != ".." && s.find('/') == std::string_view::npos &&
                  s.find('\0') == std::string_view::npos;
  return ok ? "" : quote(s) + " is not a file name (no \"/\")";
}

std::string try_files_entry_error(std::string_view entry, bool last) {
  const std::string s(entry);
  if (last && s.starts_with("=")) {
    int status = 0;
    const char* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data() + 1, end, status);
    if (ec != std::errc() || p != end || status < 200 || status > 599) {
      return quote(s) + ": a status is \"=\" and 200..599 (\"=404\")";
    }
    return {};
  }
  if (last && s.starts_with("@")) return s.size() > 1 ? "" : "\"@\" names a route: \"@api\"";
  if (!(s.starts_with("/") || s.starts_with("$uri"))) return quote(s) + " must start with \"/\" or \"$uri\"";
  std::string rest = s;
  for (size_t at; (at = rest.find("$uri")) != std::string::npos;) rest.erase(at, 4);
  if (rest.find('$') != std::string::npos) return quote(s) + ": the only variable here is $uri";
  if (rest.find("/../") != std::string::npos || rest.ends_with("/..") || rest.find('\0') != std::string::npos) {
    return quote(s) + " must not climb with \"..\"";
  }
  return {};
}

}  // namespace tlsfront::config

namespace tlsfront::config::detail {
namespace {

// A list of strings at `key`; `check` says why one is refused ("" when it
// is fine).
template <typename Check>
Status get_strings(const TableReader& t, std::string_view key, std::vector<std::string>& out, Check check) {
  auto array = t.get_array(key, Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  out.clear();
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const std::string path = t.path_of(key) + "[" + std::to_string(i) + "]";
    const auto* value = element.as_string();
    if (value == nullptr) return type_error(t.context(), element, path, "a string");
    if (std::string why = check(value->get(), i, (*array)->size()); !why.empty()) {
      return t.context().error(element.source(), path, why);
    }
    out.push_back(value->get());
  }
  return {};
}

Status parse_try_files(const TableReader& t, FileRoute& f) {
  std::vector<std::string> entries;
  Status s = get_strings(t, "try_files", entries, [](const std::string& v, size_t i, size_t n) -> std::string {
    return try_files_entry_error(v, i + 1 == n);
  });
  if (!s.ok()) return s;
  if (entries.empty()) {
    if (t.find("try_files") != nullptr) return t.error_at("try_files", "must not be empty (omit it for \"$uri\")");
    return {};
  }
  if (entries.size() == 1) {
    return t.error_at("try_files", "needs at least two entries: what to try, then the fallback (nginx try_files)");
  }
  const std::string last = std::move(entries.back());
  entries.pop_back();
  f.try_files = std::move(entries);
  if (last.starts_with("=")) {
    f.fallback_status = std::stoi(last.substr(1));
  } else if (last.starts_with("@")) {
    f.fallback_route_name = last.substr(1);
  } else {
    f.fallback_path = last;
  }
  return {};
}

Status parse_types(const TableReader& t, FileRoute& f) {
  const toml::node* node = t.find("types");
  if (node == nullptr) return {};
  const toml::table* table = node->as_table();
  if (table == nullptr) return type_error(t.context(), *node, t.path_of("types"), "a table");
  for (const auto& [key, value] : *table) {
    const std::string path = t.path_of("types") + "." + key_segment(key.str());
    std::string ext(key.str());
    for (char& c : ext) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (!index_name_error(ext).empty() || ext.find('.') != std::string::npos) {
      return t.context().error(value.source(), path, "an extension without the dot (\"webmanifest\")");
    }
    const auto* type = value.as_string();
    if (type == nullptr) return type_error(t.context(), value, path, "a string");
    const std::string& v = type->get();
    const size_t slash = v.find('/');
    bool ok = slash != std::string::npos && slash > 0 && slash + 1 < v.size();
    for (unsigned char c : v) ok = ok && c >= 0x20 && c != 0x7f;
    if (!ok) return t.context().error(value.source(), path, quote(v) + " is not a media type (\"type/subtype\")");
    f.types.emplace_back(std::move(ext), v);
  }
  return {};
}

}  // namespace

Status parse_files(const TableReader& t, const Route& route, FileRoute& f) {
  const bool alias = t.find("alias") != nullptr;
  const char* key = alias ? "alias" : "root";
  if (Status s = t.get_string(key, f.dir, Presence::Required, false); !s.ok()) return s;
  if (std::string why = file_dir_error(f.dir); !why.empty()) return t.error_at(key, why);
  while (f.dir.size() > 1 && f.dir.ends_with("/")) f.dir.pop_back();
  f.alias = alias;
  if (alias && route.path_match != PathMatch::Prefix) {
    return t.error_at("alias", "needs a path_prefix (it replaces that prefix); use root with path_exact or path_regex");
  }
  if (Status s = get_strings(t, "index", f.index,
                             [](const std::string& v, size_t, size_t) { return index_name_error(v); });
      !s.ok()) {
    return s;
  }
  if (Status s = parse_try_files(t, f); !s.ok()) return s;
  if (t.find("expires") != nullptr) {
    Millis expires{0};
    if (Status s = t.get_duration("expires", Millis{0}, expires); !s.ok()) return s;
    f.expires_s = static_cast<uint64_t>(expires.count() / 1000);
  }
  if (Status s = get_strings(t, "precompressed", f.precompressed,
                             [&](const std::string& v, size_t i, size_t) -> std::string {
                               if (v != "br" && v != "gzip") return quote(v) + ": \"br\" or \"gzip\"";
                               for (size_t j = 0; j < i; ++j) {
                                 if (f.precompressed[j] == v) return quote(v) + " is listed twice";
                               }
                               return {};
                             });
      !s.ok()) {
    return s;
  }
  if (Status s = parse_types(t, f); !s.ok()) return s;
  if (Status s = t.get_bool("follow_symlinks", f.follow_symlinks); !s.ok()) return s;
  return t.get_bool("dotfiles", f.dotfiles);
}

Status parse_open_file_cache(const TableReader& root, OpenFileCache& out) {
  auto table = table_of(root, "open_file_cache");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader t(root.context(), **table, "open_file_cache");
  if (Status s = t.check_keys({"max", "valid", "content_max", "memory"}); !s.ok()) return s;
  if (Status s = t.get_integer("max", 0, 1'000'000, out.max); !s.ok()) return s;
  if (Status s = t.get_duration("valid", Millis{1}, out.valid); !s.ok()) return s;
  if (Status s = t.get_size("content_max", 0, 16 * 1024 * 1024, out.content_max); !s.ok()) return s;
  return t.get_size("memory", 0, uint64_t{1} << 40, out.memory);
}

Status resolve_try_files_routes(const std::vector<const toml::table*>& tables, const TableReader& root,
                                std::vector<Route>& routes) {
  for (size_t i = 0; i < routes.size(); ++i) {
    if (!routes[i].files || routes[i].files->fallback_route_name.empty()) continue;
    FileRoute& f = *routes[i].files;
    size_t j = 0;
    while (j < routes.size() && routes[j].name != f.fallback_route_name) ++j;
    if (j == routes.size() || routes[j].action != RouteAction::Proxy) {
      TableReader t(root.context(), *tables[i], "route[" + std::to_string(i) + "]");
      return t.error_at("try_files", "\"@" + f.fallback_route_name + "\" names no route with an upstream (its name = \"...\")");
    }
    f.fallback_route = j;
  }
  return {};
}

}  // namespace tlsfront::config::detail
