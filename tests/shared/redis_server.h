// RedisServer: a real redis-server for the tests (unit and integration), on
// 127.0.0.1:<free port> in the test's temp dir, without persistence; stopped
// by its PID in its destructor. Tests skip (GTEST_SKIP) when find_tool()
// finds no redis-server / redis-cli. With start_tls(), it also speaks TLS on
// a second port (tls_port()); cli() keeps using the cleartext one.
#pragma once

#include <string>
#include <vector>

#include "shared/process.h"

namespace tlsfront::itest {

// Absolute path of `name` on $PATH, or "" when absent.
std::string find_tool(const std::string& name);

class RedisServer {
 public:
  explicit RedisServer(const TempDir& dir) : dir_(dir) {}
  ~RedisServer() { stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts with `extra` arguments (e.g. "--requirepass", "x") and waits for
  // PING; a fresh port, or the previous one when `same_port`. `password` is
  // what cli() authenticates with.
  bool start(std::vector<std::string> extra = {}, std::string password = "", bool same_port = false);
  // The files of Redis' TLS port (PEM paths).
  struct Tls {
    std::string certificate;  // the server's chain (tls-cert-file)
    std::string key;          // tls-key-file
    std::string ca;           // what client certificates must chain to (tls-ca-cert-file)
    bool auth_clients = false;  // tls-auth-clients yes: a client certificate is required
  };
  // start() plus a TLS port (a fresh one) with `tls`.
  bool start_tls(const Tls& tls, std::vector<std::string> extra = {}, std::string password = "");
  void stop();  // resumes a paused server first
  // SIGSTOP / SIGCONT: a server that accepts connections (the kernel does)
  // but answers nothing, as a hung or overloaded one.
  void pause();
  void resume();
  // redis-cli argv (as the default user) for `args`.
  std::vector<std::string> cli_argv(const std::vector<std::string>& args) const;
  RunResult cli(const std::vector<std::string>& args) const;
  // KEYS `pattern`, one per element.
  std::vector<std::string> keys(const std::string& pattern) const;
  int port() const { return port_; }
  int tls_port() const { return tls_port_; }  // 0 unless started with start_tls()

 private:
  const TempDir& dir_;
  Process process_;
  int port_ = 0;
  int tls_port_ = 0;
  bool paused_ = false;
  std::string password_;
};

}  // namespace tlsfront::itest
