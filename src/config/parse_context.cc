// Shared parse machinery: positions, typed getters, unknown keys (parse_context.h).
#include "config/parse_context.h"

#include <system_error>

#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

bool is_bare_key(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// "upstream[0].tls.verify" -> "upstream.tls.verify".
std::string without_indices(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '[') {
      while (i < path.size() && path[i] != ']') ++i;
      continue;
    }
    out += path[i];
  }
  return out;
}

bool before(const toml::source_position& a, const toml::source_position& b) {
  return a.line < b.line || (a.line == b.line && a.column < b.column);
}

std::string range_text(int64_t min, int64_t max) {
  if (max == std::numeric_limits<int64_t>::max()) return "at least " + std::to_string(min);
  return "between " + std::to_string(min) + " and " + std::to_string(max);
}

// What the value at `node` looked like, for "got ..." in range errors.
std::string shown_value(const toml::node& node) {
  if (const auto* s = node.as_string()) return quote(s->get());
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  return std::string(type_name(node.type()));
}

}  // namespace

ParseContext::ParseContext(std::string source_name, std::filesystem::path base_dir)
    : source_name_(std::move(source_name)), base_dir_(std::move(base_dir)) {}

std::string ParseContext::position(const toml::source_region& where) const {
  toml::source_index line = where.begin.line;
  toml::source_index column = where.begin.column;
  if (line == 0) {
    line = 1;
    column = 1;
  }
  return source_name_ + ":" + std::to_string(line) + ":" + std::to_string(column);
}

Error ParseContext::error(const toml::source_region& where, std::string_view key_path,
                          std::string_view message) const {
  std::string detail = position(where);
  detail.append(": ").append(key_path).append(": ").append(message);
  return make_error(Errc::Config, std::move(detail));
}

std::string ParseContext::resolve_path(std::string_view path) const {
  std::filesystem::path p{std::string(path)};
  if (p.is_relative()) p = base_dir_ / p;
  return p.lexically_normal().string();
}

std::string_view type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
  }
  return "value";
}

Error type_error(const ParseContext& ctx, const toml::node& node, std::string_view path,
                 std::string_view expected) {
  std::string message = "expected ";
  message.append(expected).append(", got ").append(type_name(node.type()));
  return ctx.error(node.source(), path, message);
}

std::string key_segment(std::string_view key) {
  return is_bare_key(key) ? std::string(key) : quote(key);
}

TableReader::TableReader(const ParseContext& ctx, const toml::table& table, std::string path)
    : ctx_(ctx), table_(table), path_(std::move(path)) {}

Status TableReader::check_keys(std::initializer_list<std::string_view> known) const {
  if (std::vector<std::string>* sink = ctx_.accepted_keys()) {
    for (std::string_view k : known) sink->push_back(without_indices(path_of(k)));
  }
  const toml::key* first_unknown = nullptr;
  for (const auto& [key, node] : table_) {
    bool is_known = false;
    for (std::string_view k : known) is_known = is_known || key.str() == k;
    if (!is_known && (first_unknown == nullptr ||
                      before(key.source().begin, first_unknown->source().begin))) {
      first_unknown = &key;
    }
  }
  if (first_unknown == nullptr) return {};
  return ctx_.error(first_unknown->source(), path_of(first_unknown->str()),
                    "unknown key " + quote(first_unknown->str()));
}

const toml::node* TableReader::find(std::string_view key) const { return table_.get(key); }

std::string TableReader::path_of(std::string_view key) const {
  if (path_.empty()) return key_segment(key);
  return path_ + "." + key_segment(key);
}

Error TableReader::error_at(std::string_view key, std::string_view message) const {
  auto it = table_.find(key);
  toml::source_region where = it != table_.end() ? it->first.source() : table_.source();
  return ctx_.error(where, path_of(key), message);
}

std::string TableReader::position_of(std::string_view key) const {
  auto it = table_.find(key);
  return ctx_.position(it != table_.end() ? it->first.source() : table_.source());
}

Error TableReader::missing(std::string_view key) const {
  return ctx_.error(table_.source(), path_of(key), "missing required key");
}

Status TableReader::get_string(std::string_view key, std::string& out, Presence presence,
                               bool allow_empty) const {
  const toml::node* node = find(key);
  if (node == nullptr) {
    if (presence == Presence::Required) return missing(key);
    return {};
  }
  const auto* value = node->as_string();
  if (value == nullptr) {
    return error_at(key, "expected a string, got " + std::string(type_name(node->type())));
  }
  if (!allow_empty && value->get().empty()) return error_at(key, "must not be empty");
  out = value->get();
  return {};
}

Status get_label_name(const TableReader& t, std::string& out) {
  std::string name;
  if (Status s = t.get_string("name", name); !s.ok()) return s;
  if (t.find("name") == nullptr) return {};
  bool valid = !name.empty() && name.size() <= 64;
  for (char c : name) {
    valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      std::string_view("-_.:/").find(c) != std::string_view::npos);
  }
  if (!valid) {
    return t.error_at("name", "invalid name " + quote(name) + " (1 to 64 of letters, digits and \"-_.:/\")");
  }
  out = std::move(name);
  return {};
}

