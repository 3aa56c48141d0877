#include "control/port_privilege.h"

#include <fstream>
#include <string>

namespace tlsfront::control {
namespace {

constexpr unsigned kCapNetBindService = 10;  // linux/capability.h

}  // namespace

PortPrivilege port_privilege() {
  PortPrivilege p;
  if (std::ifstream sysctl("/proc/sys/net/ipv4/ip_unprivileged_port_start"); sysctl) {
    unsigned start = 0;
    if (sysctl >> start) p.unprivileged_start = start;
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("CapEff:")) continue;
    const unsigned long long caps = std::stoull(line.substr(7), nullptr, 16);
    p.can_bind_privileged = (caps >> kCapNetBindService) & 1;
  }
  return p;
}

std::optional<std::string> privileged_port_warning(const config::Config& c, const PortPrivilege& p) {
  if (p.can_bind_privileged) return std::nullopt;
  std::string refused;
  auto check = [&](const char* what, const config::Endpoint& e) {
    if (e.port == 0 || e.port >= p.unprivileged_start) return;
    refused += (refused.empty() ? "" : ", ") + std::string(what) + " " + e.to_string();
  };
  for (const auto& l : c.listeners) check("listen", l.address);
  if (c.admin.enabled) check("admin", c.admin.address);
  if (refused.empty()) return std::nullopt;
  return refused + ": ports below " + std::to_string(p.unprivileged_start) +
         " need root or the CAP_NET_BIND_SERVICE capability, which this process lacks (the packaged systemd unit "
         "grants it; without systemd: setcap cap_net_bind_service=+ep on the binary)";
}

}  // namespace tlsfront::control
