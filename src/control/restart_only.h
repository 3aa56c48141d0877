// The settings a reload cannot change (restart-only), listed once: workers,
// a listener's backlog, log.access_log, [admin], [tls.session_cache],
// [tls.ticket_keys]. Server::reload() keeps their running values and warns
// about each one the new file changes. Pure; any thread.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace tlsfront::control {

// Each restart-only setting that differs between the running configuration
// `now` and the new one `next` is named in the result ("workers", "backlog
// of 127.0.0.1:8443", "log.access_log", "[admin]", "[tls.session_cache]",
// "[tls.ticket_keys]") and gets its running value back in `next`, so the
// new generation's config says what is in effect. The config-file positions
// of [tls.ticket_keys] are not settings and never count as a change.
std::vector<std::string> keep_restart_only_settings(const config::Config& now, config::Config& next);

}  // namespace tlsfront::control
