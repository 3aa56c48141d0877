// Router: maps (Host, method, normalized path) to a route — an upstream,
// the route's fixed answer (return, redirect) or its files (root, alias) — by the [[route]] table, first match in file order. Built once per
// Generation; read-only afterwards.
//
// A route matches when all of its keys do:
//   host      "" (any), the exact host, or "*.example.com" (one more label);
//   methods   empty (any) or contains the method (case-sensitive);
//   path      path_prefix: the normalized path starts with it (bytes);
//             path_exact: equals it; path_regex: RE2::FullMatch (the whole
//             path, anchored at both ends), linear in the path's length.
// The path is the normalized one (message/request_path.h), never the query.
// Thread affinity: any thread (immutable).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace tlsfront::http {

class Router {
 public:
  // Proxy routes whose upstream is missing from `cfg.upstreams` are skipped
  // (the loader rejects them first).
  explicit Router(const config::Config& cfg);

  struct Match {
    size_t route = 0;              // index into Config::routes (its header rules: data/http/header_plan.h)
    size_t upstream = 0;           // index into Config::upstreams (action Proxy only)
    bool pass_normalized = false;  // the route's pass_normalized
    bool require_client_cert = false;  // the route's require_client_cert
    config::RouteAction action = config::RouteAction::Proxy;
    const config::FixedAnswer* answer = nullptr;  // action Return or Redirect: the router's copy
  };
  // `host` lowercase without port or trailing dot (RequestHead::host:
  // message/request.h, set_routing_host); `path` normalized (no query). nullopt
  // when no route matches (404).
  std::optional<Match> match(std::string_view host, std::string_view method, std::string_view path) const;

  // One line per route for `tlsfront --test`: "route[0] (file:line:col):
  // host *.example.com, methods GET HEAD, path_prefix "/api/" -> upstream "api""
  // (or "-> return 200, text/plain, 2 bytes", "-> redirect 301 "https://$host$request_uri"",
  // "-> root "/srv/www""),
  // then "; metrics route="<its label>"" (config::Route::name).
  std::vector<std::string> table() const;
  // Routes that can never match: a path_prefix/path_exact no normalized path
  // has (".." segments, "//", %2e ...), or one an earlier route with the same
  // or a wider host and methods already takes (a path_prefix that its path
  // starts with; the same path_exact). Regular expressions are not judged.
  std::vector<std::string> warnings() const;

 private:
  struct Entry {
    config::Route route;  // a copy (the compiled regex is shared)
    size_t upstream = 0;
    size_t index = 0;     // of the route in Config::routes
  };
  std::vector<Entry> entries_;
};

// Whether the route host `pattern` ("", exact, "*.example.com") covers `host`.
bool host_matches(std::string_view pattern, std::string_view host);

}  // namespace tlsfront::http
