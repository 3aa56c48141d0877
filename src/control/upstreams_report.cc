#include "control/upstreams_report.h"

#include <fmt/format.h>

#include <chrono>
#include <map>

#include "config/units.h"
#include "log/access_log.h"

namespace tlsfront::control {
namespace {

const char* balance_name(config::Balance b) {
  switch (b) {
    case config::Balance::RoundRobin: return "round_robin";
    case config::Balance::Random: return "random";
    case config::Balance::Hash: return "hash";
    case config::Balance::LeastRequest: break;
  }
  return "least_request";
}

const char* dns_state(UpstreamResolver::NameState s) {
  return s == UpstreamResolver::NameState::Resolved  ? "resolved"
         : s == UpstreamResolver::NameState::Failing ? "failing"
                                                     : "unresolved";
}

// Calls `visit`(server as configured, its options, its address or null
// while a name has none, the name's DNS state or null for an IP literal,
// the name's last DNS error) for each server of `u`, an address at a time.
template <typename Visit>
void each_server(const config::Upstream& u, const upstream::ServerDirectory& directory,
                 const UpstreamResolver* resolver, Visit&& visit) {
  for (size_t i = 0; i < u.servers.size(); ++i) {
    const config::Endpoint& server = u.servers[i];
    if (config::is_ip_literal(server.host)) {
      const std::string address = server.to_string();
      visit(server, u.options_of(i), &address, nullptr, std::string());
      continue;
    }
    const std::string key = server.to_string();
    const UpstreamResolver::NameState state = resolver ? resolver->state(key) : UpstreamResolver::NameState::Unresolved;
    const std::string error = resolver ? resolver->last_error(key) : "";
    auto list = directory.lookup(key);
    if (!list || list->empty()) {
      visit(server, u.options_of(i), nullptr, dns_state(state), error);
      continue;
    }
    for (const auto& a : *list) visit(server, u.options_of(i), &a.text, dns_state(state), error);
  }
}

// What the board says of `address` of `upstream` (no entry: no worker or
// check recorded anything yet, so it is in).
const upstream::ServerHealth& health_of(const upstream::HealthBoard& board, const std::string& upstream,
                                        const std::string& address, std::shared_ptr<upstream::ServerHealth>& keep) {
  static const upstream::ServerHealth kNeverFailed;
  keep = board.find(upstream, address);
  return keep ? *keep : kNeverFailed;
}

const char* state_name(const upstream::ServerHealth& h, upstream::ServerHealth::Clock::time_point now) {
  return h.down() ? "down" : h.ejected(now) ? "ejected" : "in";
}


}  // namespace

std::string upstreams_json(const config::Config& cfg, const upstream::ServerDirectory& directory,
                           const upstream::HealthBoard& health,
                           const std::vector<const metrics::WorkerCounters*>& workers,
                           const UpstreamResolver* resolver, const HealthChecks& checks) {
  auto totals = metrics::sum_upstream_servers(workers);
  const auto now = upstream::ServerHealth::Clock::now();
  std::string out = "{\"upstreams\":[";
  for (size_t i = 0; i < cfg.upstreams.size(); ++i) {
    const config::Upstream& u = cfg.upstreams[i];
    std::string servers;
    size_t total = 0, in = 0;
    auto add = [&](const config::Endpoint& server, const config::ServerOptions& options, const std::string* address,
                   const char* dns, const std::string& dns_error) {
      if (!servers.empty()) servers += ",";
      servers += "{\"server\":";
      log::append_json_string(servers, server.to_string());
      servers += ",\"address\":";
      if (address) {
        log::append_json_string(servers, *address);
      } else {
        servers += "null";
      }
      servers += ",\"dns\":";
      if (dns) {
        servers += fmt::format("\"{}\"", dns);
        if (!dns_error.empty()) {
          servers += ",\"dns_error\":";
          log::append_json_string(servers, dns_error);
        }
      } else {
        servers += "null";
      }
      servers += fmt::format(",\"weight\":{},\"backup\":{}", options.weight, options.backup);
      if (address == nullptr) {
        servers += "}";
        return;
      }
      ++total;
      std::shared_ptr<upstream::ServerHealth> keep;
      const upstream::ServerHealth& h = health_of(health, u.name, *address, keep);
      in += !h.out(now);
      const metrics::UpstreamServerTotals& t = totals[{u.name, *address}];
      servers += fmt::format(
          ",\"state\":\"{}\",\"ejected_for_ms\":{},\"consecutive_failures\":{},\"ejections\":{},\"responses\":{},"
          "\"response_ms_avg\":{:.3f},\"retries\":{},\"panic_requests\":{},\"connections_created\":{},"
          "\"idle_connections\":{},\"attempt_failures\":{{",
          state_name(h, now), h.ejected_ms(now), h.consecutive_failures(), h.ejections(), t.responses,
          t.responses ? static_cast<double>(t.response_ns) / 1e6 / static_cast<double>(t.responses) : 0.0, t.retries,
          t.panics, t.created, t.idle);
      bool first = true;
      for (const auto& [reason, n] : t.failures_by_reason) {
        servers += fmt::format("{}\"{}\":{}", first ? "" : ",", reason, n);
        first = false;
      }
      servers += "}";
      if (auto c = checks.find({u.name, *address}); c != checks.end()) {
        servers += fmt::format(",\"health_check\":{{\"passes_in_a_row\":{},\"fails_in_a_row\":{},\"last\":",
                               c->second.passes, c->second.fails);
        log::append_json_string(servers, c->second.last);
        servers += "}";
      }
      servers += "}";
    };
    each_server(u, directory, resolver, add);
    out += i ? "," : "";
    out += "{\"name\":";
    log::append_json_string(out, u.name);
    out += fmt::format(",\"balance\":\"{}\",\"servers_in\":{},\"servers_total\":{},\"panic\":{},\"servers\":[{}]}}",
                       balance_name(u.balance), in, total, total > 0 && in == 0 ? "true" : "false", servers);
  }
  out += "]}\n";
  return out;
}

std::string upstream_state_metrics(const config::Config& cfg, const upstream::ServerDirectory& directory,
                                   const upstream::HealthBoard& health) {
  const auto now = upstream::ServerHealth::Clock::now();
  std::string up =
      "# HELP tlsfront_upstream_server_up Whether an upstream server may be chosen (1), or is out: ejected or down (0).\n"
      "# TYPE tlsfront_upstream_server_up gauge\n";
  std::string healthy =
      "# HELP tlsfront_upstream_servers_healthy Servers of each upstream that may be chosen (0: every request is a panic).\n"
      "# TYPE tlsfront_upstream_servers_healthy gauge\n";
  for (const config::Upstream& u : cfg.upstreams) {
    size_t in = 0;
    each_server(u, directory, nullptr,
                [&](const config::Endpoint&, const config::ServerOptions&, const std::string* address, const char*,
                    const std::string&) {
                  if (address == nullptr) return;
                  std::shared_ptr<upstream::ServerHealth> keep;
                  const bool is_in = !health_of(health, u.name, *address, keep).out(now);
                  in += is_in;
                  up += fmt::format("tlsfront_upstream_server_up{{upstream=\"{}\",server=\"{}\"}} {}\n", u.name,
                                    *address, is_in ? 1 : 0);
                });
    healthy += fmt::format("tlsfront_upstream_servers_healthy{{upstream=\"{}\"}} {}\n", u.name, in);
  }
  return up + healthy;
}

}  // namespace tlsfront::control
