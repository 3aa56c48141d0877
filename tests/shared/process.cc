#include "shared/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace tlsfront::itest {

bool wait_until(const std::function<bool()>& pred, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(milliseconds(5));  // poll interval, not synchronization
  }
}

void write_file(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// ---- ports -------------------------------------------------------------------------

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
  }
  ::close(fd);
  return port;
}

// ---- Process ---------------------------------------------------------------------

Process::~Process() {
  if (pid_ > 0 && !status_) stop();
}

bool Process::start(const std::vector<std::string>& argv, const std::string& stdout_path,
                    const std::string& stderr_path, int fd3) {
  stdout_path_ = stdout_path;
  stderr_path_ = stderr_path;
  status_.reset();
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  if (open_files_limit_ > 0) nofile.rlim_cur = std::min<rlim_t>(open_files_limit_, nofile.rlim_max);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    // A test process that dies without stopping its children (an ASan
    // abort, a crash, a kill) takes them with it: nothing it started
    // outlives it. (The signal follows the thread that forked: processes
    // are started from the test's own thread.)
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(126);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    // dup2 clears FD_CLOEXEC on the copy; the same fd needs it cleared by hand.
    if (fd3 == 3) {
      ::fcntl(3, F_SETFD, 0);
    } else if (fd3 >= 0 && ::dup2(fd3, 3) != 3) {
      ::_exit(126);
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  pid_ = pid;
  return true;
}

bool Process::running() {
  if (pid_ <= 0 || status_) return false;
  return !wait_exit(milliseconds(0)).has_value();
}

void Process::signal(int sig) {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

std::optional<ExitStatus> Process::wait_exit(milliseconds timeout) {
  if (status_) return status_;
  if (pid_ <= 0) return ExitStatus{};
  auto deadline = Clock::now() + timeout;
  while (true) {
    int ws = 0;
    pid_t r = ::waitpid(pid_, &ws, WNOHANG);
    if (r == pid_) {
      ExitStatus st;
      if (WIFEXITED(ws)) {
        st.exited = true;
        st.code = WEXITSTATUS(ws);
      } else if (WIFSIGNALED(ws)) {
        st.signal = WTERMSIG(ws);
      }
      status_ = st;
      return status_;
    }
    if (r < 0 && errno != EINTR) {
      status_ = ExitStatus{};
      return status_;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

ExitStatus Process::stop(milliseconds timeout) {
  if (pid_ <= 0) return ExitStatus{};
  if (status_) return *status_;
  ::kill(pid_, SIGTERM);
  if (auto st = wait_exit(timeout)) return *st;
  ADD_FAILURE() << "pid " << pid_ << " (" << stderr_path_ << ") ignored SIGTERM for " << timeout.count()
                << " ms; sending SIGKILL";
  ::kill(pid_, SIGKILL);
  if (auto st = wait_exit(milliseconds(5'000))) return *st;
  return ExitStatus{};
}

RunResult run_command(const TempDir& dir, const std::vector<std::string>& argv, milliseconds timeout) {
  static int counter = 0;
  ++counter;
  std::string out = dir.file("cmd" + std::to_string(counter) + ".out");
  std::string err = dir.file("cmd" + std::to_string(counter) + ".err");
  Process p;
  RunResult r;
  if (!p.start(argv, out, err)) {
    ADD_FAILURE() << "fork failed";
    return r;
  }
  if (auto st = p.wait_exit(timeout)) {
    r.status = *st;
  } else {
    ADD_FAILURE() << argv[0] << " did not exit within " << timeout.count() << " ms";
    r.status = p.stop(milliseconds(1'000));
  }
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace tlsfront::itest
