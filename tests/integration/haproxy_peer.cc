#include "haproxy_peer.h"

#include <unistd.h>

namespace tlsfront::itest {

bool Haproxy::start(const std::vector<std::string>& servers) {
  std::vector<Frontend> frontends;
  for (const auto& s : servers) frontends.push_back(Frontend{s});
  return start(frontends);
}

bool Haproxy::start(const std::vector<Frontend>& frontends) {
  std::string conf =
      "global\n  maxconn 64\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n"
      "  timeout server 30s\n";
  ports_.clear();
  for (size_t i = 0; i < frontends.size(); ++i) {
    const Frontend& f = frontends[i];
    ports_.push_back(free_port());
    const std::string n = std::to_string(i);
    const bool v6 = f.bind.find(':') != std::string::npos;
    conf += "frontend fe" + n + "\n  bind " + (v6 ? "[" + f.bind + "]" : f.bind) + ":" + std::to_string(ports_.back()) +
            "\n  default_backend be" + n + "\n";
    for (const auto& line : f.lines) conf += "  " + line + "\n";
    conf += "backend be" + n + "\n  server s" + n + " " + f.server + "\n";
  }
  const std::string path = dir_.file("haproxy.cfg");
  write_file(path, conf);
  if (!process_.start({kHaproxy, "-db", "-f", path}, dir_.file("haproxy.out"), dir_.file("haproxy.err"))) {
    return false;
  }
  const bool up = wait_until([&] {
    if (!process_.running()) return true;
    for (size_t i = 0; i < ports_.size(); ++i) {
      const int fd = tcp_connect(ports_[i], frontends[i].bind.c_str());
      if (fd < 0) return false;
      ::close(fd);
    }
    return true;
  });
  if (!up || !process_.running()) {
    ADD_FAILURE() << "haproxy did not start: " << process_.err() << "\nconfig:\n" << conf;
    return false;
  }
  return true;
}

}  // namespace tlsfront::itest
