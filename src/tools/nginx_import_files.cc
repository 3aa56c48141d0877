// import-nginx: a location that serves files (root or alias in effect, no
// proxy_pass, grpc_pass or return) → a [[route]] with root or alias, and
// the directives that go with them; a location's `access_log off` → its
// routes' access_log = false (tools/nginx_import_detail.h:
// import_file_location).
#include <algorithm>

#include <fmt/format.h>

#include "config/units.h"
#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {
namespace {

// `list` as a TOML array of strings.
std::string toml_array(const std::vector<std::string>& list) {
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + toml_string(list[i]);
  return out + "]";
}

// try_files' arguments as tlsfront's entries; empty (and a note) when one
// cannot be ($document_root, other variables).
std::vector<std::string> try_files_entries(const Directive& d, Ledger& l) {
  if (d.args.size() < 2) {
    l.note(d, "not carried over: try_files needs two or more arguments");
    return {};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < d.args.size(); ++i) {
    std::string a = d.args[i];
    const bool last = i + 1 == d.args.size();
    if (last && (a.starts_with("=") || a.starts_with("@"))) {
      if (a.starts_with("@")) {
        l.note(d, "not carried over: a named location as the fallback (write try_files' last entry as \"@name\" of "
                  "the [[route]] that proxies as it does)");
        return {};
      }
      out.push_back(std::move(a));
      continue;
    }
    std::string rest = a;
    for (size_t at; (at = rest.find("$uri")) != std::string::npos;) rest.erase(at, 4);
    if (has_variable(rest) || !(a.starts_with("/") || a.starts_with("$uri"))) {
      l.note(d, "not carried over: " + toml_string(a) + " (tlsfront's try_files knows $uri only)");
      return {};
    }
    out.push_back(std::move(a));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::string why = config::try_files_entry_error(out[i], i + 1 == out.size()); !why.empty()) {
      l.note(d, "not carried over: " + why);
      return {};
    }
  }
  return out;
}

// The root or alias keys of `location` (import_file_location); empty when
// no root applies.
Keys file_route_keys(const Directive& location, const Chain& chain, Model::Match match, const std::string& base_dir,
                     Ledger& l) {
  const Directive* root = effective_one(chain, "root");
  const Directive* alias = nullptr;
  for (const Directive& c : location.children) {
    if (c.name == "alias") alias = &c;
  }
  const Directive* dir = alias ? alias : root;
  if (dir == nullptr) return {};
  if (!one_path(*dir)) {
    l.note(*dir, "not carried over: one path without variables");
    return {};
  }
  if (alias && match != Model::Match::Prefix && match != Model::Match::StopPrefix) {
    l.note(*alias, "not carried over: alias in a regex or exact location (captures are not carried)");
    return {};
  }
  std::string path = absolute(base_dir, dir->args[0]);
  while (path.size() > 1 && path.ends_with("/")) path.pop_back();
  if (std::string why = config::file_dir_error(path); !why.empty()) {
    l.note(*dir, "not carried over: " + why);
    return {};
  }
  Keys keys{{alias ? "alias" : "root", toml_string(path), origin(*dir)}};
  l.carry(*dir);
  if (const Directive* index = effective_one(chain, "index")) {
    bool plain = !index->args.empty();
    for (const auto& a : index->args) plain = plain && !has_variable(a) && config::index_name_error(a).empty();
    if (plain) {
      if (index->args != std::vector<std::string>{"index.html"}) {
        keys.push_back({"index", toml_array(index->args), origin(*index)});
      }
      l.carry(*index);
    } else {
      l.note(*index, "not carried over: index names files (no \"/\", no variables)");
    }
  }
  // try_files is the location's own (nginx does not inherit it); the
  // others apply as nginx inherits them from the server or http block.
  std::vector<const Directive*> directives;
  for (const Directive& c : location.children) {
    if (c.name == "try_files") directives.push_back(&c);
  }
  for (const char* name : {"expires", "gzip_static", "autoindex", "disable_symlinks"}) {
    if (const Directive* d = effective_one(chain, name)) directives.push_back(d);
  }
  for (const Directive* d : directives) {
    const Directive& c = *d;
    const bool inherited = std::none_of(location.children.begin(), location.children.end(),
                                        [&](const Directive& own) { return &own == d; });
    if (c.name == "try_files") {
      auto entries = try_files_entries(c, l);
      if (!entries.empty()) {
        keys.push_back({"try_files", toml_array(entries), origin(c)});
        l.carry(c);
      }
    } else if (c.name == "expires") {
      auto t = c.args.size() == 1 ? parse_time(c.args[0]) : std::nullopt;
      if (!t) {
        l.note(c, "not carried over: tlsfront's expires is a time (\"30d\"), not off, epoch, max, modified or @time");
        continue;
      }
      keys.push_back({"expires", toml_string(config::format_duration(*t)), origin(c)});
      l.carry(c);
      if (inherited) {
        l.note(c, "carried over to the locations beneath it that serve files; nginx sets it on proxied responses "
                  "there too, tlsfront does not (write Cache-Control as those routes' response_headers)");
      }
    } else if (c.name == "gzip_static") {
      if (c.args == std::vector<std::string>{"on"} || c.args == std::vector<std::string>{"always"}) {
        keys.push_back({"precompressed", "[\"gzip\"]", origin(c)});
        l.carry(c);
        if (c.args[0] == "always") l.note(c, "carried over as on: a client that does not accept gzip gets the file");
      } else {
        l.carry(c);  // off: the default
      }
    } else if (c.name == "autoindex") {
      if (c.args == std::vector<std::string>{"off"}) {
        l.carry(c);  // tlsfront never lists a directory
      } else {
        l.note(c, "no equivalent: tlsfront never lists a directory (403 without an index file)");
      }
    } else if (c.name == "disable_symlinks") {
      if (c.args == std::vector<std::string>{"off"}) {
        keys.push_back({"follow_symlinks", "true", origin(c)});
        l.carry(c);
      } else if (c.args == std::vector<std::string>{"on"}) {
        l.carry(c);  // the default
      } else {
        l.note(c, "carried over as on: every symbolic link is refused");
        l.carry(c);
      }
    }
  }
  return keys;
}

}  // namespace

bool import_file_location(const Directive& location, const Chain& chain, const std::string& path, Model::Match match,
                          const std::string& base_dir, size_t first_route, bool routed, std::vector<Model::Route>& out,
                          Ledger& l) {
  const bool passes = std::any_of(location.children.begin(), location.children.end(), [](const Directive& c) {
    return c.name == "proxy_pass" || c.name == "grpc_pass" || c.name == "return";
  });
  if (!passes) {
    Keys files = file_route_keys(location, chain, match, base_dir, l);
    if (!files.empty()) {
      out.push_back({"", path, "", origin(location), match, chain, {}, std::move(files)});
      routed = true;
    }
  }
  if (!routed) return false;
  for (const Directive& c : location.children) {
    if (c.name != "access_log" || c.args != std::vector<std::string>{"off"}) continue;
    l.carry(c);
    for (size_t i = first_route; i < out.size(); ++i) out[i].extra = {{"access_log", "false", origin(c)}};
  }
  return true;
}

}  // namespace tlsfront::tools::nginx::detail
