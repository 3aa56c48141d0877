#include "data/files/file_resolver.h"

#include <cctype>
#include <cerrno>
#include <cstring>

#include "data/files/open_file_cache.h"
#include "message/accept_encoding.h"
#include "message/request_path.h"

namespace tlsfront::files {

namespace {

bool has_dot_segment(std::string_view rel) {
  for (size_t i = 0; i < rel.size(); ++i) {
    if (rel[i] == '.' && (i == 0 || rel[i - 1] == '/')) return true;
  }
  return false;
}

struct Resolver {
  const config::FileRoute& f;
  std::string_view accept_encoding;
  LazyDir& dir;
  const CacheUse* cache;
  Resolution out;

  Opened open(const std::string& rel) {
    if (cache == nullptr) return open_beneath(dir, rel, f.follow_symlinks);
    return cache->cache->open(*cache->limits, cache->now_ms, dir, rel, f.follow_symlinks, cache->pass);
  }

  // Tries `rel`: a regular file, or a directory's index when `rel` ends in
  // "/" or `index_only`. True when it decided (found, or refused); false:
  // not found, try the next.
  bool attempt(std::string rel, bool index_only) {
    while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
    if (!f.dotfiles && has_dot_segment(rel)) return false;
    const bool slash = rel.empty() || rel.back() == '/';
    Opened o = open(rel);
    if (o.outcome == Outcome::Missing) return false;
    if (o.outcome == Outcome::Refused) return refuse(o.status, std::move(o.error));
    if (o.file->is_dir()) {
      if (!slash && !index_only) return false;  // handled by the caller
      for (const std::string& name : f.index) {
        std::string index = rel;
        if (!index.empty() && index.back() != '/') index += '/';
        index += name;
        if (!f.dotfiles && has_dot_segment(index)) continue;
        Opened i = open(index);
        if (i.outcome == Outcome::Missing || (i.outcome == Outcome::Found && i.file->is_dir())) continue;
        if (i.outcome == Outcome::Refused) return refuse(i.status, std::move(i.error));
        return found(std::move(index), std::move(i));
      }
      return false;
    }
    if (slash) return false;  // "/a.css/": not a directory
    return found(std::move(rel), std::move(o));
  }

  bool refuse(int status, std::string error) {
    out.kind = Resolution::Kind::Status;
    out.status = status;
    out.error = std::move(error);
    return true;
  }

  bool found(std::string rel, Opened o) {
    out.kind = Resolution::Kind::File;
    out.file = std::move(o.file);
    out.cache_hit = o.cache_hit;
    // Precompressed variant: the first listed the client accepts, if it is
    // a regular file not older than the original.
    for (const std::string& coding : f.precompressed) {
      if (http::accept_weight(accept_encoding, coding) <= 0) continue;
      Opened v = open(rel + (coding == "br" ? ".br" : ".gz"));
      if (v.outcome != Outcome::Found || v.file->is_dir()) continue;
      if (v.file->st.st_mtim.tv_sec < out.file->st.st_mtim.tv_sec) continue;
      out.file = std::move(v.file);
      out.cache_hit = v.cache_hit;
      out.coding = coding == "br" ? "br" : "gzip";
      break;
    }
    out.type_path = std::move(rel);
    return true;
  }
};

// `uri` with "$uri" replaced by `path`.
std::string substitute(std::string_view entry, std::string_view path) {
  std::string s;
  for (size_t at; (at = entry.find("$uri")) != std::string_view::npos;) {
    s.append(entry.substr(0, at));
    s.append(path);
    entry.remove_prefix(at + 4);
  }
  s.append(entry);
  return s;
}

}  // namespace

bool percent_decode(std::string_view path, std::string& out) {
  const size_t first = path.find('%');
  if (first == std::string_view::npos) {  // most paths: nothing to decode
    out.assign(path);
    return true;
  }
  out.clear();
  out.reserve(path.size());
  out.append(path.substr(0, first));
  for (size_t i = first; i < path.size(); ++i) {
    if (path[i] != '%') {
      out += path[i];
      continue;
    }
    if (i + 2 >= path.size()) return false;
    const int hi = http::hex_value(path[i + 1]), lo = http::hex_value(path[i + 2]);
    if (hi < 0 || lo < 0) return false;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return false;
    out += c;
    i += 2;
  }
  return true;
}

std::string percent_encode_path(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(path.size());
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    // RFC 3986 pchar and "/", but "%": unreserved / sub-delims / ":" / "@".
    if (std::isalnum(c) != 0 || std::strchr("-._~!$&'()*+,;=:@/", ch) != nullptr) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Resolution resolve(const config::Route& route, std::string_view path, std::string_view query,
                   std::string_view accept_encoding, const CacheUse* cache, bool rematched) {
  const config::FileRoute& f = *route.files;
  LazyDir dir(f.dir);
  Resolver r{f, accept_encoding, dir, cache, {}};
  std::string decoded;
  if (!percent_decode(path, decoded) || decoded.find('/') != 0) {
    r.out.status = 400;
    return std::move(r.out);
  }
  // $uri: the path beneath the directory (alias: after the route's prefix).
  std::string uri = std::move(decoded);
  if (f.alias) {
    uri.erase(0, std::min(route.path.size(), uri.size()));
    if (uri.empty() || uri.front() != '/') uri.insert(uri.begin(), '/');
  }
  if (f.try_files.empty()) {
    if (r.attempt(uri, false)) return std::move(r.out);
    // A directory without its "/": nginx's 301 to the path with it.
    if (uri.back() != '/' && (f.dotfiles || !has_dot_segment(uri))) {
      Opened o = r.open(uri.substr(1));
      if (o.outcome == Outcome::Found && o.file->is_dir()) {
        r.out.kind = Resolution::Kind::Redirect;
        r.out.status = 301;
        r.out.location.assign(path).append("/").append(query);
        return std::move(r.out);
      }
    }
    if (uri.back() == '/') {
      Opened o = r.open(uri.substr(1));
      if (o.outcome == Outcome::Found && o.file->is_dir()) {
        r.out.status = 403;  // no index file; listing is never made
        r.out.error = "directory without an index file";
        return std::move(r.out);
      }
    }
    r.out.status = 404;
    return std::move(r.out);
  }
  for (const std::string& entry : f.try_files) {
    const std::string p = substitute(entry, uri);
    if (r.attempt(p, p.ends_with("/"))) return std::move(r.out);
  }
  if (f.fallback_route) {
    r.out.kind = Resolution::Kind::Route;
    r.out.route = *f.fallback_route;
    return std::move(r.out);
  }
  if (!f.fallback_path.empty()) {
    // nginx's internal redirect: the URI is routed again (once).
    r.out.status = 404;
    if (!rematched) {
      r.out.kind = Resolution::Kind::Rematch;
      r.out.status = 0;
      r.out.location = percent_encode_path(substitute(f.fallback_path, uri));
    }
    return std::move(r.out);
  }
  r.out.status = f.fallback_status;
  return std::move(r.out);
}

}  // namespace tlsfront::files
