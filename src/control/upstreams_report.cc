#include "control/upstreams_report.h"

#include <fmt/format.h>

#include <chrono>
#include <map>

#include "config/units.h"
#include "log/access_log.h"

namespace tlsfront::control {
namespace {

const char* balance_name(config::Balance b) {
  return b == config::Balance::RoundRobin ? "round_robin" : b == config::Balance::Random ? "random" : "least_request";
}

const char* dns_state(UpstreamResolver::NameState s) {
  return s == UpstreamResolver::NameState::Resolved  ? "resolved"
         : s == UpstreamResolver::NameState::Failing ? "failing"
                                                     : "unresolved";
}

}  // namespace

std::string upstreams_json(const config::Config& cfg, const upstream::ServerDirectory& directory,
                           const upstream::HealthBoard& health,
                           const std::vector<const metrics::WorkerCounters*>& workers,
                           const UpstreamResolver* resolver) {
  auto totals = metrics::sum_upstream_servers(workers);
  const auto now = upstream::ServerHealth::Clock::now();
  std::string out = "{\"upstreams\":[";
  for (size_t i = 0; i < cfg.upstreams.size(); ++i) {
    const config::Upstream& u = cfg.upstreams[i];
    std::string servers;
    size_t total = 0, in = 0;
    auto add = [&](const config::Endpoint& server, const std::string* address, const char* dns,
                   const std::string& dns_error) {
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
      if (address == nullptr) {
        servers += "}";
        return;
      }
      ++total;
      const std::shared_ptr<upstream::ServerHealth> found = health.find(u.name, *address);
      static const upstream::ServerHealth kNeverFailed;  // no entry: no worker recorded anything yet
      const upstream::ServerHealth& h = found ? *found : kNeverFailed;
      const bool ejected = h.ejected(now);
      in += !ejected;
      const metrics::UpstreamServerTotals& t = totals[{u.name, *address}];
      servers += fmt::format(
          ",\"state\":\"{}\",\"ejected_for_ms\":{},\"consecutive_failures\":{},\"ejections\":{},\"responses\":{},"
          "\"response_ms_avg\":{:.3f},\"retries\":{},\"panic_requests\":{},\"connections_created\":{},"
          "\"idle_connections\":{},\"attempt_failures\":{{",
          ejected ? "ejected" : "in", h.ejected_ms(now), h.consecutive_failures(), h.ejections(), t.responses,
          t.responses ? static_cast<double>(t.response_ns) / 1e6 / static_cast<double>(t.responses) : 0.0, t.retries,
          t.panics, t.created, t.idle);
      bool first = true;
      for (const auto& [reason, n] : t.failures_by_reason) {
        servers += fmt::format("{}\"{}\":{}", first ? "" : ",", reason, n);
        first = false;
      }
      servers += "}}";
    };
    for (const config::Endpoint& server : u.servers) {
      if (config::is_ip_literal(server.host)) {
        const std::string address = server.to_string();
        add(server, &address, nullptr, "");
        continue;
      }
      const std::string key = server.to_string();
      const UpstreamResolver::NameState state = resolver ? resolver->state(key) : UpstreamResolver::NameState::Unresolved;
      const std::string error = resolver ? resolver->last_error(key) : "";
      auto list = directory.lookup(key);
      if (!list || list->empty()) {
        add(server, nullptr, dns_state(state), error);
        continue;
      }
      for (const auto& a : *list) add(server, &a.text, dns_state(state), error);
    }
    out += i ? "," : "";
    out += "{\"name\":";
    log::append_json_string(out, u.name);
    out += fmt::format(",\"balance\":\"{}\",\"servers_in\":{},\"servers_total\":{},\"panic\":{},\"servers\":[{}]}}",
                       balance_name(u.balance), in, total, total > 0 && in == 0 ? "true" : "false", servers);
  }
  out += "]}\n";
  return out;
}

}  // namespace tlsfront::control
