// The value types every configuration section uses: durations, "host:port"
// endpoints, source positions, TLS versions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tlsfront::config {

using Millis = std::chrono::milliseconds;

// A "host:port" endpoint. IPv6 literals are written "[::1]:8443" in TOML and
// stored here without brackets.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string to_string() const;  // "127.0.0.1:8443" or "[::1]:8443"
  bool operator==(const Endpoint&) const = default;
};

// Where values were written ("file:line:column"), for errors found after
// loading (a server name that does not resolve at start-up). Not part of
// what a table means: always equal, so that a reload that only moves lines
// keeps what it built (an upstream group's pools).
struct SourcePositions {
  std::vector<std::string> at;
  bool operator==(const SourcePositions&) const { return true; }
};

enum class TlsVersion { Tls12, Tls13 };

}  // namespace tlsfront::config
