#include "haproxy_peer.h"

#include <unistd.h>

namespace tlsfront::itest {

bool Haproxy::start(const std::vector<std::string>& servers) {
  std::string conf =
      "global\n  maxconn 64\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n"
      "  timeout server 30s\n";
  ports_.clear();
  for (size_t i = 0; i < servers.size(); ++i) {
    ports_.push_back(free_port());
    const std::string n = std::to_string(i);
    conf += "frontend fe" + n + "\n  bind 127.0.0.1:" + std::to_string(ports_.back()) + "\n  default_backend be" + n +
            "\nbackend be" + n + "\n  server s" + n + " " + servers[i] + "\n";
  }
  const std::string path = dir_.file("haproxy.cfg");
  write_file(path, conf);
  if (!process_.start({kHaproxy, "-db", "-f", path}, dir_.file("haproxy.out"), dir_.file("haproxy.err"))) {
    return false;
  }
  const bool up = wait_until([&] {
    if (!process_.running()) return true;
    for (int port : ports_) {
      const int fd = tcp_connect(port);
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
