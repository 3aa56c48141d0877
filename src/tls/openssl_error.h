// Drains OpenSSL's thread-local error queue into readable text for Error.detail.
// Thread affinity: any thread (the queue is per thread).
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace tlsfront::tls {

// Returns the queued errors joined by "; " (empty if none) and clears the queue.
std::string drain_openssl_errors();

// Error{code, "<what>: <drained queue>"}.
Error openssl_error(Errc code, std::string_view what);

// Errc::Config shaped like every config error: "<origin>: <setting>: <message>"
// (`origin` is a "file:line:col" from config::Tls; empty → no prefix;
// `setting` the key path, "tls.ciphers", "certificate[1].cert").
Error config_error(const std::string& origin, std::string_view setting, std::string message);

}  // namespace tlsfront::tls
