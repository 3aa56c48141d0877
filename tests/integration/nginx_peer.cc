#include "nginx_peer.h"

#include <sys/stat.h>
#include <unistd.h>

namespace tlsfront::itest {

bool Nginx::start(const std::string& cert, const std::string& key, const std::string& server_extra,
                  const std::string& listen_extra) {
  port_ = free_port();
  prefix_ = dir_.file("nginx");
  ::mkdir(prefix_.c_str(), 0755);
  ::mkdir((prefix_ + "/logs").c_str(), 0755);
  std::string conf = "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + prefix_ + "/nginx.pid;\n" +
                     "error_log stderr notice;\nevents { worker_connections 64; }\nhttp {\n  access_log off;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    conf += std::string("  ") + t + "_temp_path " + prefix_ + "/" + t + ";\n";
  }
  conf += "  server {\n    listen 127.0.0.1:" + std::to_string(port_) + " ssl" +
          (listen_extra.empty() ? "" : " " + listen_extra) + ";\n    ssl_certificate " + cert +
          ";\n    ssl_certificate_key " + key + ";\n    ssl_protocols TLSv1.2 TLSv1.3;\n" + server_extra +
          "    location / { return 200 \"nginx\\n\"; }\n  }\n}\n";
  write_file(prefix_ + "/nginx.conf", conf);
  if (!process_.start({kNginx, "-p", prefix_, "-c", prefix_ + "/nginx.conf"}, dir_.file("nginx.out"),
                      dir_.file("nginx.err"))) {
    return false;
  }
  const bool up = wait_until([&] {
    if (!process_.running()) return true;
    const int fd = tcp_connect(port_);
    if (fd < 0) return false;
    ::close(fd);
    return true;
  });
  if (!up || !process_.running()) {
    ADD_FAILURE() << "nginx did not start: " << process_.err();
    return false;
  }
  return true;
}

}  // namespace tlsfront::itest
