// The WebSocket server the tunnel tests put behind tlsfront:
// tests/integration/peers/ws_peer.py (python3-websockets, RFC 6455), whose
// modes that file's docstring lists.
// Thread affinity: the test thread only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "shared/process.h"

namespace tlsfront::itest {

inline const std::string kWsPeer = std::string(TLSFRONT_SOURCE_DIR) + "/tests/integration/peers/ws_peer.py";
inline constexpr const char* kPython = "/usr/bin/python3";  // Debian's, which has python3-websockets

// Starts ws_peer.py's server on 127.0.0.1:0 as `p` (stdout in dir/ws.out,
// stderr in dir/ws.err); its port, or 0 after adding a test failure.
inline int start_ws_server(Process& p, const TempDir& dir) {
  const std::string port_file = dir.file("ws.port");
  if (!p.start({kPython, kWsPeer, "server", port_file}, dir.file("ws.out"), dir.file("ws.err"))) return 0;
  if (!wait_until([&] { return read_file(port_file).ends_with("\n"); })) {
    ADD_FAILURE() << "ws_peer did not start: " << read_file(dir.file("ws.err"));
    return 0;
  }
  return std::atoi(read_file(port_file).c_str());
}

}  // namespace tlsfront::itest
