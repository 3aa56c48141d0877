// The pid file (`pid_file = "/run/tlsfront/tlsfront.pid"` or --pid-file;
// nginx's `pid`): the process's PID in decimal and a newline, so
// `kill -HUP "$(cat /run/tlsfront/tlsfront.pid)"` signals the right process
// on a machine with several instances, and systemd's PIDFile= can name it.
//
// Lifecycle: written once at start-up, after the listeners are bound and the
// signal handlers installed (a start that fails leaves no file; a SIGHUP sent
// as soon as the file exists reloads, never kills), by writing a temporary file in the same
// directory and renaming it over the path, so a reader never sees a partial
// PID. Removed when the process exits normally, only if it still holds this
// process's PID (a newer instance may have taken the path over). `--test` and
// reloads never touch it; a reload that changes `pid_file` keeps the running
// one (restart-only).
//
// Safer than nginx, which overwrites any existing file: when the file names
// any live process but this one (another tlsfront using the same path, or
// another program's pid file, e.g. nginx's during a migration), create()
// refuses, so no two processes fight over one file and `kill $(cat …)` never
// ends up at the wrong one. A file left by a crash (no such process) is
// replaced, with a note in the log; in the rare case that its PID was reused
// meanwhile, the start fails and says which process holds it (under systemd
// RuntimeDirectory= makes a fresh directory at each start, so a stale file
// cannot be there).
// Thread affinity: the control thread.
#pragma once

#include <string>
#include <sys/types.h>

#include "util/result.h"

namespace tlsfront::control {

class PidFile {
 public:
  PidFile() = default;  // holds no file
  PidFile(PidFile&& o) noexcept;
  PidFile& operator=(PidFile&& o) noexcept;
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;
  ~PidFile();  // remove()

  // Writes getpid() to `path` ("" = no pid file: an empty PidFile).
  // Errc::Io with the path and strerror: directory missing or not writable;
  // Errc::Io "… names PID N, a running tlsfront": see above.
  [[nodiscard]] static Result<PidFile> create(const std::string& path);

  const std::string& path() const { return path_; }

  // Removes the file if it still holds this process's PID; idempotent.
  void remove();

 private:
  explicit PidFile(std::string path, pid_t pid) : path_(std::move(path)), pid_(pid) {}
  std::string path_;
  pid_t pid_ = 0;
};

// `--test`'s check: the directory of `path` exists and this user may create
// files in it ("" passes). Errc::Io with the directory and strerror.
[[nodiscard]] Status check_pid_file_directory(const std::string& path);

// The PID a pid file names (a decimal number, then optionally a newline), or
// -1 when it cannot be read or holds anything else.
pid_t read_pid_file(const std::string& path);

}  // namespace tlsfront::control
