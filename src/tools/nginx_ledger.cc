// import-nginx's bookkeeping (tools/nginx_import_detail.h): what became of
// each directive, nginx's inheritance, paths.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx {
namespace detail {

size_t count_all(const std::vector<Directive>& v) {
  size_t n = v.size();
  for (const auto& d : v) n += count_all(d.children);
  return n;
}

void Ledger::list_into(const std::vector<Directive>& v, std::vector<Note>& out) const {
  for (const Directive& d : v) {
    auto it = why_.find(&d);
    if (it != why_.end()) {
      for (const std::string& why : it->second) out.push_back({d.file, d.line, d.name, why});
    } else if (!carried(d)) {
      std::string why(known_reason(d.name));
      if (why.empty() && handled_.count(d.name)) {
        why = "not carried over: no imported server uses it (a TLS server overrides it, or there is none)";
      }
      if (why.empty()) why = "unsupported: no tlsfront equivalent";
      if (d.block && !d.children.empty()) why += fmt::format(" (a block: its {} directive(s) neither)", count_all(d.children));
      out.push_back({d.file, d.line, d.name, why});
    }
    if (!d.block) continue;
    if (examined_.count(&d)) {
      list_into(d.children, out);
    } else {
      // Only what was looked at inside a block not carried over as a whole.
      for (const Directive& c : d.children) {
        if (auto n = why_.find(&c); n != why_.end()) {
          for (const std::string& why : n->second) out.push_back({c.file, c.line, c.name, why});
        }
      }
    }
  }
}

std::vector<Note> Ledger::list(const std::vector<Directive>& tree) const {
  std::vector<Note> out;
  list_into(tree, out);
  return out;
}

bool put(Keys& ks, Key k, const Directive& d, Ledger& l) {
  for (const Key& have : ks) {
    if (have.key == k.key) {
      l.note(d, "not carried over: " + k.key + " is set already (" + have.origin + ")");
      return false;
    }
  }
  ks.push_back(std::move(k));
  return true;
}

std::vector<const Directive*> effective(const Chain& chain, const std::string& name) {
  for (const Directive* block : chain) {
    std::vector<const Directive*> found;
    for (const Directive& d : block->children) {
      if (d.name == name) found.push_back(&d);
    }
    if (!found.empty()) return found;
  }
  return {};
}

const Directive* effective_one(const Chain& chain, const std::string& name) {
  auto v = effective(chain, name);
  return v.empty() ? nullptr : v.back();
}

std::string join_args(const Directive& d) {
  std::string s;
  for (const auto& a : d.args) s += " " + a;
  return s;
}

std::string origin(const Directive& d) { return d.where() + ": " + d.name + join_args(d); }

std::string absolute(const std::string& base_dir, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  if (p.is_relative()) p = fs::path(base_dir) / p;
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal().string();
}

std::optional<Directive> http_of_site_file(const std::vector<Directive>& tree) {
  auto is = [&](const char* name) {
    return std::any_of(tree.begin(), tree.end(), [&](const Directive& d) { return d.block && d.name == name; });
  };
  if (is("http") || (!is("server") && !is("upstream"))) return std::nullopt;
  Directive http;
  http.name = "http";
  http.block = true;
  http.file = tree.front().file;
  http.line = tree.front().line;
  http.column = tree.front().column;
  http.children = tree;
  return http;
}

bool has_variable(const std::string& s) { return s.find('$') != std::string::npos; }

}  // namespace detail

}  // namespace tlsfront::tools::nginx
