#include "data/http/router.h"

#include <re2/re2.h>

#include <algorithm>

#include "message/request_path.h"

namespace tlsfront::http {
namespace {

const char* key_of(config::PathMatch m) {
  switch (m) {
    case config::PathMatch::Prefix: return "path_prefix";
    case config::PathMatch::Exact: return "path_exact";
    case config::PathMatch::Regex: return "path_regex";
  }
  return "?";
}

std::string name_of(size_t i, const config::Route& r) {
  return "route[" + std::to_string(i) + "]" + (r.position.empty() ? "" : " (" + r.position + ")");
}

// Every host `inner` matches is matched by `outer` too.
bool host_covers(std::string_view outer, std::string_view inner) {
  if (outer.empty() || outer == inner) return true;
  if (inner.empty()) return false;
  return !inner.starts_with("*.") && host_matches(outer, inner);
}

bool methods_cover(const std::vector<std::string>& outer, const std::vector<std::string>& inner) {
  if (outer.empty()) return true;
  if (inner.empty()) return false;
  return std::all_of(inner.begin(), inner.end(),
                     [&](const std::string& m) { return std::find(outer.begin(), outer.end(), m) != outer.end(); });
}

// Every path `inner` matches is matched by `outer` (regexes: not judged).
bool path_covers(const config::Route& outer, const config::Route& inner) {
  using config::PathMatch;
  if (outer.path_match == PathMatch::Regex || inner.path_match == PathMatch::Regex) return false;
  if (outer.path_match == PathMatch::Exact) return inner.path_match == PathMatch::Exact && inner.path == outer.path;
  return inner.path.starts_with(outer.path);
}

// A "%XY" no normalized path holds: lowercase hex, or an unreserved
// character encoded (decoded by normalization).
bool has_unnormal_escape(std::string_view s) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
  for (size_t i = 0; i + 2 < s.size(); ++i) {
    if (s[i] != '%' || !hex(s[i + 1]) || !hex(s[i + 2])) continue;
    if ((s[i + 1] >= 'a' && s[i + 1] <= 'f') || (s[i + 2] >= 'a' && s[i + 2] <= 'f')) return true;
    const int v = std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16);
    if ((v >= 'a' && v <= 'z') || (v >= 'A' && v <= 'Z') || (v >= '0' && v <= '9') || v == '-' || v == '.' ||
        v == '_' || v == '~') {
      return true;
    }
  }
  return false;
}

}  // namespace

bool host_matches(std::string_view pattern, std::string_view host) {
  if (pattern.empty()) return true;
  if (!pattern.starts_with("*.")) return pattern == host;
  const std::string_view suffix = pattern.substr(1);  // ".example.com"
  if (host.size() <= suffix.size() || !host.ends_with(suffix)) return false;
  return host.substr(0, host.size() - suffix.size()).find('.') == std::string_view::npos;
}

namespace {

// "https://${host}${request_uri}": the location as configured.
std::string location_text(const std::vector<config::HeaderValuePart>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (p.variable >= 0) {
      out += "${" + std::string(config::kHeaderVariables[p.variable]) + "}";
    } else {
      for (char c : p.literal) out += c == '$' ? std::string("$$") : std::string(1, c);
    }
  }
  return out;
}

std::string action_text(const config::Route& r) {
  switch (r.action) {
    case config::RouteAction::Proxy:
      return "upstream \"" + r.upstream + "\"";
    case config::RouteAction::Return:
      return "return " + std::to_string(r.answer.status) + ", " + r.answer.content_type + ", " +
             std::to_string(r.answer.body.size()) + " bytes";
    case config::RouteAction::Redirect:
      return "redirect " + std::to_string(r.answer.status) + " \"" + location_text(r.answer.location) + "\"";
    case config::RouteAction::Files:
      return std::string(r.files->alias ? "alias" : "root") + " \"" + r.files->dir + "\"";
  }
  return "?";
}

}  // namespace

