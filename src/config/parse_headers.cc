// response_headers / request_headers (top level: the defaults; in a [[route]]:
// that route's): set / add / remove rules, validated so that no config can
// put a malformed or framing-relevant line into a message.
#include <string>
#include <unordered_set>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

// RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
// "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
bool is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
    case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

// Why `name` (lowercased) may not be set, added or removed; "" when it may.
std::string_view forbidden_reason(std::string_view name, HeaderDirection direction) {
  if (!name.empty() && name.front() == ':') {
    return "an HTTP/2 pseudo-header: tlsfront writes those itself (RFC 9113 §8.3)";
  }
  if (name == "connection" || name == "keep-alive" || name == "proxy-connection" || name == "te" ||
      name == "trailer" || name == "upgrade") {
    return "a hop-by-hop header: it describes one connection and is never forwarded (RFC 9110 §7.6.1)";
  }
  if (name == "content-length" || name == "transfer-encoding") {
    return "a framing header: tlsfront frames every message itself (RFC 9112 §6)";
  }
  if (direction == HeaderDirection::Response && name == "host") {
    return "a request header: a response has no Host";
  }
  if (direction == HeaderDirection::Request && name == "expect") {
    return "tlsfront answers Expect: 100-continue itself and never forwards Expect";
  }
  return {};
}

// A field name as a config key: a token, and one tlsfront lets a rule touch.
Status check_name(const ParseContext& ctx, const toml::source_region& where, const std::string& path,
                  std::string_view name, HeaderDirection direction) {
  if (std::string why = header_name_problem(name, direction); !why.empty()) return ctx.error(where, path, why);
  return {};
}

}  // namespace

// Splits `text` into literal and variable parts: "$name" or "${name}" (name
// one of the first `variables` of kHeaderVariables), "$$" a literal "$".
// Literal bytes must be field value bytes (RFC 9110 §5.5: no CR, LF, NUL or
// other control byte but HTAB) and the value has no leading or trailing
// whitespace (it would be trimmed).
Status parse_header_value(const ParseContext& ctx, const toml::node& node, const std::string& path, int variables,
                          std::vector<HeaderValuePart>& out) {
  const auto* str = node.as_string();
  if (str == nullptr) return type_error(ctx, node, path, "a string");
  std::string_view text = str->get();
  if (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.back() == ' ' || text.back() == '\t')) {
    return ctx.error(node.source(), path, "value " + quote(text) + " has leading or trailing whitespace");
  }
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) out.push_back(HeaderValuePart{std::move(literal), -1});
    literal.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return ctx.error(node.source(), path,
                       "value " + quote(text) + " contains a control character (CR, LF, NUL, ...): a header value is one line");
    }
    if (c != '$') {
      literal.push_back(text[i]);
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      literal.push_back('$');
      ++i;
      continue;
    }
    const bool braced = i + 1 < text.size() && text[i + 1] == '{';
    size_t begin = i + (braced ? 2 : 1);
    size_t end = begin;
    while (end < text.size() && (text[end] == '_' || (text[end] >= 'a' && text[end] <= 'z') ||
                                 (text[end] >= 'A' && text[end] <= 'Z') || (text[end] >= '0' && text[end] <= '9'))) {
      ++end;
    }
    std::string_view name = text.substr(begin, end - begin);
    if (name.empty() || (braced && (end >= text.size() || text[end] != '}'))) {
      return ctx.error(node.source(), path,
                       "value " + quote(text) + ": expected a variable name after \"$\" at offset " +
                           std::to_string(i) + " (\"$name\" or \"${name}\"; \"$$\" is a literal \"$\")");
    }
    int index = -1;
    for (int v = 0; v < variables; ++v) {
      if (name == kHeaderVariables[v]) index = v;
    }
    if (index < 0) {
      std::string known;
      for (int v = 0; v < variables; ++v) known += (v ? ", $" : "$") + std::string(kHeaderVariables[v]);
      return ctx.error(node.source(), path,
                       "unknown variable \"$" + std::string(name) + "\" at offset " + std::to_string(i) +
                           " of " + quote(text) + " (known: " + known + ")");
    }
    flush();
    out.push_back(HeaderValuePart{{}, index});
    i = braced ? end : end - 1;
  }
  flush();
  return {};
}

