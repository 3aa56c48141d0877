// Debian's nginx as a peer in integration tests: started in the foreground
// (daemon off, master_process off, one worker) on a free loopback port, with
// its prefix, config, temp paths and pid file under the test's directory;
// stopped by PID (stop(), or the destructor).
#pragma once

#include <string>

#include "harness.h"

namespace tlsfront::itest {

inline const std::string kNginx = "/usr/sbin/nginx";

class Nginx {
 public:
  explicit Nginx(const TempDir& dir) : dir_(dir) {}
  ~Nginx() { stop(); }
  Nginx(const Nginx&) = delete;
  Nginx& operator=(const Nginx&) = delete;
  // One TLS server block (TLS 1.2 and 1.3, `location /` answers 200 "nginx")
  // with `cert` and `key`; `server_extra`: more lines in it (ssl_stapling ...,
  // a second ssl_certificate ..., ssl_session_ticket_key ..., locations
  // before `location /`); `listen_extra`: parameters after `ssl` on the
  // listen line ("http2"). True once it accepts connections; false (with a
  // gtest failure naming its stderr) if not.
  bool start(const std::string& cert, const std::string& key, const std::string& server_extra = "",
             const std::string& listen_extra = "");
  void stop() { process_.stop(); }
  int port() const { return port_; }
  Process& process() { return process_; }
  const std::string& prefix() const { return prefix_; }  // holds nginx.conf

 private:
  const TempDir& dir_;
  Process process_;
  int port_ = 0;
  std::string prefix_;
};

}  // namespace tlsfront::itest
