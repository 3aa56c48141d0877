// Whether this process may bind the configuration's ports: on Linux a port
// below net.ipv4.ip_unprivileged_port_start (1024 by default) needs root or
// the CAP_NET_BIND_SERVICE capability (capabilities(7)); the packaged
// systemd unit grants it with AmbientCapabilities. `tlsfront --test` warns
// when a [[listen]] or [admin] port would be refused, so an operator finds
// out before the start fails with EACCES.
// Thread affinity: any thread; reads /proc once per call.
#pragma once

#include <optional>
#include <string>

#include "config/config.h"

namespace tlsfront::control {

// What decides: the first unprivileged port (the sysctl; 1024 when it cannot
// be read) and whether the effective capabilities hold CAP_NET_BIND_SERVICE
// (always true for root with its full set).
struct PortPrivilege {
  unsigned unprivileged_start = 1024;
  bool can_bind_privileged = false;
};
PortPrivilege port_privilege();

// The warning naming the ports of `c` that `p` cannot bind ("listen
// 0.0.0.0:443, admin 127.0.0.1:80"), and what grants them; nullopt when
// every port is allowed (port 0, any free port, always is).
std::optional<std::string> privileged_port_warning(const config::Config& c, const PortPrivilege& p);

}  // namespace tlsfront::control