namespace {

Status parse_value(const ParseContext& ctx, const toml::node& node, const std::string& path,
                   std::vector<HeaderValuePart>& out) {
  return parse_header_value(ctx, node, path, kHeaderVariableCount, out);
}

// set = { Name = "value" } (add also takes Name = ["v1", "v2"]: one field each).
Status parse_fields(const TableReader& rules, std::string_view key, HeaderDirection direction, bool allow_arrays,
                    std::vector<HeaderField>& out) {
  auto table = table_of(rules, key);
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  const ParseContext& ctx = rules.context();
  TableReader fields(ctx, **table, rules.path_of(key));
  std::unordered_set<std::string> seen;  // lowercased names: O(1) each, a table of 100k fields stays linear
  for (const auto& [name_key, node] : **table) {
    std::string_view name = name_key.str();
    std::string path = fields.path_of(name);
    if (Status s = check_name(ctx, name_key.source(), path, name, direction); !s.ok()) return s;
    if (!seen.insert(lowercase(name)).second) {
      return ctx.error(name_key.source(), path,
                       "header " + quote(name) + " appears twice (names are case-insensitive)");
    }
    if (const auto* array = node.as_array(); array != nullptr && allow_arrays) {
      if (array->empty()) return ctx.error(node.source(), path, "must not be empty");
      for (size_t i = 0; i < array->size(); ++i) {
        HeaderField field{std::string(name), {}};
        if (Status s = parse_value(ctx, *array->get(i), path + "[" + std::to_string(i) + "]", field.value); !s.ok()) {
          return s;
        }
        out.push_back(std::move(field));
      }
      continue;
    }
    if (node.as_string() == nullptr) {
      return type_error(ctx, node, path, allow_arrays ? "a string or an array of strings" : "a string");
    }
    HeaderField field{std::string(name), {}};
    if (Status s = parse_value(ctx, node, path, field.value); !s.ok()) return s;
    out.push_back(std::move(field));
  }
  return {};
}

Status parse_remove(const TableReader& rules, HeaderDirection direction, std::vector<std::string>& out,
                    std::unordered_set<std::string>& listed) {
  auto array = rules.get_array("remove", Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  const ParseContext& ctx = rules.context();
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    std::string path = rules.path_of("remove") + "[" + std::to_string(i) + "]";
    const auto* name = element.as_string();
    if (name == nullptr) return type_error(ctx, element, path, "a header name string");
    if (Status s = check_name(ctx, element.source(), path, name->get(), direction); !s.ok()) return s;
    std::string lower_name = lowercase(name->get());
    if (direction == HeaderDirection::Request && lower_name == "host") {
      return ctx.error(element.source(), path, "Host cannot be removed: an HTTP/1.1 request needs one (set it instead)");
    }
    if (!listed.insert(lower_name).second) {
      return ctx.error(element.source(), path, "header " + quote(name->get()) + " listed twice");
    }
    out.push_back(std::move(lower_name));
  }
  return {};
}

}  // namespace

}  // namespace tlsfront::config::detail

namespace tlsfront::config {

std::string hsts_problem(std::string_view value) {
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return "contains a control character (CR, LF, NUL, ...): a header value is one line";
    }
  }
  // RFC 6797 §6.1.1: max-age is the one required directive.
  const std::string lower_value = detail::lowercase(value);
  const size_t at = lower_value.find("max-age=");
  if (at == std::string::npos || (at != 0 && lower_value[at - 1] != ' ' && lower_value[at - 1] != ';')) {
    return "must contain max-age=<seconds> (RFC 6797 §6.1.1), got " + quote(value);
  }
  return "";
}

std::string header_name_problem(std::string_view name, HeaderDirection direction) {
  if (name.empty()) return "empty header name";
  if (std::string_view why = detail::forbidden_reason(detail::lowercase(name), direction); !why.empty()) {
    return "header " + quote(name) + " cannot be set, added or removed: " + std::string(why);
  }
  for (unsigned char c : name) {
    if (!detail::is_tchar(c)) {
      return "invalid header name " + quote(name) +
             " (a token: letters, digits and !#$%&'*+-.^_`|~ only, RFC 9110 §5.6.2)";
    }
  }
  return {};
}

}  // namespace tlsfront::config

namespace tlsfront::config::detail {

Status parse_header_rules(const TableReader& parent, std::string_view key, HeaderDirection direction, bool in_route,
                          HeaderRules& out) {
  auto table = table_of(parent, key);
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader rules(parent.context(), **table, parent.path_of(key));
  Status keys = direction == HeaderDirection::Response
                    ? (in_route ? rules.check_keys({"set", "add", "remove", "always", "inherit"})
                                : rules.check_keys({"set", "add", "remove", "always"}))
                    : (in_route ? rules.check_keys({"set", "add", "remove", "inherit"})
                                : rules.check_keys({"set", "add", "remove"}));
  if (!keys.ok()) return keys;
  std::unordered_set<std::string> removed;  // out.remove's names (lowercase), for lookups
  if (Status s = parse_remove(rules, direction, out.remove, removed); !s.ok()) return s;
  if (Status s = parse_fields(rules, "set", direction, false, out.set); !s.ok()) return s;
  if (Status s = parse_fields(rules, "add", direction, true, out.add); !s.ok()) return s;
  for (const auto& field : out.set) {
    if (removed.count(lowercase(field.name)) != 0) {
      return rules.error_at("remove", "header " + quote(field.name) + " is both set and removed in the same table");
    }
  }
  if (Status s = rules.get_bool("always", out.always); !s.ok()) return s;
  if (Status s = rules.get_bool("inherit", out.inherit); !s.ok()) return s;
  return {};
}

Status parse_hsts(const TableReader& tls, std::string& out) {
  if (Status s = tls.get_string("hsts", out); !s.ok()) return s;
  if (out.empty()) return {};
  if (std::string why = hsts_problem(out); !why.empty()) return tls.error_at("hsts", why);
  return {};
}

Status parse_request_id_header(const TableReader& root, std::string& out) {
  if (Status s = root.get_string("request_id_header", out); !s.ok()) return s;
  if (out.empty()) return {};
  for (unsigned char c : out) {
    if (!is_tchar(c)) {
      return root.error_at("request_id_header",
                           "invalid header name " + quote(out) + " (a token: letters, digits and !#$%&'*+-.^_`|~ only)");
    }
  }
  if (lowercase(out) == "host") return root.error_at("request_id_header", "cannot be \"Host\"");
  if (std::string_view why = forbidden_reason(lowercase(out), HeaderDirection::Request); !why.empty()) {
    return root.error_at("request_id_header", "cannot be " + quote(out) + ": " + std::string(why));
  }
  return {};
}

}  // namespace tlsfront::config::detail
