#include "control/restart_only.h"

namespace tlsfront::control {

std::vector<std::string> keep_restart_only_settings(const config::Config& now, config::Config& next) {
  std::vector<std::string> changed;
  auto keep = [&changed](std::string name, auto& setting, const auto& running) {
    if (setting == running) return;
    changed.push_back(std::move(name));
    setting = running;
  };
  keep("workers", next.workers, now.workers);
  keep("pid_file", next.pid_file, now.pid_file);
  for (auto& l : next.listeners) {
    for (const auto& o : now.listeners) {
      if (o.address == l.address) keep("backlog of " + l.address.to_string(), l.backlog, o.backlog);
      // Its UDP sockets are bound with the address: QUIC on or off takes a
      // new address or a restart (Alt-Svc must never name a socket that is not there).
      if (o.address == l.address) keep("quic of " + l.address.to_string(), l.quic, o.quic);
    }
  }
  keep("log.access_log", next.log.access_log, now.log.access_log);
  keep("[admin]", next.admin, now.admin);
  keep("[tls.session_cache]", next.tls.session_cache, now.tls.session_cache);
  // The config-file positions ("file:line:col") are not settings: the file
  // may be named differently now (relative at start, absolute on reload).
  next.tls.ticket_keys.files_origin = now.tls.ticket_keys.files_origin;
  next.tls.ticket_keys.redis_origin = now.tls.ticket_keys.redis_origin;
  keep("[tls.ticket_keys]", next.tls.ticket_keys, now.tls.ticket_keys);
  keep("[tls.store]", next.tls.store, now.tls.store);
  next.acme.origin = now.acme.origin;
  keep("[acme]", next.acme, now.acme);
  return changed;
}

}  // namespace tlsfront::control
