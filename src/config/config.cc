// Out-of-line members of the config structs (config.h).
#include "config/config.h"

namespace tlsfront::config {

std::string Endpoint::to_string() const {
  std::string port_text = std::to_string(port);
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + port_text;
  return host + ":" + port_text;
}

bool access_allows(const std::vector<AccessRule>& rules, const IpAddress& client) {
  for (const AccessRule& r : rules) {
    if (r.all || r.block.contains(client)) return r.allow;
  }
  return true;
}

}  // namespace tlsfront::config
