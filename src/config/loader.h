// Loader: one TOML file -> a validated Config (config.h), or the first error
// with its position. The accepted schema is documented key by key in
// docs/configuration.md (checked against accepted_keys by the
// config_reference test); any other key is an error.
//
// Every error is Errc::Config with a detail of the form
//   "<file>:<line>:<column>: <key path>: <message>"
// e.g. `conf/x.toml:12:5: upstream[0].keepalive_timeout: invalid duration "5x" (...)`.
// Key paths look like "listen[0].address", "tls.protocols[1]". Positions:
// a bad value points at its key; a bad array element at the element; a missing
// key at its table's header; a missing table at 1:1. TOML syntax errors read
// "<file>:<line>:<column>: syntax error: <toml++ description>".
//
// Relative paths (tls.certificate, tls.key, log.access_log) resolve against
// the directory of the config file and are stored absolute and normalized.
// Routes are required: there is no implicit catch-all route.
// Thread affinity: any thread; no shared state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "util/result.h"

namespace tlsfront::config {

// Reads and validates the file at `path`. Messages name the file as `path`
// was written; Config::path is its absolute, normalized form. Reads the file
// synchronously (startup and reload only, never on a worker loop).
// Errc::Config: unreadable file, TOML syntax error or invalid configuration.
[[nodiscard]] Result<Config> load_file(const std::string& path);

// Validates `toml` as if read from a file named `source_name`: messages name
// `source_name`, relative paths resolve against its directory (made absolute
// against the current directory), and Config::path is `source_name`.
// Errc::Config: TOML syntax error or invalid configuration.
[[nodiscard]] Result<Config> load_string(std::string_view toml, std::string_view source_name);

// The keys the loader accepts in the tables `toml` holds, as load_string
// checks them: dotted paths without array indices ("workers",
// "upstream.tls.verify", "route.return.status"), sorted, each once. A table
// counts only when `toml` has it, so pass one that has them all. This is
// what docs/configuration.md must document (tests/tools/config_keys).
// Errc::Config as load_string.
[[nodiscard]] Result<std::vector<std::string>> accepted_keys(std::string_view toml, std::string_view source_name);

}  // namespace tlsfront::config
