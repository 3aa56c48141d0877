#include "data/http/router.h"

namespace tlsfront::http {

Router::Router(const config::Config& cfg) {
  for (size_t route = 0; route < cfg.routes.size(); ++route) {
    const auto& r = cfg.routes[route];
    for (size_t i = 0; i < cfg.upstreams.size(); ++i) {
      if (cfg.upstreams[i].name == r.upstream) {
        entries_.push_back(Entry{r.host, r.path_prefix, i, route});
        break;
      }
    }
  }
}

std::optional<size_t> Router::match(std::string_view host, std::string_view path) const {
  auto m = match_route(host, path);
  if (!m) return std::nullopt;
  return m->upstream;
}

std::optional<Router::Match> Router::match_route(std::string_view host, std::string_view path) const {
  for (const auto& e : entries_) {
    if (!e.host.empty() && e.host != host) continue;
    if (path.substr(0, e.path_prefix.size()) != e.path_prefix) continue;
    return Match{e.route, e.upstream};
  }
  return std::nullopt;
}

}  // namespace tlsfront::http
