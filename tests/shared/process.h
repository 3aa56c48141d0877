// Test processes and files, shared by the unit and the integration tests:
// temp dirs, free ports, child processes (stopped by PID), commands run to
// completion, and polling with a deadline (nothing sleeps to synchronize).
// Thread affinity: the test thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/temp_dir.h"

namespace tlsfront::itest {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline constexpr milliseconds kDefaultDeadline{10'000};

// Polls `pred` every few milliseconds until it is true or `timeout` passes.
bool wait_until(const std::function<bool()>& pred, milliseconds timeout = kDefaultDeadline);

// TempDir and read_file are shared/temp_dir.h's.
using tlsfront::read_file;
using tlsfront::TempDir;
void write_file(const std::string& path, std::string_view data);
bool file_exists(const std::string& path);

// A port that was free a moment ago (bound to 127.0.0.1:0, then closed), for
// what cannot bind port 0 itself and say which port it got (redis-server, an
// OCSP responder, an address nothing listens on). tlsfront and the backend
// bind port 0 and report the port instead: no other test can hold it.
int free_port();

// The resident set of process `pid` in KiB (VmRSS of /proc/PID/status); -1
// when it cannot be read.
long rss_kib(pid_t pid);

struct ExitStatus {
  bool exited = false;  // false: killed by a signal (or still unknown)
  int code = -1;        // exit code when `exited`
  int signal = 0;       // terminating signal otherwise
};

// A child process with stdout/stderr redirected to files.
class Process {
 public:
  Process() = default;
  ~Process();  // stop() if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // fork/exec `argv` (argv[0] is the path). False when fork fails.
  // `fd3` >= 0: the child gets it as descriptor 3 (socket activation tests).
  bool start(const std::vector<std::string>& argv, const std::string& stdout_path,
             const std::string& stderr_path, int fd3 = -1);
  // From the next start() on: the child's RLIMIT_NOFILE soft limit (its hard
  // limit stays as inherited), as `ulimit -Sn` would set it. 0 = inherit.
  void set_open_files_limit(unsigned long soft) { open_files_limit_ = soft; }
  bool running();
  pid_t pid() const { return pid_; }
  void signal(int sig);
  // Waits for the exit until `timeout`; nullopt if it is still running.
  std::optional<ExitStatus> wait_exit(milliseconds timeout);
  // SIGTERM, wait up to `timeout`, then SIGKILL. Returns the exit status.
  ExitStatus stop(milliseconds timeout = milliseconds(5'000));
  std::string out() const { return read_file(stdout_path_); }
  std::string err() const { return read_file(stderr_path_); }

 private:
  pid_t pid_ = -1;
  unsigned long open_files_limit_ = 0;
  std::optional<ExitStatus> status_;
  std::string stdout_path_, stderr_path_;
};

// Runs `argv` to completion (deadline `timeout`, then SIGKILL).
struct RunResult {
  ExitStatus status;
  std::string out, err;
};
RunResult run_command(const TempDir& dir, const std::vector<std::string>& argv,
                      milliseconds timeout = kDefaultDeadline);

}  // namespace tlsfront::itest
