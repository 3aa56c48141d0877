// Router: maps (Host, path) to an upstream by the [[route]] table, first match
// in file order. Built once per Generation; read-only afterwards.
// Thread affinity: any thread (immutable).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace tlsfront::http {

class Router {
 public:
  // Routes whose upstream is missing from `cfg.upstreams` are skipped (the
  // loader rejects them first).
  explicit Router(const config::Config& cfg);

  // Index into Config::upstreams for `host` (lowercase, no port) and the
  // request-target `path`; nullopt when no route matches (404).
  std::optional<size_t> match(std::string_view host, std::string_view path) const;

  // The same match, with the index of the route that took it (into
  // Config::routes: its header rules, data/http/header_plan.h).
  struct Match {
    size_t route = 0;
    size_t upstream = 0;
  };
  std::optional<Match> match_route(std::string_view host, std::string_view path) const;

 private:
  struct Entry {
    std::string host;
    std::string path_prefix;
    size_t upstream = 0;
    size_t route = 0;
  };
  std::vector<Entry> entries_;
};

}  // namespace tlsfront::http
