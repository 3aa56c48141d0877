#include "control/file_roots.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tlsfront::control {

std::vector<std::string> file_root_warnings(const config::Config& c) {
  std::vector<std::string> out;
  for (size_t i = 0; i < c.routes.size(); ++i) {
    const config::Route& r = c.routes[i];
    if (!r.files) continue;
    const std::string& dir = r.files->dir;
    std::string why;
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
      why = std::strerror(errno);
    } else if (!S_ISDIR(st.st_mode)) {
      why = "not a directory";
    } else if (access(dir.c_str(), X_OK) != 0) {
      why = std::strerror(errno);
    }
    if (why.empty()) continue;
    out.push_back("route[" + std::to_string(i) + "] (\"" + r.name + "\"): " + (r.files->alias ? "alias" : "root") +
                  " \"" + dir + "\": " + why + "; its requests are answered 404 (403 without search permission) until it is a directory");
  }
  return out;
}

}  // namespace tlsfront::control
