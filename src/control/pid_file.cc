#include "control/pid_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "log/log.h"
#include "util/unique_fd.h"

namespace tlsfront::control {
namespace {

// /proc/<pid>/comm without its newline ("" when the process is gone).
std::string command_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

bool is_running(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

Error io_error(const std::string& what, const std::string& path, int err) {
  return Error{Errc::Io, "pid_file \"" + path + "\": " + what + ": " + std::strerror(err)};
}

}  // namespace

pid_t read_pid_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return -1;
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  pid_t pid = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), pid);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || pid <= 0) return -1;
  return pid;
}

Status check_pid_file_directory(const std::string& path) {
  if (path.empty()) return {};
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return io_error("directory " + dir, path, errno);
  return {};
}

Result<PidFile> PidFile::create(const std::string& path) {
  if (path.empty()) return PidFile();
  const pid_t self = ::getpid();
  const pid_t old = read_pid_file(path);
  if (old > 0 && old != self && is_running(old)) {
    const std::string name = command_name(old);
    return make_error(Errc::Io, "pid_file \"" + path + "\" names PID " + std::to_string(old) + ", a running process" +
                                    (name.empty() ? "" : " (" + name + ")") +
                                    ": another instance, or another program's pid file (stop it, or give this one "
                                    "its own pid_file; delete the file if that PID is not what wrote it)");
  }
  if (old > 0 && old != self) {
    log::info("pid_file \"{}\": replacing the stale PID {} (no such process)", path, old);
  } else if (old < 0 && ::access(path.c_str(), F_OK) == 0) {
    log::info("pid_file \"{}\": replacing a file that names no PID", path);
  }
  const std::string tmp = path + ".tmp." + std::to_string(self);
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) return io_error("cannot create " + tmp, path, errno);
  const std::string text = std::to_string(self) + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return io_error("cannot write " + tmp, path, err);
  }
  fd = UniqueFd();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return io_error("cannot rename " + tmp + " to it", path, err);
  }
  return PidFile(path, self);
}

PidFile::PidFile(PidFile&& o) noexcept : path_(std::move(o.path_)), pid_(std::exchange(o.pid_, 0)) {}

PidFile& PidFile::operator=(PidFile&& o) noexcept {
  if (this != &o) {
    remove();
    path_ = std::move(o.path_);
    pid_ = std::exchange(o.pid_, 0);
  }
  return *this;
}

PidFile::~PidFile() { remove(); }

void PidFile::remove() {
  if (pid_ == 0) return;
  if (read_pid_file(path_) == pid_ && ::unlink(path_.c_str()) != 0) {
    log::warn("pid_file \"{}\": cannot remove it: {}", path_, std::strerror(errno));
  }
  pid_ = 0;
}

}  // namespace tlsfront::control
