#include "shared/redis_server.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace tlsfront::itest {

std::string find_tool(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool RedisServer::start(std::vector<std::string> extra, std::string password, bool same_port) {
  password_ = std::move(password);
  if (!same_port || port_ == 0) port_ = free_port();
  std::vector<std::string> argv{find_tool("redis-server"), "--port", std::to_string(port_), "--save", "",
                                "--appendonly", "no", "--bind", "127.0.0.1", "--dir", dir_.path()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (!process_.start(argv, dir_.file("redis.out"), dir_.file("redis.err"))) return false;
  return wait_until([&] { return cli({"PING"}).out.find("PONG") != std::string::npos; });
}

bool RedisServer::start_tls(const Tls& tls, std::vector<std::string> extra, std::string password) {
  tls_port_ = free_port();
  std::vector<std::string> args{"--tls-port",     std::to_string(tls_port_), "--tls-cert-file",    tls.certificate,
                                "--tls-key-file", tls.key,                   "--tls-ca-cert-file", tls.ca,
                                "--tls-auth-clients", tls.auth_clients ? "yes" : "no"};
  args.insert(args.end(), extra.begin(), extra.end());
  return start(std::move(args), std::move(password));
}

void RedisServer::stop() {
  resume();
  if (process_.pid() > 0) process_.stop();
}

void RedisServer::pause() {
  if (paused_ || !process_.running()) return;
  process_.signal(SIGSTOP);
  paused_ = true;
}

void RedisServer::resume() {
  if (!paused_) return;
  process_.signal(SIGCONT);
  paused_ = false;
}

std::vector<std::string> RedisServer::cli_argv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{find_tool("redis-cli"), "-h", "127.0.0.1", "-p", std::to_string(port_)};
  if (!password_.empty()) argv.insert(argv.end(), {"-a", password_, "--no-auth-warning"});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

RunResult RedisServer::cli(const std::vector<std::string>& args) const {
  return run_command(dir_, cli_argv(args), milliseconds(5'000));
}

std::vector<std::string> RedisServer::keys(const std::string& pattern) const {
  std::vector<std::string> out;
  std::stringstream lines(cli({"--raw", "KEYS", pattern}).out);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace tlsfront::itest
