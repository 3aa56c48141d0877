// The directories of file routes (root, alias), checked where the
// configuration is tested and loaded: one that is missing, not a
// directory or not searchable is a warning — `tlsfront --test` prints it,
// start and reload log it — never a refusal: the directory may be mounted
// or deployed after the proxy starts, and until then the route answers
// 404 (403 when it cannot be searched), as nginx's root does.
// Thread affinity: any thread (stat(2) only).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace tlsfront::control {

// One line per file route whose directory is not a searchable directory.
std::vector<std::string> file_root_warnings(const config::Config& c);

}  // namespace tlsfront::control