Router::Router(const config::Config& cfg) {
  for (size_t route = 0; route < cfg.routes.size(); ++route) {
    const auto& r = cfg.routes[route];
    if (r.action != config::RouteAction::Proxy) {
      entries_.push_back(Entry{r, 0, route});
      continue;
    }
    for (size_t i = 0; i < cfg.upstreams.size(); ++i) {
      if (cfg.upstreams[i].name == r.upstream) {
        entries_.push_back(Entry{r, i, route});
        break;
      }
    }
  }
}

std::optional<Router::Match> Router::match(std::string_view host, std::string_view method,
                                           std::string_view path) const {
  for (const auto& e : entries_) {
    const config::Route& r = e.route;
    if (!r.host.empty() && !host_matches(r.host, host)) continue;
    if (!r.methods.empty() && std::find(r.methods.begin(), r.methods.end(), method) == r.methods.end()) continue;
    switch (r.path_match) {
      case config::PathMatch::Prefix:
        if (!path.starts_with(r.path)) continue;
        break;
      case config::PathMatch::Exact:
        if (path != r.path) continue;
        break;
      case config::PathMatch::Regex:
        if (!RE2::FullMatch(re2::StringPiece(path.data(), path.size()), *r.regex)) continue;
        break;
    }
    return Match{e.index, e.upstream, r.pass_normalized, r.require_client_cert, r.action,
                 r.action == config::RouteAction::Proxy ? nullptr : &r.answer};
  }
  return std::nullopt;
}

std::vector<std::string> Router::table() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const config::Route& r = entries_[i].route;
    std::string line = name_of(i, r) + ": host " + (r.host.empty() ? "any" : r.host) + ", methods ";
    if (r.methods.empty()) line += "any";
    for (size_t m = 0; m < r.methods.size(); ++m) line += (m ? " " : "") + r.methods[m];
    line += std::string(", ") + key_of(r.path_match) + " \"" + r.path + "\"";
    if (r.path_match == config::PathMatch::Regex) line += " (whole path)";
    line += " -> " + action_text(r);
    if (r.pass_normalized) line += " (normalized target)";
    if (r.require_client_cert) line += " (verified client certificate required)";
    line += "; metrics route=\"" + r.name + "\"";
    out.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> Router::warnings() const {
  std::vector<std::string> out;
  for (size_t j = 0; j < entries_.size(); ++j) {
    const config::Route& r = entries_[j].route;
    if (r.path_match != config::PathMatch::Regex) {
      // A prefix may end inside a segment ("/api/." still matches
      // "/api/.well-known"), so only the part up to its last "/" is judged.
      std::string_view judged = r.path;
      if (r.path_match == config::PathMatch::Prefix) judged = judged.substr(0, judged.rfind('/') + 1);
      std::string scratch;
      NormalizedTarget n;
      const PathError err = normalize_target(judged, scratch, n);
      std::string why;
      if (r.path.find_first_of("?#") != std::string::npos) {
        why = "the query is never part of the path";
      } else if (err != PathError::None) {
        why = std::string("requests with ") + describe(err) + " are refused with 400";
      } else if (n.changed) {
        why = "it normalizes to \"" + std::string(n.path) + std::string(r.path.substr(judged.size())) + "\"";
      } else if (has_unnormal_escape(r.path)) {
        why = "percent-encoding is matched decoded when unreserved, else with uppercase hex";
      }
      if (!why.empty()) {
        out.push_back(name_of(j, r) + ": " + key_of(r.path_match) + " \"" + r.path +
                      "\" can never match: paths are matched after normalization (" + why + ")");
        continue;
      }
    }
    for (size_t i = 0; i < j; ++i) {
      const config::Route& e = entries_[i].route;
      if (host_covers(e.host, r.host) && methods_cover(e.methods, r.methods) && path_covers(e, r)) {
        out.push_back(name_of(j, r) + " can never match: " + name_of(i, e) + " (" + key_of(e.path_match) + " \"" +
                      e.path + "\") comes first and takes every request it would");
        break;
      }
    }
  }
  return out;
}

}  // namespace tlsfront::http