Status TableReader::get_bool(std::string_view key, bool& out) const {
  const toml::node* node = find(key);
  if (node == nullptr) return {};
  const auto* value = node->as_boolean();
  if (value == nullptr) {
    return error_at(key, "expected a boolean, got " + std::string(type_name(node->type())));
  }
  out = value->get();
  return {};
}

Status TableReader::get_int(std::string_view key, int64_t min, int64_t max, int64_t& out) const {
  const toml::node* node = find(key);
  if (node == nullptr) return {};
  const auto* value = node->as_integer();
  if (value == nullptr) {
    return error_at(key, "expected an integer, got " + std::string(type_name(node->type())));
  }
  int64_t v = value->get();
  if (v < min || v > max) {
    return error_at(key, "must be " + range_text(min, max) + ", got " + std::to_string(v));
  }
  out = v;
  return {};
}

Status TableReader::get_duration(std::string_view key, Millis min, Millis& out) const {
  const toml::node* node = find(key);
  if (node == nullptr) return {};
  Result<Millis> parsed = make_error(Errc::Internal, "");
  if (const auto* s = node->as_string()) {
    parsed = parse_duration(s->get());
  } else if (const auto* i = node->as_integer()) {
    parsed = duration_from_seconds(i->get());
  } else {
    return error_at(key, "expected a duration string (e.g. \"30s\") or integer seconds, got " +
                             std::string(type_name(node->type())));
  }
  if (!parsed.ok()) return error_at(key, parsed.error().detail);
  if (*parsed < min) {
    std::string bound = min == Millis{1} ? "greater than 0" : "at least " + format_duration(min);
    return error_at(key, "must be " + bound + ", got " + shown_value(*node));
  }
  out = *parsed;
  return {};
}

Status TableReader::get_size(std::string_view key, uint64_t min, uint64_t max,
                             uint64_t& out) const {
  const toml::node* node = find(key);
  if (node == nullptr) return {};
  Result<uint64_t> parsed = make_error(Errc::Internal, "");
  if (const auto* s = node->as_string()) {
    parsed = parse_size(s->get());
  } else if (const auto* i = node->as_integer()) {
    parsed = size_from_integer(i->get());
  } else {
    return error_at(key, "expected a size string (e.g. \"16k\") or integer bytes, got " +
                             std::string(type_name(node->type())));
  }
  if (!parsed.ok()) return error_at(key, parsed.error().detail);
  if (*parsed < min || *parsed > max) {
    std::string bound = max == std::numeric_limits<uint64_t>::max()
                            ? "at least " + format_size(min)
                            : "between " + format_size(min) + " and " + format_size(max);
    return error_at(key, "must be " + bound + ", got " + shown_value(*node));
  }
  out = *parsed;
  return {};
}

Status TableReader::get_path(std::string_view key, std::string& out, Presence presence,
                             bool allow_empty) const {
  std::string raw;
  bool present = find(key) != nullptr;
  if (Status s = get_string(key, raw, presence, allow_empty); !s.ok()) return s;
  if (!present) return {};
  out = raw.empty() ? std::string() : ctx_.resolve_path(raw);
  return {};
}

Result<const toml::array*> TableReader::get_array(std::string_view key, Presence presence) const {
  const toml::node* node = find(key);
  if (node == nullptr) {
    if (presence == Presence::Required) return missing(key);
    return static_cast<const toml::array*>(nullptr);
  }
  const auto* array = node->as_array();
  if (array == nullptr) {
    return error_at(key, "expected an array, got " + std::string(type_name(node->type())));
  }
  return array;
}

Result<std::vector<const toml::table*>> tables_of(const TableReader& root, std::string_view key) {
  std::vector<const toml::table*> tables;
  const toml::node* node = root.find(key);
  if (node == nullptr) return tables;
  std::string expected = "an array of tables ([[" + std::string(key) + "]])";
  const auto* array = node->as_array();
  if (array == nullptr) {
    return root.error_at(key, "expected " + expected + ", got " +
                                  std::string(type_name(node->type())));
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const auto* table = element.as_table();
    if (table == nullptr) {
      return type_error(root.context(), element,
                        root.path_of(key) + "[" + std::to_string(i) + "]", "a table");
    }
    tables.push_back(table);
  }
  return tables;
}

Result<const toml::table*> table_of(const TableReader& root, std::string_view key) {
  const toml::node* node = root.find(key);
  if (node == nullptr) return static_cast<const toml::table*>(nullptr);
  const auto* table = node->as_table();
  if (table == nullptr) {
    return root.error_at(key, "expected a table ([" + std::string(key) + "]), got " +
                                  std::string(type_name(node->type())));
  }
  return table;
}

Error missing_table(const ParseContext& ctx, std::string_view key, bool array_of_tables) {
  std::string message = "missing required table ";
  message.append(array_of_tables ? "[[" : "[").append(key).append(array_of_tables ? "]]" : "]");
  return ctx.error(toml::source_region{}, key, message);
}

}  // namespace tlsfront::config::detail
