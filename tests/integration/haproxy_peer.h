// Debian's HAProxy as a peer in integration tests: TCP mode (no TLS of its
// own), in the foreground (-db), one frontend per backend server line, on
// free loopback ports, its config under the test's directory; stopped by PID
// (stop(), or the destructor). Used as the L4 load balancer in front of a
// proxy_protocol listener (`send-proxy`, `send-proxy-v2`).
#pragma once

#include <string>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {

inline const std::string kHaproxy = "/usr/sbin/haproxy";

class Haproxy {
 public:
  explicit Haproxy(const TempDir& dir) : dir_(dir) {}
  ~Haproxy() { stop(); }
  Haproxy(const Haproxy&) = delete;
  Haproxy& operator=(const Haproxy&) = delete;
  // One frontend on 127.0.0.1:<free port> per entry of `servers`, each a
  // HAProxy server line's address and options ("127.0.0.3:8443
  // send-proxy-v2"). True once every frontend accepts connections; false
  // (with a gtest failure naming its stderr) if not.
  bool start(const std::vector<std::string>& servers);
  // One frontend per entry: its bind address ("127.0.0.1", "::1"), extra
  // lines for the frontend section ("unique-id-format ..."), and the server.
  struct Frontend {
    std::string server;
    std::string bind = "127.0.0.1";
    std::vector<std::string> lines;
  };
  bool start(const std::vector<Frontend>& frontends);
  void stop() { process_.stop(); }
  // The frontend port of servers[i].
  int port(size_t i) const { return ports_.at(i); }

 private:
  const TempDir& dir_;
  Process process_;
  std::vector<int> ports_;
};

}  // namespace tlsfront::itest
